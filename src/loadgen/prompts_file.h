// --prompts-file: prompts a user brings, as JSON Lines, one object per line with a string "prompt"
// field (other fields are ignored, so a dataset exported with more columns loads as is). JSONL rather
// than plain lines because real prompts contain newlines. Blank lines are skipped.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace tempered::loadgen {

// The prompts in file order. Fails, naming the file and the line, on a missing or unreadable file,
// a line that is not a JSON object with a string "prompt", or a file with no prompt at all.
Result<std::vector<std::string>> read_prompts_file(const std::string& path);

}  // namespace tempered::loadgen
