#include "hf/hf_tokenizer.h"

#include <cctype>
#include <string_view>
#include <unordered_map>

#include "hf/gguf_values.h"

namespace tempered {
namespace {

using nlohmann::json;

// The split regexes of the byte-level BPE families tempered's pre-tokenizer implements (tokenizer/
// pre_tokenizer.cpp), as tokenizer.json spells them.
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool is_type(const json& node, std::string_view type) {
    return node.is_object() && node.contains("type") && node.at("type") == type;
}
bool byte_level(const json& node, bool with_regex) {
    return is_type(node, "ByteLevel") && node.value("use_regex", true) == with_regex;
}

// The tokenizer.ggml.pre name whose passes equal this pre-tokenizer, with the model's ignore_merges.
Result<std::string> pre_tokenizer_name(const json& pre, bool ignore_merges) {
    if (byte_level(pre, true)) return std::string("gpt-2");
    if (is_type(pre, "Sequence") && pre.contains("pretokenizers") && pre.at("pretokenizers").is_array()) {
        const json& steps = pre.at("pretokenizers");
        if (steps.size() == 2 && is_type(steps[0], "Digits") && steps[0].value("individual_digits", false) &&
            byte_level(steps[1], true))
            return std::string("smollm");
        if (steps.size() == 2 && is_type(steps[0], "Split") && byte_level(steps[1], false) &&
            steps[0].value("behavior", "") == "Isolated" && steps[0].contains("pattern") &&
            steps[0].at("pattern").contains("Regex") && steps[0].at("pattern").at("Regex").is_string()) {
            const std::string regex = steps[0].at("pattern").at("Regex").get<std::string>();
            if (regex == kLlama3Regex) return std::string(ignore_merges ? "llama3" : "dbrx");
            if (regex == kQwen2Regex && !ignore_merges) return std::string("qwen2");
        }
    }
    return Error{"tokenizer.json: pre-tokenizer " + pre.dump().substr(0, 200) +
                 " is not one tempered implements (GPT-2, SmolLM, Llama 3 and Qwen2 byte-level forms)"};
}

// A special token of tokenizer_config.json: a string or {"content": ...}.
std::string token_text(const json& config, const char* key) {
    if (!config.is_object() || !config.contains(key)) return "";
    const json& value = config.at(key);
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value.at("content").is_string())
        return value.at("content").get<std::string>();
    return "";
}

// post_processor TemplateProcessing whose single template starts with a special token: that token is added.
std::string added_bos_text(const json& tokenizer) {
    const json& processor = tokenizer.value("post_processor", json());
    if (!is_type(processor, "TemplateProcessing") || !processor.contains("single")) return "";
    const json& single = processor.at("single");
    if (!single.is_array() || single.empty() || !single[0].contains("SpecialToken")) return "";
    return single[0].at("SpecialToken").value("id", "");
}

struct Vocabulary {
    std::vector<std::string> texts;
    std::vector<int32_t> types;  // GGUF token types: 1 normal, 3 control, 4 user-defined
};

Result<Vocabulary> read_vocabulary(const json& tokenizer) {
    const json& model = tokenizer.at("model");
    if (!model.contains("vocab") || !model.at("vocab").is_object())
        return Error{"tokenizer.json: model.vocab is not an object"};
    constexpr int64_t kMaxTokens = int64_t{1} << 22;
    int64_t size = 0;
    auto grow = [&](int64_t id) -> Status {
        if (id < 0 || id >= kMaxTokens)
            return Error{"tokenizer.json: token id " + std::to_string(id) + " out of range"};
        size = std::max(size, id + 1);
        return Ok{};
    };
    for (const auto& [text, id] : model.at("vocab").items())
        if (!id.is_number_integer() || !grow(id.get<int64_t>())) return Error{"tokenizer.json: bad id for token"};
    const json& added = tokenizer.value("added_tokens", json::array());
    for (const json& token : added)
        if (!token.contains("id") || !token.at("id").is_number_integer() || !grow(token.at("id").get<int64_t>()))
            return Error{"tokenizer.json: an added token without a valid id"};
    Vocabulary out;
    out.texts.resize(static_cast<size_t>(size));
    out.types.assign(static_cast<size_t>(size), 1);
    std::vector<bool> seen(static_cast<size_t>(size));
    for (const auto& [text, id] : model.at("vocab").items()) {
        out.texts[id.get<size_t>()] = text;
        seen[id.get<size_t>()] = true;
    }
    for (const json& token : added) {
        const size_t id = token.at("id").get<size_t>();
        out.texts[id] = token.value("content", "");
        out.types[id] = token.value("special", false) ? 3 : 4;
        seen[id] = true;
    }
    for (size_t id = 0; id < seen.size(); ++id)
        if (!seen[id]) {  // a hole, as llama.cpp's converter fills it
            out.texts[id] = "[PAD" + std::to_string(id) + "]";
            out.types[id] = 5;  // unused
        }
    return out;
}

Result<std::vector<GgufValue>> read_merges(const json& model) {
    if (!model.contains("merges") || !model.at("merges").is_array())
        return Error{"tokenizer.json: model.merges is not a list"};
    std::vector<GgufValue> out;
    out.reserve(model.at("merges").size());
    for (const json& merge : model.at("merges")) {
        if (merge.is_string()) {
            out.push_back(gguf_string(merge.get<std::string>()));
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            out.push_back(gguf_string(merge[0].get<std::string>() + " " + merge[1].get<std::string>()));
        } else {
            return Error{"tokenizer.json: a merge is neither \"a b\" nor [a, b]"};
        }
    }
    return out;
}

// The SentencePiece form (Gemma): BPE with byte fallback over text whose spaces the normalizer turned into
// U+2581, with no pre-splitting. tempered's SentencePiece encoder merges the adjacent pair whose result
// scores highest; a token's score here is minus the rank of the first merge that makes it, so the pair
// with the lowest merge rank wins, as in the reference library.
const char* const kSpaceMark = "\u2581";

bool replaces_spaces(const json& node) {
    return is_type(node, "Replace") && node.contains("pattern") && node.at("pattern").value("String", "") == " " &&
           node.value("content", "") == kSpaceMark;
}

// add_space_prefix from the normalizer: Replace alone, or Prepend(U+2581) then Replace.
Result<bool> sentencepiece_space_prefix(const json& normalizer) {
    if (replaces_spaces(normalizer)) return false;
    if (is_type(normalizer, "Sequence") && normalizer.contains("normalizers")) {
        const json& steps = normalizer.at("normalizers");
        if (steps.size() == 2 && is_type(steps[0], "Prepend") && steps[0].value("prepend", "") == kSpaceMark &&
            replaces_spaces(steps[1]))
            return true;
    }
    return Error{"tokenizer.json: byte-fallback BPE with normalizer " + normalizer.dump().substr(0, 200) +
                 " is not the SentencePiece form tempered reads"};
}

// No pre-splitting: none, or a split on " " that finds nothing once the normalizer has replaced the spaces.
bool splits_nothing(const json& pre) {
    return pre.is_null() ||
           (is_type(pre, "Split") && pre.contains("pattern") && pre.at("pattern").value("String", "") == " " &&
            pre.value("behavior", "") == "MergedWithPrevious");
}

bool is_byte_token(const std::string& text) {
    return text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
           std::isxdigit(static_cast<unsigned char>(text[3])) && std::isxdigit(static_cast<unsigned char>(text[4]));
}

// Scores from merge ranks: the first merge that makes a token gives it -rank; tokens no merge makes (single
// characters, bytes, specials) score below every merge.
Result<std::vector<GgufValue>> scores_from_merges(const std::vector<GgufValue>& merges,
                                                  const std::vector<std::string>& texts) {
    std::unordered_map<std::string, size_t> id_of;
    id_of.reserve(texts.size());
    for (size_t id = 0; id < texts.size(); ++id) id_of.emplace(texts[id], id);
    std::vector<double> score(texts.size(), -static_cast<double>(merges.size()) - 1.0);
    std::vector<bool> made(texts.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& merge = merges[rank].string_value;
        const size_t space = merge.find(' ');
        if (space == std::string::npos) return Error{"tokenizer.json: a merge without two parts"};
        const auto it = id_of.find(merge.substr(0, space) + merge.substr(space + 1));
        if (it == id_of.end())
            return Error{"tokenizer.json: merge '" + merge + "' makes a token not in the vocabulary"};
        if (!made[it->second]) {
            score[it->second] = -static_cast<double>(rank);
            made[it->second] = true;
        }
    }
    std::vector<GgufValue> out;
    out.reserve(score.size());
    for (double value : score) out.push_back(gguf_float(value));
    return out;
}

}  // namespace

