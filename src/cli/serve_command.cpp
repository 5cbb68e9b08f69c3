// tempered serve: the OpenAI-compatible server. Loads the model, sizes the KV pool, starts the engine
// and the HTTP server, and on SIGTERM/SIGINT drains: stop accepting, let in-flight requests finish
// (up to --drain-timeout), exit 0.
#include <signal.h>
#include <algorithm>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/errors.h"
#include "cli/commands.h"
#include "core/allocator.h"
#include "core/allocator_trimmer.h"
#include "disagg/kv_layout.h"
#include "edge/access_control.h"
#include "edge/cors.h"
#include "edge/guarded_routes.h"
#include "edge/request_log.h"
#include "engine/draft_model_drafter.h"
#include "engine/engine.h"
#include "formats/model_fingerprint.h"
#include "hf/hf_model.h"
#include "http/http_server.h"
#include "kv/kv_block_pool.h"
#include "kv/kv_dtype_name.h"
#include "kv/kv_fp8_quality.h"
#include "metrics/allocator_metrics.h"
#include "reasoning/reasoning_parser.h"
#include "runtime/chat_template_choice.h"
#include "runtime/draft_model.h"
#include "runtime/loaded_model.h"
#include "runtime/model_names.h"
#include "server/chat_service.h"
#include "server/completion_service.h"
#include "server/disaggregation.h"
#include "server/generation_path.h"
#include "server/messages_service.h"
#include "server/model_service.h"
#include "server/probe_service.h"
#include "server/responses_service.h"
#include "server/serving_metrics.h"
#include "server/webui_routes.h"
#include "settings/degeneration_settings.h"
#include "settings/sampling_settings.h"
#include "settings/tool_call_settings.h"
#include "upstream/kind_detection.h"
#include "upstream/model_list.h"
#include "upstream/upstream_generator.h"

