#include "edge/request_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string_view>

namespace tempered {
namespace {

std::string timestamp() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buffer[32];
    std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

}  // namespace

void RequestLog::write(const nlohmann::json& entry) {
    nlohmann::json line = entry;
    line["time"] = timestamp();
    std::string text;
    if (json_) {
        text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
        text = timestamp() + " request";
        for (const auto& [key, value] : entry.items())
            text += " " + key + "=" +
                    (value.is_string() ? value.get<std::string>()
                                       : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    std::lock_guard lock(mutex_);
    std::fprintf(stderr, "%s\n", text.c_str());
}

void RequestLog::info(const std::string& text) { message("info", text); }

void RequestLog::debug(const std::string& text) {
    if (debug_) message("debug", text);
}

void RequestLog::message(const char* level, const std::string& text) {
    std::lock_guard lock(mutex_);
    if (json_) {
        std::fprintf(stderr, "%s\n",
                     nlohmann::json{{"time", timestamp()}, {"level", level}, {"message", text}}
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                         .c_str());
    } else if (std::string_view(level) == "info") {
        std::fprintf(stderr, "%s %s\n", timestamp().c_str(), text.c_str());
    } else {
        std::fprintf(stderr, "%s %s %s\n", timestamp().c_str(), level, text.c_str());
    }
}

}  // namespace tempered
