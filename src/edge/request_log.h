// One line per finished request on stderr: plain text, or JSON with --log-format json. It holds the
// id, token counts, timings, finish reason, and the effective sampling values with their sources.
#pragma once

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace tempered {

class RequestLog {
public:
    // `debug` (--log-level debug): debug() lines are written too.
    explicit RequestLog(bool json, bool debug = false) : json_(json), debug_(debug) {}
    void write(const nlohmann::json& entry);
    // Start-up and shutdown messages.
    void info(const std::string& message);
    // What an operator looks for when something is slow or odd (e.g. where a prompt left the prefix cache);
    // nothing without --log-level debug. Callers check debug_enabled() before building the message.
    bool debug_enabled() const { return debug_; }
    void debug(const std::string& message);

private:
    void message(const char* level, const std::string& text);

    bool json_;
    bool debug_;
    std::mutex mutex_;
};

}  // namespace tempered
