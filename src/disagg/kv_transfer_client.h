// The decode side of the KV transfer: for each request, a KvImport that connects to the prefill server's
// bootstrap port, claims the request's room and receives the KV of its prompt into a StagedKv, on a thread
// of its own. Every wait has a deadline (the config's timeout, for the whole transfer), and cancel() shuts
// the socket so that the thread ends at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "disagg/kv_transfer_config.h"
#include "disagg/transfer_metrics.h"
#include "engine/kv_transfer.h"

namespace tempered {

class KvTransferClient {
public:
    // `metrics` outlives the client and every import it hands out.
    KvTransferClient(KvTransferConfig config, TransferMetrics& metrics);

    // The import of room `room` from the prefill server's bootstrap address. Nothing happens until start().
    std::shared_ptr<KvImport> open_import(std::string host, int port, uint64_t room);

private:
    KvTransferConfig config_;
    TransferMetrics& metrics_;
};

}  // namespace tempered
