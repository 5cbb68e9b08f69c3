#include "disagg/kv_transfer_config.h"

#include <charconv>
#include <cmath>
#include <vector>

namespace tempered {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t end = text.find(separator, start);
        parts.push_back(text.substr(start, end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

std::optional<int64_t> parse_count(const std::string& text) {
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

std::optional<double> parse_seconds(const std::string& text) {
    try {
        size_t used = 0;
        double value = std::stod(text, &used);
        if (used != text.size() || !std::isfinite(value) || value < 0 || value > 3600) return std::nullopt;
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

Error bad_fault(const std::string& text) {
    return Error{"--disaggregation-fault must be pause_after_blocks:N:SECONDS or abort_after_blocks:N (got '" + text +
                 "')"};
}

}  // namespace

Result<TransferPath> parse_transfer_path(const std::string& text) {
    if (text == "auto") return TransferPath::Auto;
    if (text == "tcp") return TransferPath::Tcp;
    if (text == "shm") return TransferPath::Shm;
    return Error{"the KV transfer path must be auto, tcp or shm (got '" + text + "')"};
}

const char* transfer_path_name(TransferPath path) {
    switch (path) {
        case TransferPath::Auto: return "auto";
        case TransferPath::Tcp: return "tcp";
        case TransferPath::Shm: return "shm";
    }
    return "auto";
}

Result<TransferFault> parse_transfer_fault(const std::string& text) {
    std::vector<std::string> parts = split(text, ':');
    TransferFault fault;
    if (parts[0] == "pause_after_blocks" && parts.size() == 3) {
        auto blocks = parse_count(parts[1]);
        auto seconds = parse_seconds(parts[2]);
        if (!blocks || !seconds) return bad_fault(text);
        fault.kind = TransferFault::Kind::PauseAfterBlocks;
        fault.after_blocks = *blocks;
        fault.pause = std::chrono::milliseconds(static_cast<int64_t>(std::llround(*seconds * 1000.0)));
        return fault;
    }
    if (parts[0] == "abort_after_blocks" && parts.size() == 2) {
        auto blocks = parse_count(parts[1]);
        if (!blocks) return bad_fault(text);
        fault.kind = TransferFault::Kind::AbortAfterBlocks;
        fault.after_blocks = *blocks;
        return fault;
    }
    return bad_fault(text);
}

}  // namespace tempered
