// The prefill side of the KV transfer: listens on the bootstrap port, matches each decode server's claim
// with the room the engine opened (in either order), checks that the two servers agree (layout, model,
// prompt), and sends the staged blocks the decode lacks, over TCP or through a shared-memory segment.
//
// One acceptor thread (which also expires rooms nobody claimed) and one thread per connection, at most
// kMaxTransferConnections at once. The destructor stops them all: sockets are shut down, threads joined,
// and rooms still open fail with "the KV transfer server has stopped".
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "core/result.h"
#include "disagg/kv_transfer_config.h"
#include "disagg/socket.h"
#include "disagg/transfer_metrics.h"
#include "engine/kv_transfer.h"

namespace tempered {

class PrefillRooms;
// A decode server connects when its import starts and waits through the prefill's queue, so this is at
// least what two engines' queues and running requests (max_queued 256 + max_running 64 each) can hold.
inline constexpr size_t kMaxTransferConnections = 1024;

class KvTransferServer {
public:
    // Listens on host:port (port 0: the kernel picks; port() tells which). `metrics` outlives the server
    // and every export it hands out.
    static Result<std::unique_ptr<KvTransferServer>> start(const std::string& host, int port, KvTransferConfig config,
                                                           TransferMetrics& metrics);
    ~KvTransferServer();
    KvTransferServer(const KvTransferServer&) = delete;
    KvTransferServer& operator=(const KvTransferServer&) = delete;

    int port() const { return port_; }
    // The engine's export for `room`; it may outlive the server (its poll() then reports the stop).
    std::shared_ptr<KvExport> open_export(uint64_t room);

private:
    struct Connection;
    KvTransferServer(Socket listener, std::shared_ptr<PrefillRooms> rooms);
    void accept_loop();
    void reap_finished_connections(bool all);

    Socket listener_;
    int port_ = 0;
    std::shared_ptr<PrefillRooms> rooms_;
    std::list<std::unique_ptr<Connection>> connections_;  // the acceptor's and the destructor's only
    std::thread acceptor_;
};

}  // namespace tempered
