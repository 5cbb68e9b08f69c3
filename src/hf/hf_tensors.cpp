#include "hf/hf_tensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "core/half.h"
#include "kernels/cpu/fp8.h"

namespace tempered {
namespace {

struct NameRule {
    std::string_view hf_suffix;  // after "layers.N."
    std::string_view gguf_suffix;
};
// Per-layer names; Gemma's post_attention_layernorm is a post-norm, the others' the feed-forward's pre-norm.
constexpr std::array kLayerRules = {
    NameRule{"input_layernorm.weight", "attn_norm.weight"},
    NameRule{"self_attn.q_proj.weight", "attn_q.weight"},
    NameRule{"self_attn.k_proj.weight", "attn_k.weight"},
    NameRule{"self_attn.v_proj.weight", "attn_v.weight"},
    NameRule{"self_attn.q_proj.bias", "attn_q.bias"},
    NameRule{"self_attn.k_proj.bias", "attn_k.bias"},
    NameRule{"self_attn.v_proj.bias", "attn_v.bias"},
    NameRule{"self_attn.o_proj.weight", "attn_output.weight"},
    NameRule{"self_attn.q_norm.weight", "attn_q_norm.weight"},
    NameRule{"self_attn.k_norm.weight", "attn_k_norm.weight"},
    NameRule{"mlp.gate_proj.weight", "ffn_gate.weight"},
    NameRule{"mlp.up_proj.weight", "ffn_up.weight"},
    NameRule{"mlp.down_proj.weight", "ffn_down.weight"},
    NameRule{"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    NameRule{"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    NameRule{"mlp.gate.weight", "ffn_gate_inp.weight"},  // a mixture's router
    NameRule{"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
    NameRule{"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
    NameRule{"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
    NameRule{"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
    // DeepSeek's multi-head latent attention (the older GGUF layout: one attn_kv_b)
    NameRule{"self_attn.q_a_proj.weight", "attn_q_a.weight"},
    NameRule{"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
    NameRule{"self_attn.q_b_proj.weight", "attn_q_b.weight"},
    NameRule{"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
    NameRule{"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
    NameRule{"self_attn.kv_b_proj.weight", "attn_kv_b.weight"},
};

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The decimal number `text` starts with, and what follows it; nullopt when it starts otherwise.
std::optional<std::pair<int64_t, std::string_view>> leading_number(std::string_view text) {
    size_t digits = 0;
    while (digits < text.size() && digits < 7 && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits >= text.size() || text[digits] != '.') return std::nullopt;
    return std::pair(std::stoll(std::string(text.substr(0, digits))), text.substr(digits + 1));
}

Result<std::string> layer_tensor_name(const HfModelDescription& model, std::string_view rest) {
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0 || digits > 6 || digits >= rest.size() || rest[digits] != '.') return Error{"no layer number"};
    const std::string layer(rest.substr(0, digits));
    const int64_t index = std::stoll(layer);
    // DeepSeek-V3's multi-token-prediction layers follow the model's (num_nextn_predict_layers): not read yet.
    if (index >= model.layer_count && index < model.layer_count + model.prediction_layers) return std::string();
    if (index >= model.layer_count) return Error{"layer " + layer + " past num_hidden_layers"};
    const std::string_view suffix = rest.substr(digits + 1);
    if (suffix == "post_attention_layernorm.weight")
        return "blk." + layer + (model.architecture == "gemma3" ? ".post_attention_norm.weight" : ".ffn_norm.weight");
    if (suffix == "self_attn.rotary_emb.inv_freq") return std::string();
    for (const NameRule& rule : kLayerRules)
        if (suffix == rule.hf_suffix) return "blk." + layer + "." + std::string(rule.gguf_suffix);
    return Error{"unknown"};
}

// The row `row` of a permuted Q/K matrix comes from: llama.cpp's converter reshapes the rows to
// (heads, 2, head_dim / 2) and swaps the last two axes, so that rope's pairs become adjacent.
int64_t permuted_source_row(int64_t row, int64_t rows, int64_t heads) {
    const int64_t head_dim = rows / heads;
    const int64_t half = head_dim / 2;
    const int64_t head = row / head_dim;
    const int64_t within = row % head_dim;
    return head * head_dim + (within % 2) * half + within / 2;
}

// Where a row's values come from: the tensor, and for FP8 its block scales.
struct Source {
    const SafetensorsTensor* tensor = nullptr;
    const SafetensorsTensor* scale_inv = nullptr;  // (ceil(rows / block_rows), ceil(cols / block_cols))
    int64_t block_rows = 0;
    int64_t block_cols = 0;
};

float scalar_at(const SafetensorsTensor& tensor, uint64_t index) {
    const uint8_t* bytes = tensor.data.data() + index * safetensors_dtype_bytes(tensor.dtype);
    if (tensor.dtype == SafetensorsDType::F32) {
        float value = 0;
        std::memcpy(&value, bytes, sizeof(value));
        return value;
    }
    uint16_t bits = 0;
    std::memcpy(&bits, bytes, 2);
    return tensor.dtype == SafetensorsDType::F16 ? half_to_float(bits) : bf16_to_float(bits);
}

// `count` elements of type T from unaligned bytes, each converted to float by `to_float`: one typed loop the
// compiler vectorizes (a per-element dtype switch made loading a 0.5B model's BF16 copy take seconds).
template <typename T, typename ToFloat>
void read_elements(const uint8_t* bytes, int64_t count, float* out, ToFloat to_float) {
    for (int64_t i = 0; i < count; ++i) {
        T value;
        std::memcpy(&value, bytes + static_cast<size_t>(i) * sizeof(T), sizeof(T));
        out[i] = to_float(value);
    }
}

// Row `row` of the source as `cols` floats.
Status read_row(const Source& source, int64_t row, int64_t cols, float* out) {
    const SafetensorsTensor& tensor = *source.tensor;
    const uint64_t first = static_cast<uint64_t>(row) * static_cast<uint64_t>(cols);
    const uint8_t* bytes = tensor.data.data() + first * safetensors_dtype_bytes(tensor.dtype);
    switch (tensor.dtype) {
        case SafetensorsDType::F32: std::memcpy(out, bytes, static_cast<size_t>(cols) * sizeof(float)); return Ok{};
        case SafetensorsDType::F16: read_elements<uint16_t>(bytes, cols, out, half_to_float); return Ok{};
        case SafetensorsDType::BF16: read_elements<uint16_t>(bytes, cols, out, bf16_to_float); return Ok{};
        case SafetensorsDType::F8_E4M3: {
            if (source.scale_inv == nullptr)
                return Error{"tensor '" + tensor.name + "' is F8_E4M3 without block scales"};
            const uint64_t scale_cols = source.scale_inv->shape[1];
            const uint64_t scale_row = static_cast<uint64_t>(row / source.block_rows) * scale_cols;
            for (int64_t i = 0; i < cols; ++i) {
                const float scale =
                    scalar_at(*source.scale_inv, scale_row + static_cast<uint64_t>(i / source.block_cols));
                out[i] = e4m3_to_float(bytes[i]) * scale;
            }
            return Ok{};
        }
        default:
            return Error{"tensor '" + tensor.name + "' has dtype " + std::string(safetensors_dtype_name(tensor.dtype)) +
                         " (F32, F16, BF16 and block-scaled F8_E4M3 are read)"};
    }
}

// The FP8 scales of `tensor`, checked against its shape; null for other dtypes.
Result<Source> source_of(const HfModelDescription& model, const SafetensorsDirectory& weights,
                         const SafetensorsTensor& tensor) {
    Source source{&tensor, nullptr, model.fp8_block_rows, model.fp8_block_cols};
    if (tensor.dtype != SafetensorsDType::F8_E4M3) return source;
    if (model.fp8_block_rows == 0 || tensor.shape.size() != 2)
        return Error{"tensor '" + tensor.name + "' is F8_E4M3 but config.json has no fp8 quantization_config"};
    source.scale_inv = weights.tensor(tensor.name + "_scale_inv");
    if (source.scale_inv == nullptr) return Error{"tensor '" + tensor.name + "' has no " + tensor.name + "_scale_inv"};
    const auto blocks = [](uint64_t n, int64_t block) {
        return (n + static_cast<uint64_t>(block) - 1) / static_cast<uint64_t>(block);
    };
    const std::vector<uint64_t> expected = {blocks(tensor.shape[0], model.fp8_block_rows),
                                            blocks(tensor.shape[1], model.fp8_block_cols)};
    const auto dtype = source.scale_inv->dtype;
    if (source.scale_inv->shape != expected ||
        (dtype != SafetensorsDType::F32 && dtype != SafetensorsDType::BF16 && dtype != SafetensorsDType::F16))
        return Error{"tensor '" + tensor.name + "_scale_inv' must be float, one scale per weight block"};
    return source;
}

// llama.cpp's quantize_row_q8_0_ref: d = max|x| / 127, q = round(x / d), d stored as a half.
void quantize_row_q8_0(const float* x, int64_t n, uint8_t* out) {
    for (int64_t block = 0; block < n / 32; ++block) {
        const float* values = x + block * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(values[i]));
        const float d = amax / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t d_half = float_to_half(d);
        uint8_t* dst = out + block * 34;
        std::memcpy(dst, &d_half, 2);
        for (int i = 0; i < 32; ++i)
            dst[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(values[i] * inverse)));
    }
}

void write_row(DType type, const float* row, int64_t n, uint8_t* out) {
    switch (type) {
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t bits = float_to_half(row[i]);
                std::memcpy(out + 2 * i, &bits, 2);
            }
            return;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t bits = float_to_bf16(row[i]);
                std::memcpy(out + 2 * i, &bits, 2);
            }
            return;
        case DType::Q8_0: quantize_row_q8_0(row, n, out); return;
        default: std::memcpy(out, row, static_cast<size_t>(n) * sizeof(float)); return;
    }
}

// work(begin, end) over [0, rows) in one range per core when the tensor is large enough to be worth threads; the
// first error any range met.
Status for_row_ranges(int64_t rows, int64_t cols, const std::function<Status(int64_t, int64_t)>& work) {
    constexpr int64_t kElementsPerThread = int64_t{1} << 20;
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t threads = std::clamp<int64_t>(rows * cols / kElementsPerThread, 1, std::min(cores, rows));
    if (threads == 1) return work(0, rows);
    std::vector<Status> results(static_cast<size_t>(threads), Ok{});
    {
        std::vector<std::jthread> workers;
        for (int64_t t = 0; t < threads; ++t)
            workers.emplace_back(
                [&, t] { results[static_cast<size_t>(t)] = work(rows * t / threads, rows * (t + 1) / threads); });
    }
    for (Status& result : results)
        if (!result) return result;
    return Ok{};
}

struct Conversion {
    DType type = DType::F32;
    bool permute = false;
    int64_t permute_heads = 0;
    bool plus_one = false;
};

Conversion conversion_for(const HfModelDescription& model, const std::string& gguf_name,
                          const SafetensorsTensor& tensor, DType matrix_type) {
    Conversion conversion;
    const bool matrix = tensor.shape.size() == 2;
    conversion.type = matrix && hf_matrix_type_supported(matrix_type) ? matrix_type : DType::F32;
    if (conversion.type == DType::Q8_0 && tensor.shape.back() % 32 != 0) conversion.type = DType::F16;
    if (model.permute_query_key && matrix) {
        if (ends_with(gguf_name, ".attn_q.weight")) conversion.permute_heads = model.head_count;
        if (ends_with(gguf_name, ".attn_k.weight")) conversion.permute_heads = model.kv_head_count;
        conversion.permute = conversion.permute_heads > 0;
    }
    conversion.plus_one = model.norms_plus_one && !matrix && ends_with(gguf_name, "norm.weight");
    return conversion;
}

// The tensor converted into `storage`, described GGUF's way.
Result<GgufTensorInfo> convert_tensor(const Source& source, const std::string& gguf_name, const Conversion& conversion,
                                      std::vector<AlignedBuffer>& storage) {
    const SafetensorsTensor& tensor = *source.tensor;
    if (tensor.shape.empty() || tensor.shape.size() > 2)
        return Error{"tensor '" + tensor.name + "': only 1-D and 2-D tensors are read"};
    const int64_t cols = static_cast<int64_t>(tensor.shape.back());
    const int64_t rows = tensor.shape.size() == 2 ? static_cast<int64_t>(tensor.shape[0]) : 1;
    if (conversion.permute && (rows % conversion.permute_heads != 0 || (rows / conversion.permute_heads) % 2 != 0))
        return Error{"tensor '" + tensor.name + "': rows do not split into heads of even size"};
    const auto row_bytes = dtype_row_bytes(conversion.type, static_cast<uint64_t>(cols));
    if (!row_bytes) return Error{"tensor '" + tensor.name + "': rows do not fill whole blocks"};
    storage.emplace_back(static_cast<size_t>(*row_bytes * static_cast<uint64_t>(rows)));
    uint8_t* out = reinterpret_cast<uint8_t*>(storage.back().data());
    // Rows convert independently: spread them over the cores (a 0.5B model's BF16 copy loads in ~2x less time).
    const auto convert_rows = [&](int64_t begin, int64_t end) -> Status {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
            const int64_t source_row = conversion.permute ? permuted_source_row(r, rows, conversion.permute_heads) : r;
            if (auto read = read_row(source, source_row, cols, row.data()); !read) return read.error();
            if (conversion.plus_one)
                for (float& value : row) value += 1.0f;
            write_row(conversion.type, row.data(), cols, out + static_cast<uint64_t>(r) * *row_bytes);
        }
        return Ok{};
    };
    if (auto converted = for_row_ranges(rows, cols, convert_rows); !converted) return converted.error();
    GgufTensorInfo info;
    info.name = gguf_name;
    info.type = conversion.type;
    info.dims = tensor.shape.size() == 2 ? std::vector<uint64_t>{tensor.shape[1], tensor.shape[0]} : tensor.shape;
    info.size_bytes = *row_bytes * static_cast<uint64_t>(rows);
    info.data = out;
    return info;
}

// The experts of one stack converted into one buffer, expert after expert: GGUF dims {cols, rows, experts}.
Result<GgufTensorInfo> convert_stack(const HfModelDescription& model, const SafetensorsDirectory& weights,
                                     const std::string& stack_name,
                                     const std::vector<const SafetensorsTensor*>& experts, DType matrix_type,
                                     std::vector<AlignedBuffer>& storage) {
    std::vector<GgufTensorInfo> slices;
    std::vector<AlignedBuffer> slice_storage;
    for (size_t e = 0; e < experts.size(); ++e) {
        if (experts[e] == nullptr) return Error{stack_name + ": expert " + std::to_string(e) + " is missing"};
        if (experts[e]->shape != experts[0]->shape) return Error{stack_name + ": experts of different shapes"};
        auto source = source_of(model, weights, *experts[e]);
        if (!source) return source.error();
        auto slice = convert_tensor(*source, stack_name, conversion_for(model, stack_name, *experts[e], matrix_type),
                                    slice_storage);
        if (!slice) return slice.error();
        slices.push_back(std::move(slice).value());
    }
    const uint64_t slice_bytes = slices[0].size_bytes;
    storage.emplace_back(static_cast<size_t>(slice_bytes * slices.size()));
    uint8_t* out = reinterpret_cast<uint8_t*>(storage.back().data());
    for (size_t e = 0; e < slices.size(); ++e) std::memcpy(out + e * slice_bytes, slices[e].data, slice_bytes);
    GgufTensorInfo info = slices[0];
    info.dims.push_back(slices.size());
    info.size_bytes = slice_bytes * slices.size();
    info.data = out;
    return info;
}

}  // namespace

std::optional<ExpertSlice> expert_slice(std::string_view hf_name, int64_t layer_count) {
    constexpr std::string_view kLayers = "model.layers.";
    if (!starts_with(hf_name, kLayers)) return std::nullopt;
    const auto layer = leading_number(hf_name.substr(kLayers.size()));
    if (!layer || layer->first >= layer_count || !starts_with(layer->second, "mlp.experts.")) return std::nullopt;
    const auto expert = leading_number(layer->second.substr(std::string_view("mlp.experts.").size()));
    if (!expert) return std::nullopt;
    const std::string_view kind = expert->second;
    const std::string prefix = "blk." + std::to_string(layer->first) + ".";
    if (kind == "gate_proj.weight") return ExpertSlice{prefix + "ffn_gate_exps.weight", expert->first};
    if (kind == "up_proj.weight") return ExpertSlice{prefix + "ffn_up_exps.weight", expert->first};
    if (kind == "down_proj.weight") return ExpertSlice{prefix + "ffn_down_exps.weight", expert->first};
    return std::nullopt;
}

bool hf_matrix_type_supported(DType type) {
    return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::Q8_0;
}

Result<std::string> gguf_tensor_name(const HfModelDescription& model, std::string_view hf_name) {
    for (const std::string& prefix : model.ignored_prefixes)
        if (starts_with(hf_name, prefix)) return std::string();
    if (!model.head_name.empty() && hf_name == model.head_name) return std::string("output.weight");
    if (ends_with(hf_name, "lm_head.weight")) return std::string();                          // a tied head saved anyway
    if (model.fp8_block_rows > 0 && ends_with(hf_name, "_scale_inv")) return std::string();  // read with its matrix
    for (const std::string& prefix : model.tensor_prefixes) {
        if (!starts_with(hf_name, prefix)) continue;
        const std::string_view rest = hf_name.substr(prefix.size());
        if (rest == "embed_tokens.weight") return std::string("token_embd.weight");
        if (rest == "norm.weight") return std::string("output_norm.weight");
        if (starts_with(rest, "layers.")) {
            auto name = layer_tensor_name(model, rest.substr(7));
            if (name) return name;
        }
    }
    return Error{"tensor '" + std::string(hf_name) + "' is not one tempered reads for " + model.hf_architecture};
}

Result<GgufFile> assemble_hf_model(const HfModelDescription& model, const SafetensorsDirectory& weights,
                                   const std::string& path, DType matrix_type, GgufMetadata extra_metadata) {
    if (!hf_matrix_type_supported(matrix_type))
        return Error{"weights: " + std::string(dtype_name(matrix_type)) + " is not a type matrices are converted to"};
    std::vector<GgufTensorInfo> tensors;
    std::vector<AlignedBuffer> storage;
    std::map<std::string, std::vector<const SafetensorsTensor*>> stacks;  // routed experts, by GGUF stack
    for (const SafetensorsTensor* tensor : weights.tensors()) {
        if (const auto slice = expert_slice(tensor->name, model.layer_count)) {
            auto& experts = stacks[slice->stack_name];
            if (slice->expert >= (int64_t{1} << 16))
                return Error{path + ": expert index " + std::to_string(slice->expert)};
            if (experts.size() <= static_cast<size_t>(slice->expert))
                experts.resize(static_cast<size_t>(slice->expert) + 1);
            experts[static_cast<size_t>(slice->expert)] = tensor;
            continue;
        }
        auto name = gguf_tensor_name(model, tensor->name);
        if (!name) return Error{path + ": " + name.error().message};
        if (name->empty()) continue;
        auto source = source_of(model, weights, *tensor);
        if (!source) return Error{path + ": " + source.error().message};
        auto info = convert_tensor(*source, *name, conversion_for(model, *name, *tensor, matrix_type), storage);
        if (!info) return Error{path + ": " + info.error().message};
        tensors.push_back(std::move(info).value());
    }
    for (const auto& [stack_name, experts] : stacks) {
        auto info = convert_stack(model, weights, stack_name, experts, matrix_type, storage);
        if (!info) return Error{path + ": " + info.error().message};
        tensors.push_back(std::move(info).value());
    }
    if (!model.head_name.empty() && weights.tensor(model.head_name) == nullptr)
        return Error{path + ": config.json does not tie the output to the embeddings, and " + model.head_name +
                     " is missing"};
    GgufMetadata metadata = model.metadata;
    for (auto& entry : extra_metadata) metadata.push_back(std::move(entry));
    return GgufFile::assemble(path, std::move(metadata), std::move(tensors), std::move(storage));
}

}  // namespace tempered
