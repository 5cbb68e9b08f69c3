// tempered model-bench: the forward pass alone, timed the way llama.cpp's llama-bench times it, so the
// two engines' raw speed can be compared on one GGUF file without HTTP, scheduling or sampling.
//
//   ppP            one forward of P random tokens of one sequence (positions 0..P-1); only the last wants
//                  logits. llama-bench's prompt test with its default batch sizes (P <= 512).
//   tgG            G forwards of one token each from an empty cache, each wanting logits: its gen test.
//   tgG_batchB     B sequences whose short prompts are already in the cache, then G forwards that each
//                  decode one token of every sequence: multi-sequence decode throughput (B*G tokens).
//
// Each test runs once untimed, then --repetitions times; before every run the cache's sequences are
// released, so every run does the same work. Tokens are random ids from a seeded generator (llama-bench
// uses rand()); a prompt starts with BOS when the tokenizer adds one. Reported as llama-bench does:
// mean and sample standard deviation of the per-run tokens/s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/tool_commands.h"
#include "hf/hf_model.h"
#include "kernels/cpu/dispatch.h"
#include "kv/kv_block_pool.h"
#include "kv/kv_dtype_name.h"
#include "runtime/loaded_model.h"
#include "runtime/model_names.h"

namespace tempered {
namespace {

struct ModelBenchOptions {
    std::string model = kDefaultModelName;
    int64_t prompt_tokens = 512;
    int64_t gen_tokens = 128;
    int64_t batch_decode = 0;          // sequences; 0 skips the test
    int64_t batch_prompt_tokens = 32;  // each sequence's prompt, prefilled untimed
    int repetitions = 5;
    int threads = 0;
    std::string kv_cache_dtype = "f16";
    std::string quantize = "q8_0";  // a Hugging Face directory's matrices at load, as serve's --quantize
    uint64_t seed = 1234;
    bool json = false;
};

struct TestResult {
    std::string name;           // pp512, tg128, tg128_batch32
    int64_t prompt_tokens = 0;  // per sequence
    int64_t gen_tokens = 0;     // per sequence
    int64_t sequences = 1;
    int64_t timed_tokens = 0;      // tokens one timed run processes
    std::vector<double> seconds;   // each timed run
    ExpertTraffic expert_traffic;  // summed over the last timed run's forwards (zeros for dense models)
    int64_t steps = 0;             // forwards in one timed run

    std::vector<double> tokens_per_second() const {
        std::vector<double> rates;
        for (double s : seconds) rates.push_back(static_cast<double>(timed_tokens) / s);
        return rates;
    }
    double mean() const {
        const auto rates = tokens_per_second();
        return std::accumulate(rates.begin(), rates.end(), 0.0) / static_cast<double>(rates.size());
    }
    double stddev() const {  // sample standard deviation, 0 for one run (as llama-bench)
        const auto rates = tokens_per_second();
        if (rates.size() < 2) return 0.0;
        const double m = mean();
        double squares = 0.0;
        for (double r : rates) squares += (r - m) * (r - m);
        return std::sqrt(squares / static_cast<double>(rates.size() - 1));
    }
};

// The tests, on one model and one cache. Every run of a test starts from an empty cache (its sequences
// released and given fresh blocks), does its untimed setup, builds its batches, and only then starts
// the clock for the forwards.
class Bench {
public:
    Bench(LoadedModel& bundle, KvBlockPool& cache, const ModelBenchOptions& options)
        : bundle_(bundle), cache_(cache), options_(options), random_(options.seed) {
        const int64_t most_logits = std::max<int64_t>(1, options.batch_decode);
        logits_.resize(static_cast<size_t>(most_logits * bundle.model->config().vocab_size));
    }

