// What the engine is asked to do and what it answers, independent of HTTP and OpenAI's JSON.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/degeneration_guard.h"
#include "engine/reasoning_phase.h"
#include "sampling/dry.h"
#include "sampling/logprobs.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"
#include "toolcalls/tool_call_family.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered::grammar {
class Constraint;
}

namespace tempered {

class KvImport;
class KvExport;

struct GenerationOptions {
    std::vector<int32_t> prompt;  // token ids, already templated and tokenized
    int n = 1;                    // choices, sharing one prefill
    int64_t max_tokens = 16;      // per choice; the API has already checked it fits the context
    int64_t min_tokens = 0;       // end-of-generation tokens are masked until this many are generated
    bool ignore_eos = false;
    bool speculate = true;  // with the engine's speculation on: false opts this request out
    std::vector<std::string> stop;
    SamplingParams sampling;  // temperature, truncation, logit bias
    PenaltyParams penalties;
    DryParams dry;          // off unless the request's resolved sampling turns it on
    uint64_t seed = 0;      // choice i draws from a generator seeded with (seed, i)
    int top_logprobs = -1;  // < 0: no logprobs; else logprobs with this many alternatives
    // A grammar every choice follows (response_format, tool calls), shared by them; nullptr: free.
    std::shared_ptr<const grammar::Constraint> constraint;
    DegenerationGuard guard;  // loop detection and what a loop does; off unless the server sets it
    // <think>…</think> handling: the split, the budget and its forced end (engine/reasoning_phase.h).
    ReasoningOptions reasoning;
    // The family whose tool calls each choice's content is read for (output/output_processor.h); nullopt:
    // the content is all content.
    std::optional<toolcalls::ToolCallFamily> tool_calls;
    // Prefill/decode disaggregation (kv_transfer.h), set by a server in one of those roles: the prompt's
    // KV comes from a prefill server (decode side), or goes to the decode server that claims it (prefill
    // side). At most one of them; both empty when one server does everything.
    std::shared_ptr<KvImport> kv_import;
    std::shared_ptr<KvExport> kv_export;
    // Passthrough: max_tokens when neither the request nor a limit set one (the upstream's own default stands).
    static constexpr int64_t kUpstreamDecides = INT64_MAX;
    // Upstream passthrough (upstream/upstream_generator.h): the chat request's own fields (messages, tools, ...)
    // as JSON text, for an upstream that renders the conversation itself; `prompt` is then empty. Our engine
    // never gets one (only an upstream front builds it).
    std::string passthrough_chat;
};

// Repetition: the degeneration guard (action stop, or the request's repetition_detection) ended it.
enum class FinishReason { Stop, Length, Repetition };
const char* finish_reason_name(FinishReason reason);

struct ChoiceDelta {
    int index = 0;
    std::string text;  // new content (never part of a stop string, nor of a tool call)
    // With a tool-call family: the calls whose whole block arrived since the last delta, as the model wrote
    // them (which the client gets is the API's to decide), and blocks that did not parse (back in `text`).
    std::vector<toolcalls::ParsedToolCall> calls;
    int unparsed_calls = 0;
    std::vector<TokenLogprob> logprobs;  // of the tokens generated since the last delta (if asked)
    std::vector<int32_t> tokens;         // those tokens
    std::optional<FinishReason> finish;
    std::optional<std::string> stop_string;  // on the finishing delta of a choice a stop string ended
    // On the finishing delta: a grammar's answer was closed early to fit max_tokens (engine/grammar_closing.h).
    bool closed_early = false;
    // The choice's loop report: on the delta where the loop is detected, and on its finishing delta.
    std::optional<DegenerationReport> degeneration;
    // With reasoning handling: the text that came inside reasoning (`text` stays the content), and on
    // the finishing delta the choice's reasoning report.
    std::string reasoning_text;
    std::optional<ReasoningReport> reasoning;
};

struct GenerationUsage {
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;      // prompt tokens whose KV came from the prefix cache
    int64_t completion_tokens = 0;  // over all choices
};

// One message from the engine to a request's reader. The last one has done = true (or an error).
struct GenerationEvent {
    std::vector<ChoiceDelta> deltas;
    bool done = false;
    std::optional<std::string> error;  // the request failed; done is true too
    // The HTTP status that failure answers with: 500, ours; upstream mode 502 (the upstream failed or
    // answered nonsense), 503 (unreachable), or the upstream's own 4xx.
    int error_status = 500;
    std::optional<int> retry_after_seconds;  // an upstream's 429 or 503: its Retry-After, passed on
    GenerationUsage usage;                   // filled in the last event
};

// Events the engine queues for a reader that does not take them: a stream whose client stopped reading
// blocks its writer (until the HTTP server's stall timeout), and the engine goes on generating meanwhile.
// Past this many the request ends with an error and its KV is freed, so that queue and the KV behind it
// stay bounded whatever max_tokens is. A reader keeping up holds a few; 4096 is about 40 s of decoding at
// 100 tokens/s, beyond the default 30 s stall timeout, so that timeout normally comes first.
inline constexpr size_t kMaxUndeliveredEvents = 4096;

// The reader's end of a request: events in order, and a way to abandon it (client disconnect).
// Shared by the engine thread and one HTTP thread.
class GenerationStream {
public:
    explicit GenerationStream(size_t max_undelivered = kMaxUndeliveredEvents) : max_undelivered_(max_undelivered) {}

    // The next event, or nullopt if none arrived within `timeout` (so the reader can check its client).
    std::optional<GenerationEvent> next(std::chrono::milliseconds timeout);
    // The reader is gone: the engine drops the request and frees its KV blocks at its next step.
    void cancel();
    bool cancelled() const;

    // Engine side. Once `max_undelivered` events wait unread, the stream ends itself instead: a last
    // event with an error, and cancelled() so that the engine drops the request; later pushes are dropped.
    void push(GenerationEvent event);

private:
    const size_t max_undelivered_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<GenerationEvent> events_;
    bool cancelled_ = false;
    bool overflowed_ = false;
};

}  // namespace tempered
