#include "server/serving_metrics.h"

namespace tempered {
namespace {

std::vector<double> latency_buckets() {
    return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
            0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}

// 1 µs to 100 ms: a mask from precomputed sets takes microseconds, a grammar still learning milliseconds.
std::vector<double> grammar_mask_buckets() {
    return {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1};
}

// Loop periods in tokens, doubling up to the longest period a detector may watch.
std::vector<double> loop_period_buckets() {
    std::vector<double> buckets;
    for (int32_t period = 1; period <= kMaxRepetitionPatternSize; period *= 2) buckets.push_back(period);
    return buckets;
}

// 16 to 32768 tokens of thinking, by doubling: budgets are set in powers of two more often than not.
std::vector<double> reasoning_token_buckets() {
    std::vector<double> buckets;
    for (double bound = 16; bound <= 32768; bound *= 2) buckets.push_back(bound);
    return buckets;
}

}  // namespace

ServingMetrics::ServingMetrics(std::string model_name, std::string kv_cache_dtype)
    : model_name_(std::move(model_name)),
      kv_cache_dtype_(std::move(kv_cache_dtype)),
      running_(registry_.gauge("vllm:num_requests_running", "Requests being decoded or prefilled.", {"model_name"})),
      waiting_(registry_.gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", {"model_name"})),
      kv_usage_(registry_.gauge("vllm:kv_cache_usage_perc", "KV cache usage, a fraction from 0 to 1.", {"model_name"})),
      gpu_cache_usage_(registry_.gauge("vllm:gpu_cache_usage_perc",
                                       "KV cache usage, a fraction from 0 to 1 (older vLLM name).", {"model_name"})),
      cache_config_(registry_.gauge("vllm:cache_config_info", "KV cache configuration.",
                                    {"model_name", "block_size", "num_gpu_blocks", "cache_dtype"})),
      prompt_tokens_(registry_.counter("vllm:prompt_tokens_total", "Prompt tokens processed.", {"model_name"})),
      generation_tokens_(registry_.counter("vllm:generation_tokens_total", "Tokens generated.", {"model_name"})),
      time_to_first_token_(registry_.histogram("vllm:time_to_first_token_seconds",
                                               "Seconds from arrival to the first generated token.", latency_buckets(),
                                               {"model_name"})),
      inter_token_latency_(registry_.histogram("vllm:inter_token_latency_seconds",
                                               "Seconds between consecutive tokens of a sequence.", latency_buckets(),
                                               {"model_name"})),
      e2e_latency_(registry_.histogram("vllm:e2e_request_latency_seconds", "Seconds from arrival to finish.",
                                       latency_buckets(), {"model_name"})),
      queue_time_(registry_.histogram("vllm:request_queue_time_seconds",
                                      "Seconds from arrival to first being scheduled.", latency_buckets(),
                                      {"model_name"})),
      request_success_(registry_.counter("vllm:request_success_total", "Requests finished, by finish reason.",
                                         {"model_name", "finished_reason"})),
      preemptions_(
          registry_.counter("vllm:num_preemptions_total", "Requests preempted for lack of KV blocks.", {"model_name"})),
      imported_kv_dropped_(registry_.counter("tempered:kv_transfer_recomputed_total",
                                             "Decode side: imported prompt KV that could not be placed, so "
                                             "the prompt was computed here instead.")),
      prefix_queries_(registry_.counter("vllm:prefix_cache_queries_total",
                                        "Prompt tokens looked up in the prefix cache.", {"model_name"})),
      prefix_hits_(registry_.counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
                                     {"model_name"})),
      rejected_(registry_.counter("tempered:requests_rejected_total", "Requests refused with 429 (queue full).")),
      aborted_(registry_.counter("tempered:requests_aborted_total", "Requests abandoned by their client.")),
      timeouts_(registry_.counter("tempered:request_timeouts_total",
                                  "Requests cancelled for running past --request-timeout.")),
      failed_(registry_.counter("tempered:requests_failed_total", "Requests that ended in an error.")),
      sampling_sources_(registry_.counter("tempered:sampling_param_source_total",
                                          "Sampling parameter values used, by where each came from.",
                                          {"param", "source", "client"})),
      greedy_requests_(registry_.counter("tempered:greedy_requests_total",
                                         "Requests whose resolved temperature is 0 (greedy), by client.", {"client"})),
      sampling_unapplied_(registry_.counter("tempered:sampling_unapplied_total",
                                            "Resolved sampling values the upstream engine does not take, so they "
                                            "were not applied, by parameter.",
                                            {"param"})),
      kv_dtype_info_(
          registry_.gauge("tempered:kv_cache_dtype_info", "The KV cache element type (value 1).", {"dtype"})),
      kv_blocks_in_use_(registry_.gauge("tempered:kv_blocks_in_use", "KV blocks held by running sequences.")),
      tool_calls_(registry_.counter("tempered:tool_calls_total", "Tool calls the model wrote, by what became of them.",
                                    {"outcome"})),
      grammar_mask_(registry_.histogram("tempered:grammar_mask_seconds",
                                        "Seconds to build one step's grammar token mask.", grammar_mask_buckets())),
      structured_requests_(registry_.counter("tempered:structured_requests_total",
                                             "Requests whose output follows a grammar, by kind.", {"kind"})),
      degeneration_detected_(registry_.counter("tempered:degeneration_detected_total",
                                               "Loops the degeneration guard saw in a choice's output, by the action "
                                               "taken and where in the output.",
                                               {"action", "phase"})),
      degeneration_loop_period_(registry_.histogram("tempered:degeneration_loop_period",
                                                    "Length in tokens of the repeated block of each loop seen.",
                                                    loop_period_buckets())),
      reasoning_tokens_(registry_.histogram("tempered:reasoning_tokens",
                                            "Tokens a chat choice drew inside reasoning (choices that reasoned).",
                                            reasoning_token_buckets())),
      reasoning_forced_end_(registry_.counter("tempered:reasoning_forced_end_total",
                                              "Reasoning ended by force, by why: budget, max_tokens or loop.",
                                              {"reason"})),
      empty_content_(registry_.counter("tempered:empty_content_total",
                                       "Chat choices that finished with empty content and no tool calls.")),
      kv_bytes_per_token_(registry_.gauge("tempered:kv_cache_bytes_per_token",
                                          "KV cache bytes one cached position takes over all layers (keys, values, "
                                          "scales).",
                                          {"model_name"})),
      moe_expert_weight_bytes_(registry_.counter("tempered:moe_expert_weight_bytes_total",
                                                 "Routed-expert weight bytes the forward steps read (each active "
                                                 "expert of a step once); divide by tempered:moe_steps_total.",
                                                 {"model_name"})),
      moe_steps_(registry_.counter("tempered:moe_steps_total", "Forward steps of a mixture-of-experts model.",
                                   {"model_name"})),
      spec_drafts_(registry_.counter("vllm:spec_decode_num_drafts_total",
                                     "Speculative proposals verified (one per sequence and step with drafts).",
                                     {"model_name"})),
      spec_draft_tokens_(
          registry_.counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified.", {"model_name"})),
      spec_accepted_tokens_(registry_.counter("vllm:spec_decode_num_accepted_tokens_total",
                                              "Draft tokens accepted (each saves a forward step).", {"model_name"})),
      spec_accepted_per_position_(
          registry_.counter("vllm:spec_decode_num_accepted_tokens_per_pos_total",
                            "Draft tokens accepted at each position of a proposal (0: the first draft); divided by "
                            "vllm:spec_decode_num_drafts_total, the acceptance rate of each position.",
                            {"model_name", "position"})) {
    kv_dtype_info_.with({kv_cache_dtype_}).set(1);
    rejected_.get();
    aborted_.get();
    timeouts_.get();
    failed_.get();
    grammar_mask_.get();
    for (const char* kind : {"json_object", "json_schema", "grammar", "tool_call"}) structured_requests_.with({kind});
    for (const char* reason : {"stop", "length", "abort", "error", "repetition"})
        request_success_.with({model_name_, reason});
    for (auto action : {DegenerationAction::Flag, DegenerationAction::Stop, DegenerationAction::Resample})
        for (auto phase : {DegenerationPhase::Content, DegenerationPhase::Reasoning})
            degeneration_detected_.with({degeneration_action_name(action), degeneration_phase_name(phase)});
    degeneration_loop_period_.get();
    reasoning_tokens_.get();
    empty_content_.get();
    imported_kv_dropped_.get();
    for (ForcedEnd reason : {ForcedEnd::Budget, ForcedEnd::MaxTokens, ForcedEnd::Loop})
        reasoning_forced_end_.with({forced_end_name(reason)});
    for (const char* outcome : {"valid", "rejected_unknown_name", "rejected_bad_arguments", "unparsed"})
        tool_calls_.with({outcome});
    // Every series exists from start-up (as in vLLM), so dashboards show 0 rather than "no data".
    for (auto* counter : {&prompt_tokens_, &generation_tokens_, &preemptions_, &prefix_queries_, &prefix_hits_})
        counter->with({model_name_});
    for (auto* histogram : {&time_to_first_token_, &inter_token_latency_, &e2e_latency_, &queue_time_})
        histogram->with({model_name_});
}

void ServingMetrics::watch_engine(std::function<EngineStats()> stats) {
    registry_.on_collect([this, stats = std::move(stats)] {
        const EngineStats now = stats();
        running_.with({model_name_}).set(now.running_requests);
        waiting_.with({model_name_}).set(now.waiting_requests);
        const double usage = now.kv_blocks_total
                                 ? static_cast<double>(now.kv_blocks_used) / static_cast<double>(now.kv_blocks_total)
                                 : 0;
        kv_usage_.with({model_name_}).set(usage);
        gpu_cache_usage_.with({model_name_}).set(usage);
        kv_blocks_in_use_.get().set(static_cast<double>(now.kv_blocks_used));
        cache_config_
            .with(
                {model_name_, std::to_string(now.kv_block_size), std::to_string(now.kv_blocks_total), kv_cache_dtype_})
            .set(1);
    });
}

void ServingMetrics::count_sampling_sources(const ResolvedSampling& sampling, const std::string& client) {
    sampling.for_each_source([&](std::string_view param, ParamSource source) {
        sampling_sources_.with({std::string(param), std::string(param_source_name(source)), client}).inc();
    });
}

void ServingMetrics::on_prefix_lookup(int64_t prompt_tokens, int64_t cached_tokens) {
    prefix_queries_.with({model_name_}).inc(static_cast<double>(prompt_tokens));
    prefix_hits_.with({model_name_}).inc(static_cast<double>(cached_tokens));
}

void ServingMetrics::on_first_token(double seconds_since_submit) {
    time_to_first_token_.with({model_name_}).observe(seconds_since_submit);
}

void ServingMetrics::on_inter_token(double seconds) { inter_token_latency_.with({model_name_}).observe(seconds); }

void ServingMetrics::on_preemption() { preemptions_.with({model_name_}).inc(); }

void ServingMetrics::on_imported_kv_dropped() { imported_kv_dropped_.get().inc(); }

void ServingMetrics::on_grammar_mask(double seconds) { grammar_mask_.get().observe(seconds); }

void ServingMetrics::on_speculation(int64_t drafts, int64_t accepted) {
    spec_drafts_.with({model_name_}).inc();
    spec_draft_tokens_.with({model_name_}).inc(static_cast<double>(drafts));
    spec_accepted_tokens_.with({model_name_}).inc(static_cast<double>(accepted));
    for (int64_t position = 0; position < accepted; ++position)  // a draft is kept only after every earlier one
        spec_accepted_per_position_.with({model_name_, std::to_string(position)}).inc();
}

void ServingMetrics::on_expert_traffic(int64_t expert_weight_bytes) {
    moe_expert_weight_bytes_.with({model_name_}).inc(static_cast<double>(expert_weight_bytes));
    moe_steps_.with({model_name_}).inc();
}

void ServingMetrics::on_degeneration(DegenerationAction action, DegenerationPhase phase, int32_t period) {
    degeneration_detected_.with({degeneration_action_name(action), degeneration_phase_name(phase)}).inc();
    degeneration_loop_period_.get().observe(period);
}

void ServingMetrics::count_reasoning(const ReasoningReport& report) {
    reasoning_tokens_.get().observe(static_cast<double>(report.tokens));
    if (report.forced_end) reasoning_forced_end_.with({forced_end_name(*report.forced_end)}).inc();
}

void ServingMetrics::on_request_finished(RequestOutcome outcome, const GenerationUsage& usage,
                                         const RequestTimings& timings) {
    prompt_tokens_.with({model_name_}).inc(static_cast<double>(usage.prompt_tokens));
    generation_tokens_.with({model_name_}).inc(static_cast<double>(usage.completion_tokens));
    e2e_latency_.with({model_name_}).observe(timings.total_seconds);
    queue_time_.with({model_name_}).observe(timings.queue_seconds);
    if (outcome == RequestOutcome::Error) failed_.get().inc();
    request_success_.with({model_name_, request_outcome_name(outcome)}).inc();
}

}  // namespace tempered
