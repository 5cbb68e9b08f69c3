#include "sampling/generation_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/gguf.h"

namespace tempered {
namespace {

// Copies `key` from `object` into `out` if it is a number in range; else notes why not.
template <class T>
void take_number(const nlohmann::json& object, const char* key, const char* name, std::optional<T>& out,
                 ModelSamplingDefaults& defaults, const std::string& origin) {
    auto found = object.find(key);
    if (found == object.end() || found->is_null()) return;
    if (!found->is_number()) {
        defaults.warnings.push_back(origin + ": " + key + " is not a number; ignored");
        return;
    }
    const double value = found->get<double>();
    if (auto problem = check_sampling_range(name, value)) {
        defaults.warnings.push_back(origin + ": " + *problem + "; ignored");
        return;
    }
    out = static_cast<T>(value);
}

void overlay(SamplingValues& base, const SamplingValues& top) {
    if (top.temperature) base.temperature = top.temperature;
    if (top.top_p) base.top_p = top.top_p;
    if (top.top_k) base.top_k = top.top_k;
    if (top.min_p) base.min_p = top.min_p;
    if (top.repetition_penalty) base.repetition_penalty = top.repetition_penalty;
    if (top.presence_penalty) base.presence_penalty = top.presence_penalty;
    if (top.frequency_penalty) base.frequency_penalty = top.frequency_penalty;
    if (top.seed) base.seed = top.seed;
}

}  // namespace

Result<ModelSamplingDefaults> parse_generation_config(const std::string& json_text, const std::string& origin) {
    nlohmann::json object = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded() || !object.is_object()) return Error{origin + ": not a JSON object"};
    ModelSamplingDefaults defaults;
    take_number(object, "temperature", "temperature", defaults.values.temperature, defaults, origin);
    take_number(object, "top_p", "top_p", defaults.values.top_p, defaults, origin);
    take_number(object, "top_k", "top_k", defaults.values.top_k, defaults, origin);
    take_number(object, "min_p", "min_p", defaults.values.min_p, defaults, origin);
    take_number(object, "repetition_penalty", "repetition_penalty", defaults.values.repetition_penalty, defaults,
                origin);
    auto do_sample = object.find("do_sample");
    if (do_sample != object.end() && do_sample->is_boolean() && !do_sample->get<bool>())
        defaults.values.temperature = 0.0;  // the authors ask for greedy decoding
    if (defaults.values.top_k && *defaults.values.top_k < 0) defaults.values.top_k = 0;
    if (!defaults.values.empty()) defaults.origins.push_back(origin);
    return defaults;
}

ModelSamplingDefaults gguf_sampling_defaults(const GgufFile& file) {
    ModelSamplingDefaults defaults;
    nlohmann::json object = nlohmann::json::object();
    const std::pair<const char*, const char*> keys[] = {{"general.sampling.temp", "temperature"},
                                                        {"general.sampling.top_k", "top_k"},
                                                        {"general.sampling.top_p", "top_p"},
                                                        {"general.sampling.min_p", "min_p"},
                                                        {"general.sampling.penalty_repeat", "repetition_penalty"}};
    for (const auto& [gguf_key, name] : keys)
        if (auto value = file.get_float(gguf_key)) object[name] = *value;
    if (object.empty()) return defaults;
    auto parsed = parse_generation_config(object.dump(), file.path() + " (general.sampling.*)");
    return parsed ? parsed.value() : defaults;
}

Result<ModelSamplingDefaults> load_model_sampling_defaults(const GgufFile& file, const std::string& explicit_path) {
    ModelSamplingDefaults defaults = gguf_sampling_defaults(file);
    std::string path = explicit_path;
    if (path.empty()) {
        auto beside = std::filesystem::path(file.path()).parent_path() / "generation_config.json";
        std::error_code ignored;
        if (std::filesystem::is_regular_file(beside, ignored)) path = beside.string();
    }
    if (path.empty()) return defaults;
    std::ifstream stream(path);
    if (!stream) return Error{"cannot read generation config '" + path + "'"};
    std::stringstream text;
    text << stream.rdbuf();
    auto from_file = parse_generation_config(text.str(), path);
    if (!from_file) return from_file.error();
    overlay(defaults.values, from_file->values);
    defaults.origins.insert(defaults.origins.end(), from_file->origins.begin(), from_file->origins.end());
    defaults.warnings.insert(defaults.warnings.end(), from_file->warnings.begin(), from_file->warnings.end());
    return defaults;
}

}  // namespace tempered
