// Between characters and bytes: a set of Unicode code points as byte-level grammar (the GBNF reader: GBNF
// classes are over characters, our grammars over bytes), and back (the GBNF writer: a UTF-8 lead byte set
// followed by its continuation byte sets, as the grammars here spell non-ASCII characters, as code points).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "grammar/grammar.h"

namespace tempered::grammar {

struct CodePointRange {
    uint32_t first;
    uint32_t last;  // inclusive
    bool operator==(const CodePointRange&) const = default;
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorted, overlapping and adjacent ranges joined.
std::vector<CodePointRange> normalized(std::vector<CodePointRange> ranges);
// Every code point (surrogates excluded) outside `ranges`.
std::vector<CodePointRange> complement(const std::vector<CodePointRange>& ranges);

// The UTF-8 encodings of the code points in `ranges` (surrogates left out: they have none) as one Expr:
// a choice of byte-set sequences, one or more per range, without overlong forms.
Expr utf8_expr(const std::vector<CodePointRange>& ranges);

// The code points spelled by a lead byte from `lead` followed by one byte from each of `continuations`;
// nullopt when that is not a set of whole characters (a lead that is not one, leads of different lengths,
// a continuation set with a byte that is not one, or the wrong number of them). Byte combinations that are
// not well-formed UTF-8 (overlong, surrogates, past U+10FFFF) spell no character and are left out.
std::optional<std::vector<CodePointRange>> code_points_of(const ByteSet& lead, std::span<const ByteSet> continuations);

// How many bytes a character whose first byte is `lead` has: 1 for ASCII, 2-4 for a UTF-8 lead, 0 for a byte
// that starts no character (a continuation byte, C0, C1, F5-FF).
int utf8_length_of_lead(uint8_t lead);

}  // namespace tempered::grammar
