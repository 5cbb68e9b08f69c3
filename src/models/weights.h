// Looking up a model's tensors by name with the shape the architecture expects. Shared by every family,
// so that a missing tensor or a wrong shape is reported the same way everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "formats/gguf.h"
#include "kernels/cpu/matmul.h"

namespace tempered {

// The tensor `name` as a (rows, cols) weight matrix used in place; an Error if it is absent, has
// another shape, or has a type the kernels cannot read.
Result<WeightMatrix> find_matrix(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols);

// The 3-D tensor `name` of `count` stacked (rows, cols) matrices (GGUF dims {cols, rows, count}: routed
// experts, MLA's per-head k_b / v_b) as one WeightMatrix per slice, each used in place.
Result<std::vector<WeightMatrix>> find_matrix_stack(const GgufFile& file, const std::string& name, int64_t count,
                                                    int64_t rows, int64_t cols);

// The tensor `name` as n floats (norm weights, biases: small, so they are converted to float32 once).
Result<std::vector<float>> find_vector(const GgufFile& file, const std::string& name, int64_t n);

// The 2-D tensor `name` (GGUF dims {cols, rows}) as rows * cols floats, row after row: per-expert biases.
Result<std::vector<float>> find_table(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols);

// Replaces `matrix` by a float32 copy kept in `storage` (see ModelOptions::dequantize_weights).
void dequantize_matrix(WeightMatrix& matrix, std::vector<float>& storage);

}  // namespace tempered