    Result<TestResult> prompt_test() {
        TestResult result{.name = "pp" + std::to_string(options_.prompt_tokens),
                          .prompt_tokens = options_.prompt_tokens,
                          .timed_tokens = options_.prompt_tokens,
                          .seconds = {},
                          .expert_traffic = {},
                          .steps = 0};
        auto status = repeat(
            result, [] { return Status(Ok{}); },
            [this] {
                Batch batch;
                const auto tokens = random_prompt(options_.prompt_tokens);
                for (int64_t p = 0; p < options_.prompt_tokens; ++p)
                    batch.add(tokens[p], static_cast<int32_t>(p), 0, p + 1 == options_.prompt_tokens);
                return timed_forwards({batch});
            });
        if (!status) return status.error();
        return result;
    }

    Result<TestResult> gen_test() {
        TestResult result{.name = "tg" + std::to_string(options_.gen_tokens),
                          .gen_tokens = options_.gen_tokens,
                          .timed_tokens = options_.gen_tokens,
                          .seconds = {},
                          .expert_traffic = {},
                          .steps = 0};
        auto status = repeat(
            result, [] { return Status(Ok{}); },
            [this] {
                std::vector<Batch> steps(static_cast<size_t>(options_.gen_tokens));
                const auto tokens = random_prompt(options_.gen_tokens);  // BOS, then random ids
                for (int64_t p = 0; p < options_.gen_tokens; ++p)
                    steps[p].add(tokens[p], static_cast<int32_t>(p), 0, true);
                return timed_forwards(steps);
            });
        if (!status) return status.error();
        return result;
    }

    Result<TestResult> batch_decode_test() {
        const int64_t sequences = options_.batch_decode, prompt = options_.batch_prompt_tokens;
        TestResult result{.name = "tg" + std::to_string(options_.gen_tokens) + "_batch" + std::to_string(sequences),
                          .prompt_tokens = prompt,
                          .gen_tokens = options_.gen_tokens,
                          .sequences = sequences,
                          .timed_tokens = sequences * options_.gen_tokens,
                          .seconds = {},
                          .expert_traffic = {},
                          .steps = 0};
        auto setup = [this, sequences, prompt]() -> Status {
            Batch batch;
            for (int64_t s = 0; s < sequences; ++s) {
                const auto tokens = random_prompt(prompt);
                for (int64_t p = 0; p < prompt; ++p)
                    batch.add(tokens[p], static_cast<int32_t>(p), static_cast<int32_t>(s), false);
            }
            return forward(batch);
        };
        auto status = repeat(result, setup, [this, sequences, prompt] {
            std::vector<Batch> steps(static_cast<size_t>(options_.gen_tokens));
            for (int64_t step = 0; step < options_.gen_tokens; ++step)
                for (int64_t s = 0; s < sequences; ++s)
                    steps[step].add(random_token(), static_cast<int32_t>(prompt + step), static_cast<int32_t>(s), true);
            return timed_forwards(steps);
        });
        if (!status) return status.error();
        return result;
    }

private:
    // `run` builds its batches, times their forwards (timed_forwards) and so sets last_seconds_.
    Status repeat(TestResult& result, const std::function<Status()>& setup, const std::function<Status()>& run) {
        for (int r = 0; r <= options_.repetitions; ++r) {  // r == 0: warm-up
            if (auto status = reset_cache(result); !status) return status;
            if (auto status = setup(); !status) return status;
            if (auto status = run(); !status) return status;
            if (r > 0) result.seconds.push_back(last_seconds_);
            result.expert_traffic = last_traffic_;
            result.steps = last_steps_;
        }
        return Ok{};
    }

    Status reset_cache(const TestResult& test) {
        for (int32_t s = 0; s < sequences_in_use_; ++s) cache_.release(s);
        sequences_in_use_ = test.sequences;
        // No blocks are registered for prefix reuse, so each release returns its blocks to the pool and
        // every run starts from the same empty cache, as the server's allocator would give it.
        const int64_t positions = test.prompt_tokens + test.gen_tokens;
        for (int32_t s = 0; s < test.sequences; ++s) {
            if (!cache_.ensure_capacity(s, positions))
                return Error{"KV cache: sequence " + std::to_string(s) + " needs " + std::to_string(positions) +
                             " positions, " + std::to_string(cache_.available_block_count()) + " blocks are free"};
        }
        return Ok{};
    }

