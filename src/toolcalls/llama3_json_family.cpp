// Llama 3.x JSON tool calling: when the model calls, its whole answer is the call,
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// optionally after <|python_tag|>, several calls separated by ';'. So an answer that opens with '{' or
// the tag is held to the end and then read; any other answer streams as content from its first
// non-space character.
// The family's descriptor (tool_call_family.h) is at the end of this file, beside its parser.
#include "toolcalls/call_text.h"
#include "toolcalls/tool_call_family.h"

namespace tempered::toolcalls {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

class Llama3JsonParser final : public ToolCallParser {
public:
    void feed(std::string_view delta, ParsedText& out) override {
        if (mode_ == Mode::Content) {
            out.content += delta;
            return;
        }
        pending_ += delta;
        if (mode_ == Mode::Undecided) decide(out);
    }

    void finish(ParsedText& out) override {
        if (mode_ == Mode::Call) {
            std::string_view text = trimmed();
            if (text.starts_with(kPythonTag)) text.remove_prefix(kPythonTag.size());
            if (auto calls = parse_call_sequence(text, ';', CallShape::Exact)) {
                for (ParsedToolCall& call : *calls) out.calls.push_back(std::move(call));
                pending_.clear();
                return;
            }
            ++out.unparsed;
        }
        out.content += pending_;
        pending_.clear();
    }

private:
    enum class Mode { Undecided, Content, Call };

    std::string_view trimmed() const {
        std::string_view text = pending_;
        while (!text.empty() && is_json_space(text.front())) text.remove_prefix(1);
        return text;
    }

    void decide(ParsedText& out) {
        const std::string_view text = trimmed();
        if (text.empty()) return;
        if (text.front() == '{' || text.starts_with(kPythonTag)) {
            mode_ = Mode::Call;
        } else if (!(text.size() < kPythonTag.size() && kPythonTag.starts_with(text))) {
            mode_ = Mode::Content;
            out.content += pending_;
            pending_.clear();
        }
    }

    Mode mode_ = Mode::Undecided;
    std::string pending_;
};

}  // namespace

// Llama 3 templates that describe JSON calls without the tag still say "parameters" beside their headers.
const ToolCallFamilyDescriptor& llama3_json_family() {
    static const ToolCallFamilyDescriptor family{
        .id = ToolCallFamily::Llama3Json,
        .name = "llama3_json",
        .template_markers = {{kPythonTag}, {"<|start_header_id|>", "\"parameters\""}},
        .trigger = "",  // a call is a bare object: no tag token to wait for
        .syntax = {.region_open = "",
                   .region_close = "",
                   .call_open = "",
                   .call_close = "}",
                   .arguments_key = "parameters",
                   .separator = "; "},
        .make_parser = []() -> std::unique_ptr<ToolCallParser> { return std::make_unique<Llama3JsonParser>(); },
    };
    return family;
}

}  // namespace tempered::toolcalls
