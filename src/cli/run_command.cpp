// tempered run: one generation from the command line, through the same engine the server uses,
// streamed to stdout. The sampling values used, and where each came from, go to stderr, and so does the
// degeneration guard's report when the output loops (the server's default guard, or --degeneration-guard).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/perplexity.h"
#include "engine/engine.h"
#include "kv/kv_block_pool.h"
#include "kv/kv_dtype_name.h"
#include "kv/kv_fp8_quality.h"
#include "runtime/chat_template_choice.h"
#include "runtime/loaded_model.h"
#include "runtime/model_names.h"
#include "sampling/generation_config.h"
#include "sampling/sampling_resolution.h"
#include "settings/degeneration_report.h"
#include "settings/degeneration_settings.h"

namespace tempered {
namespace {

struct RunOptions {
    std::string model = kDefaultModelName;
    std::string prompt;
    std::string chat;
    std::string system;
    int64_t max_tokens = 256;
    std::optional<double> temperature, top_p, min_p;
    std::optional<int64_t> top_k, seed;
    int threads = 0;
    std::string kv_cache_dtype = "f16";
    std::string quantize = "q8_0";   // a Hugging Face directory's matrices at load, as serve's --quantize
    std::string degeneration_guard;  // "" = the server's default (flag)
    std::string chat_template_file;  // "" = the model file's own template
    std::string perplexity_file;     // --perplexity: measure instead of generating (cli/perplexity.h)
    int64_t perplexity_window = 512;
};

Result<std::unique_ptr<LoadedModel>> load_for_run(const RunOptions& options) {
    const auto directory_weights = directory_weight_type(options.quantize);
    if (!directory_weights) return directory_weights.error();
    return load_model_bundle(options.model, options.threads, ModelParts::Everything, *directory_weights);
}

// --perplexity FILE: one JSON line on stdout with the perplexity of the model over the file's text.
int run_perplexity(const RunOptions& options, DType kv_type) {
    std::ifstream file(options.perplexity_file, std::ios::binary);
    if (!file) {
        std::fprintf(stderr, "tempered run: cannot read %s\n", options.perplexity_file.c_str());
        return 1;
    }
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    auto loaded = load_for_run(options);
    if (!loaded) {
        std::fprintf(stderr, "tempered run: %s\n", loaded.error().message.c_str());
        return 1;
    }
    auto report = measure_perplexity(**loaded, kv_type, text, options.perplexity_window);
    if (!report) {
        std::fprintf(stderr, "tempered run: %s\n", report.error().message.c_str());
        return 1;
    }
    const nlohmann::json line{{"model", options.model},
                              {"kv_cache_dtype", kv_dtype_flag_name(kv_type)},
                              {"window", options.perplexity_window},
                              {"windows", report->windows},
                              {"tokens_scored", report->tokens_scored},
                              {"mean_nll", report->mean_nll},
                              {"perplexity", report->perplexity}};
    std::printf("%s\n", line.dump().c_str());
    return 0;
}

// The guard's report on stderr, as the server's "degeneration" object; each time it changes.
void report_loop(const ChoiceDelta& delta, const nlohmann::json& sampling) {
    if (!delta.degeneration) return;
    const nlohmann::json loop = api::degeneration_json(to_api_degeneration(*delta.degeneration, sampling));
    std::fprintf(stderr, "\ndegeneration: %s\n", loop.dump().c_str());
}

int run(const RunOptions& options) {
    auto guard = choose_degeneration_guard(options.degeneration_guard, std::nullopt);
    if (!guard) {
        std::fprintf(stderr, "tempered run: %s\n", guard.error().message.c_str());
        return 1;
    }
    auto kv_type = parse_kv_dtype(options.kv_cache_dtype);
    if (!kv_type) {
        std::fprintf(stderr, "tempered run: %s\n", kv_type.error().message.c_str());
        return 1;
    }
    if (*kv_type == DType::F8_E4M3) std::fprintf(stderr, "%s\n", fp8_kv_warning().c_str());
    if (!options.perplexity_file.empty()) return run_perplexity(options, *kv_type);
    auto loaded = load_for_run(options);
    if (!loaded) {
        std::fprintf(stderr, "tempered run: %s\n", loaded.error().message.c_str());
        return 1;
    }
    LoadedModel& bundle = **loaded;

    std::vector<int32_t> prompt;
    if (!options.chat.empty()) {
        // Probed as the server probes it: a template that runs away is refused, not run.
        if (auto chosen = choose_chat_template(bundle, options.chat_template_file); !chosen) {
            std::fprintf(stderr, "tempered run: %s\n", chosen.error().message.c_str());
            return 1;
        }
        if (bundle.chat_template.empty()) {
            std::fprintf(stderr, "tempered run: the model has no chat template; use --prompt\n");
            return 1;
        }
        ChatTemplateInputs inputs;
        if (!options.system.empty()) inputs.messages.push_back({{"role", "system"}, {"content", options.system}});
        inputs.messages.push_back({{"role", "user"}, {"content", options.chat}});
        if (auto bos = bundle.tokenizer->bos_id()) inputs.bos_token = bundle.tokenizer->token_text(*bos);
        if (auto eos = bundle.tokenizer->eos_id()) inputs.eos_token = bundle.tokenizer->token_text(*eos);
        auto rendered = apply_chat_template(bundle.chat_template, inputs);
        if (!rendered) {
            std::fprintf(stderr, "tempered run: chat template: %s\n", rendered.error().message.c_str());
            return 1;
        }
        prompt = bundle.tokenizer->encode_chat(*rendered);
    } else {
        prompt = bundle.tokenizer->encode(options.prompt, /*add_special_tokens=*/true, /*parse_special=*/true);
    }
    const int64_t context = bundle.model->config().context_length;
    if (static_cast<int64_t>(prompt.size()) >= context) {
        std::fprintf(stderr, "tempered run: the prompt has %zu tokens; the maximum context length is %lld tokens\n",
                     prompt.size(), static_cast<long long>(context));
        return 1;
    }

    SamplingDefaultsConfig defaults;
    auto model_defaults = load_model_sampling_defaults(*bundle.file, "");
    if (model_defaults) defaults.model = model_defaults->values;
    SamplingValues requested;
    requested.temperature = options.temperature;
    requested.top_p = options.top_p;
    requested.top_k = options.top_k;
    requested.min_p = options.min_p;
    requested.seed = options.seed;
    const ResolvedSampling sampling = resolve_sampling(requested, defaults, std::random_device{}());
    const nlohmann::json sampling_report = sampling.to_json();
    std::fprintf(stderr, "sampling: %s\n", sampling_report.dump().c_str());

    GenerationOptions generation;
    generation.prompt = prompt;
    generation.max_tokens = std::min<int64_t>(options.max_tokens, context - static_cast<int64_t>(prompt.size()));
    generation.sampling = sampling.sampler_params();
    generation.penalties = sampling.penalty_params();
    generation.seed = static_cast<uint64_t>(sampling.seed.value);
    guard->build_vocabulary_tables(*bundle.tokenizer);
    generation.guard = guard->guard;

    const KvCacheShape shape = kv_cache_shape(bundle.model->config(), *kv_type);
    const int64_t positions = static_cast<int64_t>(prompt.size()) + generation.max_tokens + 1;
    auto kv = KvBlockPool::for_positions(shape, positions);
    if (!kv) {
        std::fprintf(stderr, "tempered run: %s\n", kv.error().message.c_str());
        return 1;
    }
    Engine engine(*bundle.model, *bundle.tokenizer, **kv, EngineOptions{});
    auto submitted = engine.submit(std::move(generation));
    while (true) {
        auto event = submitted.stream->next(std::chrono::milliseconds(1000));
        if (!event) continue;
        for (const auto& delta : event->deltas) {
            std::fwrite(delta.text.data(), 1, delta.text.size(), stdout);
            std::fflush(stdout);
            report_loop(delta, sampling_report);
        }
        if (event->error) {
            std::fprintf(stderr, "\ntempered run: %s\n", event->error->c_str());
            return 1;
        }
        if (event->done) break;
    }
    std::fputc('\n', stdout);
    return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<RunOptions>();
    auto* command = app.add_subcommand("run", "Generate text from a prompt or a chat message, streamed to stdout");
    command->add_option("--model,-m", options->model, "a .gguf path or a known model name")->capture_default_str();
    auto* prompt = command->add_option("--prompt,-p", options->prompt, "raw text to continue");
    auto* chat = command->add_option("--chat,-c", options->chat, "a user message, rendered with the chat template");
    prompt->excludes(chat);
    command->add_option("--system", options->system, "a system message (with --chat)")->needs(chat);
    command
        ->add_option("--chat-template", options->chat_template_file,
                     "a Jinja file that replaces the model's chat template (with --chat)")
        ->needs(chat);
    command->add_option("--max-tokens,-n", options->max_tokens, "tokens to generate at most")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
        ->capture_default_str();
    command->add_option("--temperature,-t", options->temperature, "0 means greedy; default: the model's, else 1")
        ->check(CLI::Range(0.0, 2.0));
    command->add_option("--top-p", options->top_p)->check(CLI::Range(0.0, 1.0));
    command->add_option("--top-k", options->top_k)->check(CLI::Range(int64_t{-1}, int64_t{1} << 30));
    command->add_option("--min-p", options->min_p)->check(CLI::Range(0.0, 1.0));
    command->add_option("--seed,-s", options->seed);
    command->add_option("--threads", options->threads, "0: every core")->capture_default_str();
    command->add_option("--kv-cache-dtype", options->kv_cache_dtype, "f16, bf16, f32 or fp8")->capture_default_str();
    command
        ->add_option("--quantize", options->quantize,
                     "a Hugging Face directory's matrices at load: q8_0, f16, bf16, f32")
        ->capture_default_str();
    command->add_option("--perplexity", options->perplexity_file,
                        "instead of generating: print the perplexity over this text file as one JSON line");
    command->add_option("--perplexity-window", options->perplexity_window, "tokens per scored window")
        ->capture_default_str();
    command->add_option("--degeneration-guard", options->degeneration_guard,
                        "what a loop in the output does: flag (default: reported on stderr), stop, resample or off; "
                        "or a JSON object as `serve` takes it");
    command->callback([options, command, &exit_code] {
        if (options->prompt.empty() && options->chat.empty() && options->perplexity_file.empty()) {
            std::fprintf(stderr, "tempered run: give --prompt TEXT or --chat TEXT\n");
            exit_code = 1;
            return;
        }
        if (options->top_p && *options->top_p <= 0) {
            std::fprintf(stderr, "tempered run: --top-p must be in (0, 1]\n");
            exit_code = 1;
            return;
        }
        (void)command;
        exit_code = run(*options);
    });
}

}  // namespace tempered
