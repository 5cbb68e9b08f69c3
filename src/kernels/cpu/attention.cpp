#include "kernels/cpu/attention.h"

#include "kernels/cpu/attention_kernel.h"

namespace tempered {

int64_t attention_scratch_floats(int64_t heads, int64_t head_dim) {
    return attention_detail::scratch_floats(kMaxRunTokens * heads, head_dim);
}

bool attention_run_supports(int64_t head_dim) { return head_dim > 0 && head_dim % 16 == 0 && head_dim <= 512; }

void attend_run_with_isa(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table,
                         float scale, float* scratch, CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx512: return attend_run_avx512(run, kv, block_table, scale, scratch);
        case CpuIsa::Avx2: return attend_run_avx2(run, kv, block_table, scale, scratch);
        case CpuIsa::Scalar: break;
    }
    attend_run_scalar(run, kv, block_table, scale, scratch);
}

void attend_run(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                float* scratch) {
    attend_run_with_isa(run, kv, block_table, scale, scratch, active_cpu_isa());
}

}  // namespace tempered
