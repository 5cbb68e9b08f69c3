#include "server/prefix_departure.h"

#include <algorithm>
#include <span>

#include <nlohmann/json.hpp>

namespace tempered {
namespace {

constexpr int64_t kContextTokens = 16;  // shown on each side of the departure

std::string quoted(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::function<std::string(int64_t)> prefix_departure_note(const Tokenizer& tokenizer, std::vector<int32_t> prompt) {
    return [&tokenizer, prompt = std::move(prompt)](int64_t cached) {
        const auto size = static_cast<int64_t>(prompt.size());
        cached = std::clamp<int64_t>(cached, 0, size);
        std::string note =
            "prefix cache: " + std::to_string(cached) + " of " + std::to_string(size) + " prompt tokens reused";
        if (cached == size) return note + ", the whole prompt";
        const std::span<const int32_t> tokens(prompt);
        const int64_t before = std::max<int64_t>(0, cached - kContextTokens);
        const int64_t after = std::min(size, cached + kContextTokens);
        return note + "; the prompt leaves the cache at token " + std::to_string(cached) + ": " +
               quoted(tokenizer.decode(tokens.subspan(before, cached - before))) + " | " +
               quoted(tokenizer.decode(tokens.subspan(cached, after - cached)));
    };
}

}  // namespace tempered
