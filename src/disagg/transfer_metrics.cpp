#include "disagg/transfer_metrics.h"

namespace tempered {

const char* transfer_role_name(TransferRole role) { return role == TransferRole::Prefill ? "prefill" : "decode"; }

const char* transfer_failure_reason_name(TransferFailureReason reason) {
    switch (reason) {
        case TransferFailureReason::Timeout: return "timeout";
        case TransferFailureReason::PeerClosed: return "peer_closed";
        case TransferFailureReason::Mismatch: return "mismatch";
        case TransferFailureReason::Rejected: return "rejected";
        case TransferFailureReason::Cancelled: return "cancelled";
        case TransferFailureReason::Protocol: return "protocol";
    }
    return "protocol";
}

namespace {

// 1 ms to 60 s: a few blocks over loopback take a millisecond, a long prompt over a slow link seconds,
// and a prefill that waited for its claim up to the transfer timeout.
std::vector<double> transfer_buckets() {
    return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0};
}

const char* path_name(bool shm) { return shm ? "shm" : "tcp"; }

}  // namespace

TransferMetrics::TransferMetrics(metrics::Registry& registry)
    : bytes_(registry.counter("tempered:kv_transfer_bytes_total", "KV bytes moved between prefill and decode servers.",
                              {"role", "path"})),
      seconds_(registry.histogram("tempered:kv_transfer_seconds",
                                  "Seconds moving one prompt's KV: from its header to the ACK.", transfer_buckets(),
                                  {"role"})),
      wait_seconds_(registry.histogram("tempered:kv_transfer_wait_seconds",
                                       "Seconds from a claim until the prompt's KV was ready to move (the prefill "
                                       "server's queue and compute).",
                                       transfer_buckets(), {"role"})),
      rooms_waiting_(registry.gauge("tempered:kv_transfer_rooms_waiting",
                                    "KV transfer rooms opened or claimed and not finished.", {"role"})),
      failures_(registry.counter("tempered:kv_transfer_failures_total", "KV transfers that failed, by reason.",
                                 {"role", "reason"})) {}

void TransferMetrics::add_bytes(TransferRole role, bool shm, int64_t bytes) {
    bytes_.with({transfer_role_name(role), path_name(shm)}).inc(static_cast<double>(bytes));
}

void TransferMetrics::observe_seconds(TransferRole role, double seconds) {
    seconds_.with({transfer_role_name(role)}).observe(seconds);
}

void TransferMetrics::observe_wait(TransferRole role, double seconds) {
    wait_seconds_.with({transfer_role_name(role)}).observe(seconds);
}

void TransferMetrics::room_opened(TransferRole role) { rooms_waiting_.with({transfer_role_name(role)}).inc(); }

void TransferMetrics::room_finished(TransferRole role) { rooms_waiting_.with({transfer_role_name(role)}).dec(); }

void TransferMetrics::failure(TransferRole role, TransferFailureReason reason) {
    failures_.with({transfer_role_name(role), transfer_failure_reason_name(reason)}).inc();
}

double TransferMetrics::rooms_waiting(TransferRole role) {
    return rooms_waiting_.with({transfer_role_name(role)}).value();
}

double TransferMetrics::failures(TransferRole role, TransferFailureReason reason) {
    return failures_.with({transfer_role_name(role), transfer_failure_reason_name(reason)}).value();
}

double TransferMetrics::bytes(TransferRole role, bool shm) {
    return bytes_.with({transfer_role_name(role), path_name(shm)}).value();
}

}  // namespace tempered
