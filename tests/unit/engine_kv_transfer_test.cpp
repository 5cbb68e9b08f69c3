// The engine's side of prefill/decode disaggregation, with the network replaced by an in-memory mailbox:
// a prefill engine exports the prompt's KV the moment it is computed and answers once it is taken; a decode
// engine imports it, computes only the last prompt position, and answers as a single engine does. Failures
// and cancellations end the request with an error (or silently, for a reader that left) and free every block.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/kv_transfer.h"
#include "engine_test_support.h"

namespace tempered {
namespace {
namespace engine_kv_transfer_test {

using namespace std::chrono_literals;

// What a transfer would carry, between one export and one import.
struct Mailbox {
    std::mutex mutex;
    std::optional<StagedKv> kv;    // delivered by the export
    std::optional<int64_t> claim;  // the import's cached positions
    bool taken = false;
    std::optional<std::string> failure;  // either side's error
    std::function<void()> export_ready, import_ready;

    void notify(const std::function<void()>& ready) {
        if (ready) ready();
    }
};

class MailboxExport final : public KvExport {
public:
    explicit MailboxExport(std::shared_ptr<Mailbox> box) : box_(std::move(box)) {}
    int64_t claimed_cached_positions() const override {
        std::lock_guard lock(box_->mutex);
        return box_->claim.value_or(0);
    }
    void deliver(std::vector<int32_t>, StagedKv kv, std::function<void()> ready) override {
        std::function<void()> wake_import;
        {
            std::lock_guard lock(box_->mutex);
            box_->kv = std::move(kv);
            box_->export_ready = std::move(ready);
            wake_import = box_->import_ready;
        }
        box_->notify(wake_import);
    }
    std::optional<Status> poll() override {
        std::lock_guard lock(box_->mutex);
        if (box_->failure) return Status(Error{*box_->failure});
        if (box_->taken) return Status(Ok{});
        return std::nullopt;
    }
    void cancel() override { cancelled = true; }
    std::atomic<bool> cancelled{false};

private:
    std::shared_ptr<Mailbox> box_;
};

class MailboxImport final : public KvImport {
public:
    explicit MailboxImport(std::shared_ptr<Mailbox> box) : box_(std::move(box)) {}
    void start(std::vector<int32_t>, int64_t cached_positions, std::function<void()> ready) override {
        bool has_news = false;
        {
            std::lock_guard lock(box_->mutex);
            box_->claim = cached_positions;
            box_->import_ready = ready;
            has_news = box_->kv.has_value() || box_->failure.has_value();
        }
        if (has_news) ready();
    }
    // The blocks from the claim on, as the prefill side would send them; then the export is done.
    std::optional<Result<StagedKv>> poll() override {
        std::function<void()> wake_export;
        std::optional<Result<StagedKv>> answer;
        {
            std::lock_guard lock(box_->mutex);
            if (box_->failure) return Result<StagedKv>(Error{*box_->failure});
            if (!box_->kv || box_->taken) return std::nullopt;
            answer = std::move(*box_->kv);
            box_->taken = true;
            wake_export = box_->export_ready;
        }
        box_->notify(wake_export);
        return answer;
    }
    void cancel() override { cancelled = true; }
    std::atomic<bool> cancelled{false};

private:
    std::shared_ptr<Mailbox> box_;
};

const std::string kPrompt = "abcdefghijklmnopq";  // 17 tokens: four full blocks of 4 and one more

GenerationOptions greedy(int64_t max_tokens) {
    GenerationOptions options;
    options.prompt = {kPrompt.begin(), kPrompt.end()};
    options.max_tokens = max_tokens;
    options.sampling.temperature = 0.0f;
    return options;
}

class EngineKvTransfer : public ::testing::Test {
protected:
    bool wait_for(const std::function<bool()>& condition) {
        for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;
             std::this_thread::sleep_for(2ms))
            if (condition()) return true;
        return false;
    }

