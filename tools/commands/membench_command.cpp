// tempered membench: memory bandwidth by STREAM's triad, and, given a model, the ceiling it puts on
// batch-1 decode: tokens/s <= bandwidth / bytes of weights read per token.
//
// With a model it runs the triad a second time on arrays that together hold as many bytes as one token
// reads: where the weights fit in a large last-level cache, decode can beat the memory-sized bound, and
// this second figure shows by how much.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands/tool_commands.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "kernels/cpu/dispatch.h"
#include "perf/memory_bandwidth.h"
#include "perf/weight_traffic.h"
#include "runtime/model_names.h"

namespace tempered {
namespace {

struct MembenchOptions {
    int64_t array_mib = 256;  // each of the three arrays
    int threads = 0;
    int repetitions = 10;
    std::string model;  // optional
    bool json = false;
};

struct ModelTraffic {
    std::string path;
    WeightTraffic traffic;
    TriadResult working_set_triad;  // three arrays holding bytes_per_token together
};

struct MembenchReport {
    int threads = 0;
    TriadResult triad;
    std::optional<int64_t> last_level_cache_bytes;
    std::optional<ModelTraffic> model;

    // STREAM's rule: each array at least 4x the last-level cache (true when the cache size is unknown).
    bool arrays_beyond_cache() const {
        const int64_t array_bytes = triad.elements_per_array * static_cast<int64_t>(sizeof(double));
        return !last_level_cache_bytes || array_bytes >= 4 * *last_level_cache_bytes;
    }
};

double tokens_per_second_bound(double gb_per_second, uint64_t bytes_per_token) {
    return gb_per_second * 1e9 / static_cast<double>(bytes_per_token);
}

nlohmann::json triad_json(const TriadResult& triad) {
    return {{"kernel", "a(i) = b(i) + s * c(i)"},
            {"element_type", "f64"},
            {"bytes_counted_per_element", 24},
            {"write_allocate_counted", false},
            {"array_bytes", triad.elements_per_array * static_cast<int64_t>(sizeof(double))},
            {"elements_per_array", triad.elements_per_array},
            {"threads", triad.threads},
            {"repetitions", static_cast<int64_t>(triad.seconds.size())},
            {"best_gb_per_s", triad.best_gb_per_second()},
            {"mean_gb_per_s", triad.mean_gb_per_second()},
            {"samples_seconds", triad.seconds}};
}

nlohmann::json report_json(const MembenchReport& report) {
    const auto& cache = report.last_level_cache_bytes;
    nlohmann::json out = {{"threads", report.threads},
                          {"cpu_isa", std::string(cpu_isa_name(active_cpu_isa()))},
                          {"last_level_cache_bytes", cache ? nlohmann::json(*cache) : nlohmann::json()},
                          {"arrays_at_least_4x_last_level_cache", report.arrays_beyond_cache()},
                          {"triad", triad_json(report.triad)}};
    if (!report.model) return out;
    const WeightTraffic& t = report.model->traffic;
    const TriadResult& working_set = report.model->working_set_triad;
    out["model"] = {
        {"path", report.model->path},
        {"tensor_bytes", t.tensor_bytes},
        {"weight_bytes_per_token", t.bytes_per_token},
        {"embedding_table_bytes", t.embedding_table_bytes},
        {"tied_embeddings", t.tied_embeddings},
        {"routed_expert_bytes", t.routed_expert_bytes},
        {"expert_count", t.expert_count},
        {"experts_per_token", t.experts_per_token},
        {"decode_bound_tokens_per_s", tokens_per_second_bound(report.triad.best_gb_per_second(), t.bytes_per_token)},
        {"working_set_triad", triad_json(working_set)},
        {"decode_bound_at_working_set_tokens_per_s",
         tokens_per_second_bound(working_set.best_gb_per_second(), t.bytes_per_token)}};
    return out;
}

void print_report(const MembenchReport& report) {
    const TriadResult& triad = report.triad;
    std::printf("triad a(i) = b(i) + s*c(i): 3 arrays of %.1f MiB of doubles, %d threads, %zu runs\n",
                static_cast<double>(triad.elements_per_array) * sizeof(double) / (1 << 20), report.threads,
                triad.seconds.size());
    std::printf(
        "  best %.2f GB/s, mean %.2f GB/s  (24 bytes per element as STREAM counts them, "
        "write-allocate not counted; GB = 1e9 bytes)\n",
        triad.best_gb_per_second(), triad.mean_gb_per_second());
    if (!report.arrays_beyond_cache()) {
        std::printf(
            "  note: each array is smaller than 4x the last-level cache (%lld MiB); raise --mib for a "
            "memory-only figure\n",
            static_cast<long long>(*report.last_level_cache_bytes >> 20));
    }
    if (!report.model) return;
    const WeightTraffic& t = report.model->traffic;
    std::printf("model %s\n", report.model->path.c_str());
    std::printf("  weights read per decode token: %.1f MB of %.1f MB of tensors%s\n", t.bytes_per_token / 1e6,
                t.tensor_bytes / 1e6,
                t.tied_embeddings ? " (tied embeddings: the whole token table is the output matrix)" : "");
    if (t.expert_count > 0) {
        std::printf("  mixture of experts: %lld of %lld routed experts per token, so %.1f MB of their %.1f MB\n",
                    static_cast<long long>(t.experts_per_token), static_cast<long long>(t.expert_count),
                    t.routed_expert_bytes / 1e6 * t.experts_per_token / t.expert_count, t.routed_expert_bytes / 1e6);
    }
    std::printf("  batch-1 decode bound: %.1f tokens/s at %.2f GB/s\n",
                tokens_per_second_bound(triad.best_gb_per_second(), t.bytes_per_token), triad.best_gb_per_second());
    const TriadResult& working_set = report.model->working_set_triad;
    std::printf("  triad on a working set of that size (3 x %.1f MB): %.2f GB/s, bound %.1f tokens/s\n",
                static_cast<double>(working_set.bytes_per_run) / 3e6, working_set.best_gb_per_second(),
                tokens_per_second_bound(working_set.best_gb_per_second(), t.bytes_per_token));
}

Result<ModelTraffic> read_model_traffic(const std::string& name_or_path) {
    auto path = resolve_model_path(name_or_path);
    if (!path) return path.error();
    auto file = GgufFile::open(*path);
    if (!file) return file.error();
    return ModelTraffic{*path, weight_traffic(*file), {}};
}

int membench(const MembenchOptions& options) {
    MembenchReport report;
    if (!options.model.empty()) {
        auto model = read_model_traffic(options.model);
        if (!model) {
            std::fprintf(stderr, "tempered membench: %s\n", model.error().message.c_str());
            return 1;
        }
        report.model = std::move(model.value());
    }
    report.threads =
        options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadPool pool(report.threads);

    const int64_t elements = (options.array_mib << 20) / static_cast<int64_t>(sizeof(double));
    auto triad = run_triad(pool, TriadOptions{elements, options.repetitions});
    if (!triad) {
        std::fprintf(stderr, "tempered membench: %s\n", triad.error().message.c_str());
        return 1;
    }
    report.triad = std::move(triad.value());
    report.last_level_cache_bytes = last_level_cache_bytes();
    if (report.model) {
        const auto working_set = static_cast<int64_t>(report.model->traffic.bytes_per_token / (3 * sizeof(double)));
        auto cached =
            run_triad(pool, TriadOptions{std::max<int64_t>(working_set, report.threads), options.repetitions});
        if (!cached) {
            std::fprintf(stderr, "tempered membench: %s\n", cached.error().message.c_str());
            return 1;
        }
        report.model->working_set_triad = std::move(cached.value());
    }

    if (options.json)
        std::printf("%s\n", report_json(report).dump(2).c_str());
    else
        print_report(report);
    return 0;
}

}  // namespace

void add_membench_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<MembenchOptions>();
    auto* command = app.add_subcommand(
        "membench", "Memory bandwidth (STREAM triad) and the batch-1 decode bound it sets for a model");
    command->add_option("--mib", options->array_mib, "MiB in each of the three arrays")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
        ->capture_default_str();
    command->add_option("--threads,-t", options->threads, "0: every core")->capture_default_str();
    command->add_option("--repetitions,-r", options->repetitions, "timed runs; the best counts")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    command->add_option("--model,-m", options->model, "a .gguf path or a known model name: report its decode bound");
    command->add_flag("--json", options->json, "one JSON object on stdout");
    command->callback([options, &exit_code] { exit_code = membench(*options); });
}

}  // namespace tempered
