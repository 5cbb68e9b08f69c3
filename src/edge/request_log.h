// One line per finished request on stderr: plain text, or JSON with --log-format json. It holds the
// id, token counts, timings, finish reason, and the effective sampling values with their sources.
#pragma once

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace tempered {

class RequestLog {
public:
    explicit RequestLog(bool json) : json_(json) {}
    void write(const nlohmann::json& entry);
    // Start-up and shutdown messages.
    void info(const std::string& message);

private:
    bool json_;
    std::mutex mutex_;
};

}  // namespace tempered
