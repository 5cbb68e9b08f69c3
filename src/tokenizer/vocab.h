// The vocabulary of a tokenizer: token texts, scores, attributes, special ids and the flags that steer
// encoding and decoding. VocabSpec is the raw description (what a GGUF file holds, or what a test writes
// by hand); Vocab is what the encoders use, with llama.cpp's defaults and fix-ups applied so that the
// same file gives the same ids, the same special-token handling and the same end-of-generation set.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/result.h"

namespace tempered {

class GgufFile;

enum class TokenizerModel : uint8_t {
    kBytePairGpt2,   // tokenizer.ggml.model = "gpt2": byte-level BPE with ranked merges
    kSentencePiece,  // tokenizer.ggml.model = "llama": SentencePiece-style BPE by score, byte fallback
};

// GGUF token types (tokenizer.ggml.token_type).
enum class GgufTokenType : int32_t {
    kUndefined = 0,
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

// Token attributes, a bit set as in llama.cpp (a token can gain kControl on top of its type).
enum TokenAttr : uint32_t {
    kAttrUndefined = 0,
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
};

struct VocabSpec {
    TokenizerModel model = TokenizerModel::kBytePairGpt2;
    std::string pre_tokenizer;  // tokenizer.ggml.pre; byte-level BPE only
    std::vector<std::string> tokens;
    std::vector<float> scores;         // empty: all zero
    std::vector<int32_t> token_types;  // GgufTokenType values; empty: all normal
    std::vector<std::string> merges;   // "left right", by rank; byte-level BPE only

    // Explicit ids from the file; an id out of range is ignored (the model's default stays).
    std::optional<int64_t> bos_id, eos_id, unknown_id, eot_id, eom_id;
    std::optional<int64_t> fim_pad_id, fim_repo_id, fim_sep_id;
    std::optional<bool> add_bos, add_eos, add_space_prefix;
    // A Hugging Face tokenizer.json (hf/): its added tokens are the special tokens, exactly. llama.cpp's
    // guesses from token texts (an ordinary "</s>" or "<filename>" made control) pick end-of-generation ids
    // only among them, and change no token's kind. Keys tempered.tokenizer.* of the in-memory view.
    bool special_tokens_as_given = false;
    std::optional<bool> clean_spaces;  // decode's clean-up (tokenizer_config.json clean_up_tokenization_spaces)

    static Result<VocabSpec> from_gguf(const GgufFile& file);
};

struct StringViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using TokenIdsByText = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

// Text -> id over the vocabulary's own strings: open addressing on (hash, id) slots, so a miss rarely
// touches a string and a hit compares one. The encoders look up every candidate merge here.
class TokenLookup {
public:
    // The last id wins where a text repeats, as in llama.cpp's map.
    void build(const std::vector<std::string>& texts);
    std::optional<int32_t> find(std::string_view text, const std::vector<std::string>& texts) const;

private:
    struct Slot {
        uint64_t hash = 0;
        int32_t id = -1;  // -1: empty
    };
    size_t slot_of(uint64_t hash) const { return static_cast<size_t>(hash >> shift_); }
    std::vector<Slot> slots_;
    int shift_ = 64;
};

struct Vocab {
    TokenizerModel model = TokenizerModel::kBytePairGpt2;
    std::vector<std::string> texts;  // (n_tokens) as stored, "[EMPTY_<id>]" for an empty text
    std::vector<float> scores;       // (n_tokens)
    std::vector<uint32_t> attrs;     // (n_tokens) TokenAttr bits
    TokenLookup ids_by_text;

    std::optional<int32_t> bos_id, eos_id, unknown_id;
    std::unordered_set<int32_t> end_of_generation;
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;  // SentencePiece: a space before the text (and after each special token)
    bool clean_spaces = false;      // decode drops the space before , . ! ? and some contractions

    // `default_add_bos` and `clean_spaces` come from the pre-tokenizer (byte-level BPE).
    static Result<Vocab> build(const VocabSpec& spec, bool default_add_bos, bool clean_spaces);

    int32_t size() const { return static_cast<int32_t>(texts.size()); }
    bool contains(int32_t id) const { return id >= 0 && id < size(); }
    std::optional<int32_t> find(std::string_view text) const { return ids_by_text.find(text, texts); }
};

}  // namespace tempered
