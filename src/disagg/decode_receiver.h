// One import on the decode side: the state a KvImport shares with its thread, and the thread's work
// (connect, CLAIM, KV_HEADER, blocks over TCP or from shm, DONE, checks, ACK).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "disagg/kv_transfer_config.h"
#include "disagg/socket.h"
#include "disagg/transfer_metrics.h"
#include "kv/staged_kv.h"

namespace tempered {

struct ImportState {
    ImportState(KvTransferConfig config_, TransferMetrics& metrics_, std::string host_, int port_, uint64_t room_)
        : config(std::move(config_)), metrics(metrics_), host(std::move(host_)), port(port_), room(room_) {}

    const KvTransferConfig config;
    TransferMetrics& metrics;
    const std::string host;
    const int port;
    const uint64_t room;
    // Set by start() before the thread exists.
    std::vector<int32_t> prompt;
    int64_t cached_positions = 0;
    std::function<void()> ready;
    std::atomic<bool> cancelled{false};

    // "room R from H:P", for every message.
    std::string where() const;
    // The thread's socket while it is connected, so that cancel() can shut it.
    void attach(Socket* socket);
    void cancel();
    // The result, once; ready() follows unless the import was cancelled.
    void set_result(Result<StagedKv> result);
    // The result the first time it is there (the KV is handed over once), nothing before.
    std::optional<Result<StagedKv>> take_result();

private:
    std::mutex mutex_;
    Socket* socket_ = nullptr;
    std::optional<Result<StagedKv>> result_;
    bool taken_ = false;
};

void run_import(ImportState& state);

}  // namespace tempered
