#include "upstream/chat_chunk_reader.h"

#include "upstream/chunk_reader.h"

#include <string>
#include <string_view>

namespace tempered::upstream {
namespace {

std::string_view string_field(const nlohmann::json& object, const char* name) {
    const auto found = object.find(name);
    return found != object.end() && found->is_string() ? std::string_view(found->get_ref<const std::string&>())
                                                       : std::string_view();
}

// OpenAI's streamed calls: [{"index": i, "id": ..., "function": {"name": ..., "arguments": "..."}}, ...].
bool take_calls(const nlohmann::json& calls, UpstreamChoice& choice) {
    if (!calls.is_array()) return true;
    for (const nlohmann::json& call : calls) {
        if (!call.is_object()) continue;
        const auto index = call.find("index");
        const int64_t at = index != call.end() && index->is_number_integer() ? index->get<int64_t>() : 0;
        const auto function = call.find("function");
        if (at < 0 || function == call.end() || !function->is_object()) continue;
        if (!choice.add_call_piece(static_cast<size_t>(at), string_field(*function, "name"),
                                   string_field(*function, "arguments")))
            return false;
    }
    return true;
}

void read_counts(const nlohmann::json& chunk, GenerationUsage& usage) {
    const auto found = chunk.find("usage");
    if (found == chunk.end() || !found->is_object()) return;
    for (const auto& [name, field] :
         {std::pair{"prompt_tokens", &usage.prompt_tokens}, std::pair{"completion_tokens", &usage.completion_tokens}}) {
        const auto value = found->find(name);
        if (value != found->end() && value->is_number_integer() && value->get<int64_t>() >= 0)
            *field = value->get<int64_t>();
    }
}

}  // namespace

GenerationEvent read_chat_chunk(const nlohmann::json& chunk, std::vector<std::unique_ptr<UpstreamChoice>>& choices,
                                GenerationUsage& usage, EngineObserver* observer, bool& ended_here, bool& malformed) {
    GenerationEvent event;
    read_counts(chunk, usage);
    const auto found = chunk.find("choices");
    if (found == chunk.end() || !found->is_array()) return event;
    for (const nlohmann::json& upstream : *found) {
        if (!upstream.is_object()) continue;
        const auto index = upstream.find("index");
        const int64_t at = index != upstream.end() && index->is_number_integer() ? index->get<int64_t>() : 0;
        if (at < 0 || at >= static_cast<int64_t>(choices.size())) continue;
        UpstreamChoice& choice = *choices[static_cast<size_t>(at)];
        ChoiceDelta delta;
        delta.index = static_cast<int>(at);
        const auto message = upstream.find("delta");
        if (message != upstream.end() && message->is_object()) {
            std::string_view reasoning = string_field(*message, "reasoning_content");
            if (reasoning.empty()) reasoning = string_field(*message, "reasoning");
            choice.take_reasoning_text(reasoning, delta, observer);
            choice.take_text(string_field(*message, "content"), delta, observer);
            const auto calls = message->find("tool_calls");
            if (calls != message->end() && !take_calls(*calls, choice)) malformed = true;
        }
        const auto reason = upstream_finish_reason(upstream.value("finish_reason", nlohmann::json()));
        if (choice.finished() && delta.finish && !reason) ended_here = true;
        if (reason) choice.end(*reason, delta);
        event.deltas.push_back(std::move(delta));
    }
    return event;
}

}  // namespace tempered::upstream
