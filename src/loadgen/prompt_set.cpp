#include "loadgen/prompt_set.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "loadgen/prompt_calibration.h"
#include "loadgen/prompt_words.h"
#include "loadgen/prompts_file.h"
#include "loadgen/server_probe.h"

namespace tempered::loadgen {
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
                                       const SyntheticPromptOptions& options, const std::function<void(const std::string&)>& note) {
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
        if (served && counted) overhead = *served - *counted;
        else note("could not measure the chat template's tokens; sizing the message alone to " + target_text + " tokens");
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
    Status status = for_each_index(probe.url(), options.timeout, count - 1, options.threads,
                                   [&](HttpSession& session, size_t i) -> Status {
                                       auto prompt = calibrate_prompt(counter_for(session), seed, i + 1,
                                                                      message_target, guess);
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
        prompts.source += " (message " + std::to_string(message_target) + " + chat template " + std::to_string(overhead) + ")";
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
