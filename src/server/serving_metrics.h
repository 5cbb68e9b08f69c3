// The server's Prometheus series. Routers that spread load over many servers (llm-d's endpoint picker,
// vLLM's production-stack) read vLLM's metric names, so tempered exports those names with vLLM's
// meanings; what is ours lives under tempered:. Implements EngineObserver: the engine reports token
// timings and finished requests; gauges are read from EngineStats at scrape time.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "engine/engine_observer.h"
#include "metrics/metrics.h"
#include "sampling/sampling_resolution.h"

namespace tempered {

class ServingMetrics final : public EngineObserver {
public:
    ServingMetrics(std::string model_name, std::string kv_cache_dtype);

    // Reads gauges from `stats` at each scrape (set once the engine exists).
    void watch_engine(std::function<EngineStats()> stats);
    // KvCacheShape::bytes_per_token of the pool: what one more cached position costs, over all layers.
    void set_kv_bytes_per_token(int64_t bytes) {
        kv_bytes_per_token_.with({model_name_}).set(static_cast<double>(bytes));
    }
    std::string render() const { return registry_.render(); }
    // For series other modules own (src/disagg's transfer metrics), rendered with these.
    metrics::Registry& registry() { return registry_; }

    // `client`: the request's client label (edge/access_control.h); "" when the server names no
    // clients, so the label has one value.
    void count_sampling_sources(const ResolvedSampling& sampling, const std::string& client);
    // A request whose resolved temperature is 0, wherever the 0 came from (request, preferred, model,
    // policy): what the operator needs is who gets greedy answers; the source counter tells who asked.
    void count_greedy(const std::string& client) { greedy_requests_.with({client}).inc(); }
    // A resolved value the generator could not apply (upstream mode: an engine that does not take it).
    void count_unapplied(const std::string& param) { sampling_unapplied_.with({param}).inc(); }
    void count_rejected() { rejected_.get().inc(); }
    void count_aborted() { aborted_.get().inc(); }
    void count_timeout() { timeouts_.get().inc(); }
    // One tool call the model wrote: valid, rejected_unknown_name, rejected_bad_arguments or unparsed.
    void count_tool_call(std::string_view outcome) { tool_calls_.with({std::string(outcome)}).inc(); }
    // A request whose output follows a grammar; `kind` json_object | json_schema | tool_call.
    void count_structured(const std::string& kind) { structured_requests_.with({kind}).inc(); }
    // A finished chat choice that reasoned: its drawn reasoning tokens, and why reasoning ended if forced.
    void count_reasoning(const ReasoningReport& report);
    // A finished chat choice with empty content and no tool calls.
    void count_empty_content() { empty_content_.get().inc(); }

    // EngineObserver
    void on_prefix_lookup(int64_t prompt_tokens, int64_t cached_tokens) override;
    void on_first_token(double seconds_since_submit) override;
    void on_inter_token(double seconds) override;
    void on_preemption() override;
    void on_imported_kv_dropped() override;
    void on_grammar_mask(double seconds) override;
    void on_expert_traffic(int64_t expert_weight_bytes) override;
    void on_speculation(int64_t drafts, int64_t accepted) override;
    void on_degeneration(DegenerationAction action, DegenerationPhase phase, int32_t period) override;
    void on_request_finished(RequestOutcome outcome, const GenerationUsage& usage,
                             const RequestTimings& timings) override;

private:
    std::string model_name_;
    std::string kv_cache_dtype_;
    metrics::Registry registry_;
    metrics::GaugeFamily& running_;
    metrics::GaugeFamily& waiting_;
    metrics::GaugeFamily& kv_usage_;
    metrics::GaugeFamily& gpu_cache_usage_;
    metrics::GaugeFamily& cache_config_;
    metrics::CounterFamily& prompt_tokens_;
    metrics::CounterFamily& generation_tokens_;
    metrics::HistogramFamily& time_to_first_token_;
    metrics::HistogramFamily& inter_token_latency_;
    metrics::HistogramFamily& e2e_latency_;
    metrics::HistogramFamily& queue_time_;
    metrics::CounterFamily& request_success_;
    metrics::CounterFamily& preemptions_;
    metrics::CounterFamily& imported_kv_dropped_;
    metrics::CounterFamily& prefix_queries_;
    metrics::CounterFamily& prefix_hits_;
    metrics::CounterFamily& rejected_;
    metrics::CounterFamily& aborted_;
    metrics::CounterFamily& timeouts_;
    metrics::CounterFamily& failed_;
    metrics::CounterFamily& sampling_sources_;
    metrics::CounterFamily& greedy_requests_;
    metrics::CounterFamily& sampling_unapplied_;
    metrics::GaugeFamily& kv_dtype_info_;
    metrics::GaugeFamily& kv_blocks_in_use_;
    metrics::CounterFamily& tool_calls_;
    metrics::HistogramFamily& grammar_mask_;
    metrics::CounterFamily& structured_requests_;
    metrics::CounterFamily& degeneration_detected_;
    metrics::HistogramFamily& degeneration_loop_period_;
    metrics::HistogramFamily& reasoning_tokens_;
    metrics::CounterFamily& reasoning_forced_end_;
    metrics::CounterFamily& empty_content_;
    metrics::GaugeFamily& kv_bytes_per_token_;
    metrics::CounterFamily& moe_expert_weight_bytes_;
    metrics::CounterFamily& moe_steps_;
    metrics::CounterFamily& spec_drafts_;
    metrics::CounterFamily& spec_draft_tokens_;
    metrics::CounterFamily& spec_accepted_tokens_;
    metrics::CounterFamily& spec_accepted_per_position_;
};

}  // namespace tempered
