#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "tokenizer/unicode.h"

namespace tempered {
namespace {

constexpr uint32_t kOutside = 0xFFFFFFFF;  // the "code point" before or after the piece being split

// Per-code-point flags, computed once per text. Every real code point has kPresent, so a zero flags
// byte means "outside the piece", as in llama.cpp where an out-of-range position has no flags at all.
enum : uint8_t {
    kPresent = 1,
    kLetter = 2,
    kNumber = 4,
    kWhitespace = 8,
    kPunctuationLike = 16,
};

struct Piece {
    std::span<const uint32_t> code_points;
    std::span<const uint8_t> flags;
    size_t end = 0;

    uint32_t at(size_t pos) const { return pos < end ? code_points[pos] : kOutside; }
    uint8_t flags_at(size_t pos) const { return pos < end ? flags[pos] : 0; }
};

// Appends the lengths of the words a pass cuts [begin, end) into.
class WordSink {
public:
    WordSink(std::vector<size_t>& out, size_t begin) : out_(out), previous_end_(begin) {}
    size_t cut(size_t end) {
        const size_t length = end - previous_end_;
        if (length > 0) out_.push_back(length);
        previous_end_ = end;
        return length;
    }

private:
    std::vector<size_t>& out_;
    size_t previous_end_;
};

uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

// Length of an English contraction ('s 't 'm 'd 're 've 'll) at pos, or 0.
size_t contraction_length(const Piece& piece, size_t pos, bool any_case) {
    if (piece.at(pos) != '\'' || pos + 1 >= piece.end) return 0;
    const auto lower = [&](uint32_t c) { return any_case ? ascii_lower(c) : c; };
    const uint32_t next = lower(piece.at(pos + 1));
    if (next == 's' || next == 't' || next == 'm' || next == 'd') return 2;
    if (pos + 2 >= piece.end) return 0;
    const uint32_t after = lower(piece.at(pos + 2));
    if ((next == 'r' && after == 'e') || (next == 'v' && after == 'e') || (next == 'l' && after == 'l')) return 3;
    return 0;
}

void split_gpt2(const Piece& piece, size_t begin, std::vector<size_t>& out) {
    WordSink sink(out, begin);
    for (size_t pos = begin; pos < piece.end;) {
        if (const size_t length = contraction_length(piece, pos, /*any_case=*/false)) {
            pos += sink.cut(pos + length);
            continue;
        }
        const uint32_t c = piece.at(pos);
        uint8_t f = c == ' ' ? piece.flags_at(pos + 1) : piece.flags_at(pos);
        // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
        if (f & kLetter) {
            pos += (c == ' ');
            while (f & kLetter) f = piece.flags_at(++pos);
            sink.cut(pos);
            continue;
        }
        if (f & kNumber) {
            pos += (c == ' ');
            while (f & kNumber) f = piece.flags_at(++pos);
            sink.cut(pos);
            continue;
        }
        if (f != 0 && !(f & (kWhitespace | kLetter | kNumber))) {
            pos += (c == ' ');
            while (f != 0 && !(f & (kWhitespace | kLetter | kNumber))) f = piece.flags_at(++pos);
            sink.cut(pos);
            continue;
        }
        size_t whitespace = 0;
        while (piece.flags_at(pos + whitespace) & kWhitespace) ++whitespace;
        if (whitespace > 1 && piece.at(pos + whitespace) != kOutside) {  // '\s+(?!\S)': leave one for the next word
            pos += whitespace - 1;
            sink.cut(pos);
            continue;
        }
        if (whitespace > 0) {
            pos += whitespace;
            sink.cut(pos);
            continue;
        }
        sink.cut(++pos);
    }
}

// The end of the llama3-shaped patterns' whitespace word at `pos` ('\s*[\r\n]+', '\s+(?!\S)', '\s+', in that
// order), or pos + 1 for a lone character no earlier pattern took.
size_t sink_whitespace_end(const Piece& piece, size_t pos) {
    size_t whitespace = 0, after_last_newline = 0;
    while (piece.flags_at(pos + whitespace) & kWhitespace) {
        const uint32_t c = piece.at(pos + whitespace);
        if (c == '\r' || c == '\n') after_last_newline = pos + whitespace + 1;
        ++whitespace;
    }
    if (after_last_newline > 0) return after_last_newline;
    if (whitespace > 1 && piece.at(pos + whitespace) != kOutside) return pos + whitespace - 1;
    return pos + std::max<size_t>(whitespace, 1);
}

// The llama3 / qwen2 shape; `max_digits` is 3 for \p{N}{1,3} and 1 for \p{N}.
void split_llama3(const Piece& piece, size_t begin, size_t max_digits, std::vector<size_t>& out) {
    WordSink sink(out, begin);
    const auto is_newline = [](uint32_t c) { return c == '\r' || c == '\n'; };
    for (size_t pos = begin; pos < piece.end;) {
        if (const size_t length = contraction_length(piece, pos, /*any_case=*/true)) {
            pos += sink.cut(pos + length);
            continue;
        }
        const uint32_t c = piece.at(pos);
        const uint8_t f = piece.flags_at(pos);
        // '[^\r\n\p{L}\p{N}]?\p{L}+'
        if (!is_newline(c) && !(f & kNumber) && ((f & kLetter) || (piece.flags_at(pos + 1) & kLetter))) {
            ++pos;
            while (piece.flags_at(pos) & kLetter) ++pos;
            sink.cut(pos);
            continue;
        }
        // '\p{N}{1,max_digits}'
        if (f & kNumber) {
            size_t group_start = pos;
            while (piece.flags_at(pos) & kNumber) {
                if (++pos - group_start >= max_digits) {
                    sink.cut(pos);
                    group_start = pos;
                }
            }
            sink.cut(pos);
            continue;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        uint8_t f2 = c == ' ' ? piece.flags_at(pos + 1) : f;
        if (f != 0 && !(f2 & (kWhitespace | kLetter | kNumber))) {
            pos += (c == ' ');
            while (f2 != 0 && !(f2 & (kWhitespace | kLetter | kNumber))) f2 = piece.flags_at(++pos);
            while (is_newline(piece.at(pos))) ++pos;
            sink.cut(pos);
            continue;
        }
        pos = sink_whitespace_end(piece, pos);
        sink.cut(pos);
    }
}

// GPT-4o's cased letters as llama.cpp's regex approximates them: "upper" is any letter but a-z, "lower" any
// letter but A-Z (so a letter outside ASCII is both).
bool upper_like(const Piece& piece, size_t pos) {
    const uint32_t c = piece.at(pos);
    return (piece.flags_at(pos) & kLetter) && !(c >= 'a' && c <= 'z');
}
bool lower_like(const Piece& piece, size_t pos) {
    const uint32_t c = piece.at(pos);
    return (piece.flags_at(pos) & kLetter) && !(c >= 'A' && c <= 'Z');
}

// End of GPT-4o's cased word starting at `start` (its optional prefix already taken), or `start` when
// neither letter pattern matches there: U*L+ by backtracking (the last L-like letter within or just after
// the U run starts the L run), else U+L*; then an optional contraction, in any case.
size_t gpt4o_word_end(const Piece& piece, size_t start) {
    size_t upper_end = start;
    while (upper_like(piece, upper_end)) ++upper_end;
    size_t end = start;
    for (size_t k = upper_end + 1; k-- > start;) {  // U*L+: the longest U* that leaves an L
        if (!lower_like(piece, k)) continue;
        end = k;
        while (lower_like(piece, end)) ++end;
        break;
    }
    if (end == start && upper_end > start) {  // U+L*
        end = upper_end;
        while (lower_like(piece, end)) ++end;
    }
    if (end == start) return start;
    return end + contraction_length(piece, end, /*any_case=*/true);
}

void split_gpt4o(const Piece& piece, size_t begin, std::vector<size_t>& out) {
    WordSink sink(out, begin);
    const auto is_newline = [](uint32_t c) { return c == '\r' || c == '\n'; };
    for (size_t pos = begin; pos < piece.end;) {
        const uint32_t c = piece.at(pos);
        const uint8_t f = piece.flags_at(pos);
        // the two letter patterns, with their optional [^\r\n\p{L}\p{N}] prefix
        const bool prefix = !is_newline(c) && !(f & (kLetter | kNumber));
        if (const size_t end = gpt4o_word_end(piece, pos + (prefix ? 1 : 0)); end > pos + (prefix ? 1 : 0)) {
            pos = end;
            sink.cut(pos);
            continue;
        }
        if (f & kNumber) {  // \p{N}{1,3}
            size_t digits = 0;
            while (digits < 3 && (piece.flags_at(pos) & kNumber)) ++pos, ++digits;
            sink.cut(pos);
            continue;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
        uint8_t f2 = c == ' ' ? piece.flags_at(pos + 1) : f;
        if (f2 != 0 && !(f2 & (kWhitespace | kLetter | kNumber))) {
            pos += (c == ' ');
            while (f2 != 0 && !(f2 & (kWhitespace | kLetter | kNumber))) f2 = piece.flags_at(++pos);
            while (is_newline(piece.at(pos)) || piece.at(pos) == '/') ++pos;
            sink.cut(pos);
            continue;
        }
        pos = sink_whitespace_end(piece, pos);
        sink.cut(pos);
    }
}

// Regex passes without lookaround: every match is a word and so is every gap between matches.
template <class MatchLength>
void split_by_matches(const Piece& piece, size_t begin, MatchLength match_length, std::vector<size_t>& out) {
    size_t gap_start = begin;
    for (size_t pos = begin; pos < piece.end;) {
        const size_t length = match_length(pos);
        if (length == 0) {
            ++pos;
            continue;
        }
        if (pos > gap_start) out.push_back(pos - gap_start);
        out.push_back(length);
        pos += length;
        gap_start = pos;
    }
    if (piece.end > gap_start) out.push_back(piece.end - gap_start);
}

void run_pass(PreTokenizerPass pass, const Piece& piece, size_t begin, std::vector<size_t>& out) {
    const auto run_of = [&](uint8_t flag) {
        return [&piece, flag](size_t pos) {
            size_t end = pos;
            while (piece.flags_at(end) & flag) ++end;
            return end - pos;
        };
    };
    switch (pass) {
        case PreTokenizerPass::kGpt2: return split_gpt2(piece, begin, out);
        case PreTokenizerPass::kLlama3: return split_llama3(piece, begin, 3, out);
        case PreTokenizerPass::kQwen2: return split_llama3(piece, begin, 1, out);
        case PreTokenizerPass::kGpt4o: return split_gpt4o(piece, begin, out);
        case PreTokenizerPass::kEachDigit:
            return split_by_matches(
                piece, begin, [&](size_t pos) -> size_t { return (piece.flags_at(pos) & kNumber) ? 1 : 0; }, out);
        case PreTokenizerPass::kDigitRuns: return split_by_matches(piece, begin, run_of(kNumber), out);
        case PreTokenizerPass::kPunctuationRuns: return split_by_matches(piece, begin, run_of(kPunctuationLike), out);
        case PreTokenizerPass::kAsciiDigitTriples:
            return split_by_matches(
                piece, begin,
                [&](size_t pos) -> size_t {
                    for (size_t i = 0; i < 3; ++i) {
                        const uint32_t c = piece.at(pos + i);
                        if (c < '0' || c > '9') return 0;
                    }
                    return 3;
                },
                out);
    }
}

uint8_t flags_of(uint32_t c) {
    uint8_t flags = kPresent;
    switch (unicode_class(c)) {
        case UnicodeClass::kLetter: flags |= kLetter; break;
        case UnicodeClass::kNumber: flags |= kNumber; break;
        case UnicodeClass::kPunctuation: flags |= kPunctuationLike; break;
        default: break;
    }
    // [\p{P}\$\+<=>\^~\|] of the default pre-tokenizer
    if (c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|') {
        flags |= kPunctuationLike;
    }
    if (unicode_is_whitespace(c)) flags |= kWhitespace;
    return flags;
}

bool name_in(std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Result<PreTokenizer> PreTokenizer::from_name(std::string_view name) {
    using P = PreTokenizerPass;
    PreTokenizer pre;
    pre.clean_spaces = true;  // llama.cpp's default for byte-level BPE; most names below turn it off
    if (name.empty() || name == "default") {
        pre.passes = {P::kPunctuationRuns, P::kGpt2, P::kDigitRuns, P::kAsciiDigitTriples};
    } else if (name_in(name, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                              "mellum", "modern-bert", "mpt", "olmo", "jais", "exaone4"})) {
        pre.passes = {P::kGpt2};
    } else if (name_in(name, {"trillion", "granite-docling"})) {
        pre.passes = {P::kGpt2};
        pre.clean_spaces = false;
    } else if (name_in(name, {"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"})) {
        pre.passes = {P::kEachDigit, P::kGpt2};
    } else if (name_in(name, {"smollm", "command-r"})) {
        pre.passes = {P::kEachDigit, P::kGpt2};
        pre.clean_spaces = false;
    } else if (name_in(name, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                              "jina-v5-nano"})) {
        pre.passes = {P::kLlama3};
        pre.ignore_merges = true;
        pre.add_bos = true;
    } else if (name_in(name, {"dbrx", "smaug-bpe"})) {
        pre.passes = {P::kLlama3};
    } else if (name_in(name, {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"})) {
        pre.passes = {P::kQwen2};
        pre.clean_spaces = false;
    } else if (name_in(name, {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) {
        pre.passes = {P::kGpt4o};
        pre.clean_spaces = false;
    } else if (name_in(name, {"stablelm2", "megrez"})) {
        pre.passes = {P::kQwen2};
    } else {
        return Error{"unsupported pre-tokenizer '" + std::string(name) + "'"};
    }
    return pre;
}

std::vector<size_t> PreTokenizer::split(std::span<const uint32_t> code_points) const {
    std::vector<uint8_t> flags(code_points.size());
    for (size_t i = 0; i < code_points.size(); ++i) flags[i] = flags_of(code_points[i]);

    std::vector<size_t> words;
    if (!code_points.empty()) words.push_back(code_points.size());
    std::vector<size_t> next;
    for (const PreTokenizerPass pass : passes) {
        next.clear();
        size_t begin = 0;
        for (const size_t length : words) {
            const Piece piece{code_points, flags, begin + length};
            run_pass(pass, piece, begin, next);
            begin += length;
        }
        words.swap(next);
    }
    return words;
}

}  // namespace tempered
