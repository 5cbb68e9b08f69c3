// Synthetic prompts: seeded sequences of common English words. The words are ones that byte-level
// BPE vocabularies (GPT-2, Llama 3, SmolLM, Qwen, ...) hold as a single token with their leading
// space, so n words come to about n tokens on any server, before a tokenizer is asked (see
// prompt_calibration.h). Each prompt index gets its own sequence: prompts differ from their first
// word on, so a server's prefix cache cannot make a benchmark cheaper than real traffic would be.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>

namespace tempered::loadgen {

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

}  // namespace tempered::loadgen
