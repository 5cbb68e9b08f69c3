#include "loadgen/prompts.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

namespace tempered::loadgen {

// ---- synthetic words ---------------------------------------------------------------------------

namespace {

// Lower-case, no punctuation: each is one token with a leading space in the vocabularies above.
constexpr std::string_view kWords[] = {
    "time",      "people",     "year",        "way",       "day",    "man",       "thing",  "woman",   "life",
    "child",     "world",      "school",      "state",     "family", "student",   "group",  "country", "problem",
    "hand",      "part",       "place",       "case",      "week",   "company",   "system", "program", "question",
    "work",      "government", "number",      "night",     "point",  "home",      "water",  "room",    "mother",
    "area",      "money",      "story",       "fact",      "month",  "lot",       "right",  "study",   "book",
    "eye",       "job",        "word",        "business",  "issue",  "side",      "kind",   "head",    "house",
    "service",   "friend",     "father",      "power",     "hour",   "game",      "line",   "end",     "member",
    "law",       "car",        "city",        "community", "name",   "president", "team",   "minute",  "idea",
    "kid",       "body",       "information", "back",      "parent", "face",      "others", "level",   "office",
    "door",      "health",     "person",      "art",       "war",    "history",   "party",  "result",  "change",
    "morning",   "reason",     "research",    "girl",      "guy",    "moment",    "air",    "teacher", "force",
    "education", "food",       "light",       "music",     "river",  "tree",      "table",  "road",    "market",
    "paper",     "garden",     "field",       "window",    "street", "letter",    "plan",   "picture", "season",
    "color",     "voice",      "summer",      "winter",    "horse",  "dog",       "bird",   "fish",    "stone",
    "sun",       "moon",       "star",        "sea",       "ship",   "train",     "bridge", "village", "island",
    "forest",    "mountain",   "hill",        "lake",      "rain",   "snow",      "wind",   "fire",    "bread",
    "milk",      "apple",      "coffee",      "tea",       "dinner", "lunch",     "song",   "dance",   "film",
    "news",      "price",      "cost",        "rate",      "size",   "age",       "role",   "rule",    "model",
    "design",    "test",       "step",        "list",      "corner", "page",      "card",   "box",     "ball",
    "good",      "new",        "first",       "last",      "long",   "great",     "little", "own",     "other",
    "old",       "big",        "high",        "small",     "large",  "next",      "early",  "young",   "important",
    "public",    "bad",        "same",        "able",      "open",   "free",      "full",   "clear",   "simple",
    "happy",     "green",      "blue",        "red",       "white",  "black",     "dark",   "warm",    "cold",
    "quick",     "slow",       "quiet",       "strong",    "short",  "real",      "best",   "better",  "true",
    "make",      "take",       "give",        "find",      "tell",   "ask",       "feel",   "leave",   "keep",
    "bring",     "begin",      "help",        "show",      "hear",   "play",      "run",    "move",    "live",
    "believe",   "hold",       "write",       "stand",     "learn",  "read",      "walk",
};

}  // namespace

std::span<const std::string_view> common_words() { return kWords; }

PromptWords::PromptWords(uint64_t seed, uint64_t index) {
    std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(index),
                           static_cast<uint32_t>(index >> 32)};
    generator_.seed(sequence);
}

std::string_view PromptWords::next() { return kWords[generator_() % std::size(kWords)]; }

std::string synthetic_prompt(uint64_t seed, uint64_t index, int64_t words) {
    PromptWords source(seed, index);
    std::string text;
    for (int64_t i = 0; i < words; ++i) {
        if (i) text.push_back(' ');
        text.append(source.next());
    }
    return text;
}

// ---- sizing by the server's count --------------------------------------------------------------

namespace {

// One round usually suffices (each word is one token); a few more cover words that split.
constexpr int kMaxRounds = 8;

bool closer(const CalibratedPrompt& candidate, const CalibratedPrompt& best, int64_t target) {
    const int64_t a = std::llabs(candidate.tokens - target), b = std::llabs(best.tokens - target);
    return a < b || (a == b && candidate.tokens < best.tokens);
}

// Words to add (or drop) to go from the candidate's count to the target, at the candidate's tokens per
// word: a vocabulary that splits words must not make the correction overshoot by the same factor.
int64_t word_step(const CalibratedPrompt& candidate, int64_t target) {
    const double missing = static_cast<double>(target - candidate.tokens);
    const double words_per_token =
        static_cast<double>(candidate.words) / static_cast<double>(std::max<int64_t>(1, candidate.tokens));
    const auto step = static_cast<int64_t>(std::llround(missing * words_per_token));
    if (step != 0) return step;
    return missing > 0 ? 1 : -1;
}

}  // namespace

Result<CalibratedPrompt> calibrate_prompt(const TokenCounter& count_tokens, uint64_t seed, uint64_t index,
                                          int64_t target_tokens, int64_t first_guess_words) {
    std::optional<CalibratedPrompt> best;
    std::set<int64_t> tried;
    int64_t words = std::max<int64_t>(1, first_guess_words);
    for (int round = 0; round < kMaxRounds && tried.insert(words).second; ++round) {
        CalibratedPrompt candidate{synthetic_prompt(seed, index, words), words, 0};
        auto tokens = count_tokens(candidate.text);
        if (!tokens) return tokens.error();
        candidate.tokens = *tokens;
        if (!best || closer(candidate, *best, target_tokens)) best = candidate;
        if (candidate.tokens == target_tokens) break;
        words = std::max<int64_t>(1, words + word_step(candidate, target_tokens));
    }
    return *best;
}

