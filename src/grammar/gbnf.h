// GBNF, the grammar text llama.cpp's `grammar` field takes (and, as "EBNF", vLLM's structured_outputs.grammar
// and SGLang's `ebnf`, both through xgrammar): written from our grammars so that another engine can apply a
// constraint the front built (upstream mode), and read so that tempered's own completions take one.
//
// GBNF works on characters, our grammars on bytes. Writing turns each UTF-8 lead byte set and the continuation
// sets after it into a class of code points; a grammar that splits a character across rules, or mixes ASCII
// and lead bytes in one set, is refused (never approximated). The grammars tempered builds (JSON Schema, tool
// calls) never do. Reading turns each class back into byte sequences (utf8_ranges.h).
//
// Read: rules `name ::= alternatives`, a rule's end at a line end unless inside parentheses or after `|`;
// "literals" and [classes] (negated with ^) with \x \u \U \t \r \n \\ \" \[ \] escapes; `.` (any character);
// ( groups ); * + ? {m} {m,} {m,n} after an item; # comments; `root` is where a sentence starts. Refused with
// a message naming the place: undefined rules, left recursion (a rule that can reach itself before a
// character), repetition counts over kMaxGbnfRepetition, nesting deeper than kMaxGbnfNesting, more than
// kMaxGbnfStackedRepetitions operators on one item (each nests the lowering once more), a text longer than
// kMaxGbnfBytes, llama.cpp's token references (<[id]>, which name another vocabulary's ids). Long chains of rules
// are fine: the matcher's closure keeps its own stack.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"

namespace tempered::grammar {

constexpr size_t kMaxGbnfBytes = 1 << 20;
constexpr uint32_t kMaxGbnfRepetition = 2000;  // llama.cpp's own bound
constexpr int kMaxGbnfNesting = 64;            // groups inside groups
constexpr int kMaxGbnfStackedRepetitions = 4;  // operators on one item ("a"*+? ...)
constexpr size_t kMaxGbnfClosureDepth = 4096;  // rules entered one inside another before a character

Result<std::string> write_gbnf(const Grammar& grammar);
Result<Grammar> read_gbnf(std::string_view text);

}  // namespace tempered::grammar
