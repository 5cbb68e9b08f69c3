#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/tokenizer.h"

namespace tempered {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Bytes following `lead` and the range its first continuation byte must lie in (Unicode Table 3-7).
struct SequenceShape {
    int continuation_bytes;  // -1: not a lead byte
    uint8_t first_low;
    uint8_t first_high;
};

SequenceShape shape_of(uint8_t lead) {
    if (lead >= 0xC2 && lead <= 0xDF) return {1, 0x80, 0xBF};
    if (lead == 0xE0) return {2, 0xA0, 0xBF};
    if (lead == 0xED) return {2, 0x80, 0x9F};
    if (lead >= 0xE1 && lead <= 0xEF) return {2, 0x80, 0xBF};
    if (lead == 0xF0) return {3, 0x90, 0xBF};
    if (lead >= 0xF1 && lead <= 0xF3) return {3, 0x80, 0xBF};
    if (lead == 0xF4) return {3, 0x80, 0x8F};
    return {-1, 0, 0};
}

}  // namespace

size_t append_valid_utf8(std::string_view bytes, bool at_end, std::string& out) {
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<uint8_t>(bytes[i]);
        if (lead < 0x80) {
            out.push_back(static_cast<char>(lead));
            ++i;
            continue;
        }
        const SequenceShape shape = shape_of(lead);
        if (shape.continuation_bytes < 0) {
            out += kReplacement;
            ++i;
            continue;
        }
        // Count the continuation bytes that fit the sequence so far.
        int valid = 0;
        while (valid < shape.continuation_bytes && i + 1 + valid < bytes.size()) {
            const auto byte = static_cast<uint8_t>(bytes[i + 1 + valid]);
            const uint8_t low = valid == 0 ? shape.first_low : 0x80;
            const uint8_t high = valid == 0 ? shape.first_high : 0xBF;
            if (byte < low || byte > high) break;
            ++valid;
        }
        if (valid == shape.continuation_bytes) {
            out.append(bytes.substr(i, 1 + valid));
            i += 1 + valid;
        } else if (i + 1 + valid == bytes.size() && !at_end) {
            return i;  // incomplete: wait for more bytes
        } else {
            out += kReplacement;  // the maximal subpart that can no longer become a character
            i += 1 + valid;
        }
    }
    return i;
}

std::string StreamingDetokenizer::push(int32_t id) { return push_bytes(tokenizer_->token_piece(id, skip_special_)); }

std::string StreamingDetokenizer::push_bytes(std::string_view bytes) {
    pending_.append(bytes);
    return drain(/*at_end=*/false);
}

std::string StreamingDetokenizer::flush() { return drain(/*at_end=*/true); }

std::string StreamingDetokenizer::drain(bool at_end) {
    std::string out;
    const size_t consumed = append_valid_utf8(pending_, at_end, out);
    pending_.erase(0, consumed);
    return out;
}

}  // namespace tempered