// ---- a prompts file ----------------------------------------------------------------------------

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

// ---- the run's prompts -------------------------------------------------------------------------

namespace {

using Seconds = std::chrono::duration<double>;

// Runs fn(session, i) for every i in [0, count) on `threads` threads, each with its own connection;
// stops at the first failure and returns it.
Status for_each_index(const BaseUrl& url, Seconds timeout, size_t count, int threads,
                      const std::function<Status(HttpSession&, size_t)>& fn) {
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::optional<Error> first_error;
    auto worker = [&] {
        HttpSession session(url, timeout);
        for (size_t i = next++; i < count && !failed; i = next++) {
            Status status = fn(session, i);
            if (!status) {
                std::lock_guard lock(mutex);
                if (!first_error) first_error = status.error();
                failed = true;
            }
        }
    };
    std::vector<std::thread> pool;
    const size_t workers = std::min(count, static_cast<size_t>(std::max(1, threads)));
    for (size_t t = 0; t < workers; ++t) pool.emplace_back(worker);
    for (auto& thread : pool) thread.join();
    if (first_error) return *first_error;
    return Ok{};
}

}  // namespace

Result<PromptSet> synthetic_prompt_set(HttpSession& probe, const RequestSettings& settings,
                                       const SyntheticPromptOptions& options,
                                       const std::function<void(const std::string&)>& note) {
    const int64_t target = options.tokens;
    const uint64_t seed = options.seed;
    const size_t count = options.count;
    const std::string target_text = std::to_string(target);
    PromptSet prompts;
    const auto dialect = detect_tokenize_dialect(probe, settings.model);
    if (!dialect) {
        note("the server has no POST /tokenize: prompts are " + target_text +
             " common words, about as many tokens (the summary shows the server's count)");
        for (size_t i = 0; i < count; ++i) prompts.texts.push_back(synthetic_prompt(seed, i, target));
        prompts.source = "synthetic, " + target_text + " words (no /tokenize on the server)";
        return prompts;
    }

    // A chat prompt is the message inside the chat template: learn what the template adds from one
    // short request, and size the message to the rest.
    int64_t overhead = 0;
    if (settings.endpoint == Endpoint::Chat) {
        const std::string text = synthetic_prompt(seed, count, 8);  // not one of the benchmark's prompts
        auto served = served_prompt_tokens(probe, settings, text);
        auto counted = count_tokens(probe, *dialect, settings.model, text);
        if (served && counted)
            overhead = *served - *counted;
        else
            note("could not measure the chat template's tokens; sizing the message alone to " + target_text +
                 " tokens");
    }
    const int64_t message_target = std::max<int64_t>(1, target - overhead);

    auto counter_for = [&](HttpSession& session) -> TokenCounter {
        return [&session, &settings, dialect](const std::string& text) {
            return count_tokens(session, *dialect, settings.model, text);
        };
    };
    // The first prompt teaches how many words make the target; the rest start from that guess.
    auto first = calibrate_prompt(counter_for(probe), seed, 0, message_target, message_target);
    if (!first) return first.error();
    const int64_t guess = first->words;
    std::vector<CalibratedPrompt> calibrated(count);
    calibrated[0] = *first;
    Status status = for_each_index(
        probe.url(), options.timeout, count - 1, options.threads, [&](HttpSession& session, size_t i) -> Status {
            auto prompt = calibrate_prompt(counter_for(session), seed, i + 1, message_target, guess);
            if (!prompt) return prompt.error();
            calibrated[i + 1] = std::move(*prompt);
            return Ok{};
        });
    if (!status) return Error{"sizing prompts with POST /tokenize: " + status.error().message};
    size_t exact = 0;
    for (auto& prompt : calibrated) {
        exact += prompt.tokens == message_target;
        prompts.texts.push_back(std::move(prompt.text));
    }
    if (exact != count)
        note(std::to_string(count - exact) + " of " + std::to_string(count) + " prompts could not be made exactly " +
             std::to_string(message_target) + " tokens; the closest were used");
    prompts.source = "synthetic, " + target_text + " tokens by the server's /tokenize";
    if (settings.endpoint == Endpoint::Chat)
        prompts.source +=
            " (message " + std::to_string(message_target) + " + chat template " + std::to_string(overhead) + ")";
    return prompts;
}

Result<PromptSet> file_prompt_set(const std::string& path, size_t count) {
    auto lines = read_prompts_file(path);
    if (!lines) return lines.error();
    PromptSet prompts;
    for (size_t i = 0; i < count; ++i) prompts.texts.push_back((*lines)[i % lines->size()]);
    prompts.source = path + " (" + std::to_string(lines->size()) + " prompts, used in turn)";
    return prompts;
}

}  // namespace tempered::loadgen
