// tempered_grammar_bench: mask time per decode step on a real vocabulary (a measurement, not a test).
//
// For every schema of the corpus it compiles the grammar (timed), then walks random valid generations:
// each step times MaskGenerator::fill_mask over the whole vocabulary, then takes a random allowed token
// (short ones half of the time, so strings and objects close). Each schema starts with a fresh generator,
// so the first sight of every context is inside the timed steps, as in a request that brings a new
// schema; contexts every JSON grammar shares (string bodies, numbers) are prewarmed once per vocabulary
// first, as a server does at model load, and that time is printed. Prints one line per schema and an overall line: p50
// / p99 / max of the step times, and the steps that classified a new context ("cold") apart. Single-threaded.
//
// Usage: tempered_grammar_bench [--model GGUF] [--corpus schemas.json] [--walks N] [--steps N] [--seed N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/position_masks.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace tempered;
using namespace tempered::grammar;
using Clock = std::chrono::steady_clock;

struct Options {
    std::string model;
    std::string corpus = "tests/fixtures/grammar/schemas.json";
    int walks = 4;
    int steps = 64;
    uint32_t seed = 1;
};

double micros_since(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Percentiles {
    double p50 = 0, p99 = 0, max = 0;
    size_t n = 0;
};

Percentiles percentiles(std::vector<double> values) {
    if (values.empty()) return {};
    std::sort(values.begin(), values.end());
    return {values[values.size() / 2], values[std::min(values.size() - 1, values.size() * 99 / 100)], values.back(),
            values.size()};
}

std::string describe(const Percentiles& p) {
    char line[128];
    std::snprintf(line, sizeof line, "%6zu steps  p50 %8.1f us  p99 %9.1f us  max %9.1f us", p.n, p.p50, p.p99, p.max);
    return line;
}

std::vector<std::string> vocabulary_of(const std::string& model) {
    auto file = GgufFile::open(model);
    if (!file) {
        std::fprintf(stderr, "cannot open %s: %s\n", model.c_str(), file.error().message.c_str());
        std::exit(2);
    }
    auto tokenizer = Tokenizer::from_gguf(file.value());
    if (!tokenizer) {
        std::fprintf(stderr, "no tokenizer in %s\n", model.c_str());
        std::exit(2);
    }
    std::vector<std::string> vocabulary(tokenizer->vocab_size());
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
        if (!tokenizer->is_control(id)) vocabulary[id] = tokenizer->token_bytes(id);
    }
    return vocabulary;
}

struct SchemaTimes {
    std::vector<double> all, warm, cold;
};

// Random valid generations of one grammar; appends each step's fill_mask time.
void walk_schema(const Grammar& grammar, const TokenTrie& trie, const std::vector<std::string>& vocabulary,
                 const Options& options, uint32_t seed, SchemaTimes& times) {
    MaskGenerator generator(grammar, trie);
    TokenMask mask(vocabulary.size());
    std::mt19937 rng(seed);
    std::vector<uint32_t> allowed;
    for (int walk = 0; walk < options.walks; ++walk) {
        Matcher matcher(grammar);
        for (int step = 0; step < options.steps; ++step) {
            const size_t known = generator.classified_contexts();
            const auto start = Clock::now();
            generator.fill_mask(matcher, mask);
            const double micros = micros_since(start);
            times.all.push_back(micros);
            (generator.classified_contexts() > known ? times.cold : times.warm).push_back(micros);
            allowed.clear();
            for (uint32_t id = 0; id < vocabulary.size(); ++id)
                if (mask.allows(id)) allowed.push_back(id);
            if (allowed.empty() || (matcher.is_complete() && rng() % 4 == 0)) break;
            uint32_t pick = allowed[rng() % allowed.size()];
            for (int tries = 0; tries < 8 && rng() % 2 && vocabulary[pick].size() > 1; ++tries)
                pick = allowed[rng() % allowed.size()];
            matcher.accept_bytes(vocabulary[pick]);
        }
    }
}

Options parse_options(int argc, char** argv) {
    Options options;
    const char* home = std::getenv("HOME");
    options.model =
        std::string(home ? home : "/root") + "/.cache/tempered/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--model")
            options.model = value;
        else if (flag == "--corpus")
            options.corpus = value;
        else if (flag == "--walks")
            options.walks = std::stoi(value);
        else if (flag == "--steps")
            options.steps = std::stoi(value);
        else if (flag == "--seed")
            options.seed = static_cast<uint32_t>(std::stoul(value));
        else {
            std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
            std::exit(2);
        }
    }
    return options;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);
    std::ifstream corpus_file(options.corpus);
    if (!corpus_file) {
        std::fprintf(stderr, "cannot read %s\n", options.corpus.c_str());
        return 2;
    }
    const auto corpus = nlohmann::ordered_json::parse(corpus_file);
    const std::vector<std::string> vocabulary = vocabulary_of(options.model);
    auto start = Clock::now();
    const TokenTrie trie(vocabulary);
    std::printf("vocabulary: %zu tokens, trie of %zu nodes built in %.1f ms (once per model)\n", vocabulary.size(),
                trie.n_nodes(), micros_since(start) / 1000);
    start = Clock::now();
    prewarm_json_contexts(trie);
    std::printf("shared JSON contexts prewarmed in %.1f ms (once per model)\n", micros_since(start) / 1000);
    std::printf("walks per schema: %d, at most %d steps each, seed %u\n\n", options.walks, options.steps, options.seed);
    SchemaTimes overall;
    std::vector<double> compile_micros;
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string name = corpus[i].at("name").get<std::string>();
        start = Clock::now();
        auto grammar = compile_json_schema(corpus[i].at("schema"));
        compile_micros.push_back(micros_since(start));
        if (!grammar) {
            std::printf("%-28s does not compile: %s\n", name.c_str(), grammar.error().message.c_str());
            continue;
        }
        SchemaTimes times;
        walk_schema(*grammar, trie, vocabulary, options, options.seed + static_cast<uint32_t>(i), times);
        std::printf("%-28s compile %7.1f us | all %s | cold %4zu, max %9.1f us\n", name.c_str(), compile_micros.back(),
                    describe(percentiles(times.all)).c_str(), times.cold.size(), percentiles(times.cold).max);
        for (auto part : {&SchemaTimes::all, &SchemaTimes::warm, &SchemaTimes::cold})
            (overall.*part).insert((overall.*part).end(), (times.*part).begin(), (times.*part).end());
    }
    const Percentiles compile = percentiles(compile_micros);
    std::printf("\noverall, every step:            %s\n", describe(percentiles(overall.all)).c_str());
    std::printf("overall, steps with known contexts: %s\n", describe(percentiles(overall.warm)).c_str());
    std::printf("overall, steps classifying a new context: %s\n", describe(percentiles(overall.cold)).c_str());
    std::printf("schema compile: p50 %.1f us, max %.1f us\n", compile.p50, compile.max);
    return 0;
}
