// SamplingValues: a partial set of sampling parameters. One such set comes from each layer that can
// supply a value: the request, the operator's preferred defaults, the model's generation config.
// Resolution (sampling_resolution.h) takes the first layer that has each parameter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "sampling/sampling_params.h"

namespace tempered {

// Each field, with its meaning and range, is a row of sampling_params.h.
struct SamplingValues : SamplingFields<std::optional> {
    bool empty() const;
};

inline constexpr size_t kMaxDrySequenceBreakers = 64;       // strings per list
inline constexpr size_t kMaxDrySequenceBreakerBytes = 256;  // per string (dry_breakers.h uses the first 40)

// Reads a JSON object such as {"temperature": 0.6, "top_p": 0.95} (the --preferred-sampling-params flag,
// the config file). Unknown keys and out-of-range values are errors that name the key and `origin`;
// an operator's typo must not be silently ignored. A null value means "not set".
Result<SamplingValues> parse_sampling_values(const nlohmann::json& object, std::string_view origin);

// The range check of the operator's sources (the API validates requests with the same bounds, from the
// same table). Returns an error message naming `name`, or nothing when `value` is allowed.
std::optional<std::string> check_sampling_range(std::string_view name, double value);

// The shape checks of dry_sequence_breakers, shared the same way: an array of 1 to
// kMaxDrySequenceBreakers strings of at most kMaxDrySequenceBreakerBytes each (llama-server refuses an
// empty list too). Returns an error message naming the field (and the item), or nothing.
std::optional<std::string> check_dry_sequence_breakers(const nlohmann::json& value);

}  // namespace tempered
