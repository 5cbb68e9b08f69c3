// What the engine and scheduler tests share: a byte-level tokenizer built by hand, a fake Model that
// needs no GGUF file, an observer that counts what the engine reports, and a tiny KV pool. The fake
// model's logits are a pure function of the batch token, so a greedy request's output is known in advance.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/engine_observer.h"
#include "kv/kv_block_pool.h"
#include "kv/kv_layer_groups.h"
#include "models/model.h"
#include "tokenizer/byte_encoding.h"
#include "tokenizer/tokenizer.h"

namespace tempered::testing {

constexpr int32_t kEndOfText = 256;  // the byte tokens come first

constexpr int32_t kThinkStart = 257;  // thinking_tokenizer()'s <think>
constexpr int32_t kThinkEnd = 258;    // and </think>

// The 256 byte tokens, then "<|endoftext|>" as end of generation. No merges: a byte is a token.
inline VocabSpec byte_vocabulary() {
    VocabSpec spec;
    spec.model = TokenizerModel::kBytePairGpt2;
    spec.pre_tokenizer = "gpt-2";
    for (int byte = 0; byte < 256; ++byte) spec.tokens.push_back(byte_to_gpt2_char(static_cast<uint8_t>(byte)));
    spec.tokens.push_back("<|endoftext|>");
    spec.token_types.assign(256, static_cast<int32_t>(GgufTokenType::kNormal));
    spec.token_types.push_back(static_cast<int32_t>(GgufTokenType::kControl));
    spec.eos_id = kEndOfText;
    return spec;
}

inline Tokenizer tokenizer_of(const VocabSpec& spec) {
    auto tokenizer = Tokenizer::from_spec(spec);
    EXPECT_TRUE(tokenizer.ok()) << (tokenizer.ok() ? "" : tokenizer.error().message);
    return std::move(*tokenizer);
}

inline Tokenizer byte_tokenizer() { return tokenizer_of(byte_vocabulary()); }

// The byte tokenizer plus <think> and </think> as user-defined tokens (their text is shown, as in R1's
// vocabulary, so the splitter has marker text to drop).
inline Tokenizer thinking_tokenizer() {
    VocabSpec spec = byte_vocabulary();
    spec.tokens.insert(spec.tokens.end(), {"<think>", "</think>"});
    spec.token_types.push_back(static_cast<int32_t>(GgufTokenType::kUserDefined));
    spec.token_types.push_back(static_cast<int32_t>(GgufTokenType::kUserDefined));
    return tokenizer_of(spec);
}

// Greedy output of the fake model: each token is followed by the next letter, 'z' by 'a'.
inline int32_t fake_next_token(int32_t token) { return token >= 'a' && token < 'z' ? token + 1 : 'a'; }

// One layer, one KV head of 8 dimensions, blocks of 4 positions: a pool of a few blocks costs nothing.
inline KvCacheShape tiny_kv_shape() { return KvCacheShape{1, 1, 8, 4, DType::F32}; }

// Two layers of that shape, layer 0 attending to the last 6 positions, layer 1 to all: two groups.
inline KvCacheShape tiny_window_kv_shape() { return KvCacheShape{2, 1, 8, 4, DType::F32, {6, 0}}; }

inline std::unique_ptr<KvBlockPool> tiny_pool(int64_t blocks, const KvCacheShape& shape = tiny_kv_shape()) {
    auto pool = KvBlockPool::create(shape, blocks);
    EXPECT_TRUE(pool.ok());
    return std::move(pool.value());
}

// Whether every block a token at `position` of `sequence` writes or reads, in every layer (a window
// layer reads its last W positions, a global one all), is in the cache: never a handed-back -1.
inline bool reads_only_cached_blocks(const KvCache& cache, int32_t sequence, int64_t position) {
    const KvCacheShape& shape = cache.shape();
    for (int64_t layer = 0; layer < shape.layer_count; ++layer) {
        const int64_t window = shape.layer_windows.empty() ? 0 : shape.layer_windows[static_cast<size_t>(layer)];
        const auto table = cache.block_table(sequence, layer);
        for (int64_t b = first_block_in_window(position, window, shape.block_size); b <= position / shape.block_size;
             ++b)
            if (b >= static_cast<int64_t>(table.size()) || table[static_cast<size_t>(b)] < 0) return false;
    }
    return true;
}

// A Model without weights. forward() refuses a batch whose tokens lack KV blocks, in any layer's
// window (as the real one must never be given), counts the tokens it is given and writes logits that
// make fake_next_token() the most likely next token, the end-of-text token a close second.
class FakeModel final : public Model {
public:
    explicit FakeModel(int64_t vocab_size, int64_t context_length = 4096) {
        config_.architecture = "fake";
        config_.vocab_size = vocab_size;
        config_.context_length = context_length;
    }
    const ModelConfig& config() const override { return config_; }

