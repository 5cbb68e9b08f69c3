#include "disagg/kv_transfer_server.h"

#include "disagg/frame_stream.h"
#include "disagg/prefill_rooms.h"
#include "disagg/prefill_sender.h"

namespace tempered {

// How often the acceptor wakes to expire unclaimed rooms and reap finished connections: the timeout's
// precision, not a cost (it sleeps in poll()).
constexpr std::chrono::milliseconds kAcceptorTick{20};

struct KvTransferServer::Connection {
    Socket socket;
    std::thread thread;
    std::atomic<bool> done{false};
};

Result<std::unique_ptr<KvTransferServer>> KvTransferServer::start(const std::string& host, int port,
                                                                  KvTransferConfig config, TransferMetrics& metrics) {
    auto listener = Socket::listen(host, port);
    if (!listener.ok()) return Error{"KV transfer server: " + listener.error().message};
    auto rooms = std::make_shared<PrefillRooms>(std::move(config), metrics);
    return std::unique_ptr<KvTransferServer>(new KvTransferServer(std::move(listener.value()), std::move(rooms)));
}

KvTransferServer::KvTransferServer(Socket listener, std::shared_ptr<PrefillRooms> rooms)
    : listener_(std::move(listener)), port_(listener_.bound_port()), rooms_(std::move(rooms)) {
    acceptor_ = std::thread([this] { accept_loop(); });
}

KvTransferServer::~KvTransferServer() {
    rooms_->stop();
    listener_.shutdown();
    acceptor_.join();
    for (auto& connection : connections_) connection->socket.shutdown();
    reap_finished_connections(true);
    rooms_->finish_all("the KV transfer server has stopped");
}

std::shared_ptr<KvExport> KvTransferServer::open_export(uint64_t room) { return rooms_->open_export(rooms_, room); }

void KvTransferServer::reap_finished_connections(bool all) {
    for (auto it = connections_.begin(); it != connections_.end();) {
        if (all || (*it)->done) {
            (*it)->thread.join();
            it = connections_.erase(it);
        } else {
            ++it;
        }
    }
}

void KvTransferServer::accept_loop() {
    while (!rooms_->stopping()) {
        Socket accepted = listener_.accept(kAcceptorTick);
        rooms_->expire_unclaimed(TransferClock::now());
        reap_finished_connections(false);
        if (!accepted.valid()) continue;
        if (connections_.size() >= kMaxTransferConnections) {
            auto reject = encode_reject("the prefill server has too many KV transfers in flight");
            (void)accepted.send_all(reject, TransferClock::now() + std::chrono::milliseconds(100));
            continue;
        }
        auto connection = std::make_unique<Connection>();
        connection->socket = std::move(accepted);
        Connection* raw = connection.get();
        connection->thread = std::thread([this, raw] {
            serve_claim(*rooms_, raw->socket);
            raw->done = true;
        });
        connections_.push_back(std::move(connection));
    }
}

}  // namespace tempered
