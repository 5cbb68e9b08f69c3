// How a server moves KV to or from its peer: the layout both must share, the time a transfer may take,
// the path (TCP or shared memory), and a fault to inject for tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "disagg/kv_layout.h"

namespace tempered {

// auto: shared memory when the peer is on this machine (a loopback address), else TCP.
// tcp: never shared memory. shm: shared memory whenever the prefill allows it (a decode's choice).
enum class TransferPath { Auto, Tcp, Shm };
Result<TransferPath> parse_transfer_path(const std::string& text);
const char* transfer_path_name(TransferPath path);

// A failure the prefill side makes on purpose, so that a test kills a transfer "mid-way" reproducibly
// (the hidden serve flag --disaggregation-fault):
//   pause_after_blocks:N:SECONDS  sleep SECONDS after sending N blocks (then go on)
//   abort_after_blocks:N          close the connection after sending N blocks
struct TransferFault {
    enum class Kind { PauseAfterBlocks, AbortAfterBlocks };
    Kind kind = Kind::AbortAfterBlocks;
    int64_t after_blocks = 0;
    std::chrono::milliseconds pause{0};
};
Result<TransferFault> parse_transfer_fault(const std::string& text);

struct KvTransferConfig {
    KvLayout layout;
    std::chrono::milliseconds timeout{300000};
    TransferPath path = TransferPath::Auto;
    std::optional<TransferFault> fault;
};

}  // namespace tempered
