// oneOf without counting matches: compiled as anyOf, which is exact only when no value can satisfy two
// branches. This decides that from the schemas alone, conservatively: branches are disjoint when they
// allow no JSON type in common (integer counts as a number), when both are finite value sets (const/enum)
// with no value in common, or when both are objects that require one property whose const/enum values
// differ (a tagged union). Anything else is reported as a possible overlap, never assumed away.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tempered::grammar {

using RefResolver = std::function<const nlohmann::ordered_json*(const std::string& ref)>;

// nullopt when the branches of `options` (a oneOf array) are pairwise disjoint; otherwise why two of
// them may both match ("branches 0 and 1 may both match: both allow integer").
std::optional<std::string> oneof_overlap(const nlohmann::ordered_json& options, const RefResolver& resolve);

}  // namespace tempered::grammar
