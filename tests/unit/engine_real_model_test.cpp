// The engine on the real model: continuous batching, prefix reuse, preemption and cancellation must
// not change what a greedy request generates. The reference is the plainest path there is: the whole
// prompt in one forward call, then one token per call, argmax each time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "engine/engine.h"
#include "engine_test_support.h"
#include "formats/gguf.h"
#include "kv/kv_block_pool.h"
#include "model_test_support.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace tempered {
namespace {
namespace engine_real_model_test {

using testing::collect;
using testing::Collected;

constexpr const char* kModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

struct RealModel {
    std::unique_ptr<GgufFile> file;
    std::unique_ptr<Tokenizer> tokenizer;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Model> model;
};

RealModel load(const std::filesystem::path& path) {
    RealModel real;
    auto file = GgufFile::open(path.string());
    EXPECT_TRUE(file) << file.error().message;
    real.file = std::make_unique<GgufFile>(std::move(file.value()));
    auto tokenizer = Tokenizer::from_gguf(*real.file);
    EXPECT_TRUE(tokenizer);
    real.tokenizer = std::make_unique<Tokenizer>(std::move(tokenizer.value()));
    real.pool = std::make_unique<ThreadPool>(2);
    auto model = load_model(*real.file, *real.pool);
    EXPECT_TRUE(model);
    real.model = std::move(model.value());
    return real;
}

std::vector<int32_t> reference_greedy(RealModel& real, const std::vector<int32_t>& prompt, int64_t count) {
    const auto vocab = static_cast<size_t>(real.model->config().vocab_size);
    auto kv = KvBlockPool::for_positions(kv_cache_shape(real.model->config(), DType::F16),
                                         static_cast<int64_t>(prompt.size()) + count + 1);
    EXPECT_TRUE(kv);
    EXPECT_TRUE((*kv)->ensure_capacity(0, static_cast<int64_t>(prompt.size()) + count + 1));
    std::vector<float> logits(vocab);
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
    std::vector<int32_t> out;
    for (int64_t step = 0; step < count; ++step) {
        EXPECT_TRUE(real.model->forward(batch, **kv, logits.data()));
        out.push_back(greedy_token(logits));
        batch.clear();
        batch.add(out.back(), static_cast<int32_t>(prompt.size() + out.size() - 1), 0, true);
    }
    return out;
}

// The real model, counting the tokens it is given.
class CountingModel final : public Model {
public:
    explicit CountingModel(Model& model) : model_(model) {}
    const ModelConfig& config() const override { return model_.config(); }
    Status forward(const Batch& batch, KvCache& cache, float* logits) override {
        tokens += batch.size();
        return model_.forward(batch, cache, logits);
    }
    std::atomic<int64_t> tokens{0};

private:
    Model& model_;
};

GenerationOptions greedy_options(std::vector<int32_t> prompt, int64_t max_tokens) {
    GenerationOptions options;
    options.prompt = std::move(prompt);
    options.max_tokens = max_tokens;
    options.ignore_eos = true;
    options.sampling.temperature = 0.0f;
    return options;
}

std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, const std::string& text) {
    return tokenizer.encode(text, true, true);
}

class EngineRealModel : public ::testing::Test {
protected:
    void SetUp() override {
        TEMPERED_MODEL_OR_SKIP(path, kModelFile);
        real_ = load(path);
    }
    std::unique_ptr<KvBlockPool> make_pool(int64_t blocks) {
        auto pool = KvBlockPool::create(kv_cache_shape(real_.model->config(), DType::F16), blocks);
        EXPECT_TRUE(pool);
        return std::move(pool.value());
    }
    RealModel real_;
};

TEST_F(EngineRealModel, ConcurrentGreedyRequestsMatchTheOneAtATimeReference) {
    const std::vector<std::string> texts = {"The capital of France is", "def fibonacci(n):\n",
                                            "Once upon a time, in a small village,", "1, 2, 3, 4, 5,"};
    std::vector<std::vector<int32_t>> expected;
    for (const auto& text : texts)
        expected.push_back(reference_greedy(real_, prompt_tokens(*real_.tokenizer, text), 24));

    auto pool = make_pool(256);
    Engine engine(*real_.model, *real_.tokenizer, *pool, EngineOptions{});
    std::vector<std::shared_ptr<GenerationStream>> streams;
    for (const auto& text : texts)
        streams.push_back(engine.submit(greedy_options(prompt_tokens(*real_.tokenizer, text), 24)).stream);
    for (size_t i = 0; i < texts.size(); ++i) {
        auto result = collect(*streams[i]);
        EXPECT_FALSE(result.error);
        EXPECT_EQ(result.tokens[0], expected[i]) << texts[i];
        EXPECT_EQ(result.usage.completion_tokens, 24);
    }
    for (int i = 0; i < 50 && pool->used_block_count() != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(pool->used_block_count(), 0);
}

TEST_F(EngineRealModel, PrefixReuseReportsCachedTokensAndKeepsTheOutput) {
    std::string system = "You are a careful assistant. Answer briefly and precisely, and never invent facts. ";
    for (int i = 0; i < 4; ++i) system += system;
    const auto first = prompt_tokens(*real_.tokenizer, system + "Question: what is two plus two?");
    const auto second = prompt_tokens(*real_.tokenizer, system + "Question: name a colour.");
    const auto expected = reference_greedy(real_, second, 8);
    auto pool = make_pool(256);
    Engine engine(*real_.model, *real_.tokenizer, *pool, EngineOptions{});
    auto a = collect(*engine.submit(greedy_options(first, 8)).stream);
    auto b = collect(*engine.submit(greedy_options(second, 8)).stream);
    EXPECT_EQ(a.usage.cached_tokens, 0);
    EXPECT_GT(b.usage.cached_tokens, 200);
    EXPECT_EQ(b.usage.cached_tokens % 16, 0);
    EXPECT_EQ(b.tokens[0], expected);
}

TEST_F(EngineRealModel, SmallKvPoolCompletesEveryRequestThroughPreemption) {
    // 12 requests of ~60 + 40 tokens; the pool holds about three of them at once.
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 12; ++i)
        prompts.push_back(prompt_tokens(*real_.tokenizer, "Story number " + std::to_string(i) +
                                                              ": a long time ago there lived a programmer who wrote "
                                                              "an inference server, and every night she"));
    // The model's buffers belong to whoever runs it: references first, then the engine.
    std::vector<std::vector<int32_t>> expected;
    for (int i = 0; i < 3; ++i) expected.push_back(reference_greedy(real_, prompts[static_cast<size_t>(i)], 40));
    auto pool = make_pool(20);
    testing::CountingObserver observer;
    Engine engine(*real_.model, *real_.tokenizer, *pool, EngineOptions{16, 64, 64}, &observer);
    std::vector<std::shared_ptr<GenerationStream>> streams;
    for (const auto& prompt : prompts) streams.push_back(engine.submit(greedy_options(prompt, 40)).stream);
    for (size_t i = 0; i < prompts.size(); ++i) {
        auto result = collect(*streams[i]);
        EXPECT_FALSE(result.error) << *result.error;
        ASSERT_EQ(result.tokens[0].size(), 40u);
        if (i < 3) {
            EXPECT_EQ(result.tokens[0], expected[i]) << i;
        }
    }
    EXPECT_GT(observer.preemptions(), 0);
    EXPECT_EQ(observer.outcomes(), std::vector<RequestOutcome>(prompts.size(), RequestOutcome::Length));
}

TEST_F(EngineRealModel, ChoicesShareOnePrefillAndSeededRunsRepeat) {
    auto options = greedy_options(prompt_tokens(*real_.tokenizer, "My favourite animal is"), 12);
    options.sampling.temperature = 1.0f;
    options.n = 3;
    options.seed = 1234;
    auto pool = make_pool(128);
    CountingModel model(*real_.model);
    Engine engine(model, *real_.tokenizer, *pool, EngineOptions{});
    auto first = collect(*engine.submit(options).stream, 3);
    // The prompt went through the model once; then each choice's 11 tokens after its first.
    EXPECT_EQ(model.tokens, static_cast<int64_t>(options.prompt.size()) + 3 * 11);
    auto again = collect(*engine.submit(options).stream, 3);
    EXPECT_EQ(first.usage.completion_tokens, 36);
    for (int choice = 0; choice < 3; ++choice) {
        EXPECT_EQ(first.tokens[choice].size(), 12u);
        EXPECT_EQ(first.tokens[choice], again.tokens[choice]) << choice;
    }
    EXPECT_TRUE(first.tokens[0] != first.tokens[1] || first.tokens[1] != first.tokens[2]);
}

TEST_F(EngineRealModel, CancelledRequestsFreeTheirBlocks) {
    auto pool = make_pool(256);
    Engine engine(*real_.model, *real_.tokenizer, *pool, EngineOptions{});
    std::vector<std::shared_ptr<GenerationStream>> streams;
    for (int i = 0; i < 6; ++i)
        streams.push_back(
            engine.submit(greedy_options(prompt_tokens(*real_.tokenizer, "Tell me a story"), 400)).stream);
    for (auto& stream : streams) {
        while (!stream->next(std::chrono::milliseconds(100))) {}
        stream->cancel();
    }
    for (int i = 0; i < 200 && !(engine.idle() && pool->used_block_count() == 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(engine.idle());
    EXPECT_EQ(pool->used_block_count(), 0);
}

TEST_F(EngineRealModel, StopStringEndsTheChoiceWithoutEmittingIt) {
    auto options = greedy_options(prompt_tokens(*real_.tokenizer, "1, 2, 3, 4, 5,"), 40);
    options.stop = {"8"};
    auto pool = make_pool(64);
    Engine engine(*real_.model, *real_.tokenizer, *pool, EngineOptions{});
    auto result = collect(*engine.submit(options).stream);
    EXPECT_EQ(result.text[0].find('8'), std::string::npos);
    EXPECT_LT(result.tokens[0].size(), 40u);
    EXPECT_NE(result.text[0].find('7'), std::string::npos);
}

}  // namespace engine_real_model_test
}  // namespace
}  // namespace tempered
