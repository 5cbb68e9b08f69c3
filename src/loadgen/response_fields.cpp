#include "loadgen/response_fields.h"

namespace tempered::loadgen {
namespace {

constexpr size_t kBodyExcerptBytes = 200;

size_t string_bytes(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get_ref<const std::string&>().size() : 0;
}

std::optional<int64_t> integer_field(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
}

size_t choice_text_bytes(const nlohmann::json& choice, Endpoint endpoint) {
    if (!choice.is_object()) return 0;
    if (endpoint == Endpoint::Completions) return string_bytes(choice, "text");
    size_t bytes = 0;
    for (const char* part : {"delta", "message"}) {
        const auto it = choice.find(part);
        if (it == choice.end() || !it->is_object()) continue;
        for (const char* key : {"content", "reasoning_content", "reasoning"}) bytes += string_bytes(*it, key);
    }
    return bytes;
}

}  // namespace

std::optional<std::string> error_message(const nlohmann::json& payload) {
    if (!payload.is_object()) return std::nullopt;
    if (const auto it = payload.find("error"); it != payload.end() && !it->is_null()) {
        if (it->is_string()) return it->get<std::string>();
        if (it->is_object() && it->contains("message") && (*it)["message"].is_string())
            return (*it)["message"].get<std::string>();
        return it->dump();
    }
    if (payload.value("object", "") == "error" && payload.contains("message") && payload["message"].is_string())
        return payload["message"].get<std::string>();
    if (const auto it = payload.find("detail"); it != payload.end())
        return it->is_string() ? it->get<std::string>() : it->dump();
    return std::nullopt;
}

PayloadContent read_payload(const nlohmann::json& payload, Endpoint endpoint) {
    PayloadContent content;
    content.error = error_message(payload);
    if (!payload.is_object()) return content;
    if (const auto it = payload.find("choices"); it != payload.end() && it->is_array())
        for (const auto& choice : *it) content.text_bytes += choice_text_bytes(choice, endpoint);
    if (const auto it = payload.find("usage"); it != payload.end() && it->is_object()) {
        content.prompt_tokens = integer_field(*it, "prompt_tokens");
        content.completion_tokens = integer_field(*it, "completion_tokens");
    }
    return content;
}

std::string describe_http_error(int status, std::string_view body) {
    std::string message;
    const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (auto from_envelope = error_message(json)) {
        message = std::move(*from_envelope);
    } else {
        message = std::string(body.substr(0, kBodyExcerptBytes));
        if (body.size() > kBodyExcerptBytes) message += "...";
        for (char& c : message)
            if (c == '\n' || c == '\r') c = ' ';
    }
    return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

}  // namespace tempered::loadgen