Result<GgufMetadata> hf_tokenizer_metadata(const json& tokenizer, const json& tokenizer_config) {
    if (!tokenizer.is_object() || !tokenizer.contains("model") || !tokenizer.at("model").is_object())
        return Error{"tokenizer.json: no model object"};
    const json& model = tokenizer.at("model");
    if (model.value("type", "") != "BPE")
        return Error{"tokenizer.json: model type '" + model.value("type", "") + "' is not one tempered reads (BPE)"};
    const bool sentencepiece = model.value("byte_fallback", false);
    auto vocabulary = read_vocabulary(tokenizer);
    if (!vocabulary) return vocabulary.error();
    auto merges = read_merges(model);
    if (!merges) return merges.error();

    GgufMetadata out;
    if (sentencepiece) {
        auto space_prefix = sentencepiece_space_prefix(tokenizer.value("normalizer", json()));
        if (!space_prefix) return space_prefix.error();
        if (!splits_nothing(tokenizer.value("pre_tokenizer", json())))
            return Error{"tokenizer.json: a byte-fallback BPE that splits words first is not read"};
        auto scores = scores_from_merges(*merges, vocabulary->texts);
        if (!scores) return scores.error();
        for (size_t id = 0; id < vocabulary->texts.size(); ++id)
            if (vocabulary->types[id] == 1 && is_byte_token(vocabulary->texts[id])) vocabulary->types[id] = 6;
        out.emplace_back("tokenizer.ggml.model", gguf_string("llama"));
        out.emplace_back("tokenizer.ggml.scores", gguf_array(GgufValueType::FLOAT32, std::move(scores).value()));
        out.emplace_back("tokenizer.ggml.add_space_prefix", gguf_bool(*space_prefix));
    } else {
        auto pre = pre_tokenizer_name(tokenizer.value("pre_tokenizer", json()), model.value("ignore_merges", false));
        if (!pre) return pre.error();
        out.emplace_back("tokenizer.ggml.model", gguf_string("gpt2"));
        out.emplace_back("tokenizer.ggml.pre", gguf_string(*pre));
        out.emplace_back("tokenizer.ggml.merges", gguf_array(GgufValueType::STRING, std::move(merges).value()));
    }
    std::vector<GgufValue> texts, types;
    for (size_t id = 0; id < vocabulary->texts.size(); ++id) {
        texts.push_back(gguf_string(vocabulary->texts[id]));
        types.push_back(gguf_int(vocabulary->types[id]));
    }
    out.emplace_back("tokenizer.ggml.tokens", gguf_array(GgufValueType::STRING, std::move(texts)));
    out.emplace_back("tokenizer.ggml.token_type", gguf_array(GgufValueType::INT32, std::move(types)));
    auto id_of = [&](const std::string& text) -> std::optional<int64_t> {
        if (text.empty()) return std::nullopt;
        for (size_t id = 0; id < vocabulary->texts.size(); ++id)
            if (vocabulary->texts[id] == text) return static_cast<int64_t>(id);
        return std::nullopt;
    };
    const std::string added_bos = added_bos_text(tokenizer);
    const auto bos = id_of(added_bos.empty() ? token_text(tokenizer_config, "bos_token") : added_bos);
    if (bos) out.emplace_back("tokenizer.ggml.bos_token_id", gguf_int(*bos));
    if (const auto eos = id_of(token_text(tokenizer_config, "eos_token")))
        out.emplace_back("tokenizer.ggml.eos_token_id", gguf_int(*eos));
    if (const auto unknown = id_of(token_text(tokenizer_config, "unk_token")))
        out.emplace_back("tokenizer.ggml.unknown_token_id", gguf_int(*unknown));
    // tokenizer_config.json's add_bos_token, else the post-processor's template, else what the tokenizer class
    // does by default in transformers (Gemma's and Llama's SentencePiece classes add BOS).
    const std::string tokenizer_class =
        tokenizer_config.is_object() ? tokenizer_config.value("tokenizer_class", "") : "";
    const bool class_adds_bos = tokenizer_class.rfind("Gemma", 0) == 0 || tokenizer_class.rfind("Llama", 0) == 0 ||
                                tokenizer_class.rfind("CodeLlama", 0) == 0;
    const bool add_bos = tokenizer_config.is_object() && tokenizer_config.contains("add_bos_token") &&
                                 tokenizer_config.at("add_bos_token").is_boolean()
                             ? tokenizer_config.at("add_bos_token").get<bool>()
                             : !added_bos.empty() || class_adds_bos;
    out.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(add_bos && bos));
    out.emplace_back("tempered.tokenizer.special_tokens_as_given", gguf_bool(true));
    const bool clean_spaces =
        tokenizer_config.is_object() && tokenizer_config.value("clean_up_tokenization_spaces", false) == true;
    out.emplace_back("tempered.tokenizer.clean_spaces", gguf_bool(clean_spaces));
    return out;
}

}  // namespace tempered
