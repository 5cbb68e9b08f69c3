#include "toolcalls/declared_tools.h"

#include "grammar/json_schema.h"
#include "toolcalls/arguments_validator.h"

namespace tempered::toolcalls {

std::string_view outcome_label(CallOutcome outcome) {
    switch (outcome) {
        case CallOutcome::Valid: return "valid";
        case CallOutcome::UnknownName: return "rejected_unknown_name";
        case CallOutcome::BadArguments: return "rejected_bad_arguments";
    }
    return "valid";
}

Result<DeclaredTools, ToolSchemaError> DeclaredTools::from_request(const nlohmann::ordered_json& tools,
                                                                   std::string_view only_name) {
    DeclaredTools declared;
    if (!tools.is_array()) return declared;
    for (size_t i = 0; i < tools.size(); ++i) {
        const nlohmann::ordered_json& function = tools[i]["function"];
        DeclaredTool tool{function["name"].get<std::string>(), {{"type", "object"}}};
        const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
        if (auto parameters = function.find("parameters"); parameters != function.end() && !parameters->is_null()) {
            if (!parameters->is_object()) return ToolSchemaError{param, "Invalid '" + param + "': expected an object."};
            tool.parameters = *parameters;
        }
        auto compiled = grammar::compile_json_schema(tool.parameters);
        if (!compiled) {
            return ToolSchemaError{param, "Invalid schema for function '" + tool.name + "' in '" + param +
                                              "': " + compiled.error().message};
        }
        if (only_name.empty() || tool.name == only_name) declared.tools_.push_back(std::move(tool));
    }
    return declared;
}

const DeclaredTool* DeclaredTools::find(std::string_view name) const {
    for (const DeclaredTool& tool : tools_)
        if (tool.name == name) return &tool;
    return nullptr;
}

CallCheck DeclaredTools::check(const ParsedToolCall& call) const {
    const DeclaredTool* tool = find(call.name);
    if (tool == nullptr) return {CallOutcome::UnknownName, "no tool named '" + call.name + "' was declared"};
    const auto arguments = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
    if (arguments.is_discarded()) return {CallOutcome::BadArguments, "arguments are not JSON"};
    if (auto violation = find_schema_violation(tool->parameters, arguments))
        return {CallOutcome::BadArguments, "arguments do not match the schema of '" + call.name + "': " + *violation};
    return {};
}

}  // namespace tempered::toolcalls
