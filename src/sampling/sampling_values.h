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

namespace tempered {

struct SamplingValues {
    std::optional<double> temperature;  // 0: greedy
    std::optional<double> top_p;
    std::optional<int64_t> top_k;  // 0: no top-k
    std::optional<double> min_p;
    std::optional<double> repetition_penalty;  // multiplicative, over prompt and output; 1: none
    std::optional<double> presence_penalty;    // additive (OpenAI), over the output
    std::optional<double> frequency_penalty;   // additive (OpenAI), over the output
    std::optional<int64_t> seed;
    // DRY (sampling/dry.h), with llama.cpp's names and meanings.
    std::optional<double> dry_multiplier;                           // >= 0; 0: off
    std::optional<double> dry_base;                                 // >= 1
    std::optional<int64_t> dry_allowed_length;                      // >= 0
    std::optional<int64_t> dry_penalty_last_n;                      // -1: the whole history; 0: off
    std::optional<std::vector<std::string>> dry_sequence_breakers;  // 1..kMaxDrySequenceBreakers strings

    bool empty() const;
};

// The parameters, in the order responses and logs list them. `seed` is last.
inline constexpr std::string_view kSamplingParamNames[] = {
    "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty", "seed"};

// DRY's numeric parameters, in the order responses list them (after the ones above, before the seed).
// They are reported only when a request's DRY is not entirely the default, so responses of servers and
// requests that never use DRY keep the keys above alone. `dry_sequence_breakers` (a list, not a number)
// is reported with them.
inline constexpr std::string_view kDrySamplingParamNames[] = {"dry_multiplier", "dry_base", "dry_allowed_length",
                                                              "dry_penalty_last_n"};
inline constexpr size_t kMaxDrySequenceBreakers = 64;       // strings per list
inline constexpr size_t kMaxDrySequenceBreakerBytes = 256;  // per string (dry_breakers.h uses the first 40)

// Reads a JSON object such as {"temperature": 0.6, "top_p": 0.95} (the --preferred-sampling-params flag,
// the config file). Unknown keys and out-of-range values are errors that name the key and `origin`;
// an operator's typo must not be silently ignored. A null value means "not set".
Result<SamplingValues> parse_sampling_values(const nlohmann::json& object, std::string_view origin);

// Range checks shared by every source (the API validates requests with the same bounds).
// Returns an error message naming `name`, or nothing when `value` is allowed.
std::optional<std::string> check_sampling_range(std::string_view name, double value);

// The shape checks of dry_sequence_breakers, shared the same way: an array of 1 to
// kMaxDrySequenceBreakers strings of at most kMaxDrySequenceBreakerBytes each (llama-server refuses an
// empty list too). Returns an error message naming the field (and the item), or nothing.
std::optional<std::string> check_dry_sequence_breakers(const nlohmann::json& value);

}  // namespace tempered
