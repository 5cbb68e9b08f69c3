#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/half.h"

namespace tempered {
namespace {
namespace half_test {

TEST(Half, RoundTripsEveryFiniteHalf) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const auto bits = static_cast<uint16_t>(h);
        if ((bits & 0x7C00) == 0x7C00) continue;  // inf / NaN
        EXPECT_EQ(float_to_half(half_to_float(bits)), bits) << h;
    }
}

TEST(Half, KnownValues) {
    EXPECT_EQ(half_to_float(0x3C00), 1.0f);
    EXPECT_EQ(half_to_float(0xC000), -2.0f);
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
    EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
    EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // rounds up to infinity
}

TEST(BFloat16, RoundsToNearestEven) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
    EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
    EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);
}

}  // namespace half_test
}  // namespace
}  // namespace tempered
