#include "grammar/numeric_range.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace tempered::grammar {
namespace {

// Magnitudes beyond this are treated as unbounded: a grammar over 19-digit limits is not worth its size.
constexpr double kLargestBound = 1e18;

// Digit caps (a subset of JSON, documented in json_schema.h). Without them a small model can loop on a
// digit forever inside a valid number ("45.000000..." until max_tokens), as seen on Gemma 3 and on a
// `time` fraction: the grammar would never let the value end on its own. 19 integer digits hold any int64,
// 16 fraction digits any double json.dumps writes.
constexpr uint32_t kMaxIntegerDigits = 19;
constexpr uint32_t kMaxFractionDigits = 16;
constexpr uint32_t kMaxExponentDigits = 3;

Expr digit() { return Expr::byte_set(ByteSet::range('0', '9')); }
Expr digits(size_t count) { return Expr::repeat(digit(), static_cast<uint32_t>(count), static_cast<uint32_t>(count)); }
Expr fraction() { return Expr::sequence({Expr::literal("."), Expr::repeat(digit(), 1, kMaxFractionDigits)}); }

// Numerals of exactly low.size() digits between `low` and `high` (same length, low <= high).
Expr same_length_range(const std::string& low, const std::string& high) {
    if (low.empty()) return Expr::empty();
    if (low == high) return Expr::literal(low);
    const std::string low_rest = low.substr(1), high_rest = high.substr(1);
    if (low[0] == high[0])
        return Expr::sequence({Expr::literal(low.substr(0, 1)), same_length_range(low_rest, high_rest)});
    const std::string nines(low_rest.size(), '9'), zeros(low_rest.size(), '0');
    if (low_rest == zeros && high_rest == nines) {
        return Expr::sequence({Expr::byte_set(ByteSet::range(low[0], high[0])), digits(low_rest.size())});
    }
    std::vector<Expr> options{Expr::sequence({Expr::literal(low.substr(0, 1)), same_length_range(low_rest, nines)})};
    if (high[0] - low[0] > 1) {
        options.push_back(
            Expr::sequence({Expr::byte_set(ByteSet::range(low[0] + 1, high[0] - 1)), digits(low_rest.size())}));
    }
    options.push_back(Expr::sequence({Expr::literal(high.substr(0, 1)), same_length_range(zeros, high_rest)}));
    return Expr::choice(std::move(options));
}

// Numerals of the unsigned integers in [low, high]; high absent = unbounded. Precondition: low <= high.
Expr unsigned_range(uint64_t low, std::optional<uint64_t> high) {
    const std::string low_text = std::to_string(low);
    const size_t low_length = low_text.size();
    std::vector<Expr> options;
    const size_t high_length = high ? std::to_string(*high).size() : 0;
    if (high && high_length == low_length) return same_length_range(low_text, std::to_string(*high));
    options.push_back(same_length_range(low_text, std::string(low_length, '9')));
    const Expr leading = Expr::byte_set(ByteSet::range('1', '9'));
    if (!high) {
        options.push_back(Expr::sequence(
            {leading, Expr::repeat(digit(), static_cast<uint32_t>(low_length),
                                   std::max<uint32_t>(static_cast<uint32_t>(low_length), kMaxIntegerDigits - 1))}));
        return Expr::choice(std::move(options));
    }
    for (size_t length = low_length + 1; length < high_length; ++length) {
        options.push_back(Expr::sequence({leading, digits(length - 1)}));
    }
    options.push_back(same_length_range("1" + std::string(high_length - 1, '0'), std::to_string(*high)));
    return Expr::choice(std::move(options));
}

// Non-negative magnitudes m with `lower` (<=, or < when exclusive) m (<= or <) `upper`, as numerals;
// `fractions` allows a fraction where it keeps m in bounds.
std::optional<Expr> magnitudes(double lower, bool lower_exclusive, std::optional<double> upper, bool upper_exclusive,
                               bool fractions) {
    // Smallest integer part allowed: any fraction only increases the value.
    double first = lower_exclusive ? std::floor(lower) + 1 : std::ceil(lower);
    first = std::max(first, 0.0);
    std::vector<Expr> options;
    if (!upper) {
        Expr integer = unsigned_range(static_cast<uint64_t>(first), std::nullopt);
        if (!fractions) return integer;
        return Expr::sequence({std::move(integer), Expr::optional(fraction())});
    }
    const double last = upper_exclusive ? std::ceil(*upper) - 1 : std::floor(*upper);
    if (last < first) return std::nullopt;
    options.push_back(unsigned_range(static_cast<uint64_t>(first), static_cast<uint64_t>(last)));
    // I.F < I + 1 <= upper keeps the bound (strict or not) for every integer part I <= upper - 1.
    const double last_with_fraction = std::floor(*upper) - 1;
    if (fractions && last_with_fraction >= first) {
        options.push_back(Expr::sequence(
            {unsigned_range(static_cast<uint64_t>(first), static_cast<uint64_t>(last_with_fraction)), fraction()}));
    }
    return Expr::choice(std::move(options));
}

std::optional<NumericBound> clamp(std::optional<NumericBound> bound) {
    if (bound && std::fabs(bound->value) > kLargestBound) return std::nullopt;
    return bound;
}

// Signed values split in a non-negative part and a negative part written as "-" and a magnitude.
std::optional<Expr> signed_range(std::optional<NumericBound> lower, std::optional<NumericBound> upper, bool fractions) {
    lower = clamp(lower);
    upper = clamp(upper);
    std::vector<Expr> options;
    const bool has_non_negative = !upper || upper->value > 0 || (upper->value == 0 && !upper->exclusive);
    if (has_non_negative) {
        const double low = lower ? std::max(lower->value, 0.0) : 0.0;
        const bool low_exclusive = lower && lower->value >= 0 && lower->exclusive;
        auto part = magnitudes(low, low_exclusive, upper ? std::optional(upper->value) : std::nullopt,
                               upper && upper->exclusive, fractions);
        if (part) options.push_back(std::move(*part));
    }
    if (!lower || lower->value < 0) {
        // x = -m < 0: m > 0, m >= -upper when upper < 0, and m <= -lower.
        const bool upper_negative = upper && upper->value < 0;
        const double low = upper_negative ? -upper->value : 0.0;
        const bool low_exclusive = upper_negative ? upper->exclusive : true;
        auto part = magnitudes(low, low_exclusive, lower ? std::optional(-lower->value) : std::nullopt,
                               lower && lower->exclusive, fractions);
        if (part) options.push_back(Expr::sequence({Expr::literal("-"), std::move(*part)}));
    }
    if (options.empty()) return std::nullopt;
    return Expr::choice(std::move(options));
}

}  // namespace

std::optional<Expr> integer_in_range(std::optional<NumericBound> lower, std::optional<NumericBound> upper) {
    return signed_range(lower, upper, false);
}

std::optional<Expr> number_in_range(std::optional<NumericBound> lower, std::optional<NumericBound> upper) {
    if (!lower && !upper) return any_json_number();
    return signed_range(lower, upper, true);
}

Expr any_json_number() {
    const Expr integer_part = Expr::choice(
        {Expr::literal("0"),
         Expr::sequence({Expr::byte_set(ByteSet::range('1', '9')), Expr::repeat(digit(), 0, kMaxIntegerDigits - 1)})});
    ByteSet exponent_mark = ByteSet::single('e');
    exponent_mark.add('E');
    ByteSet sign = ByteSet::single('+');
    sign.add('-');
    return Expr::sequence({
        Expr::optional(Expr::literal("-")),
        integer_part,
        Expr::optional(fraction()),
        Expr::optional(Expr::sequence({Expr::byte_set(exponent_mark), Expr::optional(Expr::byte_set(sign)),
                                       Expr::repeat(digit(), 1, kMaxExponentDigits)})),
    });
}

}  // namespace tempered::grammar
