// Generation under a grammar, in the engine: the greedy shortcut equals the masked draw; constrained
// requests over the fake model (the byte tokenizer) follow their grammar whole, end with "stop" when the
// sentence is complete, fork into n choices, and survive preemption without losing or repeating a step.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/constrained_draw.h"
#include "engine/engine.h"
#include "engine_test_support.h"
#include "grammar/json_schema.h"
#include "server/structured_output.h"

namespace tempered {
namespace {
namespace engine_constrained_test {

constexpr const char* kSchema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},
    "ok":{"type":"boolean"}},"required":["name","ok"]})";

std::shared_ptr<const grammar::Constraint> schema_constraint(const Tokenizer& tokenizer, const char* schema) {
    auto grammar = grammar::compile_json_schema(nlohmann::ordered_json::parse(schema));
    EXPECT_TRUE(grammar);
    auto vocabulary =
        std::make_shared<const grammar::GrammarVocabulary>(grammar_vocabulary(tokenizer, tokenizer.vocab_size()));
    return std::make_shared<const grammar::Constraint>(std::move(grammar).value(), vocabulary);
}

size_t code_points(const std::string& utf8) {
    size_t count = 0;
    for (unsigned char byte : utf8) count += (byte & 0xC0) != 0x80;
    return count;
}

// The masked greedy choice, computed the long way: the full mask, then the argmax over it.
int32_t masked_argmax(const std::vector<float>& logits, grammar::ConstraintState& state) {
    grammar::TokenMask mask(logits.size());
    state.fill_mask(mask);
    int32_t best = -1;
    for (size_t t = 0; t < logits.size(); ++t)
        if (mask.allows(static_cast<uint32_t>(t)) && (best < 0 || logits[t] > logits[static_cast<size_t>(best)]))
            best = static_cast<int32_t>(t);
    return best;
}

TEST(ConstrainedDraw, TheGreedyShortcutEqualsTheArgmaxOfTheMaskedLogits) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    const auto constraint = schema_constraint(tokenizer, kSchema);
    const auto vocab = static_cast<size_t>(tokenizer.vocab_size());
    SamplingParams sampling;
    sampling.temperature = 0.0f;
    PenaltyParams penalties;
    NextTokenWorkspace workspace;
    ConstrainedDrawWorkspace constrained;
    int shortcuts = 0, masks = 0;
    for (uint64_t seed = 0; seed < 300; ++seed) {
        std::mt19937_64 generator(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        grammar::ConstraintState state(constraint);
        for (int step = 0; step < 40 && !state.must_end(); ++step) {
            std::vector<float> logits(vocab);
            for (float& l : logits) l = normal(generator);
            // Often make the favourite a token the grammar allows, so both paths are exercised.
            if (generator() % 2) logits[static_cast<size_t>(masked_argmax(logits, state))] += 10.0f;
            const int32_t expected = masked_argmax(logits, state);
            SamplerRng rng(seed);
            const ConstrainedToken drawn = next_constrained_token(logits, {sampling, penalties, -1}, TokenHistory{},
                                                                  &state, rng, workspace, constrained);
            ASSERT_EQ(drawn.sampled.token, expected) << "seed " << seed << " step " << step;
            (drawn.mask_seconds ? masks : shortcuts) += 1;
            ASSERT_TRUE(state.accept(drawn.sampled.token));
        }
    }
    EXPECT_GT(shortcuts, 100);
    EXPECT_GT(masks, 100);
}

TEST(ConstrainedDraw, ARandomDrawIsTheMaskedDrawAndTakesTheSameRandomNumbers) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    const auto constraint = schema_constraint(tokenizer, kSchema);
    const auto vocab = static_cast<size_t>(tokenizer.vocab_size());
    SamplingParams sampling;  // temperature 1
    PenaltyParams penalties;
    NextTokenWorkspace workspace, reference_workspace;
    ConstrainedDrawWorkspace constrained;
    for (uint64_t seed = 0; seed < 50; ++seed) {
        std::mt19937_64 generator(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        grammar::ConstraintState state(constraint);
        SamplerRng rng(seed), reference_rng(seed);
        while (!state.must_end()) {
            std::vector<float> logits(vocab);
            for (float& l : logits) l = normal(generator);
            const ConstrainedToken drawn = next_constrained_token(logits, {sampling, penalties, -1}, TokenHistory{},
                                                                  &state, rng, workspace, constrained);
            ASSERT_TRUE(drawn.mask_seconds);
            ASSERT_EQ(drawn.sampled.token, next_token(logits, {sampling, penalties, -1}, TokenHistory{}, reference_rng,
                                                      reference_workspace, constrained.allowed)
                                               .token);
            ASSERT_TRUE(state.accept(drawn.sampled.token));
        }
    }
}

class MaskCountingObserver final : public EngineObserver {
public:
    void on_prefix_lookup(int64_t, int64_t) override {}
    void on_first_token(double) override {}
    void on_inter_token(double) override {}
    void on_preemption() override { ++preemptions; }
    void on_grammar_mask(double seconds) override {
        ++masks;
        if (seconds < 0) ++negative;
    }
    void on_request_finished(RequestOutcome outcome, const GenerationUsage&, const RequestTimings&) override {
        std::lock_guard lock(mutex);
        outcomes.push_back(outcome);
    }
    std::atomic<int> masks{0}, negative{0}, preemptions{0};
    std::mutex mutex;
    std::vector<RequestOutcome> outcomes;
};

