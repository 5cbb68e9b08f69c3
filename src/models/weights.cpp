#include "models/weights.h"

#include "kernels/cpu/dequantize.h"

namespace tempered {
namespace {

std::string shape_string(const std::vector<uint64_t>& dims) {
    std::string text = "[";
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + "]";
}

Result<const GgufTensorInfo*> find_tensor(const GgufFile& file, const std::string& name,
                                          const std::vector<uint64_t>& dims) {
    const GgufTensorInfo* tensor = file.tensor(name);
    if (!tensor) return Error{"model: missing tensor " + name};
    if (tensor->dims != dims) {
        return Error{"model: tensor " + name + " has shape " + shape_string(tensor->dims) + ", expected " +
                     shape_string(dims)};
    }
    if (!dequantize_supported(tensor->type)) {
        return Error{"model: tensor " + name + " has type " + std::string(dtype_name(tensor->type)) +
                     ", which this build cannot compute with"};
    }
    const auto row_bytes = dtype_row_bytes(tensor->type, dims[0]);
    if (!row_bytes || *row_bytes * (tensor->element_count() / dims[0]) != tensor->size_bytes || !tensor->data) {
        return Error{"model: tensor " + name + " has a size that does not match its shape and type"};
    }
    return tensor;
}

}  // namespace

Result<WeightMatrix> find_matrix(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols) {
    auto tensor = find_tensor(file, name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)});
    if (!tensor) return tensor.error();
    return WeightMatrix{(*tensor)->type, (*tensor)->data, rows, cols};
}

Result<std::vector<WeightMatrix>> find_matrix_stack(const GgufFile& file, const std::string& name, int64_t count,
                                                    int64_t rows, int64_t cols) {
    auto tensor = find_tensor(file, name,
                              {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), static_cast<uint64_t>(count)});
    if (!tensor) return tensor.error();
    const uint64_t slice_bytes = (*tensor)->size_bytes / static_cast<uint64_t>(count);
    std::vector<WeightMatrix> slices;
    for (int64_t i = 0; i < count; ++i)
        slices.push_back(
            WeightMatrix{(*tensor)->type, (*tensor)->data + static_cast<uint64_t>(i) * slice_bytes, rows, cols});
    return slices;
}

Result<std::vector<float>> find_vector(const GgufFile& file, const std::string& name, int64_t n) {
    auto tensor = find_tensor(file, name, {static_cast<uint64_t>(n)});
    if (!tensor) return tensor.error();
    std::vector<float> values(static_cast<size_t>(n));
    dequantize_row((*tensor)->type, (*tensor)->data, values.data(), n);
    return values;
}

Result<std::vector<float>> find_table(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols) {
    auto matrix = find_matrix(file, name, rows, cols);
    if (!matrix) return matrix.error();
    std::vector<float> values;
    dequantize_matrix(*matrix, values);
    return values;
}

void dequantize_matrix(WeightMatrix& matrix, std::vector<float>& storage) {
    storage.resize(static_cast<size_t>(matrix.rows * matrix.cols));
    const uint64_t row_bytes = *dtype_row_bytes(matrix.type, static_cast<uint64_t>(matrix.cols));
    for (int64_t r = 0; r < matrix.rows; ++r) {
        dequantize_row(matrix.type, static_cast<const uint8_t*>(matrix.data) + static_cast<uint64_t>(r) * row_bytes,
                       &storage[static_cast<size_t>(r * matrix.cols)], matrix.cols);
    }
    matrix = WeightMatrix{DType::F32, storage.data(), matrix.rows, matrix.cols};
}

}  // namespace tempered
