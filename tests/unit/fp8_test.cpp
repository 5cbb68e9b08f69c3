// FP8 E4M3 conversions (kernels/cpu/fp8.h): the scalar functions against the format's definition (every
// code decoded by its formula; floats encoded to the nearest finite code by search, ties to the even
// code, saturating at 448), and every ISA's bulk conversion against the scalar ones bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/cpu/fp8.h"

namespace tempered {
namespace {
namespace fp8_test {

// The value of a code by the OCP definition, in double; NaN for S.1111.111.
double defined_value(int code) {
    const int sign = code >> 7, exponent = (code >> 3) & 15, mantissa = code & 7;
    if (exponent == 15 && mantissa == 7) return std::numeric_limits<double>::quiet_NaN();
    const double magnitude =
        exponent == 0 ? std::ldexp(mantissa / 8.0, -6) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
    return sign ? -magnitude : magnitude;
}

// The code float_to_e4m3 must give, by search: the nearest finite code of the same sign, on a tie the
// one with an even mantissa; anything beyond 448 is 448.
uint8_t nearest_code(float x) {
    const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
    if (std::isnan(x)) return sign | 0x7F;
    const double magnitude = std::min<double>(std::fabs(static_cast<double>(x)), 448.0);
    int best = 0;
    for (int code = 1; code < 0x7F; ++code) {
        const double gap = std::fabs(defined_value(code) - magnitude);
        const double best_gap = std::fabs(defined_value(best) - magnitude);
        if (gap < best_gap || (gap == best_gap && (code & 1) == 0)) best = code;
    }
    return static_cast<uint8_t>(sign | best);
}

std::vector<float> tricky_floats(std::mt19937& rng) {
    std::vector<float> values;
    for (int code = 0; code < 256; ++code) {  // every code, the midpoints to its neighbour, and just around them
        const double value = defined_value(code), next = defined_value((code & 0x80) | ((code & 0x7F) + 1));
        if (std::isnan(value)) continue;
        values.push_back(static_cast<float>(value));
        if (std::isnan(next)) continue;
        const float middle = static_cast<float>((value + next) / 2);
        values.insert(values.end(), {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e9f),
                                     std::nextafter(middle, -1e9f)});
    }
    for (float special : {448.0f, 449.0f, 463.9f, 464.0f, 465.0f, 480.0f, 1e6f, 3e38f, 0x1p-10f, 0x1p-11f, 1e-30f,
                          1e-45f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        values.push_back(special);
        values.push_back(-special);
    }
    std::uniform_real_distribution<float> log_magnitude(-14.0f, 10.0f);
    std::uniform_int_distribution<uint32_t> any_bits;
    for (int i = 0; i < 20000; ++i) {
        const float magnitude = std::exp2(log_magnitude(rng));
        values.push_back(i % 2 ? magnitude : -magnitude);
        values.push_back(std::bit_cast<float>(any_bits(rng)));  // any float at all: huge, tiny, NaN
    }
    return values;
}

TEST(Fp8E4m3, EveryCodeDecodesToItsDefinedValue) {
    for (int code = 0; code < 256; ++code) {
        const float value = e4m3_to_float(static_cast<uint8_t>(code));
        const double expected = defined_value(code);
        if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(value)) << code;
            EXPECT_EQ(std::signbit(value), code >= 0x80) << code;
        } else {
            EXPECT_EQ(static_cast<double>(value), expected) << code;
            EXPECT_EQ(std::signbit(value), code >= 0x80) << code;
        }
    }
    EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
    EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);
    EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);
}

TEST(Fp8E4m3, EveryFiniteCodeEncodesBackToItself) {
    for (int code = 0; code < 256; ++code) {
        if ((code & 0x7F) == 0x7F) continue;
        EXPECT_EQ(float_to_e4m3(e4m3_to_float(static_cast<uint8_t>(code))), code) << code;
    }
}

TEST(Fp8E4m3, EncodingRoundsToNearestEvenAndSaturates) {
    std::mt19937 rng(8);
    for (float x : tricky_floats(rng)) {
        ASSERT_EQ(float_to_e4m3(x), nearest_code(x)) << x;
    }
    EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7E);
    EXPECT_EQ(float_to_e4m3(-1e9f), 0xFE);
    EXPECT_EQ(float_to_e4m3(0x1p-10f), 0x00);   // half the smallest subnormal: a tie, to even (zero)
    EXPECT_EQ(float_to_e4m3(0x1.8p-9f), 0x02);  // 1.5 steps: a tie, to even (2)
    EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
}

TEST(Fp8E4m3, EveryIsaConvertsAsTheScalarFunctions) {
    std::mt19937 rng(9);
    const std::vector<float> floats = tricky_floats(rng);
    std::vector<uint8_t> codes(256);
    for (int code = 0; code < 256; ++code) codes[static_cast<size_t>(code)] = static_cast<uint8_t>(code);
    for (CpuIsa isa : supported_isas()) {
        std::vector<uint8_t> encoded(floats.size());
        floats_to_e4m3_with_isa(floats.data(), encoded.data(), static_cast<int64_t>(floats.size()), isa);
        for (size_t i = 0; i < floats.size(); ++i)
            ASSERT_EQ(encoded[i], float_to_e4m3(floats[i])) << cpu_isa_name(isa) << " " << floats[i];
        for (int64_t offset : {0, 3}) {  // a tail shorter than a vector, too
            std::vector<float> decoded(codes.size());
            e4m3_to_floats_with_isa(codes.data() + offset, decoded.data(), 256 - offset, isa);
            for (int64_t i = 0; i < 256 - offset; ++i)
                ASSERT_EQ(std::bit_cast<uint32_t>(decoded[static_cast<size_t>(i)]),
                          std::bit_cast<uint32_t>(e4m3_to_float(codes[static_cast<size_t>(i + offset)])))
                    << cpu_isa_name(isa) << " code " << i + offset;
        }
    }
}

}  // namespace fp8_test
}  // namespace
}  // namespace tempered
