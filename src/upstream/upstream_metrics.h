// Upstream mode's Prometheus series, on the server's registry (beside the serving metrics, which count
// every request the same way in both modes):
//   tempered:upstream_requests_total{outcome}      requests sent upstream, by how they ended (below)
//   tempered:upstream_requests_running             requests streaming from the upstream now
//   tempered:upstream_first_token_seconds          sent -> the upstream's first token (its queue and prefill)
//   tempered:upstream_request_seconds              sent -> the upstream request ended
#pragma once

#include "metrics/metrics.h"

namespace tempered::upstream {

enum class UpstreamOutcome {
    Completed,     // the upstream ended every choice
    EndedOnFront,  // the front ended them first (a stop string, the guard's stop) and closed the request
    Cancelled,     // the client left, or the server stopped
    Unreachable,   // no connection (answered 503)
    Rejected,      // the upstream answered 4xx (passed on)
    Failed,        // the upstream answered 5xx or another status (502)
    Malformed,     // an event that is not JSON, or a token id outside the vocabulary (502)
    Broken,        // the stream ended early or stalled past --upstream-timeout (502)
};
const char* upstream_outcome_name(UpstreamOutcome outcome);

class UpstreamMetrics {
public:
    // The registry outlives this object, and this object the generator using it.
    explicit UpstreamMetrics(metrics::Registry& registry);

    void started();
    void first_token(double seconds);
    void finished(UpstreamOutcome outcome, double seconds);

    double requests(UpstreamOutcome outcome);
    double running();

private:
    metrics::CounterFamily& requests_;
    metrics::GaugeFamily& running_;
    metrics::HistogramFamily& first_token_seconds_;
    metrics::HistogramFamily& request_seconds_;
};

}  // namespace tempered::upstream
