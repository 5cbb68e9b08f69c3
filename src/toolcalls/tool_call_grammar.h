// The grammar of a call region in a family's syntax, for constraining generation once the call tag is
// reached (tool_choice auto) or from the first token (required, named). Pure: the caller decides where
// it applies. Each call names one of the allowed tools and its arguments follow that tool's schema in the
// canonical layout of grammar/json_schema.h, written in the family's CallSyntax (tool_call_family.h):
//   hermes       <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>   (parallel: joined by "\n")
//   llama3_json  {"name": "NAME", "parameters": ARGS}                             (parallel: joined by "; ")
//   mistral      [TOOL_CALLS][{"name": "NAME", "arguments": ARGS}, ...]           (parallel: more array items)
#pragma once

#include <string>

#include "core/result.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "toolcalls/declared_tools.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {

struct ToolCallGrammarRequest {
    ToolCallFamily family = ToolCallFamily::Hermes;
    const DeclaredTools* tools = nullptr;  // built with tool_choice's name when it names one
    bool parallel_tool_calls = true;       // false: exactly one call
};

// Fails when no tool is declared or a schema does not compile (DeclaredTools already refused those).
Result<grammar::Grammar, grammar::SchemaError> build_tool_call_grammar(const ToolCallGrammarRequest& request);

// Harmony's (gpt-oss) instead, defined beside its parser (harmony_family.cpp): not a call region but one message
// header from its <|channel|> on, the trigger of a lazy grammar that watches every header outside reasoning:
//   <|channel|> ( analysis<|message|> | final<|message|> | commentary<|message|>
//               | commentary to=functions.NAME <|constrain|>json<|message|>ARGS )
// with NAME one of the declared tools and ARGS its schema; after each header the output is free again.
Result<grammar::Grammar, grammar::SchemaError> build_harmony_header_grammar(const DeclaredTools& tools);

}  // namespace tempered::toolcalls
