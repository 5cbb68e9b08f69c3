#include "speculative/grammar_drafts.h"

namespace tempered {

size_t drafts_the_grammar_allows(const grammar::ConstraintState& state, const std::vector<int32_t>& drafts) {
    grammar::ConstraintState ahead = state;
    size_t allowed = 0;
    while (allowed < drafts.size() && ahead.accept(drafts[allowed])) ++allowed;
    return allowed;
}

}  // namespace tempered
