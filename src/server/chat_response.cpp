#include "server/chat_response.h"

#include "server/endpoint_support.h"

namespace tempered {

ChatResponseBuilder::ChatResponseBuilder(const Tokenizer& tokenizer, api::ResponseMeta meta, Shape shape)
    : tokenizer_(tokenizer), meta_(std::move(meta)), shape_(shape) {
    if (shape_.stream) return;
    choices_.resize(static_cast<size_t>(shape_.choices));
    for (int i = 0; i < shape_.choices; ++i) {
        api::ChatChoice& choice = choices_[static_cast<size_t>(i)];
        choice.index = i;
        choice.content = "";
        if (shape_.logprobs) choice.logprobs.emplace();
    }
}

std::vector<nlohmann::json> ChatResponseBuilder::opening_chunks() {
    // The first chunk of each choice carries the role.
    std::vector<nlohmann::json> chunks;
    for (int choice = 0; choice < shape_.choices; ++choice) {
        api::ChatChunkChoice chunk;
        chunk.index = choice;
        chunk.delta.include_role = true;
        chunk.delta.content = "";
        chunks.push_back(api::chat_chunk_json(meta_, {chunk}, shape_.include_usage));
    }
    return chunks;
}

std::optional<nlohmann::json> ChatResponseBuilder::on_delta(const ChoiceDelta& delta) {
    if (!shape_.stream) {
        api::ChatChoice& choice = choices_.at(static_cast<size_t>(delta.index));
        *choice.content += delta.text;
        if (delta.finish) choice.finish_reason = to_api_finish_reason(*delta.finish);
        if (shape_.logprobs)
            for (api::TokenLogprob& logprob : api_logprobs(delta.logprobs))
                choice.logprobs->push_back(std::move(logprob));
        return std::nullopt;
    }
    if (delta.text.empty() && !delta.finish && delta.logprobs.empty()) return std::nullopt;
    api::ChatChunkChoice chunk;
    chunk.index = delta.index;
    chunk.delta.content = delta.text;
    if (delta.finish) chunk.finish_reason = to_api_finish_reason(*delta.finish);
    if (shape_.logprobs) chunk.logprobs = api_logprobs(delta.logprobs);
    return api::chat_chunk_json(meta_, {chunk}, shape_.include_usage);
}

nlohmann::json ChatResponseBuilder::usage_chunk(const api::Usage& usage) const {
    return api::chat_usage_chunk_json(meta_, usage);
}

nlohmann::json ChatResponseBuilder::final_body(const api::Usage& usage) const {
    return api::chat_completion_json(meta_, choices_, usage);
}

std::vector<api::TokenLogprob> ChatResponseBuilder::api_logprobs(const std::vector<TokenLogprob>& logprobs) const {
    auto bytes_of = [this](int32_t token) {
        const std::string& text = tokenizer_.token_bytes(token);
        return std::vector<uint8_t>(text.begin(), text.end());
    };
    std::vector<api::TokenLogprob> out;
    for (const TokenLogprob& logprob : logprobs) {
        api::TokenLogprob& entry = out.emplace_back();
        entry.token = tokenizer_.token_bytes(logprob.token);
        entry.logprob = logprob.logprob;
        entry.bytes = bytes_of(logprob.token);
        for (const auto& [token, value] : logprob.top)
            entry.top_logprobs.push_back({tokenizer_.token_bytes(token), value, bytes_of(token)});
    }
    return out;
}

}  // namespace tempered
