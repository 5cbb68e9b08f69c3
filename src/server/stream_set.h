// The engine streams behind one HTTP response (a completions request with several prompts has one per
// prompt), read as one: events come out with their choice indices shifted into the response's
// numbering, and the usage is summed over them, including for requests the client cut short.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "engine/generation.h"

namespace tempered {

class StreamSet {
public:
    // Choice i of `stream` becomes choice `first_choice + i` of the response. `prompt_tokens` is the
    // length of its prompt, counted until the engine reports its own usage.
    void add(std::shared_ptr<GenerationStream> stream, int first_choice, int64_t prompt_tokens);
    // A prompt that is only scored (completions with max_tokens 0): counted, never generated from.
    void add_scored_prompt(int64_t prompt_tokens) { scored_prompt_tokens_ += prompt_tokens; }

    // The next event from any stream, nullopt after `timeout` without one. An event with `done`
    // means one stream ended; all_done() says whether every one has.
    std::optional<GenerationEvent> next(std::chrono::milliseconds timeout);
    bool all_done() const;
    // The engine's usage for the streams that ended; for the others (cancelled, still running) the
    // prompt and the tokens generated so far, so an abandoned request still says what it cost.
    GenerationUsage usage() const;
    // The client is gone: every stream's request is dropped by the engine.
    void cancel_all();

private:
    struct Entry {
        std::shared_ptr<GenerationStream> stream;
        int first_choice = 0;
        bool done = false;
        GenerationUsage usage;  // so far; the engine's own once done
    };
    std::vector<Entry> entries_;
    size_t next_entry_ = 0;
    int64_t scored_prompt_tokens_ = 0;
};

}  // namespace tempered
