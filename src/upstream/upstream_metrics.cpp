#include "upstream/upstream_metrics.h"

namespace tempered::upstream {

const char* upstream_outcome_name(UpstreamOutcome outcome) {
    switch (outcome) {
        case UpstreamOutcome::Completed: return "completed";
        case UpstreamOutcome::EndedOnFront: return "ended_on_front";
        case UpstreamOutcome::Cancelled: return "cancelled";
        case UpstreamOutcome::Unreachable: return "unreachable";
        case UpstreamOutcome::Rejected: return "rejected";
        case UpstreamOutcome::Failed: return "failed";
        case UpstreamOutcome::Malformed: return "malformed";
        case UpstreamOutcome::Broken: return "broken";
    }
    return "failed";
}

namespace {

// 5 ms to 10 min: a cached prompt's first token on a GPU, up to a long answer of a reasoning model.
std::vector<double> latency_buckets() {
    return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0};
}

}  // namespace

UpstreamMetrics::UpstreamMetrics(metrics::Registry& registry)
    : requests_(registry.counter("tempered:upstream_requests_total",
                                 "Requests sent to the upstream engine, by how they ended.", {"outcome"})),
      running_(registry.gauge("tempered:upstream_requests_running", "Requests streaming from the upstream now.")),
      first_token_seconds_(registry.histogram("tempered:upstream_first_token_seconds",
                                              "Seconds from sending a request upstream to its first token.",
                                              latency_buckets())),
      request_seconds_(registry.histogram("tempered:upstream_request_seconds",
                                          "Seconds from sending a request upstream until it ended.",
                                          latency_buckets())) {
    for (UpstreamOutcome outcome : {UpstreamOutcome::Completed, UpstreamOutcome::EndedOnFront,
                                    UpstreamOutcome::Cancelled, UpstreamOutcome::Unreachable, UpstreamOutcome::Rejected,
                                    UpstreamOutcome::Failed, UpstreamOutcome::Malformed, UpstreamOutcome::Broken})
        requests_.with({upstream_outcome_name(outcome)});  // every series from the start, at 0
    running_.get().set(0);
}

void UpstreamMetrics::started() { running_.get().inc(); }

void UpstreamMetrics::first_token(double seconds) { first_token_seconds_.get().observe(seconds); }

void UpstreamMetrics::finished(UpstreamOutcome outcome, double seconds) {
    running_.get().dec();
    requests_.with({upstream_outcome_name(outcome)}).inc();
    request_seconds_.get().observe(seconds);
}

double UpstreamMetrics::requests(UpstreamOutcome outcome) {
    return requests_.with({upstream_outcome_name(outcome)}).value();
}

double UpstreamMetrics::running() { return running_.get().value(); }

}  // namespace tempered::upstream
