#include "hf/hf_tokenizer.h"

#include <string_view>

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

}  // namespace

Result<GgufMetadata> hf_tokenizer_metadata(const json& tokenizer, const json& tokenizer_config) {
    if (!tokenizer.is_object() || !tokenizer.contains("model") || !tokenizer.at("model").is_object())
        return Error{"tokenizer.json: no model object"};
    const json& model = tokenizer.at("model");
    if (model.value("type", "") != "BPE" || model.value("byte_fallback", false))
        return Error{"tokenizer.json: model type '" + model.value("type", "") +
                     "' is not one tempered reads yet (byte-level BPE)"};
    auto pre = pre_tokenizer_name(tokenizer.value("pre_tokenizer", json()), model.value("ignore_merges", false));
    if (!pre) return pre.error();
    auto vocabulary = read_vocabulary(tokenizer);
    if (!vocabulary) return vocabulary.error();
    auto merges = read_merges(model);
    if (!merges) return merges.error();

    GgufMetadata out;
    out.emplace_back("tokenizer.ggml.model", gguf_string("gpt2"));
    out.emplace_back("tokenizer.ggml.pre", gguf_string(*pre));
    std::vector<GgufValue> texts, types;
    for (size_t id = 0; id < vocabulary->texts.size(); ++id) {
        texts.push_back(gguf_string(vocabulary->texts[id]));
        types.push_back(gguf_int(vocabulary->types[id]));
    }
    out.emplace_back("tokenizer.ggml.tokens", gguf_array(GgufValueType::STRING, std::move(texts)));
    out.emplace_back("tokenizer.ggml.token_type", gguf_array(GgufValueType::INT32, std::move(types)));
    out.emplace_back("tokenizer.ggml.merges", gguf_array(GgufValueType::STRING, std::move(merges).value()));
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
    const bool add_bos = tokenizer_config.is_object() && tokenizer_config.contains("add_bos_token") &&
                                 tokenizer_config.at("add_bos_token").is_boolean()
                             ? tokenizer_config.at("add_bos_token").get<bool>()
                             : !added_bos.empty();
    out.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(add_bos && bos));
    return out;
}

}  // namespace tempered