    Status forward(const Batch& batch, KvCache& cache, float* logits) override {
        { std::lock_guard wait_for_the_test(gate); }
        if (delay_per_step.count() > 0) std::this_thread::sleep_for(delay_per_step);
        for (const BatchToken& token : batch.tokens)
            if (token.position >= cache.capacity(token.sequence) ||
                !reads_only_cached_blocks(cache, token.sequence, token.position))
                return Error{"fake model: position " + std::to_string(token.position) + " of sequence " +
                             std::to_string(token.sequence) + " has no KV block"};
        const auto vocab = static_cast<size_t>(config_.vocab_size);
        size_t row = 0;
        for (const BatchToken& token : batch.tokens) {
            if (!token.wants_logits) continue;
            float* out = logits + row++ * vocab;
            for (size_t i = 0; i < vocab; ++i) out[i] = static_cast<float>(i % 7) * 0.01f;
            out[kEndOfText] = 4.0f;
            out[fake_next_token(token.token)] = 5.0f;
        }
        forward_calls += 1;
        forward_tokens += batch.size();
        return Ok{};
    }

    std::atomic<int64_t> forward_calls{0};
    std::atomic<int64_t> forward_tokens{0};
    std::chrono::milliseconds delay_per_step{0};
    // A test holds this while it submits requests that must meet in the engine: a step that starts
    // meanwhile waits inside forward(), so no request can run to its end before the others arrive.
    std::mutex gate;

private:
    ModelConfig config_;
};

// Counts every report. Called on the engine thread, read by the test: hence the lock.
class CountingObserver final : public EngineObserver {
public:
    void on_prefix_lookup(int64_t prompt_tokens, int64_t cached_tokens) override {
        std::lock_guard lock(mutex_);
        ++prefix_lookups_;
        looked_up_tokens_ += prompt_tokens;
        cached_tokens_ += cached_tokens;
    }
    void on_first_token(double) override {}
    void on_inter_token(double) override {}
    void on_preemption() override {
        std::lock_guard lock(mutex_);
        ++preemptions_;
    }
    void on_request_finished(RequestOutcome outcome, const GenerationUsage&, const RequestTimings&) override {
        std::lock_guard lock(mutex_);
        outcomes_.push_back(outcome);
    }
    void on_speculation(int64_t drafts, int64_t accepted) override {
        std::lock_guard lock(mutex_);
        speculation_steps_.emplace_back(drafts, accepted);
    }

    int64_t prefix_lookups() const { return locked(prefix_lookups_); }
    int64_t looked_up_tokens() const { return locked(looked_up_tokens_); }
    int64_t cached_tokens() const { return locked(cached_tokens_); }
    int64_t preemptions() const { return locked(preemptions_); }
    std::vector<RequestOutcome> outcomes() const { return locked(outcomes_); }
    // (drafts, accepted) of each verifying step, in order.
    std::vector<std::pair<int64_t, int64_t>> speculation_steps() const { return locked(speculation_steps_); }

private:
    template <typename T>
    T locked(const T& value) const {
        std::lock_guard lock(mutex_);
        return value;
    }
    mutable std::mutex mutex_;
    int64_t prefix_lookups_ = 0;
    int64_t looked_up_tokens_ = 0;
    int64_t cached_tokens_ = 0;
    int64_t preemptions_ = 0;
    std::vector<RequestOutcome> outcomes_;
    std::vector<std::pair<int64_t, int64_t>> speculation_steps_;
};

// What a request produced, per choice, with its final usage or error.
struct Collected {
    std::vector<std::vector<int32_t>> tokens;  // per choice
    std::vector<std::string> text;
    GenerationUsage usage;
    std::optional<std::string> error;
    bool done = false;
};

// Reads a request's events until the last one (or a generous deadline, for slow sanitizer builds).
inline Collected collect(GenerationStream& stream, int n = 1) {
    Collected out;
    out.tokens.resize(static_cast<size_t>(n));
    out.text.resize(static_cast<size_t>(n));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (std::chrono::steady_clock::now() < deadline) {
        auto event = stream.next(std::chrono::milliseconds(50));
        if (!event) continue;
        for (const auto& delta : event->deltas) {
            auto& tokens = out.tokens.at(static_cast<size_t>(delta.index));
            tokens.insert(tokens.end(), delta.tokens.begin(), delta.tokens.end());
            out.text.at(static_cast<size_t>(delta.index)) += delta.text;
        }
        if (event->done) {
            out.usage = event->usage;
            out.error = event->error;
            out.done = true;
            return out;
        }
    }
    ADD_FAILURE() << "the stream did not finish";
    return out;
}

}  // namespace tempered::testing
