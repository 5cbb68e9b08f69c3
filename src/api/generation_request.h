// The request fields /v1/chat/completions and /v1/completions share: model, sampling knobs, length,
// stop strings, streaming, logit bias. Parsed here once; chat_request.h and completion_request.h add
// their own fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/bootstrap.h"
#include "api/errors.h"
#include "api/json_fields.h"
#include "api/repetition_detection.h"
#include "api/requested_value.h"
#include "api/response_format.h"
#include "sampling/sampling_values.h"

namespace tempered::api {

// The client's sampling values, each with whether it was omitted, null or given. Resolving them
// against operator and model defaults is src/sampling's job, not this one.
// Each field, with its range, is a row of sampling/sampling_params.h.
struct SamplingRequest : SamplingFields<RequestedValue> {};

struct StreamOptions {
    bool include_usage = false;  // a last chunk with "usage" (and "usage": null on the others)
};

struct GenerationRequest {
    std::string model;  // "" when omitted
    SamplingRequest sampling;
    RequestedValue<int64_t> max_tokens;           // chat: max_completion_tokens, else max_tokens
    std::string max_tokens_param = "max_tokens";  // the field max_tokens came from, for errors
    RequestedValue<int64_t> min_tokens;
    int n = 1;                      // choices per prompt, 1..16
    std::vector<std::string> stop;  // at most 4; empty strings are dropped
    bool stream = false;
    StreamOptions stream_options;
    std::vector<std::pair<int64_t, double>> logit_bias;  // (token id, bias in [-100, 100]), by id
    std::string user;
    bool ignore_eos = false;
    bool speculative_decoding = true;  // false: this request opts out of the server's --speculative
    ResponseFormat response_format;    // chat and completions alike
    std::optional<RepetitionDetectionParams> repetition_detection;  // validated; empty when not sent
    std::optional<Bootstrap> bootstrap;  // sgl-model-gateway's PD fields; empty when not sent
};

inline constexpr int kMaxChoices = 16;
inline constexpr size_t kMaxStopSequences = 4;

// The request's layer for sampling resolution (src/sampling/sampling_resolution.h): given values
// only (omitted and null both become "not set"); top_k -1 becomes 0, "no top-k".
SamplingValues to_sampling_values(const SamplingRequest& request);

// What validation needs to know about the model the request resolved to.
struct ModelLimits {
    int64_t vocab_size = 0;
};

// The body as a JSON object, or a 400 that says why it is not one.
ApiResult<Json> parse_json_object(std::string_view body);

// Reads the shared fields from `body`. `max_tokens_min` is 1 for chat and 0 for completions (where
// max_tokens 0 with echo scores a prompt).
FieldError parse_generation_fields(const Json& body, int64_t max_tokens_min, GenerationRequest& out);

// Checks that need the model: logit_bias token ids must be < vocab_size.
FieldError validate_generation_fields(const GenerationRequest& request, const ModelLimits& limits);

}  // namespace tempered::api
