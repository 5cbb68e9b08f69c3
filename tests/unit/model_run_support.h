// Loading a real or tiny model for a test and running a prompt through it, shared by the oracle tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "kv/kv_block_pool.h"
#include "models/model.h"

namespace tempered::testing {

// A model with what it runs on: its file (the weights point into it), a 2-thread pool and a float16 KV cache.
struct TestModel {
    std::unique_ptr<GgufFile> file;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvBlockPool> cache;
};

// Loads `path` with a KV cache of `positions` positions.
inline Result<TestModel> load_test_model(const std::filesystem::path& path, int64_t positions) {
    TestModel loaded;
    auto file = GgufFile::open(path.string());
    if (!file) return file.error();
    loaded.file = std::make_unique<GgufFile>(std::move(file.value()));
    loaded.pool = std::make_unique<ThreadPool>(2);
    auto model = load_model(*loaded.file, *loaded.pool);
    if (!model) return model.error();
    loaded.model = std::move(model.value());
    auto cache = KvBlockPool::for_positions(kv_cache_shape(loaded.model->config(), DType::F16), positions);
    if (!cache) return cache.error();
    loaded.cache = std::move(cache.value());
    return loaded;
}

// Runs `tokens` of `sequence` from `first_position` in one batch, giving the sequence the KV blocks it
// needs first; the logits of the last token.
inline std::vector<float> forward_tokens(Model& model, KvBlockPool& cache, const std::vector<int32_t>& tokens,
                                         int32_t first_position, int32_t sequence = 0) {
    EXPECT_TRUE(cache.ensure_capacity(sequence, first_position + static_cast<int64_t>(tokens.size())));
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i)
        batch.add(tokens[i], first_position + static_cast<int32_t>(i), sequence, i + 1 == tokens.size());
    std::vector<float> logits(static_cast<size_t>(model.config().vocab_size));
    const Status status = model.forward(batch, cache, logits.data());
    EXPECT_TRUE(status.ok()) << status.error().message;
    return logits;
}

}  // namespace tempered::testing
