// Left recursion: a rule that can reach itself before consuming a byte through a reference that is not the
// last element of its alternative. The matcher's closure would push frames forever there (a tail reference
// returns straight to its caller's frame, so a loop of tail references alone, as in (a?)*, is caught by the
// closure's dedup and is fine). Grammars we compile never have it; a grammar a client sends may.
#pragma once

#include <optional>

#include "grammar/grammar.h"

namespace tempered::grammar {

// A rule on such a cycle, or nullopt.
std::optional<RuleId> find_left_recursion(const Grammar& grammar);

}  // namespace tempered::grammar
