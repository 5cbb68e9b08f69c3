// The prefill side's rooms: a room is opened by the engine (open_export) and claimed by a decode server's
// connection, in either order, since the gateway sends the request to both servers at once. A room
// lives in the table from whichever comes first until it finishes (KV acknowledged, or any failure),
// and the rooms_waiting gauge counts exactly those: finish() is the one way out, and runs once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "disagg/kv_transfer_config.h"
#include "disagg/socket.h"
#include "disagg/transfer_metrics.h"
#include "engine/kv_transfer.h"

namespace tempered {

struct PrefillRoom {
    explicit PrefillRoom(uint64_t id, Deadline now) : room(id), created(now) {}
    const uint64_t room;
    const Deadline created;
    // All below under PrefillRooms::mutex, but the atomics: claimed_cached_positions (the engine reads it
    // lock-free) and cancelled (the sender looks between frames).
    bool export_open = false;  // open_export() was called
    bool claimed = false;      // a connection holds a claim for it
    std::atomic<int64_t> claimed_cached_positions{0};
    bool delivered = false;
    std::vector<int32_t> prompt;
    StagedKv kv;
    std::function<void()> ready;
    std::atomic<bool> cancelled{false};
    bool finished = false;
    std::optional<Status> result;  // what the export's poll() says
};

class PrefillRooms {
public:
    PrefillRooms(KvTransferConfig config, TransferMetrics& metrics) : config_(std::move(config)), metrics_(metrics) {}

    const KvTransferConfig& config() const { return config_; }
    TransferMetrics& metrics() { return metrics_; }

    // The engine's side of room `room`.
    std::shared_ptr<KvExport> open_export(std::shared_ptr<PrefillRooms> self, uint64_t room);
    // A connection's claim: the room to wait on, or an error when another connection claimed it first.
    Result<std::shared_ptr<PrefillRoom>> claim(uint64_t room, int64_t cached_positions);
    // Ends `room` once: its result, the gauge, the failure counter (when `reason`), and its ready callback.
    void finish(PrefillRoom& room, Status result, std::optional<TransferFailureReason> reason);
    // Rooms the engine opened that no decode server claimed within the timeout fail.
    void expire_unclaimed(Deadline now);
    // Fails every room left (the server stops).
    void finish_all(const std::string& why);

    // Waits until `done` holds (checked under the lock), the room finished, the server stops, or `deadline`;
    // false on timeout.
    bool wait_until(Deadline deadline, const std::function<bool(PrefillRoom&)>& done, PrefillRoom& room);
    // Sleeps up to `duration` or until stop() (the pause fault); false when stopped.
    bool sleep_unless_stopped(std::chrono::milliseconds duration);
    void stop();
    bool stopping();
    // Under the lock: the delivered prompt and KV, moved out for sending (nothing unless delivered).
    std::optional<std::pair<std::vector<int32_t>, StagedKv>> take_delivery(PrefillRoom& room);

    // For RoomExport.
    void deliver(PrefillRoom& room, std::vector<int32_t> prompt, StagedKv kv, std::function<void()> ready);
    std::optional<Status> poll(PrefillRoom& room);
    void cancel(PrefillRoom& room);

private:
    std::shared_ptr<PrefillRoom> room_locked(uint64_t room);
    std::function<void()> finish_locked(PrefillRoom& room, Status result, std::optional<TransferFailureReason> reason);

    const KvTransferConfig config_;
    TransferMetrics& metrics_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::unordered_map<uint64_t, std::shared_ptr<PrefillRoom>> rooms_;
    // Rooms that failed before any claim came (cancelled, timed out, stopped): a late claim hears why at
    // once instead of waiting out its timeout. Each is kept for one timeout.
    struct EndedRoom {
        Deadline until;
        std::string why;
    };
    std::unordered_map<uint64_t, EndedRoom> ended_unclaimed_;
    bool stopping_ = false;
};

std::string seconds_text(std::chrono::milliseconds duration);  // "0.3s", "30s"

}  // namespace tempered
