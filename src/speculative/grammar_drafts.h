// Drafts under a grammar. A verified position's token is drawn under the grammar's mask, so a draft the
// grammar refuses is always rejected: verifying it (and every draft after it) only costs positions in the
// step. The drafts are cut before the first one the grammar refuses from the sequence's current state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grammar/constraint.h"

namespace tempered {

// How many of `drafts`, in order, the grammar accepts from `state` (a copy advances; `state` is unchanged).
// Free text (an inactive, lazily started grammar) accepts every token but a trigger whose grammar refuses it.
size_t drafts_the_grammar_allows(const grammar::ConstraintState& state, const std::vector<int32_t>& drafts);

}  // namespace tempered
