// The scalar instantiation of attention_kernel.h: a vector is 16 floats in an array, each operation a
// plain loop. The reference the AVX2 and AVX-512 instantiations match bit for bit.
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/vec16_scalar.h"

namespace tempered {

void attend_run_scalar(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                       float* scratch) {
    attention_detail::attend_run<simd::ScalarVec>(run, kv, block_table, scale, scratch);
}

}  // namespace tempered
