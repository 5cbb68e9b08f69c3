#include "models/kv_cache.h"

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"

namespace tempered {

int64_t KvCacheShape::element_bytes() const { return static_cast<int64_t>(dtype_traits(type).block_bytes); }

int64_t KvCacheShape::slot_bytes() const { return kv_head_count * head_dim * element_bytes(); }

void store_kv_position(const KvCacheShape& shape, const KvLayerView& layer, int32_t block, int64_t slot,
                       const float* key, const float* value) {
    uint8_t* key_block = layer.keys + block * layer.block_stride;
    uint8_t* value_block = layer.values + block * layer.block_stride;
    const int64_t width = shape.kv_head_count * shape.head_dim, element = shape.element_bytes();
    float_to_kv(shape.type, value, value_block + shape.value_offset(slot, 0, 0), width);
    thread_local std::vector<uint8_t> converted;
    converted.resize(static_cast<size_t>(width * element));
    float_to_kv(shape.type, key, converted.data(), width);
    for (int64_t i = 0; i < width; ++i)  // element i is (kv_head i / head_dim, dimension i % head_dim)
        std::memcpy(key_block + shape.key_offset(slot, 0, i), &converted[static_cast<size_t>(i * element)],
                    static_cast<size_t>(element));
}

int64_t KvCacheShape::block_bytes() const { return block_size * slot_bytes(); }

KvCacheShape kv_cache_shape(const ModelConfig& config, DType type, int64_t block_size) {
    return KvCacheShape{config.layer_count, config.kv_head_count, config.head_dim, block_size, type};
}

bool kv_type_supported(DType type) { return type == DType::F16 || type == DType::BF16 || type == DType::F32; }

Result<std::unique_ptr<PagedKvCache>> PagedKvCache::create(const KvCacheShape& shape, int64_t block_count) {
    if (!kv_type_supported(shape.type)) {
        return Error{"KV cache: type " + std::string(dtype_name(shape.type)) + " is not supported (f16, bf16, f32)"};
    }
    if (shape.layer_count < 1 || shape.kv_head_count < 1 || shape.head_dim < 1 || shape.block_size < 1 ||
        block_count < 1 || block_count > INT32_MAX) {
        return Error{"KV cache: every dimension and the block count must be positive"};
    }
    const double bytes = 2.0 * static_cast<double>(shape.layer_count) * static_cast<double>(block_count) *
                         static_cast<double>(shape.block_bytes());
    if (bytes > static_cast<double>(int64_t{1} << 40)) return Error{"KV cache: " + std::to_string(bytes) + " bytes is too large"};
    return std::unique_ptr<PagedKvCache>(new PagedKvCache(shape, block_count));
}

Result<std::unique_ptr<PagedKvCache>> PagedKvCache::for_positions(const KvCacheShape& shape, int64_t positions) {
    if (shape.block_size < 1) return Error{"KV cache: block size must be positive"};
    return create(shape, (positions + shape.block_size - 1) / shape.block_size);
}

PagedKvCache::PagedKvCache(const KvCacheShape& shape, int64_t block_count)
    : shape_(shape),
      block_count_(block_count),
      keys_(static_cast<size_t>(shape.layer_count * block_count * shape.block_bytes())),
      values_(keys_.size()) {
    free_blocks_.reserve(static_cast<size_t>(block_count));
    for (int64_t b = block_count - 1; b >= 0; --b) free_blocks_.push_back(static_cast<int32_t>(b));
}

std::span<const int32_t> PagedKvCache::block_table(int32_t sequence) const {
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return {};
    return it->second;
}

KvCache::LayerStorage PagedKvCache::layer_storage(int64_t layer) {
    const int64_t layer_offset = layer * block_count_ * shape_.block_bytes();
    return {keys_.data() + layer_offset, values_.data() + layer_offset, shape_.block_bytes()};
}

Status PagedKvCache::reserve(int32_t sequence, int64_t positions) {
    auto& table = block_tables_[sequence];
    const int64_t needed = (positions + shape_.block_size - 1) / shape_.block_size - static_cast<int64_t>(table.size());
    if (needed <= 0) return Ok{};
    if (needed > free_block_count()) {
        if (table.empty()) block_tables_.erase(sequence);
        return Error{"KV cache: sequence " + std::to_string(sequence) + " needs " + std::to_string(needed) +
                     " more blocks, " + std::to_string(free_block_count()) + " are free"};
    }
    for (int64_t i = 0; i < needed; ++i) {
        table.push_back(free_blocks_.back());
        free_blocks_.pop_back();
    }
    return Ok{};
}

void PagedKvCache::release(int32_t sequence) {
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return;
    free_blocks_.insert(free_blocks_.end(), it->second.rbegin(), it->second.rend());
    block_tables_.erase(it);
}

}  // namespace tempered
