// What the ServingMetrics tests share: one series' value read from the rendered Prometheus text.
#pragma once

#include <string>

#include "server/serving_metrics.h"

namespace tempered::testing {

// The value of `series` (its name with labels, exactly as rendered), or -1 when it is not in the text.
inline double series_value(const ServingMetrics& metrics, const std::string& series) {
    const std::string text = metrics.render();
    const size_t at = text.find("\n" + series + " ");
    return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

}  // namespace tempered::testing
