// A canonical name for the language a cut-off stack (a Matcher::at_context context) accepts: the rest of
// each frame's alternative and every rule reachable from them, with rules renumbered in the order they
// are met. Two contexts with the same key accept the same byte strings and end at the same points, in
// one grammar or in two, so they classify every token alike and may share that work.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "grammar/grammar.h"

namespace tempered::grammar {

// nullopt when the reachable grammar serializes to more than `max_bytes` (too big to be worth sharing).
std::optional<std::string> context_key(const Grammar& grammar, std::span<const uint32_t> context, size_t max_bytes);

}  // namespace tempered::grammar
