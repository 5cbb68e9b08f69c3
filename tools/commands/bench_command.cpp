// tempered bench: load for any OpenAI-compatible server (tempered, vLLM, SGLang, llama.cpp's server),
// and the latency and throughput it saw. The work is in tools/loadgen; this file is the flags and the
// exit code: 1 for a bad flag, an unreachable server or when every request failed, else 0 (a run
// with some failed requests still succeeds: the failures are part of its result).
#include <cstdio>
#include <memory>

#include "commands/tool_commands.h"
#include "loadgen/bench_run.h"
#include "loadgen/report.h"

namespace tempered {
namespace {

constexpr int64_t kRequestsPerWorker = 4;  // --requests defaults to 4 x --concurrency

struct BenchFlags {
    loadgen::BenchOptions options;
    int64_t requests = 0;  // 0: kRequestsPerWorker x concurrency
    std::string endpoint = "completions";
    bool json = false;
};

int bench(BenchFlags& flags) {
    loadgen::BenchOptions& options = flags.options;
    options.endpoint = flags.endpoint == "chat" ? loadgen::Endpoint::Chat : loadgen::Endpoint::Completions;
    options.requests = flags.requests > 0 ? flags.requests : kRequestsPerWorker * options.concurrency;
    options.show_progress = loadgen::stderr_is_terminal();
    auto outcome = loadgen::run_bench(
        options, [](const std::string& note) { std::fprintf(stderr, "tempered bench: note: %s\n", note.c_str()); });
    if (!outcome) {
        std::fprintf(stderr, "tempered bench: %s\n", outcome.error().message.c_str());
        return 1;
    }
    if (flags.json)
        std::printf("%s\n", loadgen::report_json(outcome->run, outcome->summary).dump().c_str());
    else
        std::fputs(loadgen::report_table(outcome->run, outcome->summary).c_str(), stdout);
    std::fflush(stdout);
    if (outcome->summary.completed == 0) {
        std::fprintf(stderr, "tempered bench: every request failed\n");
        return 1;
    }
    return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
    auto flags = std::make_shared<BenchFlags>();
    loadgen::BenchOptions& options = flags->options;
    auto* command = app.add_subcommand("bench", "Load an OpenAI-compatible server and report latency and throughput");
    command->add_option("--url", options.url, "the server, with or without /v1")->capture_default_str();
    command->add_option("--model", options.model, "the model name to send; default: the first of GET /v1/models");
    command->add_option("--api-key", options.api_key, "sent as a bearer token, as the OpenAI SDK does")
        ->envname("OPENAI_API_KEY");
    command->add_option("--endpoint", flags->endpoint, "completions (/v1/completions) or chat (/v1/chat/completions)")
        ->check(CLI::IsMember({"completions", "chat"}))
        ->capture_default_str();
    command->add_option("--concurrency,-c", options.concurrency, "requests in flight at once")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    command->add_option("--requests,-n", flags->requests, "measured requests; default: 4 x --concurrency")
        ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
    auto* prompt_tokens = command
                              ->add_option("--prompt-tokens", options.prompt_tokens,
                                           "tokens per synthetic prompt (distinct random words per request)")
                              ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
                              ->capture_default_str();
    command
        ->add_option("--prompts-file", options.prompts_file,
                     "JSON Lines, one {\"prompt\": \"...\"} per line, used in turn")
        ->excludes(prompt_tokens);
    command->add_option("--max-tokens", options.max_tokens, "tokens to generate per request (sent with ignore_eos)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
        ->capture_default_str();
    command->add_flag("--stream", options.stream, "stream responses (needed for TTFT, ITL and TPOT)");
    command->add_option("--temperature", options.temperature, "sent with every request (0: greedy); default: not sent")
        ->check(CLI::Range(0.0, 2.0));
    command->add_flag("--json", flags->json, "print the summary as one JSON object");
    command->add_option("--timeout", options.timeout_s, "seconds per request")
        ->check(CLI::Range(0.001, 1e6))
        ->capture_default_str();
    command->add_option("--seed", options.seed, "seed of the synthetic prompts; default: a new one each run");
    command->add_option("--warmup", options.warmup, "requests sent first and left out of the summary")
        ->check(CLI::Range(int64_t{0}, int64_t{1000000}))
        ->capture_default_str();
    command->callback([flags, &exit_code] { exit_code = bench(*flags); });
}

}  // namespace tempered