    Tokenizer tokenizer_ = testing::byte_tokenizer();
    testing::FakeModel prefill_model_{tokenizer_.vocab_size()};
    testing::FakeModel decode_model_{tokenizer_.vocab_size()};
    std::unique_ptr<KvBlockPool> prefill_pool_ = testing::tiny_pool(64);
    std::unique_ptr<KvBlockPool> decode_pool_ = testing::tiny_pool(64);
};

TEST_F(EngineKvTransfer, DecodeComputesOnlyTheLastPromptPositionAndAnswersAsOneEngine) {
    testing::FakeModel single_model{tokenizer_.vocab_size()};
    auto single_pool = testing::tiny_pool(64);
    Engine single(single_model, tokenizer_, *single_pool, EngineOptions{});
    const auto expected = testing::collect(*single.submit(greedy(6)).stream);
    ASSERT_FALSE(expected.error);

    auto box = std::make_shared<Mailbox>();
    Engine prefill(prefill_model_, tokenizer_, *prefill_pool_, EngineOptions{});
    Engine decode(decode_model_, tokenizer_, *decode_pool_, EngineOptions{});
    GenerationOptions prefill_options = greedy(1);
    prefill_options.kv_export = std::make_shared<MailboxExport>(box);
    auto prefill_stream = prefill.submit(std::move(prefill_options)).stream;
    GenerationOptions decode_options = greedy(6);
    decode_options.kv_import = std::make_shared<MailboxImport>(box);
    const auto answer = testing::collect(*decode.submit(std::move(decode_options)).stream);
    const auto prefill_answer = testing::collect(*prefill_stream);

    ASSERT_FALSE(answer.error) << *answer.error;
    ASSERT_FALSE(prefill_answer.error) << *prefill_answer.error;
    EXPECT_EQ(answer.tokens, expected.tokens);
    EXPECT_EQ(answer.text, expected.text);
    EXPECT_EQ(decode_model_.forward_tokens, 1 + 5);  // the last prompt position, then 5 decode steps
    EXPECT_EQ(prefill_model_.forward_tokens, 17);    // the prompt, once
    EXPECT_EQ(answer.usage.cached_tokens, 0);        // imported KV is not the prefix cache
    EXPECT_TRUE(wait_for([&] { return decode.idle() && prefill.idle(); }));
    EXPECT_EQ(decode_pool_->used_block_count(), 0);
    EXPECT_EQ(prefill_pool_->used_block_count(), 0);
}

TEST_F(EngineKvTransfer, ADecodeEngineClaimsOnlyWhatItsPrefixCacheLacks) {
    Engine decode(decode_model_, tokenizer_, *decode_pool_, EngineOptions{});
    ASSERT_FALSE(testing::collect(*decode.submit(greedy(2)).stream).error);  // caches 4 full blocks
    auto box = std::make_shared<Mailbox>();
    Engine prefill(prefill_model_, tokenizer_, *prefill_pool_, EngineOptions{});
    GenerationOptions decode_options = greedy(3);
    decode_options.kv_import = std::make_shared<MailboxImport>(box);
    auto decode_stream = decode.submit(std::move(decode_options)).stream;
    ASSERT_TRUE(wait_for([&] {
        std::lock_guard lock(box->mutex);
        return box->claim.has_value();
    }));
    GenerationOptions prefill_options = greedy(1);
    prefill_options.kv_export = std::make_shared<MailboxExport>(box);
    auto prefill_stream = prefill.submit(std::move(prefill_options)).stream;
    const auto answer = testing::collect(*decode_stream);
    ASSERT_FALSE(answer.error) << *answer.error;
    ASSERT_FALSE(testing::collect(*prefill_stream).error);
    std::lock_guard lock(box->mutex);
    EXPECT_EQ(*box->claim, 16);
    EXPECT_EQ(answer.usage.cached_tokens, 16);
}

TEST_F(EngineKvTransfer, AFailedImportEndsTheRequestWithItsErrorAndHoldsNoBlock) {
    auto box = std::make_shared<Mailbox>();
    box->failure = "the prefill server closed the connection";
    Engine decode(decode_model_, tokenizer_, *decode_pool_, EngineOptions{});
    GenerationOptions options = greedy(4);
    options.kv_import = std::make_shared<MailboxImport>(box);
    const auto answer = testing::collect(*decode.submit(std::move(options)).stream);
    ASSERT_TRUE(answer.error);
    EXPECT_EQ(*answer.error, "KV transfer failed: the prefill server closed the connection");
    EXPECT_EQ(decode_model_.forward_calls, 0);
    EXPECT_TRUE(wait_for([&] { return decode.idle(); }));
    EXPECT_EQ(decode_pool_->used_block_count(), 0);
}

TEST_F(EngineKvTransfer, AFailedExportEndsThePrefillRequestWithItsError) {
    auto box = std::make_shared<Mailbox>();
    Engine prefill(prefill_model_, tokenizer_, *prefill_pool_, EngineOptions{});
    GenerationOptions options = greedy(1);
    auto out = std::make_shared<MailboxExport>(box);
    options.kv_export = out;
    auto stream = prefill.submit(std::move(options)).stream;
    ASSERT_TRUE(wait_for([&] {
        std::lock_guard lock(box->mutex);
        return box->kv.has_value();
    }));
    EXPECT_FALSE(prefill.idle());  // generated its token, waits for the transfer
    std::function<void()> ready;
    {
        std::lock_guard lock(box->mutex);
        box->failure = "no decode server claimed room 7 within 1s";
        ready = box->export_ready;
    }
    ready();
    const auto answer = testing::collect(*stream);
    ASSERT_TRUE(answer.error);
    EXPECT_EQ(*answer.error, "KV transfer failed: no decode server claimed room 7 within 1s");
    EXPECT_TRUE(wait_for([&] { return prefill.idle(); }));
    EXPECT_EQ(prefill_pool_->used_block_count(), 0);
    EXPECT_TRUE(out->cancelled);  // told to drop whatever it still holds (a no-op after an outcome)
}

TEST_F(EngineKvTransfer, AReaderThatLeavesWhileTheKvIsOnItsWayCancelsTheTransfer) {
    auto box = std::make_shared<Mailbox>();
    Engine decode(decode_model_, tokenizer_, *decode_pool_, EngineOptions{});
    GenerationOptions options = greedy(4);
    auto in = std::make_shared<MailboxImport>(box);
    options.kv_import = in;
    auto stream = decode.submit(std::move(options)).stream;
    ASSERT_TRUE(wait_for([&] {
        std::lock_guard lock(box->mutex);
        return box->claim.has_value();
    }));
    stream->cancel();
    EXPECT_TRUE(wait_for([&] { return in->cancelled.load(); }));  // within the engine's 100 ms re-check
    EXPECT_TRUE(wait_for([&] { return decode.idle(); }));
    EXPECT_EQ(decode_pool_->used_block_count(), 0);
}

}  // namespace engine_kv_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace engine_kv_transfer_test {

// A sliding-window model whose prompt the prefill engine computes in chunks: its window layers have handed
// back their early blocks, and the decode engine must neither ask for them nor fall back to computing the
// prompt itself.
TEST(EngineKvTransferWindow, ADecodeEngineTakesTheKvOfAWindowModelWithoutRecomputingThePrompt) {
    Tokenizer tokenizer = testing::byte_tokenizer();
    testing::FakeModel prefill_model{tokenizer.vocab_size()}, decode_model{tokenizer.vocab_size()};
    auto prefill_pool = testing::tiny_pool(64, testing::tiny_window_kv_shape());
    auto decode_pool = testing::tiny_pool(64, testing::tiny_window_kv_shape());
    const EngineOptions chunked{64, 256, /*step_token_budget=*/8};
    Engine prefill(prefill_model, tokenizer, *prefill_pool, chunked);
    Engine decode(decode_model, tokenizer, *decode_pool, chunked);
    const std::string prompt = "abcdefghijklmnopqrstuvwxyzabcdefghijklmn";  // 40 tokens: 5 chunks
    auto make = [&](int64_t max_tokens) {
        GenerationOptions options;
        options.prompt = {prompt.begin(), prompt.end()};
        options.max_tokens = max_tokens;
        options.sampling.temperature = 0.0f;
        return options;
    };
    auto box = std::make_shared<Mailbox>();
    GenerationOptions prefill_options = make(1);
    prefill_options.kv_export = std::make_shared<MailboxExport>(box);
    auto prefill_stream = prefill.submit(std::move(prefill_options)).stream;
    GenerationOptions decode_options = make(4);
    decode_options.kv_import = std::make_shared<MailboxImport>(box);
    const auto answer = testing::collect(*decode.submit(std::move(decode_options)).stream);
    ASSERT_FALSE(answer.error) << *answer.error;
    ASSERT_FALSE(testing::collect(*prefill_stream).error);
    EXPECT_EQ(answer.text[0], "opqr");
    EXPECT_EQ(decode_model.forward_tokens, 1 + 3);  // no fallback to a local prefill
}

}  // namespace engine_kv_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace engine_kv_transfer_test {

