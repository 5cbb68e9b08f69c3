#include "tokenizer/tokenizer.h"

#include <cstdio>
#include <cstdlib>

#include "formats/gguf.h"
#include "tokenizer/byte_encoding.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/unicode.h"

namespace tempered {
namespace {

// A byte-level BPE token's text back to bytes. A character outside GPT-2's table is kept visible the
// way llama.cpp shows it.
std::string decode_gpt2_text(const std::string& text) {
    std::string bytes;
    for (size_t offset = 0; offset < text.size();) {
        const uint32_t code_point = utf8_decode_lenient(text, offset);
        if (const auto byte = gpt2_char_to_byte(code_point)) {
            bytes.push_back(static_cast<char>(*byte));
            continue;
        }
        std::string utf8;
        utf8_append(utf8, code_point);
        bytes += "[UNK_BYTE_0x";
        for (const char c : utf8) {
            char hex[3];
            std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
            bytes += hex;
        }
        bytes += text + "]";
    }
    return bytes;
}

std::string unescape_spaces(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
            out.push_back(' ');
            i += 2;
        } else {
            out.push_back(text[i]);
        }
    }
    return out;
}

// llama.cpp's clean_up_tokenization_spaces, three in-place passes over the decoded bytes.
void clean_up_spaces(std::string& text) {
    size_t total = text.size();
    // " ?", " !", " .", " ," lose the space.
    {
        const size_t n = total;
        total = n ? 1 : 0;
        for (size_t i = 1; i < n; ++i) {
            const char x = text[i];
            if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
            text[total++] = x;
        }
    }
    // " ' " becomes "'".
    {
        const size_t n = total;
        total = n ? 1 : 0;
        for (size_t i = 1; i < n; ++i) {
            const char x = text[i];
            if (x == '\'' && i + 1 < n && text[i - 1] == ' ' && text[i + 1] == ' ') {
                --total;
                text[++i] = '\0';
            }
            text[total++] = x;
        }
    }
    // " 's", " 'm", " 're", " 've" lose the space.
    {
        const size_t n = total;
        total = n ? 1 : 0;
        for (size_t i = 1; i < n; ++i) {
            const char x = text[i];
            if (text[i - 1] == ' ' && x == '\'' && i + 1 < n) {
                const char x1 = text[i + 1];
                if (x1 == 's' || x1 == 'm') {
                    --total;
                } else if (i + 2 < n) {
                    const char x2 = text[i + 2];
                    if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
                }
            }
            text[total++] = x;
        }
    }
    text.resize(total);
}

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
    auto spec = VocabSpec::from_gguf(file);
    if (!spec) return spec.error();
    return from_spec(*spec);
}

Result<Tokenizer> Tokenizer::from_spec(const VocabSpec& spec) {
    Tokenizer tokenizer;
    if (spec.model == TokenizerModel::kBytePairGpt2) {
        auto pre = PreTokenizer::from_name(spec.pre_tokenizer);
        if (!pre) return Error{"tokenizer: " + pre.error().message};
        tokenizer.pre_tokenizer_ = std::move(*pre);
    }
    auto vocab = Vocab::build(spec, tokenizer.pre_tokenizer_.add_bos, tokenizer.pre_tokenizer_.clean_spaces);
    if (!vocab) return vocab.error();
    tokenizer.vocab_ = std::move(*vocab);
    if (spec.model == TokenizerModel::kBytePairGpt2) {
        auto merges = BpeMerges::build(tokenizer.vocab_, spec.merges);
        if (!merges) return merges.error();
        tokenizer.merges_ = std::move(*merges);
    }
    tokenizer.special_tokens_ = SpecialTokenMatcher(tokenizer.vocab_);
    tokenizer.pieces_.reserve(tokenizer.vocab_.texts.size());
    for (int32_t id = 0; id < tokenizer.vocab_.size(); ++id) tokenizer.pieces_.push_back(tokenizer.piece_of(id));
    return tokenizer;
}

