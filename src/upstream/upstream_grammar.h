// A constraint as the upstream takes it: the front's grammar (response_format, tool calls under
// `constrain`) written as GBNF into the field the upstream kind reads (upstream_kind.h). The front still runs
// its own copy over what comes back (upstream_choice.h), so an engine that ignored the grammar is caught.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/constraint.h"
#include "tokenizer/tokenizer.h"
#include "upstream/upstream_kind.h"

namespace tempered::upstream {

struct UpstreamGrammar {
    std::string gbnf;
    std::vector<int32_t> triggers;  // a lazy grammar's trigger tokens; empty: it applies from the first token
};

// nullopt when this upstream cannot take the constraint: it takes no grammar, the grammar is lazy and it
// takes no triggers, or the grammar has no GBNF form (gbnf.h; never for the grammars tempered builds).
std::optional<UpstreamGrammar> upstream_grammar(const grammar::Constraint& constraint,
                                                const UpstreamCapabilities& capabilities);

// Adds the grammar to a request body (completion_body or llamacpp_completion_body).
void add_upstream_grammar(const UpstreamGrammar& grammar, const UpstreamCapabilities& capabilities,
                          const Tokenizer& tokenizer, nlohmann::json& body);

}  // namespace tempered::upstream