namespace tempered {
namespace {

struct ServeOptions {
    std::string model = kDefaultModelName;
    std::string served_model_name;
    std::string host = "127.0.0.1";
    int port = 8000;
    int threads = 0;
    int http_threads = 512;
    double malloc_trim_interval = 10.0;  // seconds; 0: never (core/allocator_trimmer.h says why)
    std::string kv_cache_dtype = "f16";
    std::string quantize = "q8_0";  // a Hugging Face directory's matrices at load
    int64_t kv_cache_tokens = 32768;
    int64_t block_size = 16;
    int max_running = 64;
    int max_queued = 256;
    int64_t max_batch_tokens = 512;
    std::string speculative = "off";  // off | ngram (speculative/ngram_drafter.h) | draft (--draft-model)
    int speculative_tokens = 4;
    std::string draft_model;  // --speculative draft: the model whose greedy drafts are verified
    // auto: twice the step the decodes alone take (bench/results/decode-stall-2026-12-07.md); milliseconds; 0: off
    std::string max_decode_stall_ms = "auto";
    size_t max_body_bytes = 32u << 20;
    size_t max_request_headers = 100;
    double drain_timeout = 30.0;
    SamplingFlags sampling;
    bool no_report_sampling = false;
    bool no_webui = false;  // --no-webui: no playground at /
    std::string log_format = "text";
    std::string log_level = "info";
    std::string tool_call_parser;      // "" = the config file's, else auto
    std::string tool_call_validation;  // "" = the config file's, else constrain
    std::string degeneration_guard;    // "" = the config file's, else flag
    std::string reasoning_parser = "auto";
    int64_t reasoning_budget = -1;  // -1: unlimited
    std::string reasoning_effort_budgets;
    std::string disaggregation_mode = "null";
    int disaggregation_bootstrap_port = 8998;
    std::string disaggregation_transfer = "auto";
    // As long as SGLang waits by default: a prefill server behind on its queue makes the decode side wait, as
    // one server would queue, rather than fail (bench/results/pd_value-2026-12-01T212539Z.md).
    double disaggregation_timeout = 300.0;
    std::vector<std::string> disaggregation_allowed_prefill = {"127.0.0.0/8", "::1", "localhost"};
    std::string disaggregation_fault;  // tests only: a transfer that pauses or aborts on purpose
    // Slow and idle clients (http/http_server.h says why these defaults).
    double header_timeout = 10.0;
    double body_timeout = 30.0;
    double keep_alive_timeout = 30.0;
    double stream_stall_timeout = 30.0;
    size_t max_connections_per_client = 0;
    int client_ipv6_prefix = 64;
    std::vector<std::string> api_keys;  // --api-key, repeatable
    std::string api_key_file;
    bool protect_all = false;
    std::string client_label_header;
    int max_client_labels = 32;
    std::string allowed_origins;     // "" CORS off
    std::string chat_template_file;  // "" = the model file's own template
    // Per-request bounds (edge/request_limits.h); 0: off. No timeout by default, as vLLM: a long
    // answer on a CPU can take many minutes, and only the operator knows how long is too long.
    int64_t max_tokens_limit = 0;
    size_t responses_store_size = 1024;  // --responses-store-size
    int64_t responses_store_ttl = 3600;  // --responses-store-ttl, seconds
    int64_t max_prompt_tokens = 0;
    int64_t max_request_tokens = 0;
    double request_timeout = 0;
    // Upstream mode (upstream/upstream_generator.h): another engine draws; "" for our own engine.
    std::string upstream;
    std::string upstream_model;     // "" = the upstream's first /v1/models id
    std::string upstream_api_key;   // "" = TEMPERED_UPSTREAM_API_KEY, else none
    double upstream_timeout = 600;  // seconds
    std::string upstream_kind = "auto";
    std::string upstream_ca_file;       // https: the CA its certificate is checked against; "": the system's
    std::string upstream_api_key_file;  // the key sent upstream, the file's first line
    bool model_given = false;           // --model was on the command line (not the default)
    bool upstream_chat = false;         // chat requests pass through to the upstream's /v1/chat/completions
};

// --upstream and its flags, resolved (the model name it is sent, its kind), its model named in the log (never
// its key). An error names the flag or says why the upstream could not be asked for its model.
struct ResolvedUpstream {
    upstream::UpstreamSettings settings;
    upstream::UpstreamAddress address;
};

// --upstream-api-key, else --upstream-api-key-file's first line, else TEMPERED_UPSTREAM_API_KEY; "" for none.
Result<std::string> upstream_api_key(const ServeOptions& options) {
    if (!options.upstream_api_key.empty()) return options.upstream_api_key;
    if (!options.upstream_api_key_file.empty()) {
        std::ifstream file(options.upstream_api_key_file);
        std::string key;
        if (!file || !std::getline(file, key))
            return Error{"--upstream-api-key-file: cannot read " + options.upstream_api_key_file};
        while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
        if (key.empty()) return Error{"--upstream-api-key-file " + options.upstream_api_key_file + ": holds no key"};
        return key;
    }
    const char* from_environment = std::getenv("TEMPERED_UPSTREAM_API_KEY");
    return std::string(from_environment ? from_environment : "");
}

Result<ResolvedUpstream> resolve_upstream(const ServeOptions& options, RequestLog& log) {
    auto address = upstream::parse_upstream_url(options.upstream);
    if (!address) return address.error();
    if (!options.upstream_ca_file.empty() && !std::filesystem::is_regular_file(options.upstream_ca_file))
        return Error{"--upstream-ca-file: no such file: " + options.upstream_ca_file};
    address->ca_file = options.upstream_ca_file;
    if (!(options.upstream_timeout >= 1 && options.upstream_timeout <= 86400))
        return Error{"--upstream-timeout must be in [1, 86400] seconds"};
    upstream::UpstreamSettings settings;
    settings.url = options.upstream;
    auto key = upstream_api_key(options);
    if (!key) return key.error();
    settings.api_key = std::move(key).value();
    settings.timeout = std::chrono::seconds(static_cast<int64_t>(options.upstream_timeout));
    settings.max_running = options.max_running + options.max_queued;
    settings.model = options.upstream_model;
    if (settings.model.empty()) {
        auto model = upstream::first_upstream_model(*address, settings.api_key, settings.timeout);
        if (!model) return model.error();
        settings.model = *model;
    }
    if (options.upstream_kind == "auto") {
        settings.kind = upstream::detect_upstream_kind(*address, settings.api_key,
                                                       std::min(settings.timeout, std::chrono::seconds(5)));
    } else {
        auto kind = upstream::parse_upstream_kind(options.upstream_kind);
        if (!kind) return kind.error();
        settings.kind = *kind;
    }
    log.info("upstream: " + address->scheme_host_port + address->path_prefix + ", model " + settings.model + ", kind " +
             upstream::upstream_kind_name(settings.kind) + (options.upstream_kind == "auto" ? " (detected)" : "") +
             (settings.api_key.empty() ? "" : ", with an API key"));
    return ResolvedUpstream{std::move(settings), std::move(*address)};
}

// A passthrough front without --model: no file, no template, a stand-in tokenizer (server/service_settings.h's
// ServedModel::has_model says what that leaves out).
std::unique_ptr<LoadedModel> no_model_bundle() {
    auto bundle = std::make_unique<LoadedModel>();
    bundle->tokenizer = std::make_unique<Tokenizer>(Tokenizer::bytes_only());
    return bundle;
}

// The slow-client flags checked and put into the HTTP server's options; an error names the flag.
Status apply_client_timeout_flags(const ServeOptions& options, http::HttpServerOptions& http_options) {
    using Seconds = std::chrono::duration<double>;
    auto to_ms = [](double seconds) { return std::chrono::duration_cast<std::chrono::milliseconds>(Seconds(seconds)); };
    const std::pair<const char*, double> timeouts[] = {{"--header-timeout", options.header_timeout},
                                                       {"--body-timeout", options.body_timeout},
                                                       {"--keep-alive-timeout", options.keep_alive_timeout},
                                                       {"--stream-stall-timeout", options.stream_stall_timeout}};
    for (const auto& [flag, seconds] : timeouts) {
        if (!(seconds >= 0.001 && seconds <= 86400))
            return Error{std::string(flag) + " must be in [0.001, 86400] seconds"};
    }
    http_options.header_timeout = to_ms(options.header_timeout);
    http_options.body_timeout = to_ms(options.body_timeout);
    // httplib keeps this one in whole seconds; a fraction rounds up.
    http_options.keep_alive_timeout = std::chrono::ceil<std::chrono::seconds>(Seconds(options.keep_alive_timeout));
    http_options.write_timeout = to_ms(options.stream_stall_timeout);
    http_options.max_connections_per_client = options.max_connections_per_client;
    http_options.client_ipv6_prefix = options.client_ipv6_prefix;
    return Ok{};
}

// The API keys (flags, key file, TEMPERED_API_KEY), client naming and CORS flags checked; an error
// names the flag, never a key.
Result<std::pair<AccessSettings, CorsPolicy>> access_flags(const ServeOptions& options) {
    const char* environment_key = std::getenv("TEMPERED_API_KEY");
    auto keys = load_api_keys({options.api_keys, options.api_key_file, environment_key ? environment_key : ""});
    if (!keys) return keys.error();
    if (options.protect_all && keys->empty())
        return Error{"--protect-all needs an API key (--api-key, --api-key-file or TEMPERED_API_KEY)"};
    auto cors = CorsPolicy::parse(options.allowed_origins);
    if (!cors) return cors.error();
    AccessSettings access{std::move(keys).value(), options.protect_all, options.client_label_header,
                          static_cast<size_t>(options.max_client_labels)};
    return std::pair{std::move(access), std::move(cors).value()};
}

// The per-request limit flags, as the services' RequestLimits.
RequestLimits request_limit_flags(const ServeOptions& options) {
    return {options.max_tokens_limit, options.max_prompt_tokens, options.max_request_tokens, options.request_timeout};
}

// The --disaggregation-* flags checked; the layout both servers of a pair must share comes from the KV
// cache's shape and the model file.
Result<DisaggregationSettings> disaggregation_flags(const ServeOptions& options, const KvCacheShape& shape,
                                                    const GgufFile& file) {
    DisaggregationSettings settings;
    auto mode = parse_disaggregation_mode(options.disaggregation_mode);
    if (!mode) return mode.error();
    settings.mode = *mode;
    settings.bootstrap_host = options.host;
    settings.bootstrap_port = options.disaggregation_bootstrap_port;
    auto path = parse_transfer_path(options.disaggregation_transfer);
    if (!path) return Error{"--disaggregation-transfer: " + path.error().message};
    settings.transfer.path = *path;
    if (!(options.disaggregation_timeout > 0 && options.disaggregation_timeout <= 3600))
        return Error{"--disaggregation-timeout must be in (0, 3600] seconds"};
    settings.transfer.timeout = std::chrono::milliseconds(static_cast<int64_t>(options.disaggregation_timeout * 1000));
    auto allowed = PrefillAllowlist::parse(options.disaggregation_allowed_prefill);
    if (!allowed) return allowed.error();
    settings.allowed_prefill = std::move(allowed).value();
    if (!options.disaggregation_fault.empty()) {
        auto fault = parse_transfer_fault(options.disaggregation_fault);
        if (!fault) return fault.error();
        settings.transfer.fault = *fault;
    }
    settings.transfer.layout = kv_layout_of(shape, model_fingerprint(file));
    return settings;
}

// The reasoning flags checked and put into the services' settings; an error names the flag.
Status apply_reasoning_flags(const ServeOptions& options, ServiceSettings& settings) {
    const std::string& parser = options.reasoning_parser;
    if (parser != "auto" && parser != "none" && !reasoning::parser_from_name(parser))
        return Error{"--reasoning-parser must be auto, deepseek_r1, harmony or none (got '" + parser + "')"};
    settings.reasoning.parser = parser;
    if (options.reasoning_budget >= 0) settings.reasoning.budget = options.reasoning_budget;
    auto budgets = parse_effort_budgets(options.reasoning_effort_budgets);
    if (!budgets) return budgets.error();
    settings.reasoning.effort_budgets = *budgets;
    return Ok{};
}

// The registry's family names in alphabetical order, the last one joined by `last` ("a, b or c"), so the
// flag's help and error texts name every family without a list of their own.
// The two tool-call settings (flag, else config file, else default) checked and put into the services'
// settings; an error names the flag.
Status apply_tool_call_flags(const ServeOptions& options, const SamplingSettings& config, ServiceSettings& settings) {
    auto chosen = tool_call_settings(options.tool_call_parser, options.tool_call_validation, config.tool_call_parser,
                                     config.tool_call_validation);
    if (!chosen) return chosen.error();
    settings.tool_calls = std::move(chosen).value();
    return Ok{};
}

std::string default_served_name(const std::string& model_flag) {
    std::error_code ignored;
    if (std::filesystem::is_directory(model_flag, ignored)) {  // a Hugging Face directory: its name
        std::filesystem::path directory(model_flag);
        if (!directory.has_filename()) directory = directory.parent_path();  // "dir/"
        return directory.filename().string();
    }
    if (!std::filesystem::is_regular_file(model_flag, ignored)) return model_flag;  // a known short name
    return std::filesystem::path(model_flag).stem().string();
}

// Blocks SIGTERM and SIGINT in every thread (call before starting any), so that one sigwait() sees them.
sigset_t block_termination_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return signals;
}

// The KV pool --kv-cache-tokens asks for, logged with its size.
// --max-decode-stall-ms: "auto", or milliseconds from 0 (off) to a minute.
Result<double> decode_stall_seconds(const std::string& flag) {
    if (flag == "auto") return kAutoDecodeStall;
    char* end = nullptr;
    const double milliseconds = std::strtod(flag.c_str(), &end);
    if (flag.empty() || *end != '\0' || !(milliseconds >= 0 && milliseconds <= 60000))
        return Error{"--max-decode-stall-ms must be auto or milliseconds from 0 (off) to 60000, not '" + flag + "'"};
    return milliseconds / 1000.0;
}

// --speculative draft: the draft model, a KV pool of its own as large in positions as the target's, and the
// drafter over them; null for the other modes.
struct DraftModelSetup {
    std::unique_ptr<LoadedModel> bundle;
    std::unique_ptr<KvBlockPool> kv;
    DraftModelDrafter drafter;
};

Result<std::unique_ptr<DraftModelSetup>> draft_model_drafter(const ServeOptions& options, const LoadedModel& target,
                                                             DType directory_weights, DType kv_type, RequestLog& log) {
    if (options.speculative != "draft") {
        if (!options.draft_model.empty()) return Error{"--draft-model needs --speculative draft"};
        return std::unique_ptr<DraftModelSetup>();
    }
    if (options.draft_model.empty()) return Error{"--speculative draft needs --draft-model"};
    auto bundle = load_draft_model(options.draft_model, target, directory_weights);
    if (!bundle) return bundle.error();
    const KvCacheShape shape = kv_cache_shape((*bundle)->config, kv_type, options.block_size);
    auto kv = KvBlockPool::for_positions(shape, options.kv_cache_tokens);
    if (!kv) return Error{"--draft-model: " + kv.error().message};
    log.info("draft model: " + (*bundle)->path + " (" + std::to_string((*bundle)->config.layer_count) +
             " layers), up to " + std::to_string(options.speculative_tokens) + " greedy drafts per step");
    Model& model = *(*bundle)->model;
    KvBlockPool& pool = **kv;
    return std::unique_ptr<DraftModelSetup>(new DraftModelSetup{
        std::move(bundle).value(), std::move(kv).value(), DraftModelDrafter(model, pool, options.max_batch_tokens)});
}

Result<std::unique_ptr<KvBlockPool>> create_kv_pool(const ServeOptions& options, const KvCacheShape& shape,
                                                    RequestLog& log) {
    // The memory of kv_cache_tokens positions in every layer; sliding-window layers make it hold more.
    const int64_t blocks = KvBlockPool::blocks_for_positions(shape, options.kv_cache_tokens);
    auto kv = KvBlockPool::create(shape, blocks);
    if (!kv) return kv.error();
    const double kv_mib = static_cast<double>(blocks * KvBlockPool::pool_block_bytes(shape)) / (1 << 20);
    const KvLayerGroups groups = kv_layer_groups(shape);
    const std::string layers_per_block =
        groups.group_count() == 1 ? "" : " x " + std::to_string(groups.layers_per_group) + " layers";
    log.info("KV cache: " + options.kv_cache_dtype + ", " + std::to_string(blocks) + " blocks of " +
             std::to_string(options.block_size) + " tokens" + layers_per_block + " (" +
             std::to_string(static_cast<int64_t>(kv_mib)) + " MiB)");
    return kv;
}

// The services' settings from the flags, the config file and the model; what was chosen is logged.
Result<ServiceSettings> service_settings(const ServeOptions& options, const LoadedModel& bundle,
                                         const AccessControl& access, RequestLog& log) {
    auto sampling = load_sampling_settings(options.sampling, bundle.file.get());
    if (!sampling) return sampling.error();
    ServiceSettings settings;
    settings.served_model_name =
        options.served_model_name.empty() ? default_served_name(options.model) : options.served_model_name;
    settings.sampling = sampling->config;
    settings.report_sampling = !options.no_report_sampling;
    settings.created = static_cast<int64_t>(std::time(nullptr));
    settings.access = &access;
    settings.limits = request_limit_flags(options);
    if (auto applied = apply_tool_call_flags(options, *sampling, settings); !applied) return applied.error();
    auto guard = choose_degeneration_guard(options.degeneration_guard, sampling->degeneration_guard);
    if (!guard) return guard.error();
    settings.degeneration = std::move(guard).value();
    settings.degeneration.build_vocabulary_tables(*bundle.tokenizer);
    log.info("degeneration guard: " + settings.degeneration.describe().dump());
    if (auto applied = apply_reasoning_flags(options, settings); !applied) return applied.error();
    for (const auto& note : sampling->notes) log.info(note);
    log.info("sampling defaults for requests that set nothing: " +
             describe_sampling_defaults(settings.sampling).dump());
    if (settings.sampling.policy) log.info("sampling policy: " + settings.sampling.policy->to_json().dump());
    return settings;
}

// Waits for SIGTERM or SIGINT, then drains: new requests are refused, those in flight get up to
// --drain-timeout to finish, and the HTTP server stops once their answers have reached their clients.
void serve_until_signal(const ServeOptions& options, const sigset_t& signals, GenerationPath& path, Generator& engine,
                        http::HttpServer& server, RequestLog& log) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    log.info(std::string("received ") + (signal_number == SIGTERM ? "SIGTERM" : "SIGINT") + ", draining");
    path.begin_drain();
    engine.begin_drain();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.drain_timeout);
    while (!engine.idle() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!engine.idle()) log.info("drain timeout: requests still running are ended with an error");
    // Streams already finished in the engine still have to reach their clients: stop() lets them.
    server.stop();
    log.info("stopped");
}

