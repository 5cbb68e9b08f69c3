// The engine streams behind one HTTP response (a completions request with several prompts has one per
// prompt), read as one: events come out with their choice indices shifted into the response's
// numbering, and the usage is summed when all are done.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "engine/generation.h"

namespace tempered {

class StreamSet {
public:
    // Choice i of `stream` becomes choice `first_choice + i` of the response.
    void add(std::shared_ptr<GenerationStream> stream, int first_choice);

    // The next event from any stream, nullopt after `timeout` without one. An event with `done`
    // means one stream ended; all_done() says whether every one has.
    std::optional<GenerationEvent> next(std::chrono::milliseconds timeout);
    bool all_done() const;
    GenerationUsage usage() const { return usage_; }
    // The client is gone: every stream's request is dropped by the engine.
    void cancel_all();

private:
    struct Entry {
        std::shared_ptr<GenerationStream> stream;
        int first_choice = 0;
        bool done = false;
    };
    std::vector<Entry> entries_;
    size_t next_entry_ = 0;
    GenerationUsage usage_;
};

}  // namespace tempered
