#include "edge/client_labels.h"

namespace tempered {

std::string ClientLabels::sanitize(std::string_view header_value) {
    while (!header_value.empty() && (header_value.front() == ' ' || header_value.front() == '\t'))
        header_value.remove_prefix(1);
    while (!header_value.empty() && (header_value.back() == ' ' || header_value.back() == '\t'))
        header_value.remove_suffix(1);
    if (header_value.empty()) return std::string(kUnknown);
    std::string label;
    for (const char c : header_value.substr(0, kMaxLabelBytes)) {
        const bool printable = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
        label += printable ? c : '_';
    }
    return label;
}

std::string ClientLabels::label_for(std::string_view header_value) {
    std::string label = sanitize(header_value);
    if (label == kUnknown || label == kOther) return label;
    std::lock_guard lock(mutex_);
    if (known_.count(label)) return label;
    if (known_.size() >= capacity_) return std::string(kOther);
    known_.insert(label);
    return label;
}

}  // namespace tempered
