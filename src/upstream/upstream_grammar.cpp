#include "upstream/upstream_grammar.h"

#include <string_view>

#include "grammar/gbnf.h"

namespace tempered::upstream {

std::optional<UpstreamGrammar> upstream_grammar(const grammar::Constraint& constraint,
                                                const UpstreamCapabilities& capabilities) {
    if (!capabilities.grammar) return std::nullopt;
    if (constraint.starts_lazily() && !capabilities.lazy_grammar) return std::nullopt;
    auto gbnf = grammar::write_gbnf(constraint.grammar());
    if (!gbnf) return std::nullopt;
    return UpstreamGrammar{std::move(gbnf).value(), constraint.trigger_tokens()};
}

void add_upstream_grammar(const UpstreamGrammar& grammar, const UpstreamCapabilities& capabilities,
                          const Tokenizer& tokenizer, nlohmann::json& body) {
    const std::string_view field = capabilities.grammar;
    if (field == "structured_outputs") {
        body["structured_outputs"] = {{"grammar", grammar.gbnf}};
        return;
    }
    body[capabilities.grammar] = grammar.gbnf;
    if (grammar.triggers.empty()) return;
    // llama-server: the grammar waits for a trigger token, then is fed that token's text, as ours is.
    constexpr int kTokenTrigger = 0;  // llama.cpp's COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN
    nlohmann::json triggers = nlohmann::json::array();
    for (const int32_t token : grammar.triggers)
        triggers.push_back({{"type", kTokenTrigger},
                            {"value", std::string(tokenizer.token_piece(token, /*skip_special=*/false))},
                            {"token", token}});
    body["grammar_lazy"] = true;
    body["grammar_triggers"] = std::move(triggers);
}

}  // namespace tempered::upstream