    // Also sums the forwards' expert traffic: reading it back costs nothing next to a forward.
    Status timed_forwards(const std::vector<Batch>& batches) {
        last_traffic_ = {};
        last_steps_ = static_cast<int64_t>(batches.size());
        const auto start = std::chrono::steady_clock::now();
        for (const Batch& batch : batches) {
            if (auto status = forward(batch); !status) return status;
            const ExpertTraffic step = bundle_.model->last_expert_traffic();
            last_traffic_.weight_bytes += step.weight_bytes;
            last_traffic_.read_once_bytes += step.read_once_bytes;
            last_traffic_.active_experts += step.active_experts;
        }
        last_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return Ok{};
    }

    Status forward(const Batch& batch) { return bundle_.model->forward(batch, cache_, logits_.data()); }

    int32_t random_token() {
        const auto last = static_cast<int32_t>(bundle_.model->config().vocab_size - 1);
        return std::uniform_int_distribution<int32_t>(0, last)(random_);
    }

    std::vector<int32_t> random_prompt(int64_t length) {
        std::vector<int32_t> tokens(static_cast<size_t>(length));
        for (auto& token : tokens) token = random_token();
        if (auto bos = bundle_.tokenizer->bos_id(); bos && bundle_.tokenizer->adds_bos() && length > 0)
            tokens[0] = *bos;
        return tokens;
    }

