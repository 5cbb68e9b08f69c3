#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdint>
#include <span>

#include "formats/gguf.h"

namespace tempered {
namespace {

uint32_t attr_of_type(int32_t type) {
    switch (static_cast<GgufTokenType>(type)) {
        case GgufTokenType::kNormal: return kAttrNormal;
        case GgufTokenType::kUnknown: return kAttrUnknown;
        case GgufTokenType::kControl: return kAttrControl;
        case GgufTokenType::kUserDefined: return kAttrUserDefined;
        case GgufTokenType::kUnused: return kAttrUnused;
        case GgufTokenType::kByte: return kAttrByte;
        default: return kAttrUndefined;
    }
}

bool text_in(std::string_view text, std::span<const std::string_view> texts) {
    return std::find(texts.begin(), texts.end(), text) != texts.end();
}

// The texts llama.cpp recognises as special tokens when the file does not name them. Which token is
// found first is decided by hash-map order there; here the lowest id wins, which only matters for a
// vocabulary holding two candidates of one kind.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",     "<|end_of_text|>",
    "<EOT>",      "_<EOT>",     "[EOT]",   "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::string_view kFimPrefixTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",    "<｜fim▁begin｜>",
                                                "<PRE>",          "▁<PRE>",       "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSuffixTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",    "<｜fim▁hole｜>",
                                                "<SUF>",          "▁<SUF>",       "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMiddleTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",    "<｜fim▁end｜>",
                                                "<MID>",          "▁<MID>",       "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSeparatorTexts[] = {"<|file_sep|>"};
constexpr std::string_view kEndOfMessageTexts[] = {"<|eom_id|>"};
// gpt-oss tokens rendered like user-defined ones.
constexpr std::string_view kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
constexpr std::string_view kEndOfGenerationTexts[] = {"<|eot_id|>",
                                                      "<|im_end|>",
                                                      "<|end|>",
                                                      "<|return|>",
                                                      "<|call|>",
                                                      "<|flush|>",
                                                      "<|calls|>",
                                                      "<end_of_turn>",
                                                      "<|endoftext|>",
                                                      "</s>",
                                                      "<|eom_id|>",
                                                      "<EOT>",
                                                      "_<EOT>",
                                                      "[EOT]",
                                                      "[EOS]",
                                                      "<|end_of_text|>",
                                                      "<end_of_utterance>",
                                                      "<eos>",
                                                      "<turn|>",
                                                      "<|tool_response>",
                                                      "<｜end▁of▁sentence｜>",
                                                      "[e~["};

// Applies llama.cpp's text-based detection of special tokens, attribute fix-ups and the
// end-of-generation set. `ids` are the explicit (or default) special ids.
struct SpecialIds {
    std::optional<int32_t> eot, eom, fim_pad, fim_repo, fim_sep;
};

void detect_special_tokens(Vocab& vocab, SpecialIds ids) {
    // Only one id per text takes part, as in a text -> id map. Every text looked for starts with one of
    // a few bytes, which spares hashing most of a large vocabulary.
    std::vector<int32_t> candidates;
    for (int32_t id = 0; id < vocab.size(); ++id) {
        const std::string& text = vocab.texts[id];
        const bool may_match = text[0] == '<' || text[0] == '[' || text[0] == '_' || text[0] == '\xE2';
        if ((may_match || (vocab.attrs[id] & kAttrControl)) && vocab.find(text) == id) {
            candidates.push_back(id);
        }
    }
    const auto each_unique = [&](auto&& visit) {
        for (const int32_t id : candidates) visit(id, vocab.texts[id], vocab.attrs[id]);
    };
    std::optional<int32_t> fim_prefix, fim_suffix, fim_middle;
    const auto detect = [&](std::optional<int32_t>& slot, std::span<const std::string_view> texts, int32_t id,
                            std::string_view text, uint32_t& attr) {
        if (slot || !text_in(text, texts)) return;
        slot = id;
        attr |= kAttrControl;
    };
    each_unique([&](int32_t id, std::string_view text, uint32_t& attr) {
        detect(ids.eot, kEndOfTurnTexts, id, text, attr);
        detect(ids.eom, kEndOfMessageTexts, id, text, attr);
        detect(fim_prefix, kFimPrefixTexts, id, text, attr);
        detect(fim_suffix, kFimSuffixTexts, id, text, attr);
        detect(fim_middle, kFimMiddleTexts, id, text, attr);
        detect(ids.fim_pad, kFimPadTexts, id, text, attr);
        detect(ids.fim_repo, kFimRepoTexts, id, text, attr);
        detect(ids.fim_sep, kFimSeparatorTexts, id, text, attr);
    });
    each_unique([&](int32_t, std::string_view text, uint32_t& attr) {
        if ((attr & kAttrControl) && text.find("unused") != std::string_view::npos) attr |= kAttrUnused;
    });

    auto& eog = vocab.end_of_generation;
    for (const auto& id : {ids.fim_pad, ids.fim_repo, ids.fim_sep}) {
        if (id) eog.insert(*id);
    }
    each_unique([&](int32_t id, std::string_view text, uint32_t& attr) {
        if (text_in(text, kEndOfGenerationTexts)) {
            eog.insert(id);
            attr |= kAttrControl;
        }
    });
    each_unique([&](int32_t, std::string_view text, uint32_t& attr) {
        if (text_in(text, kAlwaysRenderedTexts)) attr = kAttrUserDefined;
    });
    for (const auto& id : {vocab.eos_id, ids.eot, ids.eom}) {
        if (id) eog.insert(*id);
    }

    const auto eog_with_text = [&](std::string_view text) -> std::optional<int32_t> {
        for (const int32_t id : eog) {
            if (vocab.contains(id) && vocab.texts[id] == text) return id;
        }
        return std::nullopt;
    };
    // o200k_harmony and solar-open end a message with <|end|> but keep generating after it.
    const bool has_call = eog_with_text("<|call|>") || eog_with_text("<|calls|>");
    const auto end = eog_with_text("<|end|>");
    if (end && has_call && (eog_with_text("<|return|>") || eog_with_text("<|flush|>"))) {
        eog.erase(*end);
        vocab.attrs[*end] = kAttrUserDefined;
    }
    // Gemma 4 and PLaMo have an ordinary </s>.
    const auto end_of_sequence = eog_with_text("</s>");
    if (end_of_sequence && (eog_with_text("<|tool_response>") || eog_with_text("<|plamo:eos|>"))) {
        eog.erase(*end_of_sequence);
        vocab.attrs[*end_of_sequence] = kAttrNormal;
    }
}

}  // namespace

void TokenLookup::build(const std::vector<std::string>& texts) {
    int bits = 4;
    while ((size_t{1} << bits) < 2 * texts.size()) ++bits;  // load at most one half
    slots_.assign(size_t{1} << bits, Slot{});
    shift_ = 64 - bits;
    const size_t mask = slots_.size() - 1;
    for (size_t i = 0; i < texts.size(); ++i) {
        const uint64_t hash = std::hash<std::string_view>{}(texts[i]) * 0x9E3779B97F4A7C15ull;
        for (size_t slot = slot_of(hash);; slot = (slot + 1) & mask) {
            Slot& entry = slots_[slot];
            if (entry.id < 0) {
                entry = Slot{hash, static_cast<int32_t>(i)};
                break;
            }
            if (entry.hash == hash && texts[entry.id] == texts[i]) {
                entry.id = static_cast<int32_t>(i);
                break;
            }
        }
    }
}

std::optional<int32_t> TokenLookup::find(std::string_view text, const std::vector<std::string>& texts) const {
    if (slots_.empty()) return std::nullopt;
    const uint64_t hash = std::hash<std::string_view>{}(text)*0x9E3779B97F4A7C15ull;
    const size_t mask = slots_.size() - 1;
    for (size_t slot = slot_of(hash);; slot = (slot + 1) & mask) {
        const Slot& entry = slots_[slot];
        if (entry.id < 0) return std::nullopt;
        if (entry.hash == hash && texts[entry.id] == text) return entry.id;
    }
}

Result<Vocab> Vocab::build(const VocabSpec& spec, bool default_add_bos, bool clean_spaces) {
    const size_t n_tokens = spec.tokens.size();
    if (n_tokens == 0) return Error{"tokenizer: the vocabulary is empty"};
    if (n_tokens > static_cast<size_t>(INT32_MAX)) return Error{"tokenizer: the vocabulary is too large"};
    if (!spec.scores.empty() && spec.scores.size() < n_tokens) {
        return Error{"tokenizer: " + std::to_string(spec.scores.size()) + " scores for " + std::to_string(n_tokens) +
                     " tokens"};
    }
    if (!spec.token_types.empty() && spec.token_types.size() < n_tokens) {
        return Error{"tokenizer: " + std::to_string(spec.token_types.size()) + " token types for " +
                     std::to_string(n_tokens) + " tokens"};
    }

    Vocab vocab;
    vocab.model = spec.model;
    vocab.texts.resize(n_tokens);
    vocab.scores.assign(n_tokens, 0.0f);
    vocab.attrs.assign(n_tokens, kAttrNormal);
    for (size_t i = 0; i < n_tokens; ++i) {
        vocab.texts[i] = spec.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : spec.tokens[i];
        if (!spec.scores.empty()) vocab.scores[i] = spec.scores[i];
        if (!spec.token_types.empty()) vocab.attrs[i] = attr_of_type(spec.token_types[i]);
    }
    vocab.ids_by_text.build(vocab.texts);

    const auto in_range = [&](std::optional<int64_t> id) -> std::optional<int32_t> {
        if (id && *id >= 0 && *id < static_cast<int64_t>(n_tokens)) return static_cast<int32_t>(*id);
        return std::nullopt;
    };
    if (spec.model == TokenizerModel::kSentencePiece) {
        vocab.bos_id = in_range(1);
        vocab.eos_id = in_range(2);
        vocab.unknown_id = in_range(0);
        vocab.add_bos = true;
        vocab.add_space_prefix = true;
        vocab.clean_spaces = false;
    } else {
        vocab.bos_id = in_range(11);
        vocab.eos_id = in_range(11);
        vocab.add_bos = default_add_bos;
        vocab.clean_spaces = clean_spaces;
    }
    if (const auto id = in_range(spec.bos_id)) vocab.bos_id = id;
    if (const auto id = in_range(spec.eos_id)) vocab.eos_id = id;
    if (const auto id = in_range(spec.unknown_id)) vocab.unknown_id = id;
    if (spec.add_bos) vocab.add_bos = *spec.add_bos;
    if (spec.add_eos) vocab.add_eos = *spec.add_eos;
    if (spec.add_space_prefix) vocab.add_space_prefix = *spec.add_space_prefix;
    if (vocab.add_bos && !vocab.bos_id) return Error{"tokenizer: add_bos is set but there is no BOS token"};
    if (vocab.add_eos && !vocab.eos_id) return Error{"tokenizer: add_eos is set but there is no EOS token"};

    if (spec.clean_spaces) vocab.clean_spaces = *spec.clean_spaces;
    const std::vector<uint32_t> given_attrs = vocab.attrs;
    detect_special_tokens(vocab, SpecialIds{in_range(spec.eot_id), in_range(spec.eom_id), in_range(spec.fim_pad_id),
                                            in_range(spec.fim_repo_id), in_range(spec.fim_sep_id)});
    if (spec.special_tokens_as_given) {
        vocab.attrs = given_attrs;
        std::erase_if(vocab.end_of_generation, [&](int32_t id) {
            return id != vocab.eos_id && !(vocab.attrs[static_cast<size_t>(id)] & kAttrControl);
        });
    }
    return vocab;
}

Result<VocabSpec> VocabSpec::from_gguf(const GgufFile& file) {
    VocabSpec spec;
    const auto model = file.get_string("tokenizer.ggml.model");
    if (!model) return Error{"tokenizer: " + file.path() + " has no tokenizer.ggml.model"};
    if (*model == "gpt2") {
        spec.model = TokenizerModel::kBytePairGpt2;
    } else if (*model == "llama") {
        spec.model = TokenizerModel::kSentencePiece;
    } else {
        return Error{"tokenizer: unsupported tokenizer.ggml.model '" + *model + "'"};
    }
    spec.pre_tokenizer = file.get_string("tokenizer.ggml.pre").value_or("");

    auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) return Error{"tokenizer: " + file.path() + " has no string array tokenizer.ggml.tokens"};
    spec.tokens = std::move(*tokens);
    if (file.find("tokenizer.ggml.scores")) {
        const auto scores = file.get_float_array("tokenizer.ggml.scores");
        if (!scores) return Error{"tokenizer: tokenizer.ggml.scores is not a numeric array"};
        spec.scores.assign(scores->begin(), scores->end());
    }
    if (file.find("tokenizer.ggml.token_type")) {
        const auto types = file.get_int_array("tokenizer.ggml.token_type");
        if (!types) return Error{"tokenizer: tokenizer.ggml.token_type is not an integer array"};
        spec.token_types.reserve(types->size());
        for (const int64_t type : *types) spec.token_types.push_back(static_cast<int32_t>(type));
    }
    if (spec.model == TokenizerModel::kBytePairGpt2) {
        auto merges = file.get_string_array("tokenizer.ggml.merges");
        if (!merges) return Error{"tokenizer: " + file.path() + " has no string array tokenizer.ggml.merges"};
        spec.merges = std::move(*merges);
    }

    spec.bos_id = file.get_int("tokenizer.ggml.bos_token_id");
    spec.eos_id = file.get_int("tokenizer.ggml.eos_token_id");
    spec.unknown_id = file.get_int("tokenizer.ggml.unknown_token_id");
    spec.eot_id = file.get_int("tokenizer.ggml.eot_token_id");
    spec.eom_id = file.get_int("tokenizer.ggml.eom_token_id");
    spec.fim_pad_id = file.get_int("tokenizer.ggml.fim_pad_token_id");
    spec.fim_repo_id = file.get_int("tokenizer.ggml.fim_rep_token_id");
    spec.fim_sep_id = file.get_int("tokenizer.ggml.fim_sep_token_id");
    spec.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
    spec.add_eos = file.get_bool("tokenizer.ggml.add_eos_token");
    spec.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
    spec.special_tokens_as_given = file.get_bool("tempered.tokenizer.special_tokens_as_given").value_or(false);
    spec.clean_spaces = file.get_bool("tempered.tokenizer.clean_spaces");
    return spec;
}

}  // namespace tempered
