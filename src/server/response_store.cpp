#include "server/response_store.h"

namespace tempered {

void ResponseStore::put(const std::string& id, StoredResponse response) {
    if (limits_.max_responses == 0) return;
    std::lock_guard lock(mutex_);
    by_id_.insert_or_assign(id, std::move(response));
    order_.push_back(id);
    evict(std::chrono::steady_clock::now());
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id, const std::optional<std::string>& client) {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    evict(now);
    const auto found = by_id_.find(id);
    if (found == by_id_.end() || found->second.owner != client) return std::nullopt;
    // Eviction walks from the oldest stored; one stored later with an older time expires here.
    if (now - found->second.stored_at >= limits_.ttl) {
        by_id_.erase(found);
        return std::nullopt;
    }
    return found->second;
}

bool ResponseStore::erase(const std::string& id, const std::optional<std::string>& client) {
    std::lock_guard lock(mutex_);
    const auto found = by_id_.find(id);
    if (found == by_id_.end() || found->second.owner != client) return false;
    by_id_.erase(found);
    return true;
}

size_t ResponseStore::size() const {
    std::lock_guard lock(mutex_);
    return by_id_.size();
}

void ResponseStore::evict(std::chrono::steady_clock::time_point now) {
    while (!order_.empty()) {
        const auto oldest = by_id_.find(order_.front());
        const bool gone = oldest == by_id_.end();
        const bool expired = !gone && now - oldest->second.stored_at >= limits_.ttl;
        if (!gone && !expired && by_id_.size() <= limits_.max_responses) return;
        if (!gone) by_id_.erase(oldest);
        order_.pop_front();
    }
}

}  // namespace tempered
