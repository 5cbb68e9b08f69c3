// The safetensors reader (formats/safetensors.h) on files written here byte by byte: a good file's
// tensors, shapes and data, and every malformed header refused with a message naming what is wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "formats/safetensors.h"

namespace tempered {
namespace {
namespace formats_safetensors_test {

// An 8-byte little-endian length, the header text, then the data buffer.
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& buffer) {
    std::vector<uint8_t> bytes(8 + header.size() + buffer.size());
    const uint64_t length = header.size();
    for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(length >> (8 * i));
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    if (!buffer.empty()) std::memcpy(bytes.data() + 8 + header.size(), buffer.data(), buffer.size());
    return bytes;
}

std::vector<uint8_t> counting_bytes(size_t count) {
    std::vector<uint8_t> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<uint8_t>(i);
    return out;
}

std::string error_of(const std::string& header, size_t buffer_bytes) {
    const auto bytes = file_of(header, counting_bytes(buffer_bytes));
    auto parsed = SafetensorsFile::parse(bytes);
    return parsed ? "" : parsed.error().message;
}

TEST(Safetensors, ReadsTensorsShapesDataAndMetadata) {
    const std::string header = R"({"b.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
                               R"("a.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                               R"("scale":{"dtype":"F8_E4M3","shape":[],"data_offsets":[28,29]},)"
                               R"("__metadata__":{"format":"pt"}}  )";  // writers pad the header with spaces
    const auto bytes = file_of(header, counting_bytes(29));
    auto parsed = SafetensorsFile::parse(bytes);
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(parsed->tensors().size(), 3u);
    EXPECT_EQ(parsed->tensors()[0].name, "a.weight");  // in data order
    const SafetensorsTensor* b = parsed->tensor("b.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, SafetensorsDType::BF16);
    EXPECT_EQ(b->shape, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(b->element_count(), 6u);
    ASSERT_EQ(b->data.size(), 12u);
    EXPECT_EQ(b->data[0], 16);
    EXPECT_EQ(b->data.data(), bytes.data() + 8 + header.size() + 16);
    const SafetensorsTensor* scale = parsed->tensor("scale");
    ASSERT_NE(scale, nullptr);
    EXPECT_EQ(scale->element_count(), 1u);  // a scalar
    EXPECT_EQ(parsed->metadata().at("format"), "pt");
    EXPECT_EQ(parsed->tensor("missing"), nullptr);
}

TEST(Safetensors, EmptyTensorsAndAnEmptyFileAreFine) {
    EXPECT_EQ(error_of(R"({})", 0), "");
    EXPECT_EQ(error_of(R"({"e":{"dtype":"F16","shape":[0,4],"data_offsets":[0,0]},)"
                       R"("f":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                       2),
              "");
}

TEST(Safetensors, RefusesHeadersThatDoNotFit) {
    std::vector<uint8_t> short_file = {1, 2, 3};
    EXPECT_NE(SafetensorsFile::parse(short_file).error().message.find("too short"), std::string::npos);
    auto bytes = file_of("{}", {});
    bytes[0] = 200;  // the header claims more bytes than the file has
    EXPECT_NE(SafetensorsFile::parse(bytes).error().message.find("does not fit"), std::string::npos);
    bytes = file_of("{}", {});
    bytes[7] = 0xff;  // a length near 2^64
    EXPECT_NE(SafetensorsFile::parse(bytes).error().message.find("does not fit"), std::string::npos);
    EXPECT_NE(error_of("[1,2]", 0).find("not a JSON object"), std::string::npos);
    EXPECT_NE(error_of("{\"a\":", 0).find("not valid JSON"), std::string::npos);
    EXPECT_NE(error_of(R"({"a":{"b":{"c":{"d":[1]}}}})", 0).find("nests deeper"), std::string::npos);
}

TEST(Safetensors, RefusesEntriesThatLie) {
    EXPECT_NE(error_of(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", 2).find("unknown dtype 'Q4'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8).find("make 12 bytes"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"w":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})", 8).find("outside"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[4,2]}})", 4).find("outside"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"w":{"dtype":"U8","shape":[-2],"data_offsets":[0,2]}})", 2).find("non-negative"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0]}})", 2).find("[begin, end]"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"w":{"dtype":"U8","data_offsets":[0,2]}})", 2).find("no \"shape\""), std::string::npos);
    EXPECT_NE(
        error_of(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8).find("overflows"),
        std::string::npos);
    EXPECT_NE(error_of(R"({"w":7})", 0).find("not an object"), std::string::npos);
    EXPECT_NE(error_of(R"({"__metadata__":{"k":1}})", 0).find("not a string"), std::string::npos);
}

TEST(Safetensors, RefusesGapsOverlapsAndTrailingBytes) {
    EXPECT_NE(error_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                       R"("b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
                       5)
                  .find("a gap"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                       4)
                  .find("overlaps"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 3).find("end at byte 2"),
              std::string::npos);
}

}  // namespace formats_safetensors_test
}  // namespace
}  // namespace tempered
