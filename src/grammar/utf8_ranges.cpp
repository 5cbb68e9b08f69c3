#include "grammar/utf8_ranges.h"

#include <algorithm>
#include <functional>
#include <string>

namespace tempered::grammar {
namespace {

constexpr CodePointRange kSurrogates{0xD800, 0xDFFF};

int encoded_length(uint32_t code_point) {
    return code_point <= 0x7F ? 1 : code_point <= 0x7FF ? 2 : code_point <= 0xFFFF ? 3 : 4;
}

std::string encode(uint32_t code_point) {
    const int length = encoded_length(code_point);
    if (length == 1) return std::string(1, static_cast<char>(code_point));
    static constexpr uint8_t kLeadMarks[] = {0, 0, 0xC0, 0xE0, 0xF0};
    std::string bytes(static_cast<size_t>(length), '\0');
    for (int i = length - 1; i > 0; --i) {
        bytes[static_cast<size_t>(i)] = static_cast<char>(0x80 | (code_point & 0x3F));
        code_point >>= 6;
    }
    bytes[0] = static_cast<char>(kLeadMarks[length] | code_point);
    return bytes;
}

// [first, last], all of one encoded length, split until each byte position ranges on its own (the
// classic range-to-UTF-8 split): then the encodings are exactly the products of the byte ranges.
void add_byte_ranges(uint32_t first, uint32_t last, std::vector<Expr>& out) {
    const int length = encoded_length(first);
    for (int m = 1; m < length; ++m) {
        const uint32_t low_bits = (uint32_t{1} << (6 * m)) - 1;
        if ((first & ~low_bits) == (last & ~low_bits)) continue;
        if ((first & low_bits) != 0) {
            add_byte_ranges(first, first | low_bits, out);
            add_byte_ranges((first | low_bits) + 1, last, out);
            return;
        }
        if ((last & low_bits) != low_bits) {
            add_byte_ranges(first, (last & ~low_bits) - 1, out);
            add_byte_ranges(last & ~low_bits, last, out);
            return;
        }
    }
    const std::string low = encode(first);
    const std::string high = encode(last);
    std::vector<Expr> sequence;
    for (size_t i = 0; i < low.size(); ++i)
        sequence.push_back(Expr::byte_set(ByteSet::range(static_cast<uint8_t>(low[i]), static_cast<uint8_t>(high[i]))));
    out.push_back(Expr::sequence(std::move(sequence)));
}

// The code points a well-formed encoding of `length` bytes can spell.
std::vector<CodePointRange> valid_for_length(int length) {
    switch (length) {
        case 2: return {{0x80, 0x7FF}};
        case 3: return {{0x800, kSurrogates.first - 1}, {kSurrogates.last + 1, 0xFFFF}};
        default: return {{0x10000, kMaxCodePoint}};
    }
}

std::vector<CodePointRange> intersect(const std::vector<CodePointRange>& a, const std::vector<CodePointRange>& b) {
    std::vector<CodePointRange> out;
    for (const CodePointRange& x : a)
        for (const CodePointRange& y : b) {
            const uint32_t first = std::max(x.first, y.first);
            const uint32_t last = std::min(x.last, y.last);
            if (first <= last) out.push_back({first, last});
        }
    return normalized(std::move(out));
}

}  // namespace

int utf8_length_of_lead(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

std::vector<CodePointRange> normalized(std::vector<CodePointRange> ranges) {
    std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<CodePointRange> out;
    for (const CodePointRange& range : ranges) {
        if (!out.empty() && range.first <= out.back().last + 1) {
            out.back().last = std::max(out.back().last, range.last);
        } else {
            out.push_back(range);
        }
    }
    return out;
}

std::vector<CodePointRange> complement(const std::vector<CodePointRange>& ranges) {
    std::vector<CodePointRange> taken = ranges;
    taken.push_back(kSurrogates);
    taken = normalized(std::move(taken));
    std::vector<CodePointRange> out;
    uint32_t next = 0;
    for (const CodePointRange& range : taken) {
        if (range.first > kMaxCodePoint) break;
        if (range.first > next) out.push_back({next, range.first - 1});
        next = range.last + 1;
    }
    if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
    return out;
}

Expr utf8_expr(const std::vector<CodePointRange>& ranges) {
    ByteSet ascii;
    std::vector<Expr> options;
    for (const CodePointRange& range : complement(complement(ranges))) {  // sorted, joined, no surrogates
        uint32_t first = range.first;
        for (int length = 1; length <= 4 && first <= range.last; ++length) {
            static constexpr uint32_t kLastOfLength[] = {0, 0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
            const uint32_t last = std::min(range.last, kLastOfLength[length]);
            if (first > last) continue;
            if (length == 1) {
                ascii.add_range(static_cast<uint8_t>(first), static_cast<uint8_t>(last));
            } else {
                add_byte_ranges(first, last, options);
            }
            first = last + 1;
        }
    }
    if (!ascii.empty()) options.insert(options.begin(), Expr::byte_set(ascii));
    return Expr::choice(std::move(options));
}

std::optional<std::vector<CodePointRange>> code_points_of(const ByteSet& lead, std::span<const ByteSet> continuations) {
    int length = 0;
    for (unsigned byte = 0; byte < 256; ++byte) {
        if (!lead.contains(static_cast<uint8_t>(byte))) continue;
        const int this_length = utf8_length_of_lead(static_cast<uint8_t>(byte));
        if (this_length < 2 || (length != 0 && this_length != length)) return std::nullopt;
        length = this_length;
    }
    if (length == 0 || continuations.size() != static_cast<size_t>(length - 1)) return std::nullopt;
    const ByteSet continuation_bytes = ByteSet::range(0x80, 0xBF);
    for (const ByteSet& set : continuations) {
        ByteSet outside = set;
        for (size_t i = 0; i < outside.bits.size(); ++i) outside.bits[i] &= ~continuation_bytes.bits[i];
        if (set.empty() || !outside.empty()) return std::nullopt;
    }
    std::vector<CodePointRange> ranges;
    // Every prefix of whole bytes, then the last continuation set's runs as ranges.
    std::function<void(uint32_t, size_t)> expand = [&](uint32_t prefix, size_t level) {
        const ByteSet& set = continuations[level];
        for (unsigned byte = 0x80; byte <= 0xBF; ++byte) {
            if (!set.contains(static_cast<uint8_t>(byte))) continue;
            if (level + 1 < continuations.size()) {
                expand((prefix << 6) | (byte & 0x3F), level + 1);
                continue;
            }
            unsigned run_end = byte;
            while (run_end + 1 <= 0xBF && set.contains(static_cast<uint8_t>(run_end + 1))) ++run_end;
            ranges.push_back({(prefix << 6) | (byte & 0x3F), (prefix << 6) | (run_end & 0x3F)});
            byte = run_end;
        }
    };
    static constexpr uint8_t kLeadBits[] = {0, 0, 0x1F, 0x0F, 0x07};
    for (unsigned byte = 0; byte < 256; ++byte)
        if (lead.contains(static_cast<uint8_t>(byte))) expand(byte & kLeadBits[length], 0);
    return intersect(normalized(std::move(ranges)), valid_for_length(length));
}

}  // namespace tempered::grammar
