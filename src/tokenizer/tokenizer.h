// Text <-> token ids for the models tempered serves, matching llama.cpp id for id.
//
//   encode: special-token split (special_tokens.h) -> per text fragment either
//           byte-level BPE (pre_tokenizer.h, then bpe.h) or SentencePiece-style BPE (sentencepiece.h)
//   decode: each id's piece (the bytes it stands for), concatenated; see also StreamingDetokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace tempered {

class GgufFile;

class Tokenizer {
public:
    static Result<Tokenizer> from_gguf(const GgufFile& file);
    static Result<Tokenizer> from_spec(const VocabSpec& spec);
    // The 256 byte tokens and nothing else (text -> its bytes): for a front that serves no model of its own
    // (an upstream passthrough without --model), whose requests never reach a tokenizer that matters.
    static Tokenizer bytes_only();

    // `add_special_tokens`: BOS/EOS as the model's add_bos/add_eos flags say. `parse_special`: control
    // token texts in `text` (e.g. "<|im_start|>") become those tokens; user-defined tokens always do.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens, bool parse_special) const;

    // The prompt tokens of a rendered chat template: control tokens parsed, BOS added as the model asks
    // unless the template already wrote it (many templates start with "{{ bos_token }}").
    std::vector<int32_t> encode_chat(std::string_view rendered) const;

    // The bytes of the ids, as llama.cpp's detokenizer gives them (not necessarily valid UTF-8 for a
    // partial sequence). `skip_special` drops control tokens and a leading BOS / trailing EOS that the
    // model adds by itself. Unknown ids are skipped.
    std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

    // The raw bytes a token stands for; control tokens give their text; an unknown id gives nothing.
    const std::string& token_bytes(int32_t id) const;
    // What decode renders for one token: as token_bytes, but empty for control tokens when skipping.
    std::string_view token_piece(int32_t id, bool skip_special) const;
    // The vocabulary entry as stored (GPT-2-spelled for byte-level BPE, with ▁ for SentencePiece).
    // Precondition: 0 <= id < vocab_size().
    const std::string& token_text(int32_t id) const { return vocab_.texts.at(id); }
    std::optional<int32_t> find_token(std::string_view text) const { return vocab_.find(text); }

    int32_t vocab_size() const { return vocab_.size(); }
    TokenizerModel model() const { return vocab_.model; }
    std::optional<int32_t> bos_id() const { return vocab_.bos_id; }
    std::optional<int32_t> eos_id() const { return vocab_.eos_id; }
    bool adds_bos() const { return vocab_.add_bos; }
    bool adds_eos() const { return vocab_.add_eos; }
    bool is_end_of_generation(int32_t id) const { return vocab_.end_of_generation.count(id) > 0; }
    // Control or unknown: rendered only when special tokens are not skipped.
    bool is_control(int32_t id) const {
        return vocab_.contains(id) && (vocab_.attrs[id] & (kAttrControl | kAttrUnknown));
    }

private:
    void encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const;
    std::string piece_of(int32_t id) const;

    Vocab vocab_;
    PreTokenizer pre_tokenizer_;  // byte-level BPE only
    BpeMerges merges_;            // byte-level BPE only
    SpecialTokenMatcher special_tokens_;
    std::vector<std::string> pieces_;  // (n_tokens) token_bytes of each id
};

}  // namespace tempered
