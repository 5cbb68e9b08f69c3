// The model fingerprint two disaggregated servers compare: equal for the same bytes, different when the
// metadata, a tensor's shape or the first bytes of a tensor's weights differ.
#include <gtest/gtest.h>

#include "../support/gguf_writer.h"
#include "formats/model_fingerprint.h"

namespace tempered {
namespace {
namespace gguf_model_fingerprint_test {

using testing::GgufWriter;

std::vector<uint8_t> model_bytes(const std::string& name, uint8_t weight_seed, uint64_t rows = 4) {
    std::vector<uint8_t> weights(rows * 8 * 4);
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<uint8_t>(weight_seed + i);
    return GgufWriter().string("general.name", name).tensor({"token_embd.weight", {8, rows}, 0, weights, {}}).bytes();
}

uint64_t fingerprint_of(const std::vector<uint8_t>& bytes) {
    auto file = GgufFile::parse(bytes);
    EXPECT_TRUE(file.ok()) << file.error().message;
    return model_fingerprint(file.value());
}

TEST(ModelFingerprint, SameBytesSameFingerprintAnyChangeAnother) {
    uint64_t base = fingerprint_of(model_bytes("tiny", 1));
    EXPECT_EQ(fingerprint_of(model_bytes("tiny", 1)), base);
    EXPECT_NE(fingerprint_of(model_bytes("tiny-ft", 1)), base);  // metadata
    EXPECT_NE(fingerprint_of(model_bytes("tiny", 2)), base);     // the weights (a fine-tune)
    EXPECT_NE(fingerprint_of(model_bytes("tiny", 1, 5)), base);  // a tensor's shape
}

}  // namespace gguf_model_fingerprint_test
}  // namespace
}  // namespace tempered
