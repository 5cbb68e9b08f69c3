// The server's default guard over two corpora of real answers (tests/fixtures/guard/, written by
// bench/ordinary_answers.py), replayed token by token through SequenceGuard with the model's vocabulary shapes,
// as the engine feeds it:
//   - ordinary_answers.jsonl, chosen before the shape channels were tuned: answers of SmolLM2 and Qwen2.5-Coder
//     at temperature 0.6 with no loop anywhere by the bench's own measure (chat, and Qwen under JSON schemas).
//     The guard must flag none of them.
//   - looping_answers.jsonl: the seed prompts' answers at temperature 0 that the seed scenario's measure calls
//     looping, and Qwen's "small tree of names" nesting until max_tokens. The guard must flag 9 in 10 of each
//     model's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/degeneration_guard.h"
#include "formats/gguf.h"
#include "model_test_support.h"
#include "output/token_shapes.h"
#include "sampling/next_token.h"
#include "settings/degeneration_settings.h"
#include "tokenizer/tokenizer.h"

namespace tempered {
namespace {
namespace engine_guard_corpora_test {

const std::map<std::string, std::string> kModelFiles = {
    {"smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf"},
    {"qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"},
};

struct Answer {
    std::string model;
    std::string set;  // "chat" or "structured"
    std::string label;
    std::vector<int32_t> token_ids;
};

std::vector<Answer> corpus(const char* file_name) {
    std::ifstream in(std::filesystem::path(TEMPERED_SOURCE_DIR) / "tests/fixtures/guard" / file_name);
    std::vector<Answer> answers;
    std::string line;
    while (std::getline(in, line)) {
        const auto row = nlohmann::json::parse(line);
        const std::string set = row.at("set");
        const std::string label = set + " prompt " + std::to_string(row.at("prompt_index").get<int>()) + " seed " +
                                  std::to_string(row.at("seed").get<int>());
        answers.push_back({row.at("model"), set, label, row.at("token_ids").get<std::vector<int32_t>>()});
    }
    return answers;
}

std::shared_ptr<const TokenShapes> shapes_of(const std::string& file_name) {
    auto file = GgufFile::open((testing::model_dir() / file_name).string());
    if (!file.ok()) return nullptr;
    auto tokenizer = Tokenizer::from_gguf(*file);
    if (!tokenizer.ok()) return nullptr;
    std::vector<std::string> texts;
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) texts.push_back(tokenizer->decode({&id, 1}));
    return std::make_shared<const TokenShapes>(texts);
}

// The guard under test: the default, or (to measure another, as bench/results/loop-shapes-2026-12-07.md did)
// the --degeneration-guard JSON in TEMPERED_GUARD_UNDER_TEST.
DegenerationGuard guard_under_test() {
    const char* json = std::getenv("TEMPERED_GUARD_UNDER_TEST");
    if (json == nullptr) return default_degeneration_guard();
    auto settings = choose_degeneration_guard(json, std::nullopt);
    if (!settings.ok()) {
        ADD_FAILURE() << settings.error().message;
        return default_degeneration_guard();
    }
    return settings->guard;
}

// The first loop the guard under test sees in `answer`, if any.
std::optional<LoopSighting> first_loop(const Answer& answer, const std::shared_ptr<const TokenShapes>& shapes) {
    DegenerationGuard guard = guard_under_test();
    guard.shapes = shapes;
    SequenceGuard sequence;
    const SamplingParams sampling;
    for (size_t i = 0; i < answer.token_ids.size(); ++i) {
        const SequenceGuard::Step step{guard,
                                       sampling,
                                       kDryOff,
                                       DegenerationPhase::Content,
                                       i + 1 == answer.token_ids.size(),
                                       answer.set == "structured"};
        const auto outcome = sequence.observe(answer.token_ids[i], step);
        if (outcome.detected) return outcome.send->loop;
    }
    return std::nullopt;
}

std::string describe(const Answer& answer, const LoopSighting& loop) {
    return answer.model + " " + answer.label + ": " + loop_kind_name(loop.kind) + " loop of " +
           std::to_string(loop.period) + " tokens x" + std::to_string(loop.repeats) + " at token " +
           std::to_string(loop.detected_at_token);
}

class GuardCorpora : public ::testing::Test {
protected:
    void SetUp() override {
        for (const auto& [model, file_name] : kModelFiles) {
            if (!std::filesystem::exists(testing::model_dir() / file_name)) {
                if (testing::models_required()) FAIL() << "missing model " << file_name;
                GTEST_SKIP() << "model " << file_name << " not found (scripts/pull_model.py)";
            }
        }
    }
    const std::shared_ptr<const TokenShapes>& shapes(const std::string& model) {
        auto& loaded = shapes_[model];
        if (!loaded) loaded = shapes_of(kModelFiles.at(model));
        return loaded;
    }

private:
    std::map<std::string, std::shared_ptr<const TokenShapes>> shapes_;
};

TEST_F(GuardCorpora, TheDefaultGuardFlagsNoOrdinaryAnswer) {
    ASSERT_TRUE(default_degeneration_guard().detector.shapes);
    const std::vector<Answer> answers = corpus("ordinary_answers.jsonl");
    std::map<std::string, int> per_model;
    int flagged = 0;
    for (const Answer& answer : answers) {
        ASSERT_TRUE(shapes(answer.model)) << answer.model;
        if (const auto loop = first_loop(answer, shapes(answer.model))) {
            ADD_FAILURE() << describe(answer, *loop);
            ++flagged;
        }
        ++per_model[answer.model];
    }
    for (const auto& [model, file_name] : kModelFiles) EXPECT_GE(per_model[model], 200) << model;
    std::cout << flagged << " of " << answers.size() << " ordinary answers flagged\n";
}

TEST_F(GuardCorpora, TheDefaultGuardFlagsNineInTenLoopingAnswersOfEachModel) {
    const std::vector<Answer> answers = corpus("looping_answers.jsonl");
    std::map<std::string, int> looping;
    std::map<std::string, int> flagged;
    for (const Answer& answer : answers) {
        ASSERT_TRUE(shapes(answer.model)) << answer.model;
        ++looping[answer.model];
        const auto loop = first_loop(answer, shapes(answer.model));
        if (loop) ++flagged[answer.model];
        std::cout << (loop ? describe(answer, *loop) : answer.model + " " + answer.label + ": not flagged") << "\n";
    }
    for (const auto& [model, file_name] : kModelFiles) {
        EXPECT_GE(looping[model], 5) << model;
        EXPECT_GE(10 * flagged[model], 9 * looping[model])
            << model << ": " << flagged[model] << " of " << looping[model];
    }
}

}  // namespace engine_guard_corpora_test
}  // namespace
}  // namespace tempered
