// What the endpoint services are given by the composition root (cli/serve_command.cpp): the model they
// serve and the operator's settings, from flags, the config file and the model (src/settings, src/edge).
#pragma once

#include <cstdint>
#include <string>

#include "edge/access_control.h"
#include "edge/request_limits.h"
#include "models/model_config.h"
#include "sampling/sampling_resolution.h"
#include "server/disaggregation.h"
#include "settings/degeneration_settings.h"
#include "settings/reasoning_settings.h"
#include "settings/tool_call_settings.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

// What the services need of the model they serve (which outlives them): the tokenizer, the shape, the
// file and its chat template. The engine holds the model itself.
struct ServedModel {
    const Tokenizer& tokenizer;
    const ModelConfig& config;
    std::string path;           // for /server_info
    std::string chat_template;  // "" when the file has none
    // False for a passthrough front without --model: its tokenizer is a stand-in (Tokenizer::bytes_only), so
    // what needs the model's own (completions, /tokenize, token ids) is refused.
    bool has_model = true;
};

struct ServiceSettings {
    std::string served_model_name;
    // Upstream passthrough (--upstream-chat, or an upstream front whose model has no chat template): chat
    // requests go to the upstream's /v1/chat/completions as they came, sampling resolved here (chat_passthrough.h).
    bool passthrough_chat = false;
    SamplingDefaultsConfig sampling;
    bool report_sampling = true;
    int64_t created = 0;                 // Unix time the model was loaded, for /v1/models
    std::string kv_cache_dtype = "f16";  // --kv-cache-dtype's spelling, for /v1/models and /server_info
    int64_t kv_bytes_per_token = 0;      // KvCacheShape::bytes_per_token, for /server_info
    // --tool-call-parser and --tool-call-validation (settings/tool_call_settings.h).
    ToolCallSettings tool_calls;
    // --degeneration-guard: loop detection for every request that does not send repetition_detection.
    DegenerationGuardSettings degeneration;
    // --reasoning-parser, --reasoning-budget, --reasoning-effort-budgets (settings/reasoning_settings.h).
    ReasoningSettings reasoning;
    // --disaggregation-mode and its transfer (outlives the services); nullptr: one server does everything.
    const Disaggregation* disaggregation = nullptr;
    // Who sent a request, for the request log and the per-client counters (outlives the services);
    // nullptr: clients are not named.
    const AccessControl* access = nullptr;
    // --max-tokens-limit, --max-prompt-tokens, --max-request-tokens, --request-timeout.
    RequestLimits limits;
};

}  // namespace tempered
