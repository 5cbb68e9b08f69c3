#include "disagg/kv_layout.h"

#include <sstream>

#include "core/fnv1a.h"
#include "kv/kv_block_pool.h"
#include "kv/kv_dtype_name.h"
#include "kv/kv_layer_groups.h"

namespace tempered {

KvLayout kv_layout_of(const KvCacheShape& shape, uint64_t model_fingerprint) {
    KvLayout layout;
    layout.dtype = shape.type;
    layout.block_size = shape.block_size;
    layout.layer_count = shape.layer_count;
    layout.kv_head_count = shape.kv_head_count;
    layout.head_dim = shape.head_dim;
    Fnv1a windows;
    for (int64_t window : shape.layer_windows) windows.value(window);
    layout.windows_hash = windows.hash();
    layout.group_count = kv_layer_groups(shape).group_count();
    layout.pool_block_bytes = KvBlockPool::pool_block_bytes(shape);
    layout.model_fingerprint = model_fingerprint;
    return layout;
}

namespace {

template <class T>
std::optional<std::string> differs(const char* field, const T& prefill, const T& decode) {
    if (prefill == decode) return std::nullopt;
    std::ostringstream message;
    message << field << " differs: prefill " << prefill << ", decode " << decode;
    return message.str();
}

std::string hex(uint64_t value) {
    std::ostringstream text;
    text << "0x" << std::hex << value;
    return text.str();
}

}  // namespace

std::optional<std::string> describe_mismatch(const KvLayout& prefill, const KvLayout& decode) {
    if (prefill.dtype != decode.dtype) {
        return differs("KV dtype", kv_dtype_flag_name(prefill.dtype), kv_dtype_flag_name(decode.dtype));
    }
    if (auto m = differs("KV block size", prefill.block_size, decode.block_size)) return m;
    if (auto m = differs("layer count", prefill.layer_count, decode.layer_count)) return m;
    if (auto m = differs("KV head count", prefill.kv_head_count, decode.kv_head_count)) return m;
    if (auto m = differs("head dim", prefill.head_dim, decode.head_dim)) return m;
    if (auto m = differs("attention windows (hash)", hex(prefill.windows_hash), hex(decode.windows_hash))) return m;
    if (auto m = differs("KV layer group count", prefill.group_count, decode.group_count)) return m;
    if (auto m = differs("pool block bytes", prefill.pool_block_bytes, decode.pool_block_bytes)) return m;
    return differs("model fingerprint (different weights)", hex(prefill.model_fingerprint),
                   hex(decode.model_fingerprint));
}

}  // namespace tempered
