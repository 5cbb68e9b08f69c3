// The AVX-512 instantiation of latent_attention_kernel.h.
#include "kernels/cpu/latent_attention_kernel.h"
#include "kernels/cpu/vec16_avx512.h"

namespace tempered {

void attend_latent_avx512(const float* queries, int64_t heads, const LatentCacheView& cache,
                          std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                          float* scratch, float* out) {
    latent_detail::attend_latent_run<simd::Avx512Vec>(queries, heads, cache, block_table, length, kv_lora_rank, scale,
                                                      scratch, out);
}

}  // namespace tempered
