#include "toolcalls/tool_call_grammar.h"

#include <nlohmann/json.hpp>

namespace tempered::toolcalls {

using grammar::Expr;

Result<grammar::Grammar, grammar::SchemaError> build_tool_call_grammar(const ToolCallGrammarRequest& request) {
    if (request.tools == nullptr || request.tools->tools().empty())
        return grammar::SchemaError{"", "", "no tool is declared, so no call can be written"};
    if (request.family == ToolCallFamily::Harmony) return build_harmony_header_grammar(*request.tools);
    const CallSyntax& syntax = describe(request.family).syntax;
    grammar::GrammarBuilder builder;
    std::vector<Expr> calls;
    for (const DeclaredTool& tool : request.tools->tools()) {
        auto arguments = grammar::compile_json_schema_into(builder, tool.parameters);
        if (!arguments) return arguments.error();
        // The name as a JSON string literal, escaped as json.dumps would.
        const std::string name = nlohmann::ordered_json(tool.name).dump();
        calls.push_back(Expr::sequence({Expr::literal(std::string(syntax.call_open) + "{\"name\": " + name + ", \"" +
                                                      std::string(syntax.arguments_key) + "\": "),
                                        Expr::reference(*arguments), Expr::literal(syntax.call_close)}));
    }
    const grammar::RuleId call = builder.add_rule();
    builder.define(call, Expr::choice(std::move(calls)));
    std::vector<Expr> region = {Expr::literal(syntax.region_open), Expr::reference(call)};
    if (request.parallel_tool_calls) {
        region.push_back(Expr::repeat(Expr::sequence({Expr::literal(syntax.separator), Expr::reference(call)}), 0,
                                      Expr::kUnbounded));
    }
    region.push_back(Expr::literal(syntax.region_close));
    const grammar::RuleId root = builder.add_rule();
    builder.define(root, Expr::sequence(std::move(region)));
    auto built = builder.build(root);
    if (!built) return grammar::SchemaError{"", "", built.error().message};
    return std::move(built.value());
}

}  // namespace tempered::toolcalls