bool claimed(Mailbox& box) {
    std::lock_guard lock(box.mutex);
    return box.claim.has_value();
}

// Back-pressure: a decode engine sends a claim only while its pool could hold every import in flight, so
// KV waiting for admission never outgrows the pool; the next claim goes out once the first KV has landed.
TEST(EngineKvTransferBackPressure, AnImportWaitsToClaimWhileThePoolIsPromisedToAnother) {
    Tokenizer tokenizer = testing::byte_tokenizer();
    testing::FakeModel prefill_model{tokenizer.vocab_size()}, decode_model{tokenizer.vocab_size()};
    auto prefill_pool = testing::tiny_pool(64);
    auto decode_pool = testing::tiny_pool(8);  // a 17-token prompt holds 5 blocks of 4: one import at a time
    Engine prefill(prefill_model, tokenizer, *prefill_pool, EngineOptions{});
    Engine decode(decode_model, tokenizer, *decode_pool, EngineOptions{});
    auto first = std::make_shared<Mailbox>(), second = std::make_shared<Mailbox>();
    std::vector<std::shared_ptr<GenerationStream>> streams;
    for (const auto& box : {first, second}) {
        GenerationOptions options = greedy(2);
        options.kv_import = std::make_shared<MailboxImport>(box);
        streams.push_back(decode.submit(std::move(options)).stream);
    }
    for (auto deadline = std::chrono::steady_clock::now() + 5s; !claimed(*first);) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
        std::this_thread::sleep_for(2ms);
    }
    std::this_thread::sleep_for(150ms);  // more than one of the engine's 100 ms re-checks
    EXPECT_FALSE(claimed(*second));

    for (const auto& box : {first, second}) {
        GenerationOptions options = greedy(1);
        options.kv_export = std::make_shared<MailboxExport>(box);
        ASSERT_FALSE(testing::collect(*prefill.submit(std::move(options)).stream).error);
    }
    for (const auto& stream : streams) {
        const auto answer = testing::collect(*stream);
        ASSERT_FALSE(answer.error) << *answer.error;
        EXPECT_EQ(answer.text[0], "rs");
    }
    EXPECT_TRUE(claimed(*second));
}

}  // namespace engine_kv_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace engine_kv_transfer_test {

