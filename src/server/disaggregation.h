// The server's role in prefill/decode disaggregation (`--disaggregation-mode`). Behind sgl-model-gateway's
// PD mode every request reaches both servers with a bootstrap target (api/bootstrap.h):
//   prefill: runs the prompt as one choice of one token, and the engine hands the prompt's KV to the
//            bootstrap server (src/disagg) for the decode server that claims the room; the request's
//            answer comes once the decode server has it (or is the transfer's error);
//   decode:  fetches the prompt's KV from the prefill server's bootstrap port, computes only the last
//            prompt position, and answers as a single server would.
// Requests without bootstrap fields, and every request in the default mode, run whole here.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/bootstrap.h"
#include "api/errors.h"
#include "core/result.h"
#include "disagg/kv_transfer_client.h"
#include "disagg/kv_transfer_server.h"
#include "disagg/prefill_allowlist.h"
#include "engine/generation.h"

namespace tempered {

enum class DisaggregationMode { None, Prefill, Decode };
Result<DisaggregationMode> parse_disaggregation_mode(const std::string& text);
const char* disaggregation_mode_name(DisaggregationMode mode);

struct DisaggregationSettings {
    DisaggregationMode mode = DisaggregationMode::None;
    std::string bootstrap_host = "0.0.0.0";  // where a prefill server's bootstrap port listens
    int bootstrap_port = 8998;               // SGLang's default
    KvTransferConfig transfer;
    // Decode: the prefill servers a request's bootstrap_host and bootstrap_port may name.
    PrefillAllowlist allowed_prefill = PrefillAllowlist::loopback();
};

class Disaggregation {
public:
    // Starts the bootstrap server (prefill) or the transfer client (decode); nothing for None.
    static Result<std::unique_ptr<Disaggregation>> start(DisaggregationSettings settings, TransferMetrics& metrics);

    DisaggregationMode mode() const { return settings_.mode; }
    // Gives prompt `prompt` (of `prompts`) its part in the transfer, if the request named one: a
    // bootstrap whose entries fit no prompt is the client's error.
    std::optional<api::ApiError> attach(const std::optional<api::Bootstrap>& bootstrap, size_t prompt, size_t prompts,
                                        int n, GenerationOptions& options) const;
    // How many choices a request of `n` gets here: one on the prefill side of a transfer (the decode
    // server draws them all), else n.
    int choices(const std::optional<api::Bootstrap>& bootstrap, int n) const {
        return bootstrap && settings_.mode == DisaggregationMode::Prefill ? 1 : n;
    }
    // For /server_info: the mode, and the bootstrap port and transfer path.
    nlohmann::json describe() const;

private:
    explicit Disaggregation(DisaggregationSettings settings) : settings_(std::move(settings)) {}

    DisaggregationSettings settings_;
    std::unique_ptr<KvTransferServer> server_;  // prefill
    std::unique_ptr<KvTransferClient> client_;  // decode
};

}  // namespace tempered
