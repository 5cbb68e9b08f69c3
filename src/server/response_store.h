// The responses /v1/responses keeps (`store`, on by default as OpenAI's) for `previous_response_id` and
// GET/DELETE /v1/responses/{id}: in memory and per server, so a gateway that spreads one conversation over
// several servers must pin it to one (elsewhere the id is a 404); bounded by count (--responses-store-size,
// the oldest dropped first; 0 keeps nothing) and age (--responses-store-ttl). Each response belongs to the
// client that made it (its API key's name): under another key its id reads as missing, so ids never tell
// one client about another's.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "api/json_fields.h"

namespace tempered {

struct ResponseStoreLimits {
    size_t max_responses = 1024;
    std::chrono::seconds ttl{3600};
};

struct StoredResponse {
    nlohmann::json response;           // the response object as it was answered
    api::Json conversation;            // every item so far: the earlier ones, this input, this output
    std::optional<std::string> owner;  // the client that made it; nullopt when the server names none
    std::chrono::steady_clock::time_point stored_at;
};

class ResponseStore {
public:
    explicit ResponseStore(ResponseStoreLimits limits) : limits_(limits) {}

    void put(const std::string& id, StoredResponse response);
    // A copy of the response `id` if it is here, unexpired and `client`'s.
    std::optional<StoredResponse> get(const std::string& id, const std::optional<std::string>& client);
    // Whether `client`'s response `id` was here (and is gone now).
    bool erase(const std::string& id, const std::optional<std::string>& client);
    size_t size() const;

private:
    // Drops what expired and, past the count, the oldest. Under mutex_.
    void evict(std::chrono::steady_clock::time_point now);

    ResponseStoreLimits limits_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, StoredResponse> by_id_;
    std::deque<std::string> order_;  // ids in the order they were stored (erased ones skipped when met)
};

}  // namespace tempered
