// --draft-model: a second, smaller model whose greedy drafts the target verifies (engine/draft_model_drafter.h).
// A draft is a token id the target reads as its own, so the two vocabularies must be one: the same tokens, id
// for id, and no draft id past the target's logits.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "runtime/loaded_model.h"

namespace tempered {

// Loads `name_or_path` as --model does, to run on the target's threads, and checks it against `target`
// (check_draft_vocabulary). `target` must outlive it.
Result<std::unique_ptr<LoadedModel>> load_draft_model(const std::string& name_or_path, const LoadedModel& target,
                                                      DType directory_weights);

// Ok when every id means the same token text in both tokenizers and the draft's logits are no wider than the
// target's; else an Error naming the first difference.
Status check_draft_vocabulary(const Tokenizer& target, int64_t target_logits, const Tokenizer& draft,
                              int64_t draft_logits);

}  // namespace tempered
