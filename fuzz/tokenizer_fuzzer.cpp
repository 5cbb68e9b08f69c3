// libFuzzer target for the tokenizers (src/tokenizer) on real vocabularies: the byte-level BPE of SmolLM2
// and the SentencePiece vocabulary of Gemma 3, read once from the GGUF files named in TEMPERED_FUZZ_GGUF
// (colon-separated; default: both models in $TEMPERED_HOME/models, ~/.cache/tempered/models).
// Input: one byte choosing the vocabulary and the flags, then the text. It asserts
// - encode never crashes, and every id it returns is in the vocabulary;
// - decode(encode(text)) == text for strictly valid UTF-8 without special tokens parsed, when the
//   vocabulary has a token for each of the text's bytes: byte-level BPE spells every byte (SmolLM2 does
//   not clean up spaces) but drops a byte without a token, as llama.cpp does (SmolLM2 lacks 0x04, 0x14
//   and a few others); SentencePiece escapes spaces as U+2581 and falls back to <0xXX> byte tokens, so
//   a text that itself holds U+2581 comes back with a space instead;
// - the streaming detokenizer, fed the ids one at a time, gives the ids' pieces as strictly valid UTF-8,
//   the same text a whole-sequence pass gives;
// - the input's bytes read as int32 ids (in range, out of range, negative) decode, stream and look up
//   without crashing.
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "tokenizer/byte_encoding.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

using tempered::Tokenizer;

struct Loaded {
    Tokenizer tokenizer;
    std::bitset<256> byte_has_token;  // the bytes encode can always spell
};

std::vector<Loaded>& tokenizers() {
    static std::vector<Loaded> loaded;
    return loaded;
}

std::bitset<256> bytes_with_tokens(const Tokenizer& tokenizer) {
    std::bitset<256> spelled;
    for (int byte = 0; byte < 256; ++byte) {
        char fallback[8];
        std::snprintf(fallback, sizeof fallback, "<0x%02X>", byte);
        const bool sentencepiece = tokenizer.model() == tempered::TokenizerModel::kSentencePiece;
        const std::string text = sentencepiece ? fallback : tempered::byte_to_gpt2_char(static_cast<uint8_t>(byte));
        spelled[byte] = tokenizer.find_token(text).has_value();
    }
    return spelled;
}

std::string default_paths() {
    const char* tempered_home = std::getenv("TEMPERED_HOME");
    const char* home = std::getenv("HOME");
    const std::string root =
        tempered_home ? std::string(tempered_home) : std::string(home ? home : ".") + "/.cache/tempered";
    return root + "/models/SmolLM2-135M-Instruct.Q4_1.gguf:" + root + "/models/gemma-3-270m-Q4_K_M.gguf";
}

// The GGUF's metadata only: the tensors are never touched, so a file of any size loads in a moment.
void load_tokenizer(const std::string& path) {
    auto file = tempered::GgufFile::open(path);
    auto tokenizer = file ? Tokenizer::from_gguf(*file) : tempered::Result<Tokenizer>(file.error());
    if (!tokenizer) {
        std::fprintf(stderr, "tokenizer_fuzzer: %s: %s\n", path.c_str(), tokenizer.error().message.c_str());
        std::exit(1);
    }
    const std::bitset<256> spelled = bytes_with_tokens(*tokenizer);
    tokenizers().push_back({std::move(tokenizer).value(), spelled});
}

bool strictly_valid_utf8(std::string_view text) {
    std::string validated;
    tempered::append_valid_utf8(text, /*at_end=*/true, validated);
    return validated == text;
}

std::string streamed(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip_special) {
    tempered::StreamingDetokenizer detokenizer(tokenizer, skip_special);
    std::string text;
    for (const int32_t id : ids) text += detokenizer.push(id);
    text += detokenizer.flush();
    if (detokenizer.pending_bytes() != 0) __builtin_trap();
    return text;
}

void check_streaming(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip_special) {
    std::string pieces;
    for (const int32_t id : ids) pieces += tokenizer.token_piece(id, skip_special);
    std::string whole;
    tempered::append_valid_utf8(pieces, /*at_end=*/true, whole);
    if (streamed(tokenizer, ids, skip_special) != whole) __builtin_trap();
}

bool every_byte_has_token(const Loaded& loaded, std::string_view text) {
    for (const char c : text) {
        if (!loaded.byte_has_token[static_cast<uint8_t>(c)]) return false;
    }
    return true;
}

void check_round_trip(const Loaded& loaded, std::string_view text, bool parse_special) {
    const Tokenizer& tokenizer = loaded.tokenizer;
    const std::vector<int32_t> ids = tokenizer.encode(text, /*add_special_tokens=*/parse_special, parse_special);
    for (const int32_t id : ids) {
        if (id < 0 || id >= tokenizer.vocab_size()) __builtin_trap();
    }
    const bool spaces_escaped =
        tokenizer.model() == tempered::TokenizerModel::kSentencePiece && text.find("\xE2\x96\x81") != text.npos;
    const bool round_trips =
        !parse_special && !spaces_escaped && strictly_valid_utf8(text) && every_byte_has_token(loaded, text);
    if (round_trips && tokenizer.decode(ids) != text) __builtin_trap();
    check_streaming(tokenizer, ids, /*skip_special=*/parse_special);
}

// Ids of every kind: half of them folded into (and just past) the vocabulary, half any int32 at all.
std::vector<int32_t> ids_from_bytes(const Tokenizer& tokenizer, std::string_view bytes) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        uint32_t raw;
        std::memcpy(&raw, bytes.data() + i, 4);
        const int64_t folded =
            static_cast<int64_t>((raw >> 1) % (static_cast<uint32_t>(tokenizer.vocab_size()) + 8u)) - 4;
        ids.push_back(raw & 1 ? static_cast<int32_t>(raw) : static_cast<int32_t>(folded));
    }
    return ids;
}

void check_arbitrary_ids(const Tokenizer& tokenizer, std::string_view bytes) {
    const std::vector<int32_t> ids = ids_from_bytes(tokenizer, bytes);
    size_t total = tokenizer.decode(ids).size() + tokenizer.decode(ids, /*skip_special=*/true).size();
    for (const int32_t id : ids) total += tokenizer.token_bytes(id).size() + tokenizer.is_control(id);
    check_streaming(tokenizer, ids, /*skip_special=*/false);
    volatile size_t sink = total;
    (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* configured = std::getenv("TEMPERED_FUZZ_GGUF");
    const std::string paths = configured ? configured : default_paths();
    size_t begin = 0;
    while (begin <= paths.size()) {
        const size_t end = std::min(paths.find(':', begin), paths.size());
        if (end > begin) load_tokenizer(paths.substr(begin, end - begin));
        begin = end + 1;
    }
    if (tokenizers().empty()) {
        std::fprintf(stderr, "tokenizer_fuzzer: TEMPERED_FUZZ_GGUF names no file\n");
        std::exit(1);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t selector = data[0];
    const Loaded& loaded = tokenizers()[(selector >> 1) % tokenizers().size()];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    check_round_trip(loaded, text, /*parse_special=*/selector & 1);
    check_arbitrary_ids(loaded.tokenizer, text);
    return 0;
}
