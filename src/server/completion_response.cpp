#include "server/completion_response.h"

#include "server/endpoint_support.h"

namespace tempered {

CompletionResponseBuilder::CompletionResponseBuilder(const Tokenizer& tokenizer, api::ResponseMeta meta,
                                                     const std::vector<std::string>& prompt_texts, Shape shape)
    : tokenizer_(tokenizer),
      meta_(std::move(meta)),
      shape_(shape),
      choices_(prompt_texts.size() * static_cast<size_t>(shape.choices_per_prompt)) {
    if (!shape_.echo) return;
    for (size_t c = 0; c < choices_.size(); ++c) {
        choices_[c].text = prompt_texts[c / static_cast<size_t>(shape_.choices_per_prompt)];
        choices_[c].token_offset = static_cast<int64_t>(choices_[c].text.size());
    }
}

std::vector<nlohmann::json> CompletionResponseBuilder::opening_chunks() {
    // A first chunk per choice: the echoed prompt (or nothing).
    std::vector<nlohmann::json> chunks;
    for (size_t c = 0; c < choices_.size(); ++c) {
        api::CompletionChoice first;
        first.index = static_cast<int>(c);
        first.text = shape_.echo ? choices_[c].text : "";
        if (shape_.score_only) first.finish_reason = api::FinishReason::Length;
        chunks.push_back(api::text_completion_chunk_json(meta_, {first}, shape_.include_usage));
    }
    return chunks;
}

api::CompletionLogprobs CompletionResponseBuilder::append_logprobs(ChoiceText& choice,
                                                                   const std::vector<TokenLogprob>& logprobs) const {
    api::CompletionLogprobs part;
    const auto name = [this](int32_t token) {
        return shape_.tokens_as_ids ? "token_id:" + std::to_string(token) : tokenizer_.token_bytes(token);
    };
    for (const auto& logprob : logprobs) {
        const std::string bytes = tokenizer_.token_bytes(logprob.token);
        std::vector<std::pair<std::string, double>> top;
        for (const auto& [token, value] : logprob.top) top.emplace_back(name(token), value);
        for (auto* target : {&choice.logprobs, &part}) {
            target->tokens.push_back(name(logprob.token));
            target->token_logprobs.push_back(logprob.logprob);
            target->top_logprobs.push_back(top);
            target->text_offset.push_back(choice.token_offset);
        }
        choice.token_offset += static_cast<int64_t>(bytes.size());
    }
    return part;
}

std::vector<nlohmann::json> CompletionResponseBuilder::on_delta(const ChoiceDelta& delta) {
    ChoiceText& choice = choices_.at(static_cast<size_t>(delta.index));
    api::CompletionChoice chunk;
    chunk.index = delta.index;
    chunk.text = delta.text;
    choice.text += delta.text;
    if (shape_.logprobs) chunk.logprobs = append_logprobs(choice, delta.logprobs);
    if (shape_.token_ids) {
        chunk.token_ids = delta.tokens;
        choice.token_ids.insert(choice.token_ids.end(), delta.tokens.begin(), delta.tokens.end());
    }
    if (delta.finish) {
        choice.finish = delta.finish;
        choice.closed_early = delta.closed_early;
        chunk.finish_reason = to_api_finish_reason(*delta.finish);
        chunk.closed_early = delta.closed_early;
    }
    // A token without text of its own (end of generation, part of a character) still goes out with its id.
    const bool says_something = !chunk.text.empty() || chunk.finish_reason || !delta.logprobs.empty() ||
                                (shape_.token_ids && !delta.tokens.empty());
    if (!shape_.stream || !says_something) return {};
    return {api::text_completion_chunk_json(meta_, {chunk}, shape_.include_usage)};
}

nlohmann::json CompletionResponseBuilder::usage_chunk(const api::Usage& usage) const {
    return api::text_completion_usage_chunk_json(meta_, usage);
}

nlohmann::json CompletionResponseBuilder::final_body(const api::Usage& usage) {
    std::vector<api::CompletionChoice> results;
    for (size_t c = 0; c < choices_.size(); ++c) {
        api::CompletionChoice& result = results.emplace_back();
        result.index = static_cast<int>(c);
        result.text = choices_[c].text;
        result.finish_reason =
            choices_[c].finish ? to_api_finish_reason(*choices_[c].finish) : api::FinishReason::Length;
        if (shape_.logprobs) result.logprobs = choices_[c].logprobs;
        if (shape_.token_ids) result.token_ids = choices_[c].token_ids;
        result.closed_early = choices_[c].closed_early;
    }
    return api::text_completion_json(meta_, results, usage);
}

}  // namespace tempered