int fail(const Error& error) {
    std::fprintf(stderr, "tempered serve: %s\n", error.message.c_str());
    return 1;
}

int serve(const ServeOptions& options) {
    RequestLog log(options.log_format == "json", options.log_level == "debug");
    if (options.log_format != "text" && options.log_format != "json")
        return fail(Error{"--log-format must be text or json"});
    auto kv_type = parse_kv_dtype(options.kv_cache_dtype);
    if (!kv_type) return fail(kv_type.error());
    if (*kv_type == DType::F8_E4M3) log.info(fp8_kv_warning());
    auto access_settings = access_flags(options);
    if (!access_settings) return fail(access_settings.error());
    const AccessControl access(std::move(access_settings->first));
    const CorsPolicy& cors = access_settings->second;
    const sigset_t signals = block_termination_signals();
    const bool upstream_mode = !options.upstream.empty();
    if (upstream_mode && options.disaggregation_mode != "null")
        return fail(Error{"--disaggregation-mode needs our own engine; with --upstream, disaggregate upstream"});
    // An upstream front without --model passes chat through with no model of its own (no_model_bundle): the
    // default model's tokenizer and template would render another model's prompts wrongly.
    const bool own_model = !upstream_mode || options.model_given;
    if (!own_model && !options.chat_template_file.empty())
        return fail(Error{"--chat-template needs --model (the template's tokens are the model's)"});
    std::optional<ResolvedUpstream> upstream_target;
    if (upstream_mode) {
        auto resolved = resolve_upstream(options, log);
        if (!resolved) return fail(resolved.error());
        upstream_target = std::move(resolved).value();
    }
    log.info(!own_model      ? std::string("no --model: chat requests pass through to the upstream")
             : upstream_mode ? "loading the tokenizer and chat template of " + options.model + " (upstream mode)"
                             : "loading " + options.model);
    const auto directory_weights = directory_weight_type(options.quantize);
    if (!directory_weights) return fail(directory_weights.error());
    if (own_model && is_hf_directory(options.model) && !upstream_mode)
        log.info("weights: converted to " + options.quantize + " at load (--quantize)");
    auto loaded = own_model ? load_model_bundle(options.model, options.threads,
                                                upstream_mode ? ModelParts::Tokenizer : ModelParts::Everything,
                                                *directory_weights)
                            : Result<std::unique_ptr<LoadedModel>>(no_model_bundle());
    if (!loaded) return fail(loaded.error());
    LoadedModel& bundle = **loaded;
    auto template_note = choose_chat_template(bundle, options.chat_template_file);
    if (!template_note) return fail(template_note.error());
    if (!options.chat_template_file.empty()) log.info("chat template: " + options.chat_template_file);
    if (!template_note->empty()) log.info(*template_note);

    if (options.upstream_chat && !upstream_mode) return fail(Error{"--upstream-chat needs --upstream"});
    const ModelConfig& config = bundle.config;
    // An upstream keeps its own KV cache: here its shape is empty (0 bytes a token).
    const KvCacheShape shape = upstream_mode ? KvCacheShape{} : kv_cache_shape(config, *kv_type, options.block_size);
    auto settings = service_settings(options, bundle, access, log);
    if (!settings) return fail(settings.error());
    if (!own_model && options.served_model_name.empty()) settings->served_model_name = upstream_target->settings.model;
    // Passthrough (server/chat_passthrough.h): asked for, or the only way when the model has no template.
    settings->passthrough_chat = upstream_mode && (options.upstream_chat || bundle.chat_template.empty());
    if (settings->passthrough_chat && settings->degeneration.guard.action == DegenerationAction::Resample)
        return fail(
            Error{"--degeneration-guard resample needs the rendered upstream mode (the front continues a "
                  "prompt it rendered); with passthrough use flag or stop"});
    settings->kv_cache_dtype = options.kv_cache_dtype;
    settings->kv_bytes_per_token = shape.bytes_per_token();
    ServingMetrics metrics(settings->served_model_name, options.kv_cache_dtype);
    metrics.set_kv_bytes_per_token(shape.bytes_per_token());
    TransferMetrics transfer_metrics(metrics.registry());
    auto disaggregation_settings = upstream_mode ? Result<DisaggregationSettings>(DisaggregationSettings{})
                                                 : disaggregation_flags(options, shape, *bundle.file);
    if (!disaggregation_settings) return fail(disaggregation_settings.error());
    // Before the engine, so that it outlives every request holding one of its transfers.
    auto disaggregation = Disaggregation::start(*disaggregation_settings, transfer_metrics);
    if (!disaggregation) return fail(disaggregation.error());
    settings->disaggregation = disaggregation->get();
    if ((*disaggregation)->mode() != DisaggregationMode::None)
        log.info("disaggregation: " + (*disaggregation)->describe().dump());
    // Our engine, or in upstream mode the generator that drives another engine.
    std::unique_ptr<KvBlockPool> kv;               // our engine's; an upstream keeps its own
    std::unique_ptr<DraftModelSetup> draft_model;  // --speculative draft; outlives the engine
    std::unique_ptr<upstream::UpstreamMetrics> upstream_metrics;
    std::unique_ptr<Generator> generator;
    if (!upstream_mode) {
        auto pool = create_kv_pool(options, shape, log);
        if (!pool) return fail(pool.error());
        kv = std::move(pool).value();
        const auto decode_stall = decode_stall_seconds(options.max_decode_stall_ms);
        if (!decode_stall) return fail(decode_stall.error());
        auto draft = draft_model_drafter(options, bundle, *directory_weights, *kv_type, log);
        if (!draft) return fail(draft.error());
        draft_model = std::move(draft).value();
        EngineOptions engine_options{options.max_running,
                                     options.max_queued,
                                     options.max_batch_tokens,
                                     options.speculative == "off" ? 0 : options.speculative_tokens,
                                     draft_model ? &draft_model->drafter : nullptr,
                                     *decode_stall};
        generator = std::make_unique<Engine>(*bundle.model, *bundle.tokenizer, *kv, engine_options, &metrics);
    } else {
        upstream_metrics = std::make_unique<upstream::UpstreamMetrics>(metrics.registry());
        generator = std::make_unique<upstream::UpstreamGenerator>(std::move(upstream_target->settings),
                                                                  std::move(upstream_target->address),
                                                                  *bundle.tokenizer, &metrics, upstream_metrics.get());
    }
    Generator& engine = *generator;
    metrics.watch_engine([&engine] { return engine.stats(); });
    AllocatorTrimmer trimmer(std::chrono::milliseconds(static_cast<int64_t>(options.malloc_trim_interval * 1000)));
    char interval[32];
    std::snprintf(interval, sizeof(interval), "every %g s", options.malloc_trim_interval);
    log.info("allocator: " + allocator_name() + ", free pages given back " +
             (options.malloc_trim_interval > 0 ? interval : "never (--malloc-trim-interval 0)"));
    metrics::watch_allocator(metrics.registry(), &trimmer);
    // The endpoint services, each over the one generation path.
    GenerationPath path({*bundle.tokenizer, config, bundle.path, bundle.chat_template, own_model}, engine, metrics, log,
                        *settings);
    ChatService chat(path);
    ResponseStore response_store({options.responses_store_size, std::chrono::seconds(options.responses_store_ttl)});
    ResponsesService responses(chat, response_store);
    MessagesService messages(chat);
    CompletionService completions(path);
    ModelService models(path);
    ProbeService probes(path);

    http::HttpServerOptions http_options;
    http_options.host = options.host;
    http_options.port = options.port;
    http_options.threads = options.http_threads;
    http_options.max_body_bytes = options.max_body_bytes;
    http_options.max_header_count = options.max_request_headers;
    if (auto applied = apply_client_timeout_flags(options, http_options); !applied) return fail(applied.error());
    http::HttpServer server(http_options);
    // The Messages API's routes (messages_service.h) answer in Anthropic's envelope, these errors included.
    // An allowed origin gets its CORS headers on these errors too, or a browser sees an opaque failure.
    server.set_error_renderer([&cors](int status, std::string_view message, const http::HttpRequest& request) {
        const std::string_view path = request.path;
        const bool anthropic = path == "/v1/messages" || path.starts_with("/v1/messages/");
        http::HttpResponse response = api::http_error_response(
            status, message, anthropic ? api::ErrorEnvelope::Anthropic : api::ErrorEnvelope::OpenAI);
        cors.decorate(request, response);
        return response;
    });
    GuardedRoutes routes(server, access, cors);
    chat.register_routes(routes);
    responses.register_routes(routes);
    messages.register_routes(routes);
    completions.register_routes(routes);
    models.register_routes(routes);
    probes.register_routes(routes);
    if (!options.no_webui) register_webui_routes(routes);
    routes.add_preflight_routes();
    log.info(access.describe());
    if (cors.enabled()) log.info("CORS: allowed origins " + options.allowed_origins);
    if (auto started = server.start(); !started) return fail(started.error());
    log.info("serving " + settings->served_model_name + " on http://" + options.host + ":" +
             std::to_string(server.port()) + (options.no_webui ? "" : " (web playground at /)"));
    serve_until_signal(options, signals, path, engine, server, log);
    return 0;
}

