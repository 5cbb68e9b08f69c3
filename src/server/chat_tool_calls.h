// Tool calls in a chat answer: which family's parser reads a request's output (the family the server chose
// and the request's tools; the parser itself runs in each choice's output processor, output/), and, per
// choice, which of the calls it read are returned (with their `call_` ids and indices) and which are
// violations, for the response builder to turn into OpenAI's message or chunk shapes.
//
// --tool-call-validation: `off` returns every parsed call as parsed; `flag` checks each (declared name?
// arguments valid for its schema?) and returns only the valid ones, reporting the others as
// tool_call_violations; `constrain` also constrains generation (StructuredOutput::tool_call_constraint)
// and checks what was written all the same, so a call the grammar could not reach (an untagged one under
// tool_choice auto) is still never returned unless valid. With parallel_tool_calls false only the first returned call
// is kept; later ones are reported as violations unless validation is off. Every parsed call is counted in
// tempered:tool_calls_total{outcome} whatever the mode, as are blocks that did not parse ("unparsed").
// tool_choice "required" or a named function: a named function makes the other tools undeclared for the
// check; under `constrain` the answer is forced into calls, otherwise one without calls stays content.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/chat_request.h"
#include "api/errors.h"
#include "api/responses.h"
#include "engine/generation.h"
#include "server/serving_metrics.h"
#include "settings/tool_call_settings.h"
#include "toolcalls/declared_tools.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered {

// The server's choice for its model, from the flags (settings/tool_call_settings.h) and the chat template.
struct ChosenToolCalls {
    std::optional<toolcalls::ToolCallFamily> family;  // nullopt: tool calls are not parsed (content only)
    ToolCallValidation validation = ToolCallValidation::Constrain;
};

// How one request's output is read.
struct ToolCallSetup {
    toolcalls::ToolCallFamily family = toolcalls::ToolCallFamily::Hermes;
    toolcalls::DeclaredTools tools;
    ToolCallValidation validation = ToolCallValidation::Constrain;
    bool parallel_tool_calls = true;
    bool forced = false;  // tool_choice "required" or a named function: the answer must be calls
};

// nullopt when the output is plain content: no tools, tool_choice "none", or no parser for this model.
// An error (400, naming tools[i].function.parameters) when a tool's schema cannot be compiled.
api::ApiResult<std::optional<ToolCallSetup>> tool_call_setup(const api::ChatRequest& request,
                                                             const ChosenToolCalls& settings);

// What one stretch of a choice's output says.
struct ToolCallStep {
    std::string content;
    int first_index = 0;               // the index of calls[0] in the message's tool_calls
    std::vector<api::ToolCall> calls;  // returned, with ids
    std::vector<api::ToolCallViolation> violations;
};

class ChoiceToolCalls {
public:
    ChoiceToolCalls(const ToolCallSetup& setup, ServingMetrics& metrics);

    // The delta's content and the calls its output processor read, checked and numbered.
    ToolCallStep read(const ChoiceDelta& delta);
    bool returned_calls() const { return returned_ > 0; }

private:
    void admit(toolcalls::ParsedToolCall call, ToolCallStep& step);

    const ToolCallSetup& setup_;
    ServingMetrics& metrics_;
    int parsed_ = 0;    // calls the model wrote so far
    int returned_ = 0;  // of those, returned as calls
};

// The calls of a one-choice answer (the Responses and Messages builders): the setup it reads under, owned, or
// none, and then every delta's text is content.
class OneChoiceToolCalls {
public:
    void read_with(ToolCallSetup setup, ServingMetrics& metrics) {
        setup_ = std::make_unique<ToolCallSetup>(std::move(setup));
        reader_.emplace(*setup_, metrics);
    }
    ToolCallStep read(const ChoiceDelta& delta) {
        if (reader_) return reader_->read(delta);
        ToolCallStep step;
        step.content = delta.text;
        return step;
    }

private:
    std::unique_ptr<ToolCallSetup> setup_;
    std::optional<ChoiceToolCalls> reader_;
};

}  // namespace tempered
