#include "disagg/prefill_rooms.h"

#include <sstream>

namespace tempered {

std::string seconds_text(std::chrono::milliseconds duration) {
    std::ostringstream text;
    text << static_cast<double>(duration.count()) / 1000.0 << "s";
    return text.str();
}

namespace {

// What the engine holds: a handle on one room of the table, which it may outlive.
class RoomExport final : public KvExport {
public:
    RoomExport(std::shared_ptr<PrefillRooms> rooms, std::shared_ptr<PrefillRoom> room)
        : rooms_(std::move(rooms)), room_(std::move(room)) {}
    ~RoomExport() override { cancel(); }

    int64_t claimed_cached_positions() const override { return room_->claimed_cached_positions.load(); }
    void deliver(std::vector<int32_t> prompt, StagedKv kv, std::function<void()> ready) override {
        rooms_->deliver(*room_, std::move(prompt), std::move(kv), std::move(ready));
    }
    std::optional<Status> poll() override { return rooms_->poll(*room_); }
    void cancel() override { rooms_->cancel(*room_); }

private:
    std::shared_ptr<PrefillRooms> rooms_;
    std::shared_ptr<PrefillRoom> room_;
};

}  // namespace

std::shared_ptr<PrefillRoom> PrefillRooms::room_locked(uint64_t room) {
    auto& slot = rooms_[room];
    if (!slot) {
        slot = std::make_shared<PrefillRoom>(room, TransferClock::now());
        metrics_.room_opened(TransferRole::Prefill);
    }
    return slot;
}

std::shared_ptr<KvExport> PrefillRooms::open_export(std::shared_ptr<PrefillRooms> self, uint64_t room) {
    std::unique_lock lock(mutex_);
    std::shared_ptr<PrefillRoom> entry;
    if (stopping_) {
        entry = std::make_shared<PrefillRoom>(room, TransferClock::now());
        entry->finished = true;
        entry->result = Status(Error{"the KV transfer server has stopped"});
    } else if (auto found = rooms_.find(room); found != rooms_.end() && found->second->export_open) {
        // A second request with the same room: it must not steal the first one's KV.
        entry = std::make_shared<PrefillRoom>(room, TransferClock::now());
        entry->finished = true;
        entry->result = Status(Error{"room " + std::to_string(room) + " is already open on this prefill server"});
    } else {
        ended_unclaimed_.erase(room);  // a new request under an old room's number starts afresh
        entry = room_locked(room);
        entry->export_open = true;
        changed_.notify_all();
    }
    entry->export_open = true;
    return std::make_shared<RoomExport>(std::move(self), std::move(entry));
}

Result<std::shared_ptr<PrefillRoom>> PrefillRooms::claim(uint64_t room, int64_t cached_positions) {
    std::unique_lock lock(mutex_);
    if (stopping_) return Error{"the prefill server is shutting down"};
    if (auto ended = ended_unclaimed_.find(room); ended != ended_unclaimed_.end()) {
        std::string why = ended->second.why;
        ended_unclaimed_.erase(ended);
        return Error{"the prefill request for room " + std::to_string(room) + " ended: " + why};
    }
    auto entry = room_locked(room);
    if (entry->claimed) return Error{"room " + std::to_string(room) + " is already claimed by another decode server"};
    entry->claimed = true;
    entry->claimed_cached_positions = cached_positions;
    changed_.notify_all();
    return entry;
}

std::function<void()> PrefillRooms::finish_locked(PrefillRoom& room, Status result,
                                                  std::optional<TransferFailureReason> reason) {
    if (room.finished) return {};
    room.finished = true;
    if (!room.result) room.result = std::move(result);
    if (auto found = rooms_.find(room.room); found != rooms_.end() && found->second.get() == &room) rooms_.erase(found);
    metrics_.room_finished(TransferRole::Prefill);
    if (reason) metrics_.failure(TransferRole::Prefill, *reason);
    if (!room.claimed && !room.result->ok()) {
        ended_unclaimed_[room.room] = {TransferClock::now() + config_.timeout, room.result->error().message};
    }
    room.kv = StagedKv{};  // the bytes are no one's concern any more
    changed_.notify_all();
    return room.delivered ? room.ready : std::function<void()>{};
}

void PrefillRooms::finish(PrefillRoom& room, Status result, std::optional<TransferFailureReason> reason) {
    std::function<void()> ready;
    {
        std::unique_lock lock(mutex_);
        ready = finish_locked(room, std::move(result), reason);
    }
    if (ready) ready();
}

void PrefillRooms::expire_unclaimed(Deadline now) {
    std::vector<std::function<void()>> ready;
    {
        std::unique_lock lock(mutex_);
        std::erase_if(ended_unclaimed_, [now](const auto& entry) { return entry.second.until <= now; });
        std::vector<std::shared_ptr<PrefillRoom>> expired;
        for (auto& [id, room] : rooms_) {
            if (room->export_open && !room->claimed && now - room->created >= config_.timeout) expired.push_back(room);
        }
        for (auto& room : expired) {
            Error error{"no decode server claimed room " + std::to_string(room->room) + " within " +
                        seconds_text(config_.timeout)};
            ready.push_back(finish_locked(*room, error, TransferFailureReason::Timeout));
        }
    }
    for (auto& callback : ready) {
        if (callback) callback();
    }
}

void PrefillRooms::finish_all(const std::string& why) {
    std::vector<std::function<void()>> ready;
    {
        std::unique_lock lock(mutex_);
        std::vector<std::shared_ptr<PrefillRoom>> left;
        for (auto& [id, room] : rooms_) left.push_back(room);
        for (auto& room : left) ready.push_back(finish_locked(*room, Error{why}, std::nullopt));
    }
    for (auto& callback : ready) {
        if (callback) callback();
    }
}

bool PrefillRooms::wait_until(Deadline deadline, const std::function<bool(PrefillRoom&)>& done, PrefillRoom& room) {
    std::unique_lock lock(mutex_);
    return changed_.wait_until(lock, deadline, [&] { return stopping_ || room.finished || done(room); });
}

bool PrefillRooms::sleep_unless_stopped(std::chrono::milliseconds duration) {
    std::unique_lock lock(mutex_);
    return !changed_.wait_for(lock, duration, [&] { return stopping_; });
}

void PrefillRooms::stop() {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
}

bool PrefillRooms::stopping() {
    std::unique_lock lock(mutex_);
    return stopping_;
}

std::optional<std::pair<std::vector<int32_t>, StagedKv>> PrefillRooms::take_delivery(PrefillRoom& room) {
    std::unique_lock lock(mutex_);
    if (!room.delivered || room.finished) return std::nullopt;
    return std::make_pair(room.prompt, std::move(room.kv));
}

void PrefillRooms::deliver(PrefillRoom& room, std::vector<int32_t> prompt, StagedKv kv, std::function<void()> ready) {
    bool already_finished = false;
    {
        std::unique_lock lock(mutex_);
        if (room.delivered) return;
        room.delivered = true;
        room.ready = ready;
        already_finished = room.finished;  // a mismatch or a timeout came first: poll() has news already
        if (!already_finished) {
            room.prompt = std::move(prompt);
            room.kv = std::move(kv);
            changed_.notify_all();
        }
    }
    if (already_finished && ready) ready();
}

std::optional<Status> PrefillRooms::poll(PrefillRoom& room) {
    std::unique_lock lock(mutex_);
    return room.result;
}

void PrefillRooms::cancel(PrefillRoom& room) {
    // The engine asked: it will not poll again, so its ready callback is never called from here on.
    std::unique_lock lock(mutex_);
    if (room.finished || room.cancelled) return;
    room.cancelled = true;
    room.ready = nullptr;
    room.result = Status(Error{"cancelled"});
    if (room.claimed) {
        changed_.notify_all();  // its connection sends the REJECT and finishes the room
        return;
    }
    finish_locked(room, Error{"cancelled"}, TransferFailureReason::Cancelled);
}

}  // namespace tempered
