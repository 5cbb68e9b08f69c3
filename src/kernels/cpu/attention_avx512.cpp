// The AVX-512 instantiation of attention_kernel.h: one 512-bit register per vector.
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/vec16_avx512.h"

namespace tempered {

void attend_run_avx512(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                       float* scratch) {
    attention_detail::attend_run<simd::Avx512Vec>(run, kv, block_table, scale, scratch);
}

}  // namespace tempered
