#include "loadgen/prompts_file.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace tempered::loadgen {

Result<std::vector<std::string>> read_prompts_file(const std::string& path) {
    std::ifstream file(path);
    if (!file) return Error{"cannot open the prompts file '" + path + "'"};
    std::vector<std::string> prompts;
    std::string line;
    for (int line_number = 1; std::getline(file, line); ++line_number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        const std::string where = path + ":" + std::to_string(line_number);
        if (json.is_discarded()) return Error{where + ": not valid JSON (one JSON object per line is expected)"};
        if (!json.is_object() || !json.contains("prompt") || !json["prompt"].is_string())
            return Error{where + ": expected an object with a string \"prompt\" field"};
        prompts.push_back(json["prompt"].get<std::string>());
    }
    if (file.bad()) return Error{"cannot read the prompts file '" + path + "'"};
    if (prompts.empty()) return Error{"the prompts file '" + path + "' holds no prompt"};
    return prompts;
}

}  // namespace tempered::loadgen
