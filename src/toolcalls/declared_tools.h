// The tools a request declared, and the check of a parsed call against them: is the name declared, are
// the arguments valid for that tool's `parameters` schema. Building it also compiles every schema with
// the grammar compiler, so a schema tempered could not enforce is refused up front (400), naming the
// keyword, instead of being checked here and ignored by constrained generation later.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {

enum class CallOutcome { Valid, UnknownName, BadArguments };
// The metric label: "valid", "rejected_unknown_name", "rejected_bad_arguments".
std::string_view outcome_label(CallOutcome outcome);

struct CallCheck {
    CallOutcome outcome = CallOutcome::Valid;
    std::string reason;  // "" when valid
};

struct DeclaredTool {
    std::string name;
    nlohmann::ordered_json parameters;  // the schema; {"type": "object"} when the tool declared none
};

struct ToolSchemaError {
    std::string param;  // "tools[2].function.parameters"
    std::string message;
};

class DeclaredTools {
public:
    // `tools`: the request's array (shapes already checked by the API). `only_name`: set when tool_choice
    // names a function; then that is the one tool a call may name.
    static Result<DeclaredTools, ToolSchemaError> from_request(const nlohmann::ordered_json& tools,
                                                               std::string_view only_name = "");

    CallCheck check(const ParsedToolCall& call) const;
    const std::vector<DeclaredTool>& tools() const { return tools_; }
    const DeclaredTool* find(std::string_view name) const;

private:
    std::vector<DeclaredTool> tools_;
};

}  // namespace tempered::toolcalls
