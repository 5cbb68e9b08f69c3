// Our scalar dequantizers against the `gguf` Python package's numpy reference, on random raw blocks
// written by scripts/fixtures/make_dequant_fixtures.py. Both compute in float32 with the same operation
// order, so the comparison is bit-exact.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/dequantize.h"

namespace tempered {
namespace {
namespace dequantize_fixture_test {

std::vector<char> read_fixture(const std::string& name) {
    std::ifstream file(std::string(TEMPERED_SOURCE_DIR) + "/tests/fixtures/dequant/" + name, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

class DequantizeFixture : public ::testing::TestWithParam<DType> {};

TEST_P(DequantizeFixture, MatchesGgufPackageBitExactly) {
    const DType type = GetParam();
    const std::string name(dtype_name(type));
    const std::vector<char> raw = read_fixture(name + ".raw");
    const std::vector<char> expected_bytes = read_fixture(name + ".f32");
    ASSERT_FALSE(raw.empty()) << name;
    const auto& traits = dtype_traits(type);
    ASSERT_EQ(raw.size() % traits.block_bytes, 0u);
    const int64_t n = static_cast<int64_t>(raw.size() / traits.block_bytes) * traits.block_elements;
    ASSERT_EQ(expected_bytes.size(), static_cast<size_t>(n) * sizeof(float));

    ASSERT_TRUE(dequantize_supported(type));
    std::vector<float> actual(static_cast<size_t>(n));
    dequantize_row(type, raw.data(), actual.data(), n);
    int mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
        float expected;
        std::memcpy(&expected, expected_bytes.data() + i * sizeof(float), sizeof(float));
        if (std::bit_cast<uint32_t>(actual[i]) != std::bit_cast<uint32_t>(expected) && ++mismatches <= 5)
            ADD_FAILURE() << name << " element " << i << ": " << actual[i] << " vs gguf " << expected;
    }
    EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantizeFixture,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                           DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                           DType::Q6_K, DType::MXFP4),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return std::string(dtype_name(info.param));
                         });

// MXFP4 by the OCP Microscaling spec itself: E2M1 codes 0-7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and 8-15 their
// negatives; the E8M0 byte e scales by 2^(e - 127) (e = 0: 2^-127, a float32 subnormal).
TEST(DequantizeMxfp4, CodesAndScalesAsTheOcpSpecDefinesThem) {
    const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (const int e : {0, 1, 100, 127, 130, 200}) {
        uint8_t block[17] = {static_cast<uint8_t>(e)};
        for (int j = 0; j < 16; ++j) block[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
        float out[32];
        dequantize_row(DType::MXFP4, block, out, 32);
        const float scale = std::ldexp(1.0f, e - 127);
        for (int j = 0; j < 16; ++j) {
            const float low = (j < 8 ? 1.0f : -1.0f) * e2m1[j % 8] * scale;
            const float high = (15 - j < 8 ? 1.0f : -1.0f) * e2m1[(15 - j) % 8] * scale;
            EXPECT_EQ(out[j], low) << "e " << e << " code " << j;
            EXPECT_EQ(out[j + 16], high) << "e " << e << " code " << 15 - j;
        }
    }
}

}  // namespace dequantize_fixture_test
}  // namespace
}  // namespace tempered
