// The prompts of one benchmark run, one per request (warm-up requests first), and a line saying how
// they were made. Synthetic prompts are sized by the server's POST /tokenize where it has one: every
// prompt is calibrated (prompt_calibration.h), on as many connections as the run will use, so that a
// long run's sizing does not take one round trip after another. A chat prompt is a message inside a
// chat template: one short request first measures what the template adds, and the message is sized
// to the rest.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "loadgen/http_session.h"
#include "loadgen/request_body.h"

namespace tempered::loadgen {

struct PromptSet {
    std::vector<std::string> texts;
    std::string source;  // for the report, e.g. "synthetic, 128 tokens by the server's /tokenize"
};

struct SyntheticPromptOptions {
    size_t count = 0;
    int64_t tokens = 128;  // per prompt, as the server counts them
    uint64_t seed = 0;
    int threads = 1;       // connections used for /tokenize
    std::chrono::duration<double> timeout{600};
};

// Without /tokenize on the server, prompts are `tokens` words (about as many tokens) and `note` says
// so; `note` also reports prompts that could not be sized exactly. Fails when /tokenize fails midway.
Result<PromptSet> synthetic_prompt_set(HttpSession& probe, const RequestSettings& settings,
                                       const SyntheticPromptOptions& options,
                                       const std::function<void(const std::string&)>& note);

// `count` prompts from a --prompts-file, its prompts used in turn.
Result<PromptSet> file_prompt_set(const std::string& path, size_t count);

}  // namespace tempered::loadgen