GenerationOptions constrained(const std::string& prompt, std::shared_ptr<const grammar::Constraint> constraint,
                              float temperature = 0.0f) {
    GenerationOptions options;
    options.prompt = {prompt.begin(), prompt.end()};
    options.max_tokens = 60;
    options.sampling.temperature = temperature;
    options.constraint = std::move(constraint);
    return options;
}

class EngineUnderGrammar : public ::testing::Test {
protected:
    Tokenizer tokenizer_ = testing::byte_tokenizer();
    testing::FakeModel model_{tokenizer_.vocab_size()};
    MaskCountingObserver observer_;
};

// The fake model prefers the next letter: inside the free string "abcde" until maxLength, then the
// grammar's only way on; between "false" and "true" (equal logits) the lower byte.
constexpr const char* kGreedyAnswer = R"({"name": "abcde", "ok": false})";

TEST_F(EngineUnderGrammar, AGreedyRequestFollowsItsSchemaAndStopsWhenTheSentenceIsComplete) {
    auto pool = testing::tiny_pool(32);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto result = testing::collect(*engine.submit(constrained("x", schema_constraint(tokenizer_, kSchema))).stream);
    ASSERT_FALSE(result.error);
    EXPECT_EQ(result.text[0], kGreedyAnswer);
    EXPECT_EQ(observer_.outcomes, std::vector<RequestOutcome>{RequestOutcome::Stop});
    EXPECT_GT(observer_.masks, 0);
    EXPECT_EQ(observer_.negative, 0);
}

TEST_F(EngineUnderGrammar, EveryChoiceOfARandomRequestIsAValidInstance) {
    auto pool = testing::tiny_pool(128);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto options = constrained("x", schema_constraint(tokenizer_, kSchema), 1.0f);
    options.n = 4;
    options.seed = 9;
    auto result = testing::collect(*engine.submit(options).stream, 4);
    ASSERT_FALSE(result.error);
    for (const std::string& text : result.text) {
        const auto value = nlohmann::json::parse(text);
        ASSERT_TRUE(value["name"].is_string()) << text;
        EXPECT_LE(code_points(value["name"].get<std::string>()), 5u) << text;  // maxLength counts characters
        EXPECT_TRUE(value["ok"].is_boolean()) << text;
    }
}

TEST_F(EngineUnderGrammar, PreemptedRequestsResumeTheirGrammarWhereTheyWere) {
    // Each request ends near 34 positions (9 blocks); 16 blocks cannot hold four of them at once.
    auto pool = testing::tiny_pool(16);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{8, 64, 64}, &observer_);
    const auto constraint = schema_constraint(tokenizer_, kSchema);
    std::vector<std::shared_ptr<GenerationStream>> streams;
    {
        std::unique_lock hold_steps(model_.gate);
        for (int i = 0; i < 4; ++i) streams.push_back(engine.submit(constrained("abc", constraint)).stream);
    }
    for (auto& stream : streams) {
        auto result = testing::collect(*stream);
        ASSERT_FALSE(result.error) << *result.error;
        EXPECT_EQ(result.text[0], kGreedyAnswer);
    }
    EXPECT_GT(observer_.preemptions, 0);
}

TEST_F(EngineUnderGrammar, MinTokensBeyondACompleteSentenceEndsTheChoiceWithStop) {
    auto pool = testing::tiny_pool(32);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto options = constrained("x", schema_constraint(tokenizer_, R"({"enum":["ab"]})"));
    options.min_tokens = 10;  // the sentence is whole after 4: nothing may follow, so it ends there
    auto result = testing::collect(*engine.submit(options).stream);
    ASSERT_FALSE(result.error);
    EXPECT_EQ(result.text[0], "\"ab\"");
    EXPECT_EQ(observer_.outcomes, std::vector<RequestOutcome>{RequestOutcome::Stop});
}

TEST_F(EngineUnderGrammar, AGrammarTheVocabularyCannotSpellEndsTheChoiceWithoutAToken) {
    // A vocabulary without "{": no token can start a JSON object, so the mask is empty.
    grammar::GrammarVocabulary vocabulary = grammar_vocabulary(tokenizer_, tokenizer_.vocab_size());
    vocabulary.token_bytes['{'].clear();
    auto without_brace = std::make_shared<const grammar::GrammarVocabulary>(std::move(vocabulary.token_bytes),
                                                                            vocabulary.end_of_generation);
    auto constraint = std::make_shared<const grammar::Constraint>(grammar::json_object_grammar(), without_brace);
    auto pool = testing::tiny_pool(32);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto result = testing::collect(*engine.submit(constrained("x", constraint)).stream);
    ASSERT_FALSE(result.error);
    EXPECT_EQ(result.text[0], "");
    EXPECT_TRUE(result.tokens[0].empty());
    EXPECT_EQ(result.usage.completion_tokens, 0);
    EXPECT_EQ(observer_.outcomes, std::vector<RequestOutcome>{RequestOutcome::Stop});
}

}  // namespace engine_constrained_test
}  // namespace
}  // namespace tempered
