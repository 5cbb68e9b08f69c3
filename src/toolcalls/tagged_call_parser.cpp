#include "toolcalls/tagged_call_parser.h"

#include "toolcalls/call_text.h"

namespace tempered::toolcalls {
namespace {

size_t trailing_space_start(std::string_view text) {
    size_t end = text.size();
    while (end > 0 && is_json_space(text[end - 1])) --end;
    return end;
}

}  // namespace

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

// Content up to the start tag goes out; only a possible beginning of the tag stays held.
void TaggedCallParser::scan_content(ParsedText& out) {
    const size_t tag = pending_.find(start_tag_);
    if (tag != std::string::npos) {
        add_content(std::string_view(pending_).substr(0, tag), out);
        space_before_block_ = std::move(held_space_);
        held_space_.clear();
        pending_.erase(0, tag + start_tag_.size());
        in_block_ = true;
        return;
    }
    const size_t held = partial_tag_length(pending_, start_tag_);
    add_content(std::string_view(pending_).substr(0, pending_.size() - held), out);
    pending_.erase(0, pending_.size() - held);
}

// Returns whether the block closed (so scanning goes on in the content after it).
bool TaggedCallParser::scan_block(ParsedText& out) {
    const BlockEnd end = find_block_end(pending_);
    if (end.state == BlockEnd::State::Incomplete) return false;
    in_block_ = false;
    if (end.state == BlockEnd::State::Broken) {
        // Not a call after all: the tag is content, and what follows it is read as content again.
        ++out.unparsed;
        add_content(space_before_block_ + start_tag_, out);
        return true;
    }
    const std::string block = pending_.substr(0, end.end);
    pending_.erase(0, end.end);
    close_block(block, out);
    return true;
}

void TaggedCallParser::close_block(std::string_view block, ParsedText& out) {
    auto calls = parse_block(block);
    if (!calls) {
        ++out.unparsed;
        add_content(space_before_block_ + start_tag_ + std::string(block), out);
        return;
    }
    for (ParsedToolCall& call : *calls) out.calls.push_back(std::move(call));
    after_call_ = true;
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
