#include "runtime/draft_model.h"

namespace tempered {

Status check_draft_vocabulary(const Tokenizer& target, int64_t target_logits, const Tokenizer& draft,
                              int64_t draft_logits) {
    if (target.vocab_size() != draft.vocab_size())
        return Error{"the draft model's vocabulary has " + std::to_string(draft.vocab_size()) +
                     " tokens, the target's " + std::to_string(target.vocab_size()) +
                     ": drafts must be the target's token ids"};
    for (int32_t id = 0; id < target.vocab_size(); ++id) {
        if (target.token_text(id) != draft.token_text(id))
            return Error{"the draft model's token " + std::to_string(id) + " is '" + draft.token_text(id) +
                         "', the target's '" + target.token_text(id) + "': drafts must be the target's token ids"};
    }
    if (draft_logits > target_logits)
        return Error{"the draft model scores " + std::to_string(draft_logits) + " ids, more than the target's " +
                     std::to_string(target_logits)};
    return Ok{};
}

Result<std::unique_ptr<LoadedModel>> load_draft_model(const std::string& name_or_path, const LoadedModel& target,
                                                      DType directory_weights) {
    auto draft = load_model_bundle(name_or_path, 0, ModelParts::Everything, directory_weights, target.pool.get());
    if (!draft) return Error{"--draft-model: " + draft.error().message};
    const Status same = check_draft_vocabulary(*target.tokenizer, target.config.vocab_size, *(*draft)->tokenizer,
                                               (*draft)->config.vocab_size);
    if (!same) return Error{"--draft-model " + (*draft)->path + ": " + same.error().message};
    return draft;
}

}  // namespace tempered
