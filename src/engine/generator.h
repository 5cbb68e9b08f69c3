// What the server asks of whatever generates: our engine (engine.h), or another engine behind an
// OpenAI-compatible API (upstream mode). The services above it submit GenerationOptions and read a
// GenerationStream of events either way, so the API, the edge and the response builders are the same.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/generation.h"

namespace tempered {

struct EngineStats {
    int running_requests = 0;
    int waiting_requests = 0;
    int64_t running_sequences = 0;
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_used = 0;
    int64_t kv_block_size = 0;
    int64_t tokens_in_kv = 0;  // positions held by running sequences
    // Disaggregation: requests waiting for their prompt's KV to arrive (decode side) or to be taken by
    // the decode server (prefill side, generation done).
    int importing_requests = 0;
    int exporting_requests = 0;
    int64_t waiting_prompt_tokens = 0;  // prompt tokens of the requests not admitted yet (/get_load)
};

enum class SubmitRefusal { QueueFull, Draining };

// The answer to a cache flush. As SGLang does, the engine flushes only while no request runs or waits.
struct CacheFlush {
    bool flushed = false;
    int64_t blocks_dropped = 0;
};

// A generation this generator cannot do as asked (upstream mode: what needs the draw): the request's field
// that asks for it, and why. The API answers 400 naming the field instead of dropping it silently.
struct Unsupported {
    std::string param;
    std::string message;
};

struct SubmitResult {
    std::shared_ptr<GenerationStream> stream;  // set on success
    std::optional<SubmitRefusal> refusal;
    std::optional<Unsupported> unsupported;  // refused for what it asks (neither refusal nor stream set)
};

class Generator {
public:
    virtual ~Generator() = default;

    virtual SubmitResult submit(GenerationOptions options) = 0;
    virtual EngineStats stats() const = 0;
    // Refuse new requests from now on; those accepted still finish.
    virtual void begin_drain() = 0;
    virtual bool idle() const = 0;
    // Drops every cached prefix nobody uses; nullopt when that did not happen within `timeout`.
    virtual std::optional<CacheFlush> flush_cache(std::chrono::milliseconds timeout) = 0;
    // Why it could not take a request now (/ready), or nullopt when it can. Our engine always can while it
    // runs; an upstream generator asks the upstream.
    virtual std::optional<std::string> not_ready() const { return std::nullopt; }
    // The `sampling` report's names of the values in `options` that would change the draw and that this
    // generator cannot apply (upstream mode: an engine that does not take them); reported "applied": false.
    virtual std::vector<std::string> unapplied(const GenerationOptions&) const { return {}; }
};

}  // namespace tempered
