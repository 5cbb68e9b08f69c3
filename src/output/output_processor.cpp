#include "output/output_processor.h"

#include <utility>

namespace tempered {

OutputProcessor::OutputProcessor(OutputOptions options)
    : reasoning_(std::move(options.reasoning)), stop_matcher_(std::move(options.stop)) {
    if (options.loop_detection.enabled()) loop_watch_.emplace(options.loop_detection);
    if (options.tool_calls) call_parser_ = toolcalls::make_tool_call_parser(*options.tool_calls);
}

OutputDelta OutputProcessor::push(const OutputPiece& piece) {
    ReasoningText text = split(piece);
    OutputDelta out;
    out.reasoning = std::move(text.reasoning);
    StopMatcher::Output content = stop_matcher_.push(text.content);
    out.stopped = content.stopped;
    out.stop_string = std::move(content.stop);
    read_calls(std::move(content.text), content.stopped, out);
    watch_for_loops(piece, out);
    return out;
}

OutputDelta OutputProcessor::finish(std::string_view tail) {
    ReasoningText text = reasoning_ ? reasoning_->finish(tail) : ReasoningText{{}, std::string(tail)};
    OutputDelta out;
    out.reasoning = std::move(text.reasoning);
    std::string content = stop_matcher_.push(text.content).text;
    content += stop_matcher_.flush();
    read_calls(std::move(content), true, out);
    return out;
}

// Without reasoning handling every piece is content.
ReasoningText OutputProcessor::split(const OutputPiece& piece) {
    if (!reasoning_) return {{}, std::string(piece.text)};
    return reasoning_->on_piece(piece);
}

void OutputProcessor::read_calls(std::string content, bool ended, OutputDelta& out) {
    if (!call_parser_ || calls_ended_) {
        out.content = std::move(content);
        return;
    }
    toolcalls::ParsedText parsed;
    call_parser_->feed(content, parsed);
    if (ended) {
        call_parser_->finish(parsed);
        calls_ended_ = true;
    }
    out.content = std::move(parsed.content);
    out.calls = std::move(parsed.calls);
    out.unparsed_calls = parsed.unparsed;
}

void OutputProcessor::watch_for_loops(const OutputPiece& piece, OutputDelta& out) {
    if (!loop_watch_ || !piece.token) return;
    if (loop_watch_->observe(*piece.token) == LoopWatch::Seen::FirstLoop)
        out.loop = LoopSeen{*loop_watch_->first_loop(), in_reasoning()};
}

}  // namespace tempered
