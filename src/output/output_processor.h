// One choice's output on its text side: pieces of text in (with their token ids when the source has them),
// then the reasoning split, stop strings on the content, tool calls, loop detection, and what the client
// may see out.
// It knows no model, scheduler or KV cache: our engine feeds it the detokenizer's text of each token, and a
// stream from another engine can be fed the same way, so both get the same split, stops and loop checks.
//
// What it does not do is act on the logits. The reasoning budget's forced end, a resample after a loop and
// ending reasoning by force need the draw, so they stay with whoever draws (engine/reasoning_phase,
// engine/degeneration_guard); the processor reports and the driver acts.
//
// The stages, in order, each over what the one before let through:
//   1. reasoning split (ReasoningSplit, optional): reasoning text apart from content;
//   2. stop strings (StopMatcher), on content only: a stop string the model thinks about ends nothing;
//   3. tool calls (optional, the request's tool-call family): the content read by that family's parser
//      (toolcalls/tool_call_parser.h) into content and calls; what the model writes while reasoning or
//      after a stop string is never a call. Which calls the client gets (declared tools, schemas,
//      parallel_tool_calls) and their ids are the API's to decide: this stage only reads them;
//   4. loop detection (LoopWatch, optional) on the pieces' token ids: the detector counts tokens, so pieces
//      without an id are not seen by it (text alone has no token boundaries to count loops in).
// A next stage takes what the one before it let through, and goes in this list.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/loop_watch.h"
#include "output/reasoning_split.h"
#include "output/repetition_detector.h"
#include "output/stop_matcher.h"
#include "toolcalls/tool_call_family.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered {

struct OutputOptions {
    std::vector<std::string> stop;              // matched on content only
    std::unique_ptr<ReasoningSplit> reasoning;  // null: no reasoning handling, every piece is content
    // Off unless set (validate_repetition_detection's values). Our engine leaves it off: its degeneration
    // guard watches the tokens it draws, since what a loop does there (resample) needs the draw.
    RepetitionDetectionParams loop_detection;
    // The family whose calls the content is read for; nullopt: the content is all content.
    std::optional<toolcalls::ToolCallFamily> tool_calls;
};

// A loop first seen with a piece, and on which side of the reasoning it was.
struct LoopSeen {
    LoopSighting loop;  // detected_at_token counts the pieces with ids, the first one 0
    bool in_reasoning = false;
};

// What one piece (or the end) let out.
struct OutputDelta {
    std::string content;      // never part of a stop string
    std::string reasoning;    // with reasoning handling: the text that came inside reasoning
    bool stopped = false;     // a stop string was found: `content` ends right before it; the output is over
    std::string stop_string;  // which one
    // With a tool-call family: the calls whose whole block came with this piece, and blocks that looked like
    // calls but did not parse (their text went back to `content`).
    std::vector<toolcalls::ParsedToolCall> calls;
    int unparsed_calls = 0;
    std::optional<LoopSeen> loop;
};

class OutputProcessor {
public:
    OutputProcessor() = default;
    explicit OutputProcessor(OutputOptions options);

    OutputDelta push(const OutputPiece& piece);
    // The output ended without a stop string: what was held back, with `tail`, the text the source still
    // held (the detokenizer's unfinished character).
    OutputDelta finish(std::string_view tail = {});

    bool in_reasoning() const { return reasoning_ && reasoning_->in_reasoning(); }
    // The loop seen so far, its repeats as far as it has gone on (for a report on the last delta).
    std::optional<LoopSighting> loop() const { return loop_watch_ ? loop_watch_->first_loop() : std::nullopt; }

private:
    ReasoningText split(const OutputPiece& piece);
    // The content past the stop strings, read for calls; `ended`: nothing more comes (the parser lets go).
    void read_calls(std::string content, bool ended, OutputDelta& out);
    void watch_for_loops(const OutputPiece& piece, OutputDelta& out);

    std::unique_ptr<ReasoningSplit> reasoning_;
    StopMatcher stop_matcher_{std::vector<std::string>{}};
    std::unique_ptr<toolcalls::ToolCallParser> call_parser_;  // null: no tool calls
    bool calls_ended_ = false;                                // the parser has let go of what it held
    std::optional<LoopWatch> loop_watch_;
};

}  // namespace tempered
