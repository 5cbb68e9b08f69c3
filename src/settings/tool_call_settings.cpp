#include "settings/tool_call_settings.h"

#include <algorithm>
#include <vector>

#include "toolcalls/tool_call_family.h"

namespace tempered {

std::optional<ToolCallValidation> tool_call_validation_from_name(std::string_view name) {
    if (name == "off") return ToolCallValidation::Off;
    if (name == "flag") return ToolCallValidation::Flag;
    if (name == "constrain") return ToolCallValidation::Constrain;
    return std::nullopt;
}

Result<ToolCallSettings> tool_call_settings(std::string_view parser_flag, std::string_view validation_flag,
                                            std::string_view parser_in_file, std::string_view validation_in_file) {
    auto pick = [](std::string_view flag, std::string_view file, std::string_view fallback) {
        return std::string(!flag.empty() ? flag : !file.empty() ? file : fallback);
    };
    ToolCallSettings settings;
    settings.parser = pick(parser_flag, parser_in_file, "auto");
    const std::string validation = pick(validation_flag, validation_in_file, "constrain");
    const std::string& parser = settings.parser;
    if (parser != "auto" && parser != "none" && !toolcalls::family_from_name(parser))
        return Error{"--tool-call-parser must be auto, none, " + tool_call_family_names() + " (got '" + parser + "')"};
    auto mode = tool_call_validation_from_name(validation);
    if (!mode) return Error{"--tool-call-validation must be off, flag or constrain (got '" + validation + "')"};
    settings.validation = *mode;
    return settings;
}

std::string tool_call_family_names(std::string_view last) {
    std::vector<std::string_view> names;
    for (const auto* family : toolcalls::tool_call_families()) names.push_back(family->name);
    std::sort(names.begin(), names.end());
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += std::string(i == 0 ? "" : i + 1 == names.size() ? last : ", ") + std::string(names[i]);
    return text;
}

}  // namespace tempered
