#include "sampling/generation_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "formats/gguf.h"

namespace tempered {
namespace {

// Copies the parameter's key from `object` into `out` if it is a number in range; else notes why not.
template <class Param>
void take_number(const nlohmann::json& object, const Param& param, ModelSamplingDefaults& defaults,
                 const std::string& origin) {
    using Value = typename Param::Value;
    if constexpr (std::is_arithmetic_v<Value>) {
        const std::string key(param.spec.generation_config_key);
        auto found = object.find(key);
        if (key.empty() || found == object.end() || found->is_null()) return;
        if (!found->is_number()) {
            defaults.warnings.push_back(origin + ": " + key + " is not a number; ignored");
            return;
        }
        const double value = found->get<double>();
        if (auto problem = check_sampling_range(param.spec.name, value)) {
            defaults.warnings.push_back(origin + ": " + *problem + "; ignored");
            return;
        }
        Value number = static_cast<Value>(value);
        if (param.spec.negative_means_zero && number < 0) number = 0;
        param.field(defaults.values) = number;
    }
}

void overlay(SamplingValues& base, const SamplingValues& top) {
    for_each_sampling_param([&](const auto& param) {
        if (param.field(top)) param.field(base) = param.field(top);
    });
}

}  // namespace

Result<ModelSamplingDefaults> parse_generation_config(const std::string& json_text, const std::string& origin) {
    nlohmann::json object = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded() || !object.is_object()) return Error{origin + ": not a JSON object"};
    ModelSamplingDefaults defaults;
    for_each_sampling_param([&](const auto& param) { take_number(object, param, defaults, origin); });
    auto do_sample = object.find("do_sample");
    if (do_sample != object.end() && do_sample->is_boolean() && !do_sample->get<bool>())
        defaults.values.temperature = 0.0;  // the authors ask for greedy decoding
    if (!defaults.values.empty()) defaults.origins.push_back(origin);
    return defaults;
}

ModelSamplingDefaults gguf_sampling_defaults(const GgufFile& file) {
    ModelSamplingDefaults defaults;
    nlohmann::json object = nlohmann::json::object();
    for_each_sampling_param([&](const auto& param) {
        if (param.spec.gguf_key.empty()) return;
        if (auto value = file.get_float(std::string(param.spec.gguf_key)))
            object[std::string(param.spec.generation_config_key)] = *value;
    });
    if (object.empty()) return defaults;
    auto parsed = parse_generation_config(object.dump(), file.path() + " (general.sampling.*)");
    return parsed ? parsed.value() : defaults;
}

Result<ModelSamplingDefaults> load_model_sampling_defaults(const GgufFile& file, const std::string& explicit_path) {
    ModelSamplingDefaults defaults = gguf_sampling_defaults(file);
    std::string path = explicit_path;
    if (path.empty()) {
        // Beside a GGUF file, or inside the Hugging Face directory the model was read from.
        std::error_code ignored;
        const std::filesystem::path source(file.path());
        const auto beside =
            (std::filesystem::is_directory(source, ignored) ? source : source.parent_path()) / "generation_config.json";
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
