// Decimal numerals of numbers within bounds, as grammar Exprs (canonical JSON spelling: no leading zeros,
// no `+`). Integer ranges are exact. Bounded non-integers are a subset: no exponent, and a fraction only
// after an integer part that stays in bounds with any fraction.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/grammar.h"

namespace tempered::grammar {

struct NumericBound {
    double value;
    bool exclusive;
};

// Integers n with lower <= n <= upper (either may be absent); nullopt when no integer qualifies.
std::optional<Expr> integer_in_range(std::optional<NumericBound> lower, std::optional<NumericBound> upper);
// Numbers (JSON `number`) within the bounds, as described above; nullopt when none is produced.
std::optional<Expr> number_in_range(std::optional<NumericBound> lower, std::optional<NumericBound> upper);

// Any JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
Expr any_json_number();

}  // namespace tempered::grammar
