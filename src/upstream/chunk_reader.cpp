#include "upstream/chunk_reader.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace tempered::upstream {

namespace {

std::optional<int32_t> token_id_of(const nlohmann::json& name) {
    constexpr std::string_view kPrefix = "token_id:";
    if (!name.is_string()) return std::nullopt;
    const std::string& text = name.get_ref<const std::string&>();
    if (!text.starts_with(kPrefix)) return std::nullopt;
    int32_t id = 0;
    const char* end = text.data() + text.size();
    const auto [at, error] = std::from_chars(text.data() + kPrefix.size(), end, id);
    if (error != std::errc() || at != end || id < 0) return std::nullopt;
    return id;
}

std::vector<std::pair<int32_t, float>> top_of(const nlohmann::json& alternatives) {
    std::vector<std::pair<int32_t, float>> top;
    if (!alternatives.is_object()) return top;
    for (const auto& [name, value] : alternatives.items())
        if (const auto id = token_id_of(name); id && value.is_number()) top.emplace_back(*id, value.get<float>());
    std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    return top;
}

// The upstream choice's token ids through `choice`, each with its logprob when the chunk has one for it.
void take_tokens(const nlohmann::json& upstream, const nlohmann::json& ids, UpstreamChoice& choice, ChoiceDelta& delta,
                 EngineObserver* observer) {
    std::vector<TokenLogprob> logprobs = read_logprobs(upstream);
    size_t next = 0;
    for (const nlohmann::json& id : ids) {
        if (!id.is_number_integer()) continue;
        const auto token = id.get<int32_t>();
        std::optional<TokenLogprob> logprob;
        if (next < logprobs.size() && logprobs[next].token == token) logprob = std::move(logprobs[next++]);
        choice.take_token(token, delta, observer, std::move(logprob));
    }
}

int front_choice(const nlohmann::json& upstream, const std::vector<int>& leg_choices) {
    const auto index = upstream.find("index");
    const int64_t leg_index = index != upstream.end() && index->is_number_integer() ? index->get<int64_t>() : 0;
    if (leg_index < 0 || leg_index >= static_cast<int64_t>(leg_choices.size())) return -1;
    return leg_choices[static_cast<size_t>(leg_index)];
}

}  // namespace

std::optional<FinishReason> upstream_finish_reason(const nlohmann::json& value) {
    if (!value.is_string()) return std::nullopt;
    if (value == "length") return FinishReason::Length;
    // "stop", "tool_calls" (the front says tool_calls itself when it returns calls), an engine's own names
    return FinishReason::Stop;
}

std::vector<TokenLogprob> read_logprobs(const nlohmann::json& upstream_choice) {
    std::vector<TokenLogprob> out;
    const auto found = upstream_choice.find("logprobs");
    if (found == upstream_choice.end() || !found->is_object()) return out;
    const nlohmann::json empty = nlohmann::json::array();
    const nlohmann::json& tokens = found->contains("tokens") ? (*found)["tokens"] : empty;
    const nlohmann::json& values = found->contains("token_logprobs") ? (*found)["token_logprobs"] : empty;
    const nlohmann::json& tops = found->contains("top_logprobs") ? (*found)["top_logprobs"] : empty;
    if (!tokens.is_array() || !values.is_array() || tokens.size() != values.size()) return out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto id = token_id_of(tokens[i]);
        if (!id || !values[i].is_number()) continue;
        TokenLogprob logprob{*id, values[i].get<float>(), {}};
        if (tops.is_array() && i < tops.size()) logprob.top = top_of(tops[i]);
        out.push_back(std::move(logprob));
    }
    return out;
}

GenerationEvent read_chunk(const nlohmann::json& chunk, std::vector<std::unique_ptr<UpstreamChoice>>& choices,
                           const std::vector<int>& leg_choices, GenerationUsage& usage, EngineObserver* observer,
                           bool& ended_here) {
    GenerationEvent event;
    const auto found = chunk.find("choices");
    if (found == chunk.end() || !found->is_array()) return event;
    for (const nlohmann::json& upstream : *found) {
        const int index = front_choice(upstream, leg_choices);
        if (index < 0) continue;
        UpstreamChoice& choice = *choices[static_cast<size_t>(index)];
        ChoiceDelta delta;
        delta.index = index;
        const auto ids = upstream.find("token_ids");
        if (ids != upstream.end() && ids->is_array())
            take_tokens(upstream, *ids, choice, delta, observer);
        else if (upstream.contains("text") && upstream["text"].is_string())
            choice.take_text(upstream["text"].get<std::string>(), delta);
        usage.completion_tokens += static_cast<int64_t>(delta.tokens.size());
        const auto reason = upstream_finish_reason(upstream.value("finish_reason", nlohmann::json()));
        if (choice.finished() && delta.finish && !reason) ended_here = true;
        if (reason) choice.end(*reason, delta);
        event.deltas.push_back(std::move(delta));
    }
    return event;
}

bool names_a_foreign_token(const nlohmann::json& chunk, int64_t vocab_size) {
    const auto found = chunk.find("choices");
    if (found == chunk.end() || !found->is_array()) return false;
    for (const nlohmann::json& upstream : *found) {
        const auto ids = upstream.find("token_ids");
        if (ids == upstream.end() || !ids->is_array()) continue;
        for (const nlohmann::json& id : *ids)
            if (id.is_number() && !(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size))
                return true;
    }
    return false;
}

void read_usage(const nlohmann::json& chunk, GenerationUsage& usage) {
    const auto found = chunk.find("usage");
    if (found == chunk.end() || !found->is_object()) return;
    const auto details = found->find("prompt_tokens_details");
    if (details != found->end() && details->is_object() && details->contains("cached_tokens") &&
        (*details)["cached_tokens"].is_number_integer())
        usage.cached_tokens = (*details)["cached_tokens"].get<int64_t>();
}

}  // namespace tempered::upstream