class DropCounter final : public EngineObserver {
public:
    void on_prefix_lookup(int64_t, int64_t) override {}
    void on_first_token(double) override {}
    void on_inter_token(double) override {}
    void on_preemption() override {}
    void on_imported_kv_dropped() override { ++dropped; }
    void on_request_finished(RequestOutcome, const GenerationUsage&, const RequestTimings&) override {}
    std::atomic<int> dropped{0};
};

// KV that cannot be placed (here it starts past what the decode side holds) is dropped, counted, and the
// prompt computed here: slower, never a wrong answer.
TEST(EngineKvTransferFallback, KvThatCannotBePlacedIsCountedAndThePromptComputedHere) {
    Tokenizer tokenizer = testing::byte_tokenizer();
    testing::FakeModel model{tokenizer.vocab_size()};
    auto pool = testing::tiny_pool(64);
    DropCounter observer;
    Engine decode(model, tokenizer, *pool, EngineOptions{}, &observer);
    auto box = std::make_shared<Mailbox>();
    box->kv = StagedKv{8, 17, KvBlockPool::pool_block_bytes(pool->shape()), {}, {}};
    GenerationOptions options = greedy(3);
    options.kv_import = std::make_shared<MailboxImport>(box);
    const auto answer = testing::collect(*decode.submit(std::move(options)).stream);
    ASSERT_FALSE(answer.error) << *answer.error;
    EXPECT_EQ(answer.text[0], "rst");
    EXPECT_EQ(model.forward_tokens, 17 + 2);
    EXPECT_EQ(observer.dropped, 1);
}

}  // namespace engine_kv_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace engine_kv_transfer_test {

// Prefill side: a request waiting for its KV to be taken holds that KV in memory, so it counts against
// max_queued: a prefill server whose decode side lags refuses (429) instead of growing without bound.
TEST(EngineKvTransferQueue, ExportsWaitingForTheirDecodeServerCountAgainstTheQueue) {
    Tokenizer tokenizer = testing::byte_tokenizer();
    testing::FakeModel model{tokenizer.vocab_size()};
    auto pool = testing::tiny_pool(64);
    Engine prefill(model, tokenizer, *pool, EngineOptions{4, /*max_queued=*/1, 512});
    auto box = std::make_shared<Mailbox>();
    GenerationOptions options = greedy(1);
    options.kv_export = std::make_shared<MailboxExport>(box);
    auto waiting = prefill.submit(std::move(options)).stream;
    ASSERT_TRUE(waiting);
    for (auto deadline = std::chrono::steady_clock::now() + 5s; prefill.stats().exporting_requests == 0;) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
        std::this_thread::sleep_for(2ms);
    }
    const SubmitResult refused = prefill.submit(greedy(1));
    ASSERT_TRUE(refused.refusal);
    EXPECT_EQ(*refused.refusal, SubmitRefusal::QueueFull);
    waiting->cancel();
}

}  // namespace engine_kv_transfer_test
}  // namespace
}  // namespace tempered
