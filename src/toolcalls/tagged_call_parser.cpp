#include "toolcalls/tagged_call_parser.h"

#include <algorithm>

#include "toolcalls/call_text.h"

namespace tempered::toolcalls {
namespace {

size_t trailing_space_start(std::string_view text) {
    size_t end = text.size();
    while (end > 0 && is_json_space(text[end - 1])) --end;
    return end;
}

}  // namespace

Prefix match_literal(std::string_view text, size_t at, std::string_view literal) {
    const std::string_view rest = text.substr(std::min(at, text.size()));
    if (rest.size() >= literal.size()) return rest.starts_with(literal) ? Prefix::Found : Prefix::None;
    return literal.starts_with(rest) ? Prefix::Partial : Prefix::None;
}

void TaggedCallParser::feed(std::string_view delta, ParsedText& out) {
    pending_ += delta;
    bool progress = true;
    while (progress) {
        if (!in_block_) {
            scan_content(out);
            progress = in_block_;
        } else {
            progress = scan_block(out);
        }
    }
}

// Content up to an opener goes out; a possible opener stays held.
void TaggedCallParser::scan_content(ParsedText& out) {
    const Opener opener = find_opener(pending_, line_start_);
    const size_t said = opener.state == Opener::State::None ? pending_.size() : opener.at;
    add_content(std::string_view(pending_).substr(0, said), out);
    if (said > 0) line_start_ = pending_[said - 1] == '\n';
    pending_.erase(0, said);
    if (opener.state == Opener::State::Found) {
        space_before_block_ = std::move(held_space_);
        held_space_.clear();
        in_block_ = true;
        block_kind_ = opener.kind;
    }
}

// Returns whether the block closed (so scanning goes on in the content after it).
bool TaggedCallParser::scan_block(ParsedText& out) {
    const BlockEnd end = find_block_end(pending_, block_kind_);
    if (end.state == BlockEnd::State::Incomplete) return false;
    in_block_ = false;
    if (end.state == BlockEnd::State::Broken) {
        // Not a call after all: what was read of it is content, and the rest is read again.
        ++out.unparsed;
        const size_t content = std::clamp<size_t>(end.end, 1, pending_.size());
        add_content(space_before_block_ + pending_.substr(0, content), out);
        line_start_ = pending_[content - 1] == '\n';
        pending_.erase(0, content);
        return true;
    }
    const std::string block = pending_.substr(0, end.end);
    pending_.erase(0, end.end);
    close_block(block, out);
    return true;
}

void TaggedCallParser::close_block(std::string_view block, ParsedText& out) {
    line_start_ = !block.empty() && block.back() == '\n';
    auto calls = parse_block(block, block_kind_);
    if (!calls) {
        ++out.unparsed;
        add_content(space_before_block_ + std::string(block), out);
        return;
    }
    for (ParsedToolCall& call : *calls) out.calls.push_back(std::move(call));
    after_call_ = true;
    // A bare call's block ends at its closing brace: the next line may hold another call.
    line_start_ = true;
}

void TaggedCallParser::finish(ParsedText& out) {
    if (in_block_) {
        // The output ended inside a block (e.g. the model stopped before the closing tag): a call if
        // what arrived parses, content otherwise.
        in_block_ = false;
        const std::string block = std::move(pending_);
        pending_.clear();
        close_block(block, out);
    } else {
        add_content(pending_, out);
        pending_.clear();
    }
    if (!after_call_) out.content += held_space_;
    held_space_.clear();
}

// Whitespace next to a call only separates it from other calls, so trailing whitespace is held until
// more content follows (a call that follows drops it); whitespace right after a call is dropped.
void TaggedCallParser::add_content(std::string_view text, ParsedText& out) {
    if (after_call_) {
        size_t start = 0;
        while (start < text.size() && is_json_space(text[start])) ++start;
        text.remove_prefix(start);
        if (text.empty()) return;
        after_call_ = false;
    }
    const size_t space = trailing_space_start(text);
    if (space > 0) {
        out.content += held_space_;
        out.content += text.substr(0, space);
        held_space_.clear();
    }
    held_space_ += text.substr(space);
}

}  // namespace tempered::toolcalls