    LoadedModel& bundle_;
    KvBlockPool& cache_;
    const ModelBenchOptions& options_;
    std::mt19937_64 random_;
    std::vector<float> logits_;     // (most sequences, vocab_size)
    int64_t sequences_in_use_ = 0;  // sequences 0..n-1 may hold blocks
    double last_seconds_ = 0.0;
    ExpertTraffic last_traffic_;  // the last timed run's, summed over its forwards
    int64_t last_steps_ = 0;
};

uint64_t parameter_count(const GgufFile& file) {
    uint64_t count = 0;
    for (const auto& tensor : file.tensors()) count += tensor.element_count();
    return count;
}

// Per forward step of the last timed run: the routed-expert bytes read, and the bound of reading each
// distinct active expert once (equal when every active expert is read once per step).
nlohmann::json expert_traffic_json(const TestResult& test) {
    const auto per_step = [&](int64_t total) {
        return test.steps > 0 ? static_cast<double>(total) / static_cast<double>(test.steps) : 0.0;
    };
    return {{"steps", test.steps},
            {"expert_weight_bytes_per_step", per_step(test.expert_traffic.weight_bytes)},
            {"read_once_bound_bytes_per_step", per_step(test.expert_traffic.read_once_bytes)},
            {"distinct_active_experts_per_step", per_step(test.expert_traffic.active_experts)},
            {"expert_weight_bytes_per_token",
             static_cast<double>(test.expert_traffic.weight_bytes) / static_cast<double>(test.timed_tokens)}};
}

nlohmann::json test_json(const TestResult& test) {
    nlohmann::json out = {{"name", test.name},
                          {"prompt_tokens", test.prompt_tokens},
                          {"gen_tokens", test.gen_tokens},
                          {"sequences", test.sequences},
                          {"timed_tokens", test.timed_tokens},
                          {"mean_tokens_per_s", test.mean()},
                          {"stddev_tokens_per_s", test.stddev()},
                          {"samples_tokens_per_s", test.tokens_per_second()},
                          {"samples_seconds", test.seconds}};
    if (test.expert_traffic.weight_bytes > 0) out["expert_traffic"] = expert_traffic_json(test);
    return out;
}

void print_table(const LoadedModel& bundle, uint64_t file_bytes, int threads, const std::vector<TestResult>& tests) {
    const std::string model = std::filesystem::path(bundle.path).stem().string();
    const std::string backend = "CPU " + std::string(cpu_isa_name(active_cpu_isa()));
    std::printf("| %-36s | %10s | %8s | %-10s | %7s | %16s | %20s |\n", "model", "size", "params", "backend", "threads",
                "test", "t/s");
    std::printf("| %.36s | %.10s | %.8s | %.10s | %.7s | %.16s | %.20s |\n", "--------------------------------------",
                "----------", "--------", "----------", "-------", "----------------", "--------------------");
    for (const TestResult& test : tests) {
        char rate[64];
        std::snprintf(rate, sizeof rate, "%.2f ± %.2f", test.mean(), test.stddev());
        std::printf("| %-36s | %6.2f MiB | %6.2f M | %-10s | %7d | %16s | %21s |\n", model.c_str(),
                    static_cast<double>(file_bytes) / (1 << 20),
                    static_cast<double>(parameter_count(*bundle.file)) / 1e6, backend.c_str(), threads,
                    test.name.c_str(), rate);
    }
}

// The flags' own contradictions, found before a model is loaded.
Status check_options(const ModelBenchOptions& options) {
    if (options.prompt_tokens == 0 && options.gen_tokens == 0)
        return Error{"nothing to run (--prompt-tokens and --gen-tokens are both 0)"};
    if (options.batch_decode > 0 && options.gen_tokens == 0) return Error{"--batch-decode needs --gen-tokens > 0"};
    return Ok{};
}

// The server's block allocator, sized to the largest test: all of its sequences hold their blocks at once.
Result<std::unique_ptr<KvBlockPool>> make_cache(const ModelConfig& config, DType kv_type,
                                                const ModelBenchOptions& options) {
    const int64_t longest = std::max({options.prompt_tokens, options.gen_tokens,
                                      options.batch_decode > 0 ? options.batch_prompt_tokens + options.gen_tokens : 0});
    if (longest > config.context_length)
        return Error{std::to_string(longest) + " positions exceed the model's context of " +
                     std::to_string(config.context_length)};
    const KvCacheShape shape = kv_cache_shape(config, kv_type);
    // Nothing is handed back (the sequences are given all their positions at once), so every layer
    // group holds every block.
    const auto blocks_for = [&](int64_t positions) { return KvBlockPool::blocks_for_positions(shape, positions); };
    const int64_t blocks =
        std::max({blocks_for(options.prompt_tokens), blocks_for(options.gen_tokens),
                  options.batch_decode * blocks_for(options.batch_prompt_tokens + options.gen_tokens), int64_t{1}});
    return KvBlockPool::create(shape, blocks);
}

// The tests the flags ask for, in table order: ppP, tgG, tgG_batchB.
Result<std::vector<TestResult>> run_tests(LoadedModel& bundle, KvBlockPool& cache, const ModelBenchOptions& options) {
    Bench bench(bundle, cache, options);
    std::vector<TestResult> tests;
    const auto run = [&tests](Result<TestResult> result) -> Status {
        if (!result) return result.error();
        tests.push_back(std::move(result.value()));
        return Ok{};
    };
    if (options.prompt_tokens > 0)
        if (auto status = run(bench.prompt_test()); !status) return status.error();
    if (options.gen_tokens > 0)
        if (auto status = run(bench.gen_test()); !status) return status.error();
    if (options.batch_decode > 0)
        if (auto status = run(bench.batch_decode_test()); !status) return status.error();
    return tests;
}

void print_json(const LoadedModel& bundle, uint64_t file_bytes, const ModelBenchOptions& options,
                const std::vector<TestResult>& tests) {
    nlohmann::json out = {{"model", bundle.path},
                          {"model_file_bytes", file_bytes},
                          {"model_parameters", parameter_count(*bundle.file)},
                          {"architecture", bundle.model->config().architecture},
                          {"threads", bundle.pool->size()},
                          {"cpu_isa", std::string(cpu_isa_name(active_cpu_isa()))},
                          {"kv_cache_dtype", options.kv_cache_dtype},
                          {"quantize", is_hf_directory(bundle.path) ? options.quantize : std::string("as in the file")},
                          {"repetitions", options.repetitions},
                          {"seed", options.seed},
                          {"tests", nlohmann::json::array()}};
    for (const TestResult& test : tests) out["tests"].push_back(test_json(test));
    std::printf("%s\n", out.dump(2).c_str());
}

// The file's size, or a Hugging Face directory's safetensors files together; 0 when unreadable.
uint64_t model_bytes_on_disk(const std::string& path) {
    std::error_code error;
    if (!std::filesystem::is_directory(path, error)) {
        const uint64_t bytes = std::filesystem::file_size(path, error);
        return error ? 0 : bytes;
    }
    uint64_t total = 0;
    for (const auto& entry : std::filesystem::directory_iterator(path, error))
        if (entry.path().extension() == ".safetensors") total += entry.file_size(error);
    return error ? 0 : total;
}

Status run_model_bench(const ModelBenchOptions& options) {
    auto kv_type = parse_kv_dtype(options.kv_cache_dtype);
    if (!kv_type) return kv_type.error();
    if (auto status = check_options(options); !status) return status;
    const auto directory_weights = directory_weight_type(options.quantize);
    if (!directory_weights) return directory_weights.error();
    auto loaded = load_model_bundle(options.model, options.threads, ModelParts::Everything, *directory_weights);
    if (!loaded) return loaded.error();
    LoadedModel& bundle = **loaded;
    auto cache = make_cache(bundle.model->config(), *kv_type, options);
    if (!cache) return cache.error();
    auto tests = run_tests(bundle, **cache, options);
    if (!tests) return tests.error();

    const uint64_t file_bytes = model_bytes_on_disk(bundle.path);
    if (options.json)
        print_json(bundle, file_bytes, options, *tests);
    else
        print_table(bundle, file_bytes, bundle.pool->size(), *tests);
    return Ok{};
}

int model_bench(const ModelBenchOptions& options) {
    const Status status = run_model_bench(options);
    if (status) return 0;
    std::fprintf(stderr, "tempered model-bench: %s\n", status.error().message.c_str());
    return 1;
}

}  // namespace

void add_model_bench_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<ModelBenchOptions>();
    auto* command = app.add_subcommand("model-bench", "Time the forward pass alone, as llama.cpp's llama-bench does");
    command->add_option("--model,-m", options->model, "a .gguf path or a known model name")->capture_default_str();
    command->add_option("--prompt-tokens,-p", options->prompt_tokens, "ppP: one forward of P tokens; 0 skips")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
        ->capture_default_str();
    command->add_option("--gen-tokens,-n", options->gen_tokens, "tgG: G forwards of one token; 0 skips")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
        ->capture_default_str();
    command->add_option("--batch-decode", options->batch_decode, "B sequences decoding G tokens together; 0 skips")
        ->check(CLI::Range(int64_t{0}, int64_t{4096}))
        ->capture_default_str();
    command
        ->add_option("--batch-prompt-tokens", options->batch_prompt_tokens,
                     "each --batch-decode sequence's prompt, in the cache before the timed steps")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
        ->capture_default_str();
    command->add_option("--repetitions,-r", options->repetitions, "timed runs of each test, after one warm-up")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    command->add_option("--threads,-t", options->threads, "0: every core")->capture_default_str();
    command->add_option("--kv-cache-dtype", options->kv_cache_dtype, "f16, bf16, f32 or fp8")->capture_default_str();
    command->add_option("--seed", options->seed, "for the random token ids")->capture_default_str();
    command
        ->add_option("--quantize", options->quantize,
                     "a Hugging Face directory's matrices at load: q8_0, f16, bf16, f32")
        ->capture_default_str();
    command->add_flag("--json", options->json, "one JSON object on stdout");
    command->callback([options, &exit_code] { exit_code = model_bench(*options); });
}

}  // namespace tempered
