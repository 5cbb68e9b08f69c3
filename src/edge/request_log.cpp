#include "edge/request_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

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

void RequestLog::info(const std::string& message) {
    std::lock_guard lock(mutex_);
    if (json_) {
        std::fprintf(stderr, "%s\n",
                     nlohmann::json{{"time", timestamp()}, {"level", "info"}, {"message", message}}
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                         .c_str());
    } else {
        std::fprintf(stderr, "%s %s\n", timestamp().c_str(), message.c_str());
    }
}

}  // namespace tempered
