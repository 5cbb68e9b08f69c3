// The KV transfer's Prometheus series, on the server's registry:
//   tempered:kv_transfer_bytes_total{role,path}      KV bytes moved (prefill: sent, decode: received)
//   tempered:kv_transfer_seconds{role}               moving the KV: header sent -> ACK (prefill), header
//                                                    received -> ACK sent (decode)
//   tempered:kv_transfer_wait_seconds{role}          before that: claim -> the prompt's KV ready (prefill),
//                                                    claim sent -> header (decode: the prefill's queue and compute)
//   tempered:kv_transfer_rooms_waiting{role}         rooms opened or claimed and not finished
//   tempered:kv_transfer_failures_total{role,reason} reasons: timeout, peer_closed, mismatch, rejected,
//                                                    cancelled, protocol
// role is "prefill" or "decode"; path "tcp" or "shm".
#pragma once

#include "metrics/metrics.h"

namespace tempered {

enum class TransferRole { Prefill, Decode };
enum class TransferFailureReason { Timeout, PeerClosed, Mismatch, Rejected, Cancelled, Protocol };
const char* transfer_role_name(TransferRole role);
const char* transfer_failure_reason_name(TransferFailureReason reason);

class TransferMetrics {
public:
    // The registry must outlive this object, and this object every server, client and transfer using it.
    explicit TransferMetrics(metrics::Registry& registry);

    void add_bytes(TransferRole role, bool shm, int64_t bytes);
    void observe_seconds(TransferRole role, double seconds);
    void observe_wait(TransferRole role, double seconds);
    void room_opened(TransferRole role);
    void room_finished(TransferRole role);
    void failure(TransferRole role, TransferFailureReason reason);

    double rooms_waiting(TransferRole role);
    double failures(TransferRole role, TransferFailureReason reason);
    double bytes(TransferRole role, bool shm);

private:
    metrics::CounterFamily& bytes_;
    metrics::HistogramFamily& seconds_;
    metrics::HistogramFamily& wait_seconds_;
    metrics::GaugeFamily& rooms_waiting_;
    metrics::CounterFamily& failures_;
};

}  // namespace tempered
