// The row-chunking driver of the integer kernels (matmul_kernels.h), written once and instantiated by
// matmul_q8_avx2.cpp and matmul_q8_avx512.cpp, each over its own tiles, as attention_kernel.h is over
// vec16_*.h. The driver only orders the tiles; what a tile computes, and so every output bit, stays the ISA
// file's. A `Tiles` type provides:
//   template <int T, int B> static void row_range(const Matrix&, const QuantizedActivations&, int64_t begin,
//                                                  int64_t end, int64_t b0, float* y)
//     rows [begin, end) against activation rows [b0, b0 + B), T row groups per tile (rows on AVX2, row
//     pairs on AVX-512), then a tail;
//   static constexpr int64_t kRowByRowBatch
//     batches of at most this many rows go one activation row at a time over all weight rows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul_kernels.h"

namespace tempered::q8_detail {
// Internal linkage: each file compiled for its own instruction set keeps its own copies, so the linker never
// merges a helper compiled with AVX-512 into the AVX2 path (as it may with inline functions at -O0).
namespace {

struct Matrix {
    const uint8_t* data;
    size_t row_bytes;
    int64_t rows;  // y's row stride
};

inline constexpr int kDecodeTile = 4;   // row groups per tile for small batches: independent accumulators
inline constexpr int kPrefillTile = 2;  // row groups per tile inside a chunk, each shared by kBatchTile rows
inline constexpr int kBatchTile = 4;    // activation rows that share each unpacked weight block

// Rows go in chunks small enough to stay in L2 while every batch tile passes over them, so that
// outputs are written row by row rather than scattered over the whole batch (TLB misses on y).
template <typename Tiles>
void rows(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t begin, int64_t end) {
    const Matrix matrix{static_cast<const uint8_t*>(weights.data),
                        static_cast<size_t>(*dtype_row_bytes(weights.type, weights.cols)), weights.rows};
    if (x.batch <= Tiles::kRowByRowBatch) {
        for (int64_t b = 0; b < x.batch; ++b) Tiles::template row_range<kDecodeTile, 1>(matrix, x, begin, end, b, y);
        return;
    }
    const int64_t chunk_rows =
        std::max<int64_t>(8, (int64_t{256} << 10) / static_cast<int64_t>(matrix.row_bytes) / 8 * 8);
    for (int64_t chunk = begin; chunk < end; chunk += chunk_rows) {
        const int64_t chunk_end = std::min(end, chunk + chunk_rows);
        int64_t b0 = 0;
        for (; b0 + kBatchTile <= x.batch; b0 += kBatchTile)
            Tiles::template row_range<kPrefillTile, kBatchTile>(matrix, x, chunk, chunk_end, b0, y);
        for (; b0 < x.batch; ++b0) Tiles::template row_range<kPrefillTile, 1>(matrix, x, chunk, chunk_end, b0, y);
    }
}

}  // namespace
}  // namespace tempered::q8_detail
