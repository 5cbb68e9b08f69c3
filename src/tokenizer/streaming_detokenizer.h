// Turns generated ids into text as they arrive, one token at a time. A token can end in the middle of a
// UTF-8 character (byte-fallback and byte-level BPE tokens often do), so bytes of an incomplete
// character are held back until the next token completes them; what push() returns is always whole,
// valid UTF-8. Bytes that can never form a character become U+FFFD as soon as that is certain.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tempered {

class Tokenizer;

class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special = false)
        : tokenizer_(&tokenizer), skip_special_(skip_special) {}

    // The text that `id` completes (possibly empty).
    std::string push(int32_t id);
    // Appends raw bytes instead of a token; push() is this with the token's piece.
    std::string push_bytes(std::string_view bytes);
    // Everything still held back, an incomplete character as U+FFFD; the detokenizer is empty after.
    std::string flush();

    size_t pending_bytes() const { return pending_.size(); }

private:
    std::string drain(bool at_end);

    const Tokenizer* tokenizer_;
    bool skip_special_;
    std::string pending_;
};

// Validates UTF-8 strictly (no overlong forms, surrogates or code points above U+10FFFF): appends the
// valid characters of `bytes` to `out` and U+FFFD for each maximal invalid subpart. Returns how many
// bytes were consumed; an incomplete but so far valid character at the end is left unconsumed unless
// `at_end`.
size_t append_valid_utf8(std::string_view bytes, bool at_end, std::string& out);

}  // namespace tempered
