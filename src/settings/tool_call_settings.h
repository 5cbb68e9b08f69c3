// The operator's tool-call flags: which family's calls the server reads from a chat answer
// (--tool-call-parser: auto from the chat template, none, or a family of toolcalls/tool_call_family.h) and
// what it does with calls that break the request's tools (--tool-call-validation). Each is the flag's
// value, else the config file's, else the default (auto, constrain). What they become for one request is
// server/chat_tool_calls.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tempered {

// off: every parsed call is returned as parsed; flag: only valid calls are returned, the others reported;
// constrain: flag, and generation is constrained to valid calls too.
enum class ToolCallValidation { Off, Flag, Constrain };
std::optional<ToolCallValidation> tool_call_validation_from_name(std::string_view name);

struct ToolCallSettings {
    std::string parser = "auto";  // auto | none | a family name
    ToolCallValidation validation = ToolCallValidation::Constrain;
};

// The two settings from the flags' values and the config file's ("" where not given), checked; an error
// names the flag and its legal values.
Result<ToolCallSettings> tool_call_settings(std::string_view parser_flag, std::string_view validation_flag,
                                            std::string_view parser_in_file, std::string_view validation_in_file);

// The families' names, alphabetical, joined by ", " and `last` before the last one ("hermes, llama3_json
// or mistral"): the registry's, so a new family is named in the help and errors without another edit.
std::string tool_call_family_names(std::string_view last = " or ");

}  // namespace tempered
