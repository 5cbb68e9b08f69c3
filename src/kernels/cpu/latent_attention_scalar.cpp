// The scalar instantiation of latent_attention_kernel.h: the reference the AVX2 and AVX-512 ones
// match bit for bit.
#include "kernels/cpu/latent_attention_kernel.h"
#include "kernels/cpu/vec16_scalar.h"

namespace tempered {

void attend_latent_scalar(const float* queries, int64_t heads, const LatentCacheView& cache,
                          std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                          float* scratch, float* out) {
    latent_detail::attend_latent_run<simd::ScalarVec>(queries, heads, cache, block_table, length, kv_lora_rank, scale,
                                                      scratch, out);
}

}  // namespace tempered
