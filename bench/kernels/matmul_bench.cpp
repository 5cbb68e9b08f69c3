// Times matmul() on the shapes of SmolLM2-135M (hidden 576, ffn 1536, vocab 49152; Q4_1 weights, Q8_0
// tied output) for each ISA, thread count and batch, plus one decode token's matmuls over a whole
// model's worth of distinct (cold) weights. Not part of the CMake build; after building tempered_lib:
//   g++ -std=gnu++20 -O3 -DNDEBUG -Isrc bench/kernels/matmul_bench.cpp build/libtempered_lib.a
//       -lpthread -o /tmp/matmul_bench && /tmp/matmul_bench          (or `/tmp/matmul_bench decode`)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/matmul.h"

using namespace tempered;

namespace {

std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols) {
    const auto& traits = dtype_traits(type);
    const size_t blocks = static_cast<size_t>(rows * cols / traits.block_elements);
    std::vector<uint8_t> data(blocks * traits.block_bytes);
    std::mt19937 rng(1);
    for (auto& value : data) value = static_cast<uint8_t>(rng());
    const uint16_t d = float_to_half(0.01f);
    for (size_t b = 0; b < blocks; ++b) {
        std::memcpy(data.data() + b * traits.block_bytes, &d, 2);
        if (type == DType::Q4_1) std::memcpy(data.data() + b * traits.block_bytes + 2, &d, 2);
    }
    return data;
}

// Seconds per call, best of several repetitions of a loop lasting ~10 ms (weights hot in cache).
double time_matmul(const WeightMatrix& w, int64_t batch, ThreadPool& pool, CpuIsa isa) {
    std::vector<float> x(static_cast<size_t>(batch * w.cols), 0.5f), y(static_cast<size_t>(batch * w.rows));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
    matmul_with_isa(w, x.data(), batch, y.data(), pool, isa);
    int iterations = 1;
    double best = 1e9;
    for (int rep = 0; rep < 12; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iterations; ++i) matmul_with_isa(w, x.data(), batch, y.data(), pool, isa);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, seconds / iterations);
        if (seconds < 0.01) iterations = static_cast<int>(iterations * 0.012 / std::max(seconds, 1e-6)) + 1;
    }
    return best;
}

}  // namespace

// One decode token's matmuls over a whole model's worth of distinct weights (~96 MB, more than the
// caches hold), as the forward pass streams them: the realistic decode cost.
double time_decode_token(ThreadPool& pool, CpuIsa isa) {
    struct Layer {
        std::vector<uint8_t> q, k, v, o, gate, up, down;
    };
    static std::vector<Layer> layers;
    static std::vector<uint8_t> output;
    if (layers.empty()) {
        for (int l = 0; l < 30; ++l)
            layers.push_back({random_weights(DType::Q4_1, 576, 576), random_weights(DType::Q4_1, 192, 576),
                              random_weights(DType::Q4_1, 192, 576), random_weights(DType::Q4_1, 576, 576),
                              random_weights(DType::Q4_1, 1536, 576), random_weights(DType::Q4_1, 1536, 576),
                              random_weights(DType::Q4_1, 576, 1536)});
        output = random_weights(DType::Q8_0, 49152, 576);
    }
    std::vector<float> x(1536, 0.25f), y(49152);
    const auto run = [&](const std::vector<uint8_t>& data, DType type, int64_t rows, int64_t cols) {
        matmul_with_isa(WeightMatrix{type, data.data(), rows, cols}, x.data(), 1, y.data(), pool, isa);
    };
    double best = 1e9;
    for (int rep = 0; rep < 15; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        for (const Layer& layer : layers) {
            run(layer.q, DType::Q4_1, 576, 576);
            run(layer.k, DType::Q4_1, 192, 576);
            run(layer.v, DType::Q4_1, 192, 576);
            run(layer.o, DType::Q4_1, 576, 576);
            run(layer.gate, DType::Q4_1, 1536, 576);
            run(layer.up, DType::Q4_1, 1536, 576);
            run(layer.down, DType::Q4_1, 576, 1536);
        }
        run(output, DType::Q8_0, 49152, 576);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

int main(int argc, char** argv) {
    const bool decode_only = argc > 1 && std::string(argv[1]) == "decode";
    for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512}) {
            if (!cpu_supports(isa)) continue;
            const double seconds = time_decode_token(pool, isa);
            std::printf("threads %d %-6s decode token, all matmuls, cold weights: %.2f ms -> %.0f tok/s (%.1f GB/s)\n",
                        threads, std::string(cpu_isa_name(isa)).c_str(), seconds * 1e3, 1.0 / seconds,
                        96.4e6 / seconds / 1e9);
        }
    }
    if (decode_only) return 0;
    struct Case {
        const char* name;
        DType type;
        int64_t rows, cols;
    };
    const Case cases[] = {
        {"gate/up 1536x576 Q4_1", DType::Q4_1, 1536, 576},
        {"down 576x1536 Q4_1", DType::Q4_1, 576, 1536},
        {"output 49152x576 Q8_0", DType::Q8_0, 49152, 576},
    };
    for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
            if (!cpu_supports(isa)) continue;
            for (const Case& c : cases) {
                const auto data = random_weights(c.type, c.rows, c.cols);
                const WeightMatrix w{c.type, data.data(), c.rows, c.cols};
                const double bytes = static_cast<double>(data.size());
                for (int64_t batch : {int64_t{1}, int64_t{64}}) {
                    if (isa == CpuIsa::Scalar && (batch > 1 || c.rows > 2000)) continue;
                    const double seconds = time_matmul(w, batch, pool, isa);
                    std::printf("threads %d %-6s %-24s batch %3lld: %9.1f us  %6.1f GB/s  %7.1f GMAC/s\n", threads,
                                std::string(cpu_isa_name(isa)).c_str(), c.name, static_cast<long long>(batch),
                                seconds * 1e6, bytes / seconds / 1e9,
                                static_cast<double>(c.rows * c.cols * batch) / seconds / 1e9);
                }
            }
        }
    }
}