Tokenizer Tokenizer::bytes_only() {
    VocabSpec spec;
    spec.model = TokenizerModel::kSentencePiece;
    for (int byte = 0; byte < 256; ++byte) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", byte);
        spec.tokens.push_back(name);
        spec.token_types.push_back(static_cast<int32_t>(GgufTokenType::kByte));
    }
    spec.add_bos = false;
    spec.add_space_prefix = false;
    auto tokenizer = from_spec(spec);
    return std::move(tokenizer).value();  // a fixed, valid vocabulary
}

std::string Tokenizer::piece_of(int32_t id) const {
    const uint32_t attr = vocab_.attrs[id];
    const std::string& text = vocab_.texts[id];
    if (attr & (kAttrControl | kAttrUnknown | kAttrUserDefined)) return text;
    if (attr & kAttrNormal) {
        return vocab_.model == TokenizerModel::kSentencePiece ? unescape_spaces(text) : decode_gpt2_text(text);
    }
    if (attr & kAttrByte) {
        // "<0xXX>"
        const std::string hex = text.size() >= 5 ? text.substr(3, 2) : std::string();
        return std::string(1, static_cast<char>(std::strtol(hex.c_str(), nullptr, 16)));
    }
    return {};  // unused and undefined tokens render as nothing
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
    static const std::string kNothing;
    return vocab_.contains(id) ? pieces_[id] : kNothing;
}

std::string_view Tokenizer::token_piece(int32_t id, bool skip_special) const {
    if (!vocab_.contains(id)) return {};
    if (skip_special && (vocab_.attrs[id] & (kAttrControl | kAttrUnknown))) return {};
    return pieces_[id];
}

void Tokenizer::encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const {
    if (vocab_.model == TokenizerModel::kSentencePiece) {
        std::string prefixed;
        if (vocab_.add_space_prefix && after_special) prefixed = " ";
        prefixed += text;
        sentencepiece_encode(escape_spaces(prefixed), vocab_, out);
        return;
    }
    const std::vector<uint32_t> code_points = utf8_to_code_points(text);
    const std::vector<size_t> words = pre_tokenizer_.split(code_points);
    std::string word;
    size_t begin = 0;
    for (const size_t length : words) {
        // Re-encoded from code points: invalid input bytes have become U+FFFD, as in llama.cpp.
        word.clear();
        for (size_t i = begin; i < begin + length; ++i) utf8_append(word, code_points[i]);
        merges_.encode_word(word, vocab_, pre_tokenizer_.ignore_merges, out);
        begin += length;
    }
}

std::vector<int32_t> Tokenizer::encode_chat(std::string_view rendered) const {
    bool add_special = true;
    if (auto bos = bos_id(); bos && adds_bos()) {
        const std::string& bos_text = token_text(*bos);
        if (!bos_text.empty() && rendered.starts_with(bos_text)) add_special = false;
    }
    return encode(rendered, add_special, /*parse_special=*/true);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens, bool parse_special) const {
    std::vector<int32_t> out;
    if (add_special_tokens && vocab_.add_bos) out.push_back(*vocab_.bos_id);
    bool after_special = true;  // SentencePiece prefixes a space to the first fragment and those after specials
    for (const TextFragment& fragment : special_tokens_.partition(text, vocab_, parse_special)) {
        if (fragment.token >= 0) {
            out.push_back(fragment.token);
            after_special = true;
        } else {
            encode_text(text.substr(fragment.offset, fragment.length), after_special, out);
            after_special = false;
        }
    }
    if (add_special_tokens && vocab_.add_eos) out.push_back(*vocab_.eos_id);
    return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
    bool remove_space = vocab_.add_space_prefix;
    if (skip_special && vocab_.add_bos && !ids.empty() && ids.front() == vocab_.bos_id) {
        remove_space = false;
        ids = ids.subspan(1);
    }
    if (skip_special && vocab_.add_eos && !ids.empty() && ids.back() == vocab_.eos_id) {
        ids = ids.subspan(0, ids.size() - 1);
    }
    std::string text;
    for (const int32_t id : ids) {
        std::string_view piece = token_piece(id, skip_special);
        if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        remove_space = false;
        text += piece;
    }
    if (vocab_.clean_spaces) clean_up_spaces(text);
    return text;
}

}  // namespace tempered