// The flags of access_flags().
void add_access_options(CLI::App& command, ServeOptions& options) {
    command.add_option("--api-key", options.api_keys,
                       "a key clients send as 'Authorization: Bearer KEY' (repeatable; also TEMPERED_API_KEY); "
                       "with any key, all but the probe endpoints (/health, /metrics, ...) need one");
    command.add_option("--api-key-file", options.api_key_file,
                       "a file of keys, one a line: KEY or NAME KEY (the name labels the client); # comments");
    command.add_flag("--protect-all", options.protect_all, "the probe endpoints need a key too");
    command.add_option("--client-label-header", options.client_label_header,
                       "without keys: the header whose value names the client in the log and metrics, "
                       "e.g. X-Client-Name or User-Agent");
    command
        .add_option("--max-client-labels", options.max_client_labels,
                    "distinct client labels kept; later ones count as 'other'")
        ->check(CLI::Range(0, 4096))
        ->capture_default_str();
    command.add_option("--allowed-origins", options.allowed_origins,
                       "CORS: * or comma-separated origins (https://app.example.com) browsers may call from");
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<ServeOptions>();
    auto* command = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
    command->add_option("--model,-m", options->model, "a .gguf path or a known model name")
        ->capture_default_str()
        ->each([options](const std::string&) { options->model_given = true; });
    command->add_option("--upstream", options->upstream,
                        "another OpenAI-compatible engine's base URL (SGLang, vLLM, llama-server, tempered): it "
                        "draws the tokens; this server renders the prompt and governs sampling, tool calls, "
                        "stops and the loop guard");
    command->add_option("--upstream-model", options->upstream_model,
                        "the model name sent upstream (default: the upstream's first /v1/models id)");
    command->add_option("--upstream-api-key", options->upstream_api_key,
                        "the bearer key sent upstream (also TEMPERED_UPSTREAM_API_KEY); never logged");
    command
        ->add_option("--upstream-kind", options->upstream_kind,
                     "auto, tempered, vllm, sglang, llamacpp or openai: which fields the upstream takes "
                     "(auto asks each engine's own info endpoint)")
        ->capture_default_str();
    command
        ->add_option("--upstream-timeout", options->upstream_timeout,
                     "seconds to connect to the upstream, and the longest wait for its next bytes")
        ->capture_default_str();
    command->add_option("--upstream-api-key-file", options->upstream_api_key_file,
                        "a file whose first line is the key sent upstream; never logged");
    command->add_option("--upstream-ca-file", options->upstream_ca_file,
                        "a PEM file of the CA that signed an https upstream's certificate (default: the system's)");
    command->add_flag("--upstream-chat", options->upstream_chat,
                      "chat requests pass through to the upstream's /v1/chat/completions (it renders them); the "
                      "default when the model has no chat template");
    command->add_option("--served-model-name", options->served_model_name,
                        "the model id clients send (default: the short name or the file stem)");
    command->add_option("--host", options->host)->capture_default_str();
    command->add_option("--port", options->port)->check(CLI::Range(0, 65535))->capture_default_str();
    command->add_option("--threads", options->threads, "compute threads; 0: every core")->capture_default_str();
    command->add_option("--http-threads", options->http_threads, "connections served at once")
        ->check(CLI::Range(4, 65536))
        ->capture_default_str();
    command
        ->add_option("--malloc-trim-interval", options->malloc_trim_interval,
                     "seconds between giving the allocator's free pages back to the system; 0: never")
        ->check(CLI::Range(0.0, 86400.0))
        ->capture_default_str();
    command
        ->add_option("--quantize", options->quantize,
                     "a Hugging Face directory's matrices at load: q8_0 (the integer kernels; fastest), f16, bf16 or "
                     "f32; a GGUF keeps its own types")
        ->capture_default_str();
    command
        ->add_option("--speculative", options->speculative,
                     "speculative decoding: off, ngram (drafts looked up in the request's own tokens, verified "
                     "in the same step; output identical to off), or draft (a draft model's, --draft-model)")
        ->check(CLI::IsMember({"off", "ngram", "draft"}))
        ->capture_default_str();
    command->add_option("--draft-model", options->draft_model,
                        "with --speculative draft: a smaller model with the same vocabulary (a name or path as "
                        "--model takes) whose greedy drafts are verified; output identical to off");
    command->add_option("--speculative-tokens", options->speculative_tokens, "drafts verified per step at most")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    command
        ->add_option("--max-decode-stall-ms", options->max_decode_stall_ms,
                     "while requests decode, cut prompt chunks so a step is predicted to take at most this long (from "
                     "the measured step times); auto: twice the step the decodes alone take; 0: off")
        ->capture_default_str();
    command
        ->add_option("--kv-cache-dtype", options->kv_cache_dtype,
                     "f16, bf16, f32 or fp8 (E4M3, about half f16's memory; costs quality: see the warning)")
        ->capture_default_str();
    command->add_option("--kv-cache-tokens", options->kv_cache_tokens, "KV cache size in tokens")
        ->check(CLI::Range(int64_t{16}, int64_t{1} << 32))
        ->capture_default_str();
    command->add_option("--block-size", options->block_size, "tokens per KV block")
        ->check(CLI::Range(int64_t{1}, int64_t{1024}))
        ->capture_default_str();
    command->add_option("--max-running", options->max_running, "requests decoding at once")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    command->add_option("--max-queued", options->max_queued, "requests waiting beyond those; then 429")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    command->add_option("--max-batch-tokens", options->max_batch_tokens, "tokens per forward step")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
        ->capture_default_str();
    command
        ->add_option("--max-request-headers", options->max_request_headers,
                     "requests with more headers get 431 and the connection closes")
        ->capture_default_str()
        ->check(CLI::Range(size_t{8}, size_t{100000}));
    command->add_option("--max-body-bytes", options->max_body_bytes, "larger request bodies get 413")
        ->check(CLI::Range(size_t{1}, size_t{1} << 32))
        ->capture_default_str();
    command
        ->add_option("--header-timeout", options->header_timeout,
                     "seconds a request's line and headers may take to arrive; then 408 and close")
        ->capture_default_str();
    command->add_option("--body-timeout", options->body_timeout, "seconds a request body may take to arrive")
        ->capture_default_str();
    command->add_option("--keep-alive-timeout", options->keep_alive_timeout, "seconds an idle connection stays open")
        ->capture_default_str();
    command
        ->add_option("--stream-stall-timeout", options->stream_stall_timeout,
                     "seconds a client may read nothing of its response before it is cut and its request "
                     "cancelled")
        ->capture_default_str();
    command
        ->add_option("--max-connections-per-client", options->max_connections_per_client,
                     "open connections per client IP; more get 429 (0: no limit)")
        ->capture_default_str();
    command
        ->add_option("--client-ipv6-prefix", options->client_ipv6_prefix,
                     "an IPv6 client is counted by this prefix of its address (a host holds a whole /64)")
        ->capture_default_str()
        ->check(CLI::Range(1, 128));
    command->add_option("--drain-timeout", options->drain_timeout, "seconds to finish requests on SIGTERM")
        ->check(CLI::Range(0.0, 86400.0))
        ->capture_default_str();
    command->add_option("--preferred-sampling-params", options->sampling.preferred_json,
                        "JSON: values for parameters a request omits, e.g. '{\"temperature\":0.6}'");
    command->add_option("--sampling-defaults", options->sampling.defaults_mode,
                        "model: fall back to the model's generation config (default); openai: skip it");
    command->add_option("--generation-config", options->sampling.generation_config,
                        "a generation_config.json (default: the one beside the model file, if any)");
    command->add_option("--sampling-policy", options->sampling.policy_json,
                        "JSON: rules applied to every request, e.g. '{\"temperature\":{\"min\":0.3}}'");
    command->add_option("--config", options->sampling.config_file,
                        "a JSON file with the sampling settings (and tool_call_parser, tool_call_validation, "
                        "degeneration_guard)");
    command->add_flag("--no-report-sampling", options->no_report_sampling,
                      "do not add the \"sampling\" report to responses");
    command->add_flag("--no-webui", options->no_webui, "serve no web playground at /");
    command->add_option("--log-format", options->log_format, "text or json")->capture_default_str();
    command
        ->add_option("--log-level", options->log_level,
                     "info, or debug: also where each chat prompt leaves the prefix cache")
        ->check(CLI::IsMember({"info", "debug"}))
        ->capture_default_str();
    command->add_option("--tool-call-parser", options->tool_call_parser,
                        "how tool calls are read from chat answers: auto (from the chat template; default), " +
                            tool_call_family_names(", ") + " or none");
    command->add_option("--tool-call-validation", options->tool_call_validation,
                        "off: return calls as parsed; flag: report undeclared or invalid calls instead of "
                        "returning them; constrain (default): also constrain generation (for now as flag)");
    command->add_option("--degeneration-guard", options->degeneration_guard,
                        "what a loop in the output does: flag (default), stop, resample or off; or a JSON object "
                        "{\"action\", \"max_pattern_size\", \"min_pattern_size\", \"min_count\", "
                        "\"min_loop_tokens\", \"fallback\": {\"temperature\", \"dry_multiplier\", ...}}");
    command
        ->add_option("--reasoning-parser", options->reasoning_parser,
                     "how chat answers are split into reasoning_content and content: auto (from the chat "
                     "template; default), deepseek_r1, harmony or none")
        ->capture_default_str();
    command
        ->add_option("--reasoning-budget", options->reasoning_budget,
                     "tokens a chat answer may think before </think> is forced (default: unlimited); "
                     "requests override it with thinking_token_budget or reasoning_effort")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 31));
    command
        ->add_option("--disaggregation-mode", options->disaggregation_mode,
                     "prefill or decode behind sgl-model-gateway's PD mode; null: one server does all")
        ->capture_default_str();
    command
        ->add_option("--disaggregation-bootstrap-port", options->disaggregation_bootstrap_port,
                     "prefill: the port decode servers fetch KV from")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    command
        ->add_option("--disaggregation-transfer", options->disaggregation_transfer,
                     "auto (shared memory to a peer on this host, else TCP), tcp or shm")
        ->capture_default_str();
    command
        ->add_option("--disaggregation-timeout", options->disaggregation_timeout,
                     "seconds a KV transfer may take, claim included")
        ->capture_default_str();
    command
        ->add_option("--disaggregation-allowed-prefill", options->disaggregation_allowed_prefill,
                     "decode: the prefill servers a request may name, HOST, HOST:PORT or ADDRESS/BITS (names are "
                     "never resolved)")
        ->capture_default_str();
    command->add_option("--disaggregation-fault", options->disaggregation_fault)->group("");  // tests only
    command
        ->add_option("--responses-store-size", options->responses_store_size,
                     "stored /v1/responses kept for previous_response_id, per server, in memory (0: none)")
        ->capture_default_str()
        ->check(CLI::Range(size_t{0}, size_t{1} << 24));
    command->add_option("--responses-store-ttl", options->responses_store_ttl, "seconds a stored response is kept")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
    command
        ->add_option("--max-tokens-limit", options->max_tokens_limit,
                     "a request's max_tokens above this is a 400; an omitted one is capped at it (0: off)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    command
        ->add_option("--max-prompt-tokens", options->max_prompt_tokens,
                     "prompts longer than this, after the chat template, are a 400 (0: off)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    command
        ->add_option("--max-request-tokens", options->max_request_tokens,
                     "n x max_tokens, summed over a request's prompts, above this is a 400 (0: off)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    command
        ->add_option("--request-timeout", options->request_timeout,
                     "seconds from receipt after which a request is cancelled and answered 408 (0: off)")
        ->check(CLI::Range(0.0, 31536000.0));
    command->add_option("--reasoning-effort-budgets", options->reasoning_effort_budgets,
                        "budgets for reasoning_effort, e.g. low=256,medium=1024,high=4096 (the defaults)");
    add_access_options(*command, *options);
    command->add_option("--chat-template", options->chat_template_file,
                        "a Jinja file that replaces the model's chat template (it must pass the load-time probe "
                        "render, as the model's own must)");
    command->callback([options, &exit_code] { exit_code = serve(*options); });
}

}  // namespace tempered
