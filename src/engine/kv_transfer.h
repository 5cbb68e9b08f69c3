// Prefill/decode disaggregation as the engine sees it. A decode-side request imports its prompt's KV
// from a prefill server instead of computing it; a prefill-side request exports its prompt's KV the
// moment it is computed, and its last event waits until the importer has it. The network is not the
// engine's concern: the server attaches these objects to GenerationOptions (src/disagg implements
// them over TCP or shared memory) and the engine only calls them from its own thread.
//
// The decode side computes the prompt's last position itself (one token, as a decode step costs): its
// logits start the answer there, so the first token is drawn where every later one is, under the same
// sampler, grammar, guard and reasoning state, and nothing of that state has to cross the wire.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/result.h"
#include "kv/staged_kv.h"

namespace tempered {

class KvImport {
public:
    virtual ~KvImport() = default;
    // Once, when the request reaches the engine: fetch the KV of prompt positions
    // [cached_positions, prompt.size() - 1). `cached_positions` (a multiple of the block size) are in
    // this engine's prefix cache already. `ready` may be called from any thread once poll() has news.
    virtual void start(std::vector<int32_t> prompt, int64_t cached_positions, std::function<void()> ready) = 0;
    // Nothing while the transfer runs; then the KV, or an error naming what failed (a timeout, the
    // prefill server gone, a KV layout or model mismatch, the prefill request failed).
    virtual std::optional<Result<StagedKv>> poll() = 0;
    // The request ended before the KV came (client gone, shutdown): drop the transfer. Idempotent.
    virtual void cancel() = 0;
};

class KvExport {
public:
    virtual ~KvExport() = default;
    // Leading prompt positions the importer already holds, from its claim; 0 until it has claimed.
    // The engine stages only the blocks from there on.
    virtual int64_t claimed_cached_positions() const = 0;
    // Once, the moment the prompt's KV is computed: positions [kv.first_position, prompt.size()), handed
    // over (the engine keeps no reference to its blocks). `ready` may be called from any thread once
    // poll() has news.
    virtual void deliver(std::vector<int32_t> prompt, StagedKv kv, std::function<void()> ready) = 0;
    // Nothing until the importer has the KV; then Ok, or an error (no claim in time, the importer gone,
    // a mismatch).
    virtual std::optional<Status> poll() = 0;
    // The request ended without delivering, or its reader left: tell a waiting importer and drop the
    // transfer. Idempotent; a no-op once poll() said Ok.
    virtual void cancel() = 0;
};

}  // namespace tempered
