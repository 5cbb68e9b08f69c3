// Draft-model speculation (engine/draft_model_drafter.h): the draft model's greedy drafts, verified by the
// target, change no answer; a draft model equal to the target has every greedy draft accepted (its cache is
// kept right across accepted and rejected drafts); its cache comes back when a sequence leaves; a draft
// model with another vocabulary is refused. Target and drafts are the tiny random-weight fixtures with
// SmolLM2's vocabulary: tiny-llama3 (float32) and its bfloat16 copy.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/draft_model_drafter.h"
#include "engine/engine.h"
#include "engine_test_support.h"
#include "model_test_support.h"
#include "runtime/draft_model.h"
#include "runtime/loaded_model.h"

namespace tempered {
namespace {
namespace engine_draft_model_test {

using testing::collect;

// Call through ASSERT_NO_FATAL_FAILURE: it skips (or fails, when models are required) on a missing fixture.
void load_tiny(const std::string& name, std::unique_ptr<LoadedModel>& out) {
    const auto path = std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "tiny-models" / name;
    if (!std::filesystem::exists(path)) {
        if (testing::models_required()) FAIL() << "missing " << path << " (scripts/fixtures/make_tiny_models.py)";
        GTEST_SKIP() << path << " not found: scripts/fixtures/make_tiny_models.py writes it";
    }
    auto loaded = load_model_bundle(path.string(), 2);
    ASSERT_TRUE(loaded) << loaded.error().message;
    out = std::move(loaded).value();
}

std::unique_ptr<KvBlockPool> pool_for(const LoadedModel& model) {
    auto pool = KvBlockPool::for_positions(kv_cache_shape(model.config, DType::F16), 4096);
    EXPECT_TRUE(pool);
    return std::move(pool).value();
}

GenerationOptions request(const Tokenizer& tokenizer, const std::string& text, float temperature, uint64_t seed) {
    GenerationOptions options;
    options.prompt = tokenizer.encode(text, true, true);
    options.max_tokens = 40;
    options.ignore_eos = true;
    options.sampling.temperature = temperature;
    options.seed = seed;
    return options;
}

const std::vector<std::string> kPrompts = {
    "The quick brown fox jumps over the lazy dog. The quick brown fox",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n",
    "one two three four five six seven eight nine ten",
};

struct DraftRun {
    std::vector<std::vector<int32_t>> tokens;  // per request
    std::vector<std::pair<int64_t, int64_t>> speculation;
};

// Every prompt at each of `temperatures` (seeded), all submitted at once (so steps batch them), on `target` with
// `draft` drafting (none: speculation off).
DraftRun run(LoadedModel& target, LoadedModel* draft, const std::vector<float>& temperatures) {
    testing::CountingObserver observer;
    auto kv = pool_for(target);
    std::unique_ptr<KvBlockPool> draft_kv = draft ? pool_for(*draft) : nullptr;
    std::optional<DraftModelDrafter> drafter;
    if (draft) drafter.emplace(*draft->model, *draft_kv, 512);
    EngineOptions options;
    options.speculative_tokens = draft ? 4 : 0;
    options.draft_model = drafter ? &*drafter : nullptr;
    DraftRun out;
    {
        Engine engine(*target.model, *target.tokenizer, *kv, options, &observer);
        std::vector<std::shared_ptr<GenerationStream>> streams;
        for (const std::string& prompt : kPrompts)
            for (const float temperature : temperatures)
                streams.push_back(engine.submit(request(*target.tokenizer, prompt, temperature, 7)).stream);
        for (auto& stream : streams) out.tokens.push_back(collect(*stream).tokens.at(0));
    }
    out.speculation = observer.speculation_steps();
    return out;
}

std::pair<int64_t, int64_t> totals(const DraftRun& run) {
    std::pair<int64_t, int64_t> sum{0, 0};
    for (const auto& [drafts, accepted] : run.speculation) {
        sum.first += drafts;
        sum.second += accepted;
    }
    return sum;
}

TEST(EngineDraftModel, TheTargetAsItsOwnDraftHasEveryGreedyDraftAcceptedAndChangesNoAnswer) {
    std::unique_ptr<LoadedModel> target, draft;
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3.gguf", target));
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3.gguf", draft));
    const DraftRun off = run(*target, nullptr, {0.0f});
    const DraftRun on = run(*target, draft.get(), {0.0f});
    EXPECT_EQ(on.tokens, off.tokens);
    const auto [drafts, accepted] = totals(on);
    EXPECT_GT(drafts, 40);
    EXPECT_EQ(accepted, drafts) << "the draft model's argmax is the target's at every position";
}

TEST(EngineDraftModel, ABfloat16DraftChangesNoGreedyOrSeededAnswer) {
    std::unique_ptr<LoadedModel> target, draft;
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3.gguf", target));
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3-bf16.gguf", draft));
    const DraftRun off = run(*target, nullptr, {0.0f, 0.8f});
    const DraftRun on = run(*target, draft.get(), {0.0f, 0.8f});
    EXPECT_EQ(on.tokens, off.tokens);
    const auto [drafts, accepted] = totals(on);
    EXPECT_GT(drafts, 40);
    EXPECT_GT(accepted, 0);
    EXPECT_LT(accepted, drafts);
}

// The drafter alone, greedy: what it proposes after a sequence whose last token differs from its first draft
// (a rejection) equals what a new drafter proposes for the same tokens; a greedy request's own tokens are the
// target's argmax, so with the target as draft a draft equal to them is accepted.
TEST(EngineDraftModel, AProposalAfterARejectionEqualsOneMadeFromScratch) {
    std::unique_ptr<LoadedModel> draft;
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3.gguf", draft));
    auto kv = pool_for(*draft);
    DraftModelDrafter drafter(*draft->model, *kv, 8);  // small: the prompt is caught up in pieces
    const GenerationOptions options = request(*draft->tokenizer, kPrompts[0], 0.0f, 0);
    Sequence sequence(1, 0, options.prompt, static_cast<int64_t>(options.prompt.size()), options, *draft->tokenizer);
    drafter.propose(std::vector<DraftWanted>{{&sequence, 4}});
    ASSERT_EQ(sequence.model_proposal.size(), 4u);
    EXPECT_GT(kv->used_block_count(), 0);
    // Two drafts accepted, then the target drew another token than the third draft.
    const std::vector<int32_t> first = sequence.model_proposal;
    sequence.tokens.insert(sequence.tokens.end(), first.begin(), first.begin() + 2);
    sequence.tokens.push_back(first[2] == 0 ? 1 : 0);
    drafter.propose(std::vector<DraftWanted>{{&sequence, 3}});
    const std::vector<int32_t> kept_cache = sequence.model_proposal;

    auto fresh_kv = pool_for(*draft);
    DraftModelDrafter fresh(*draft->model, *fresh_kv, 512);
    Sequence copy(2, 0, sequence.tokens, sequence.prompt_length, options, *draft->tokenizer);
    fresh.propose(std::vector<DraftWanted>{{&copy, 3}});
    EXPECT_EQ(kept_cache, copy.model_proposal);
    ASSERT_EQ(kept_cache.size(), 3u);

    drafter.propose({});  // the sequence left: its draft cache comes back
    EXPECT_EQ(kv->used_block_count(), 0);
}

TEST(EngineDraftModel, AVocabularyThatDiffersIsRefusedNamingTheFirstDifference) {
    std::unique_ptr<LoadedModel> smol_vocabulary, qwen_vocabulary, same;
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3.gguf", smol_vocabulary));
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-llama3-bf16.gguf", same));
    ASSERT_NO_FATAL_FAILURE(load_tiny("tiny-qwen3.gguf", qwen_vocabulary));
    const auto& a = *smol_vocabulary;
    EXPECT_TRUE(check_draft_vocabulary(*a.tokenizer, a.config.vocab_size, *same->tokenizer, same->config.vocab_size));
    const Status other = check_draft_vocabulary(*a.tokenizer, a.config.vocab_size, *qwen_vocabulary->tokenizer,
                                                qwen_vocabulary->config.vocab_size);
    ASSERT_FALSE(other);
    EXPECT_NE(other.error().message.find("drafts must be the target's token ids"), std::string::npos);

    VocabSpec spec = testing::byte_vocabulary();
    const Tokenizer bytes = testing::tokenizer_of(spec);
    spec.tokens[65] = "renamed";
    const Tokenizer renamed = testing::tokenizer_of(spec);
    const Status differs = check_draft_vocabulary(bytes, 257, renamed, 257);
    ASSERT_FALSE(differs);
    EXPECT_NE(differs.error().message.find("token 65 is 'renamed'"), std::string::npos) << differs.error().message;
    EXPECT_FALSE(check_draft_vocabulary(bytes, 257, bytes, 300)) << "a draft scoring ids the target has not";
}

}  // namespace engine_draft_model_test
}  // namespace
}  // namespace tempered
