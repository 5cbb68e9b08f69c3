#include "server/disaggregation.h"

namespace tempered {

Result<DisaggregationMode> parse_disaggregation_mode(const std::string& text) {
    if (text == "null" || text == "none") return DisaggregationMode::None;
    if (text == "prefill") return DisaggregationMode::Prefill;
    if (text == "decode") return DisaggregationMode::Decode;
    return Error{"--disaggregation-mode must be prefill, decode or null (got '" + text + "')"};
}

const char* disaggregation_mode_name(DisaggregationMode mode) {
    switch (mode) {
        case DisaggregationMode::None: return "null";
        case DisaggregationMode::Prefill: return "prefill";
        case DisaggregationMode::Decode: return "decode";
    }
    return "null";
}

Result<std::unique_ptr<Disaggregation>> Disaggregation::start(DisaggregationSettings settings,
                                                              TransferMetrics& metrics) {
    std::unique_ptr<Disaggregation> disaggregation(new Disaggregation(settings));
    if (settings.mode == DisaggregationMode::Prefill) {
        auto server =
            KvTransferServer::start(settings.bootstrap_host, settings.bootstrap_port, settings.transfer, metrics);
        if (!server) return Error{"--disaggregation-bootstrap-port: " + server.error().message};
        disaggregation->settings_.bootstrap_port = (*server)->port();
        disaggregation->server_ = std::move(server).value();
    } else if (settings.mode == DisaggregationMode::Decode) {
        disaggregation->client_ = std::make_unique<KvTransferClient>(settings.transfer, metrics);
    }
    return disaggregation;
}

std::optional<api::ApiError> Disaggregation::attach(const std::optional<api::Bootstrap>& bootstrap, size_t prompt,
                                                    size_t prompts, int n, GenerationOptions& options) const {
    if (!bootstrap || settings_.mode == DisaggregationMode::None) return std::nullopt;
    const auto target = bootstrap->for_prompt(prompt, prompts, n);
    if (!target)
        return api::invalid_request("bootstrap_room has " + std::to_string(bootstrap->rooms.size()) + " entries for " +
                                        std::to_string(prompts) + " prompts of " + std::to_string(n) +
                                        " choices: one per prompt or one per choice is needed.",
                                    "bootstrap_room");
    if (settings_.mode == DisaggregationMode::Prefill) {
        // The decode server draws every token; this side only has to compute the prompt.
        options.n = 1;
        options.max_tokens = 1;
        options.min_tokens = 0;
        options.kv_export = server_->open_export(target->room);
    } else {
        // Checked before anything is opened: the target comes from the request body.
        if (!settings_.allowed_prefill.allows(target->host, target->port)) {
            api::ApiError refused = api::invalid_request(
                "bootstrap_host " + target->host + ":" + std::to_string(target->port) +
                    " is not a prefill server this decode server may fetch from (--disaggregation-allowed-prefill).",
                "bootstrap_host", "bootstrap_host_not_allowed");
            refused.http_status = 403;
            return refused;
        }
        options.kv_import = client_->open_import(target->host, target->port, target->room);
    }
    return std::nullopt;
}

nlohmann::json Disaggregation::describe() const {
    nlohmann::json info = {{"disaggregation_mode", disaggregation_mode_name(settings_.mode)}};
    if (settings_.mode == DisaggregationMode::None) return info;
    if (settings_.mode == DisaggregationMode::Prefill) info["disaggregation_bootstrap_port"] = settings_.bootstrap_port;
    if (settings_.mode == DisaggregationMode::Decode)
        info["disaggregation_allowed_prefill"] = settings_.allowed_prefill.entries();
    info["disaggregation_transfer"] = transfer_path_name(settings_.transfer.path);
    info["disaggregation_timeout_seconds"] = static_cast<double>(settings_.transfer.timeout.count()) / 1000.0;
    return info;
}

}  // namespace tempered
