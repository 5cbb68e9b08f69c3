// /flush_cache: the HTTP thread asks, the engine thread drops the cached blocks between two steps, so
// the KV pool is never touched from two threads.
#include "engine/engine.h"

namespace tempered {

std::optional<CacheFlush> Engine::flush_cache(std::chrono::milliseconds timeout) {
    std::future<CacheFlush> answer;
    {
        std::lock_guard lock(mutex_);
        answer = cache_flushes_.emplace_back().get_future();
    }
    wake_.notify_one();
    if (answer.wait_for(timeout) != std::future_status::ready) return std::nullopt;
    try {
        return answer.get();
    } catch (const std::future_error&) {  // the engine stopped before serving it
        return std::nullopt;
    }
}

// Runs at the top of a step. Requests that run or wait may be about to reuse what is cached, so the
// flush is refused then (SGLang refuses it too) rather than leaving them to recompute it.
void Engine::serve_cache_flushes() {
    std::vector<std::promise<CacheFlush>> flushes;
    bool requests_pending = false;
    {
        std::lock_guard lock(mutex_);
        flushes.swap(cache_flushes_);
        requests_pending = !incoming_.empty();
    }
    if (flushes.empty()) return;
    CacheFlush result;
    if (!requests_pending && !scheduler_.has_work() && importing_.empty() && exporting_.empty()) {
        result.flushed = true;
        result.blocks_dropped = kv_.drop_unused_cached_blocks();
    }
    for (auto& flush : flushes) flush.set_value(result);
}

}  // namespace tempered
