// The prompts of one benchmark run, one per request (warm-up requests first), and a line saying how
// they were made: either synthetic (seeded common words, sized by the server's POST /tokenize where it
// has one) or read from a --prompts-file.
//
// Synthetic prompts are seeded sequences of common English words. The words are ones that byte-level
// BPE vocabularies (GPT-2, Llama 3, SmolLM, Qwen, ...) hold as a single token with their leading
// space, so n words come to about n tokens on any server, before a tokenizer is asked. Each prompt
// index gets its own sequence: prompts differ from their first word on, so a server's prefix cache
// cannot make a benchmark cheaper than real traffic would be.
//
// About one token per word is not exactly one: the first word has no leading space, a tokenizer may
// add BOS, a vocabulary may split a word. So where the server can count, a prompt is built from a
// guess of its word count and corrected by what the server counts, word by word, for a few rounds
// (calibrate_prompt). Every prompt is calibrated on as many connections as the run will use, so that
// a long run's sizing does not take one round trip after another. A chat prompt is a message inside a
// chat template: one short request first measures what the template adds, and the message is sized
// to the rest.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "loadgen/request.h"
#include "loadgen/server.h"

namespace tempered::loadgen {

// ---- synthetic words ---------------------------------------------------------------------------

std::span<const std::string_view> common_words();

// The words of prompt `index` under `seed`, one at a time. mt19937_64 is specified bit for bit by
// the standard and the word is picked by a plain modulo (not a std distribution, whose algorithm
// differs between standard libraries), so a seed gives the same prompts everywhere.
class PromptWords {
public:
    PromptWords(uint64_t seed, uint64_t index);
    std::string_view next();

private:
    std::mt19937_64 generator_;
};

// The first `words` words of prompt `index`, separated by spaces.
std::string synthetic_prompt(uint64_t seed, uint64_t index, int64_t words);

// ---- sizing by the server's count --------------------------------------------------------------

// The tokens the server would see for a prompt of this text, or why it cannot say.
using TokenCounter = std::function<Result<int64_t>(const std::string& text)>;

struct CalibratedPrompt {
    std::string text;
    int64_t words = 0;
    int64_t tokens = 0;  // as the counter counted them
};

// Prompt `index` (synthetic_prompt(seed, index, words)) with `target_tokens` tokens by the counter,
// starting from `first_guess_words` words. When no word count hits the target (a two-token word can
// step over it), the closest count wins, the shorter on a tie. Fails only when the counter fails.
Result<CalibratedPrompt> calibrate_prompt(const TokenCounter& count_tokens, uint64_t seed, uint64_t index,
                                          int64_t target_tokens, int64_t first_guess_words);

// ---- a prompts file ----------------------------------------------------------------------------

// --prompts-file: prompts a user brings, as JSON Lines, one object per line with a string "prompt"
// field (other fields are ignored, so a dataset exported with more columns loads as is). JSONL rather
// than plain lines because real prompts contain newlines. Blank lines are skipped.
//
// The prompts in file order. Fails, naming the file and the line, on a missing or unreadable file,
// a line that is not a JSON object with a string "prompt", or a file with no prompt at all.
Result<std::vector<std::string>> read_prompts_file(const std::string& path);

// ---- the run's prompts -------------------------------------------------------------------------

struct PromptSet {
    std::vector<std::string> texts;
    std::string source;  // for the report, e.g. "synthetic, 128 tokens by the server's /tokenize"
};

struct SyntheticPromptOptions {
    size_t count = 0;
    int64_t tokens = 128;  // per prompt, as the server counts them
    uint64_t seed = 0;
    int threads = 1;  // connections used for /tokenize
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
