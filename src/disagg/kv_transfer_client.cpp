#include "disagg/kv_transfer_client.h"

#include <mutex>
#include <thread>

#include "disagg/decode_receiver.h"

namespace tempered {
namespace {

class RoomImport final : public KvImport {
public:
    explicit RoomImport(std::shared_ptr<ImportState> state) : state_(std::move(state)) {}
    ~RoomImport() override {
        cancel();
        if (!worker_.joinable()) return;
        // A ready callback that drops the last reference runs on the worker itself: it cannot join
        // itself, and it touches only the state it co-owns from here on.
        if (worker_.get_id() == std::this_thread::get_id()) {
            worker_.detach();
        } else {
            worker_.join();
        }
    }

    void start(std::vector<int32_t> prompt, int64_t cached_positions, std::function<void()> ready) override {
        if (worker_.joinable()) return;
        state_->prompt = std::move(prompt);
        state_->cached_positions = cached_positions;
        state_->ready = std::move(ready);
        worker_ = std::thread([state = state_] { run_import(*state); });
    }

    std::optional<Result<StagedKv>> poll() override { return state_->take_result(); }
    void cancel() override { state_->cancel(); }

private:
    std::shared_ptr<ImportState> state_;
    std::thread worker_;
};

}  // namespace

KvTransferClient::KvTransferClient(KvTransferConfig config, TransferMetrics& metrics)
    : config_(std::move(config)), metrics_(metrics) {}

std::shared_ptr<KvImport> KvTransferClient::open_import(std::string host, int port, uint64_t room) {
    return std::make_shared<RoomImport>(std::make_shared<ImportState>(config_, metrics_, std::move(host), port, room));
}

}  // namespace tempered
