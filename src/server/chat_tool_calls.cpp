#include "server/chat_tool_calls.h"

namespace tempered {

api::ApiResult<std::optional<ToolCallSetup>> tool_call_setup(const api::ChatRequest& request,
                                                             const ChosenToolCalls& settings) {
    const bool no_tools = !request.tools.is_array() || request.tools.empty();
    using Mode = api::ToolChoice::Mode;
    const api::ToolChoice& choice = request.tool_choice;
    // The one tool a call may name; "" (every tool) unless tool_choice names a function.
    const std::string& only_name = choice.function_name;
    auto tools = toolcalls::DeclaredTools::from_request(request.tools, only_name);
    if (!tools) return api::invalid_request(tools.error().message, tools.error().param, "invalid_value");
    // tool_choice "none": the tools are still rendered into the prompt (as OpenAI does) but nothing is
    // read as a call. Schemas are still checked, so a request is refused the same way whatever its choice.
    if (no_tools || choice.mode == Mode::None || !settings.family) return std::optional<ToolCallSetup>();
    // A function named "" singles out no tool (DeclaredTools reads "" as all of them), so it forces nothing.
    const bool forced = choice.mode == Mode::Required || (choice.mode == Mode::Function && !only_name.empty());
    return std::optional<ToolCallSetup>(ToolCallSetup{*settings.family, std::move(tools).value(), settings.validation,
                                                      request.parallel_tool_calls, forced});
}

ChoiceToolCalls::ChoiceToolCalls(const ToolCallSetup& setup, ServingMetrics& metrics)
    : setup_(setup), metrics_(metrics) {}

ToolCallStep ChoiceToolCalls::read(const ChoiceDelta& delta) {
    for (int i = 0; i < delta.unparsed_calls; ++i) metrics_.count_tool_call("unparsed");
    ToolCallStep step;
    step.content = delta.text;
    step.first_index = returned_;
    for (const toolcalls::ParsedToolCall& call : delta.calls) admit(call, step);
    return step;
}

void ChoiceToolCalls::admit(toolcalls::ParsedToolCall call, ToolCallStep& step) {
    const int index = parsed_++;
    const toolcalls::CallCheck check = setup_.tools.check(call);
    metrics_.count_tool_call(toolcalls::outcome_label(check.outcome));
    const bool checked = setup_.validation != ToolCallValidation::Off;
    std::string refusal;
    if (checked && check.outcome != toolcalls::CallOutcome::Valid) {
        refusal = check.reason;
    } else if (!setup_.parallel_tool_calls && returned_ > 0) {
        if (!checked) return;  // dropped: the request asked for one call at most
        refusal = "parallel_tool_calls is false: only the first call is returned";
    }
    if (!refusal.empty()) {
        step.violations.push_back({index, std::move(call.name), std::move(call.arguments), std::move(refusal)});
        return;
    }
    ++returned_;
    step.calls.push_back({api::make_response_id("call_"), "function", std::move(call.name), std::move(call.arguments)});
}

}  // namespace tempered
