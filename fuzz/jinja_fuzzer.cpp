// libFuzzer target for the Jinja chat-template interpreter (src/chat): the input is a template, then
// optionally a NUL byte and a JSON context. Any template must parse or fail with an Error, and any parsed
// template must render or fail with an Error under the default JinjaLimits (the limits the server applies
// to every request) — never crash, throw, overflow the stack, hang or allocate without bound.
// The context after the NUL: a JSON array is the messages, a JSON object holds extra template variables
// (as chat_template_kwargs do); anything else, or no NUL at all, renders over a fixed conversation.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace {

using nlohmann::ordered_json;

ordered_json fixed_messages() {
    return ordered_json::parse(R"([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
        {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"},
        {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]}
    ])");
}

ordered_json fixed_tools() {
    return ordered_json::parse(R"([{"type": "function", "function": {"name": "add", "description": "a+b",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]}}}])");
}

tempered::ChatTemplateInputs inputs_from(std::string_view context_text) {
    tempered::ChatTemplateInputs inputs;
    inputs.messages = fixed_messages();
    inputs.tools = fixed_tools();
    inputs.bos_token = "<s>";
    inputs.eos_token = "</s>";
    inputs.now = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1'750'000'000)); };
    auto context = ordered_json::parse(context_text, nullptr, /*allow_exceptions=*/false);
    if (context.is_array()) inputs.messages = std::move(context);
    if (context.is_object()) inputs.extra_context = std::move(context);
    return inputs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    const std::string_view source = input.substr(0, nul);
    const std::string_view context = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

    auto parsed = tempered::ChatTemplate::parse(source);
    if (!parsed) return 0;
    auto rendered = parsed->apply(inputs_from(context));
    if (rendered && rendered->size() > tempered::JinjaLimits{}.max_output_bytes) __builtin_trap();
    return 0;
}
