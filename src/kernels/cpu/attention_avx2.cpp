// The AVX2 instantiation of attention_kernel.h: a vector is two 256-bit registers (lanes 0-7, 8-15).
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/vec16_avx2.h"

namespace tempered {

void attend_run_avx2(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                     float* scratch) {
    attention_detail::attend_run<simd::Avx2Vec>(run, kv, block_table, scale, scratch);
}

}  // namespace tempered
