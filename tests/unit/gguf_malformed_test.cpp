// Each class of malformed GGUF file is rejected with an error that names the offending field.
#include <gtest/gtest.h>

#include <initializer_list>
#include <limits>

#include "../support/gguf_writer.h"
#include "formats/gguf.h"

namespace tempered {
namespace {
namespace gguf_malformed_test {

using testing::GgufTensorSpec;
using testing::GgufWriter;
namespace encode = testing::gguf_encode;

constexpr uint64_t kHuge = uint64_t{1} << 60;

// Parses `bytes` and expects failure with a message that starts with "gguf: " and contains every part.
void expect_error_at(int line, const std::vector<uint8_t>& bytes, std::initializer_list<std::string_view> parts) {
    SCOPED_TRACE("expect_error at line " + std::to_string(line));
    auto file = GgufFile::parse(bytes);
    ASSERT_FALSE(file.ok()) << "parsed a malformed file";
    const std::string& message = file.error().message;
    EXPECT_EQ(message.rfind("gguf: ", 0), 0u) << message;
    for (auto part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

#define expect_error(...) expect_error_at(__LINE__, __VA_ARGS__)

std::vector<uint8_t> zeros(size_t n) { return std::vector<uint8_t>(n, 0); }

GgufWriter small_valid() {
    GgufWriter writer;
    writer.string("general.architecture", "llama")
        .array("tokenizer.ggml.tokens", encode::string_array({"a", "b", "c"}))
        .array("tokenizer.ggml.scores", encode::array<float>(6, {0.f, 1.f, 2.f}))
        .tensor({"token_embd.weight", {32, 2}, 3, zeros(40), {}})
        .tensor({"output_norm.weight", {8}, 0, zeros(32), {}});
    return writer;
}

TEST(GgufMalformed, SmallValidFileParses) {
    auto file = GgufFile::parse(small_valid().bytes());
    ASSERT_TRUE(file.ok()) << file.error().message;
}

TEST(GgufMalformed, EveryTruncationFails) {
    const auto bytes = small_valid().bytes();
    for (size_t length = 0; length < bytes.size(); ++length) {
        std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
        auto file = GgufFile::parse(prefix);
        ASSERT_FALSE(file.ok()) << "truncated to " << length << " bytes parsed";
        EXPECT_EQ(file.error().message.rfind("gguf: ", 0), 0u) << file.error().message;
    }
}

TEST(GgufMalformed, TruncationInsideMetadataNamesTheKey) {
    const auto bytes = small_valid().bytes();
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + 140);  // inside the tokens' last string
    expect_error(prefix, {"metadata 'tokenizer.ggml.tokens'", "string value length 1 exceeds", "at byte 132"});
}

TEST(GgufMalformed, HeaderProblems) {
    expect_error({}, {"too short", "magic"});
    expect_error({'G', 'G'}, {"too short"});
    expect_error({'G', 'G', 'M', 'L', 1, 0, 0, 0}, {"bad magic 0x47474d4c", "not a GGUF file", "at byte 0"});
    expect_error({'G', 'G', 'U', 'F', 1, 0}, {"version", "at byte 4"});
    expect_error(GgufWriter(1).bytes(), {"version 1 is not supported", "at byte 4"});
    expect_error(GgufWriter(4).bytes(), {"unsupported GGUF version 4"});
    expect_error(GgufWriter(0x03000000).bytes(), {"big-endian"});
    std::vector<uint8_t> header_only{'G', 'G', 'U', 'F', 3, 0, 0, 0};
    expect_error(header_only, {"tensor count", "needs 8 bytes", "at byte 8"});
}

TEST(GgufMalformed, HugeCountsFailBeforeAllocating) {
    expect_error(GgufWriter().claim_metadata_count(kHuge).bytes(),
                 {"metadata count 1152921504606846976", "at byte 16"});
    expect_error(GgufWriter().claim_tensor_count(kHuge).bytes(), {"tensor count 1152921504606846976", "at byte 8"});
    expect_error(GgufWriter().claim_metadata_count(std::numeric_limits<uint64_t>::max()).bytes(), {"metadata count"});
    expect_error(GgufWriter().u8("a", 1).claim_metadata_count(2).bytes(), {"metadata count 2"});
}

TEST(GgufMalformed, HugeStringLength) {
    std::vector<uint8_t> payload;
    encode::put<uint64_t>(payload, kHuge);
    payload.push_back('x');
    expect_error(GgufWriter().raw("general.name", 8, payload).bytes(),
                 {"metadata 'general.name'", "string value length 1152921504606846976", "at byte 48"});

    // A key whose length runs past the end of the file.
    std::vector<uint8_t> bytes = GgufWriter().claim_metadata_count(1).bytes();
    encode::put<uint64_t>(bytes, 1000);
    bytes.insert(bytes.end(), 20, 'k');
    expect_error(bytes, {"metadata key #0 length 1000", "at byte 24"});
}

TEST(GgufMalformed, HugeArrayLength) {
    std::vector<uint8_t> payload;
    encode::put<uint32_t>(payload, 5);  // INT32
    encode::put<uint64_t>(payload, kHuge);
    payload.resize(payload.size() + 16, 0);
    expect_error(GgufWriter().array("tokenizer.ggml.token_type", payload).bytes(),
                 {"metadata 'tokenizer.ggml.token_type'", "array of 1152921504606846976 int32", "cannot fit"});

    std::vector<uint8_t> strings;
    encode::put<uint32_t>(strings, 8);  // STRING: each element at least 8 bytes
    encode::put<uint64_t>(strings, 3);
    strings.resize(strings.size() + 20, 0);
    expect_error(GgufWriter().array("tokens", strings).bytes(), {"array of 3 string elements"});
}

TEST(GgufMalformed, TooManyArrayElementsInTotal) {
    // Each one-byte element would become a ~100-byte GgufValue: the reader caps the total.
    const std::vector<uint8_t> many((uint64_t{1} << 24) + 1, 0);
    expect_error(GgufWriter().array("a", encode::array<uint8_t>(0, many)).bytes(),
                 {"metadata 'a'", "more than 16777216 elements in total"});
}

TEST(GgufMalformed, UnknownValueTypes) {
    expect_error(GgufWriter().raw("general.name", 13, zeros(8)).bytes(),
                 {"metadata 'general.name'", "unknown value type id 13", "at byte 44"});
    std::vector<uint8_t> payload;
    encode::put<uint32_t>(payload, 99);
    encode::put<uint64_t>(payload, 1);
    payload.push_back(0);
    expect_error(GgufWriter().array("a", payload).bytes(), {"metadata 'a'", "unknown array element type id 99"});
}

TEST(GgufMalformed, BadBoolAndEmptyAndDuplicateKeys) {
    expect_error(GgufWriter().scalar<uint8_t>("flag", 7, 2).bytes(), {"metadata 'flag'", "bool value is 2"});
    expect_error(GgufWriter().u8("", 1).bytes(), {"metadata key #0 is empty"});
    expect_error(GgufWriter().u8("a", 1).u8("b", 2).u32("a", 3).bytes(),
                 {"duplicate metadata key 'a' at byte 52", "first at byte 24"});
    // Names in messages are escaped and cut short, so a hostile key cannot break the message's line.
    expect_error(GgufWriter().u8("a\nb", 1).u8("a\nb", 2).bytes(), {"duplicate metadata key 'a\\x0ab'"});
    const std::string long_key(1000, 'k');
    expect_error(GgufWriter().u8(long_key, 1).u8(long_key, 2).bytes(), {"(1000 bytes, cut)"});
}

TEST(GgufMalformed, ArraysNestedTooDeep) {
    auto payload = encode::array<uint8_t>(0, {1});
    for (int depth = 0; depth < 12; ++depth) payload = encode::array_of_arrays({payload});
    expect_error(GgufWriter().array("deep", payload).bytes(), {"metadata 'deep'", "nested deeper"});
}

TEST(GgufMalformed, BadAlignment) {
    expect_error(GgufWriter().u32("general.alignment", 0).bytes(),
                 {"metadata 'general.alignment'", "not a nonzero power of two"});
    expect_error(GgufWriter().u32("general.alignment", 48).bytes(), {"general.alignment", "value 48"});
    expect_error(GgufWriter().i32("general.alignment", -32).bytes(), {"general.alignment", "value -32"});
    expect_error(GgufWriter().string("general.alignment", "32").bytes(),
                 {"general.alignment", "must be an integer, not string"});
    expect_error(GgufWriter().u64("general.alignment", uint64_t{1} << 63).tensor({"t", {1}, 0, zeros(4), {}}).bytes(),
                 {"tensor 't'", "data range [9223372036854775808, 9223372036854775812) exceeds file size"});
}

TEST(GgufMalformed, TensorInfoProblems) {
    expect_error(GgufWriter().tensor({"blk.0.attn_q.weight", {1, 1, 1, 1, 1}, 0, zeros(4), {}}).bytes(),
                 {"tensor 'blk.0.attn_q.weight'", "dimension count 5 exceeds the maximum of 4", "at byte 51"});
    expect_error(GgufWriter().tensor({"t", {4, 0}, 0, zeros(4), {}}).bytes(), {"tensor 't'", "dimension 1 is 0"});
    expect_error(GgufWriter().tensor({"t", {kHuge, kHuge}, 0, zeros(4), {}}).bytes(),
                 {"tensor 't'", "element count of dims [1152921504606846976, 1152921504606846976] overflows"});
    expect_error(GgufWriter().tensor({"t", {uint64_t{1} << 62, 2}, 0, zeros(4), {}}).bytes(),
                 {"tensor 't'", "overflows"});  // 2^63 elements: past int64
    expect_error(GgufWriter().tensor({"t", {uint64_t{1} << 62}, 0, zeros(4), {}}).bytes(),
                 {"tensor 't'", "byte size of F32", "overflows"});
    expect_error(GgufWriter().tensor({"t", {4}, 4, zeros(4), {}}).bytes(),
                 {"tensor 't'", "unknown or unsupported tensor type id 4"});
    expect_error(GgufWriter().tensor({"t", {4}, 999, zeros(4), {}}).bytes(), {"tensor type id 999"});
    expect_error(GgufWriter().tensor({"", {4}, 0, zeros(16), {}}).bytes(), {"tensor info #0 has an empty name"});
    expect_error(GgufWriter().tensor({"t", {4}, 0, zeros(16), {}}).tensor({"t", {4}, 0, zeros(16), {}}).bytes(),
                 {"duplicate tensor name 't'", "first at byte 24"});
    expect_error(GgufWriter().tensor({"t", {33}, 3, zeros(40), {}}).bytes(),
                 {"tensor 't'", "row length 33 is not a whole number of Q4_1 blocks of 32", "tensor info at byte 24"});
    // The tensor count promises a second tensor info that is not there.
    expect_error(GgufWriter().claim_tensor_count(2).tensor({"t", {4}, 0, zeros(16), {}}).bytes(), {"tensor info #1"});
}

TEST(GgufMalformed, TensorDataProblems) {
    expect_error(GgufWriter().tensor({"blk.0.attn_q.weight", {8}, 0, {}, {128}}).bytes(),
                 {"tensor 'blk.0.attn_q.weight'", "data range [", "exceeds file size", "tensor info at byte 24"});
    expect_error(GgufWriter().tensor({"t", {8}, 0, {}, {0}}).bytes(), {"tensor 't'", "exceeds file size"});
    expect_error(GgufWriter().tensor({"t", {8}, 0, zeros(32), {uint64_t{1} << 40}}).bytes(),
                 {"data range [", "exceeds file size"});
    expect_error(GgufWriter().tensor({"t", {8}, 0, zeros(32), {std::numeric_limits<uint64_t>::max() - 31}}).bytes(),
                 {"tensor 't'", "overflows"});
    expect_error(GgufWriter().tensor({"t", {8}, 0, zeros(32), {16}}).bytes(),
                 {"tensor 't'", "data offset 16 is not a multiple of the alignment 32"});
    expect_error(GgufWriter().tensor({"a", {16}, 0, zeros(64), {0}}).tensor({"b", {8}, 0, zeros(32), {32}}).bytes(),
                 {"tensor 'b'", "overlaps tensor 'a'"});
    expect_error(
        GgufWriter().tensor({"late", {8}, 0, zeros(32), {64}}).tensor({"early", {32}, 0, zeros(128), {0}}).bytes(),
        {"tensor 'late'", "overlaps tensor 'early'"});
}

TEST(GgufMalformed, AdjacentTensorsDoNotOverlap) {
    auto file = GgufFile::parse(
        GgufWriter().tensor({"a", {8}, 0, zeros(32), {0}}).tensor({"b", {8}, 0, zeros(32), {32}}).bytes());
    ASSERT_TRUE(file.ok()) << file.error().message;
}

}  // namespace gguf_malformed_test
}  // namespace
}  // namespace tempered
