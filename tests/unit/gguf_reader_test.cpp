// Round trips through the in-memory writer: every value type, arrays (of strings, nested, empty),
// tensors of several types, v2 and v3, custom alignment, and opening from disk.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "../support/gguf_writer.h"
#include "formats/gguf.h"

namespace tempered {
namespace {
namespace gguf_reader_test {

using testing::GgufTensorSpec;
using testing::GgufWriter;
namespace encode = testing::gguf_encode;

std::vector<uint8_t> filled(size_t size, uint8_t first) {
    std::vector<uint8_t> data(size);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(first + i);
    return data;
}

Result<GgufFile> parse(const std::vector<uint8_t>& bytes) { return GgufFile::parse(bytes); }

TEST(GgufReader, ScalarsOfEveryTypeRoundTrip) {
    const auto bytes = GgufWriter()
                           .u8("a.u8", 200)
                           .i8("a.i8", -100)
                           .u16("a.u16", 60000)
                           .i16("a.i16", -30000)
                           .u32("a.u32", 4000000000u)
                           .i32("a.i32", -2000000000)
                           .f32("a.f32", 1e-5f)
                           .boolean("a.bool", true)
                           .string("a.string", "hello\nworld")
                           .u64("a.u64", std::numeric_limits<uint64_t>::max())
                           .i64("a.i64", std::numeric_limits<int64_t>::min())
                           .f64("a.f64", 0.1)
                           .bytes();
    auto file = parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->version(), 3u);
    ASSERT_EQ(file->metadata().size(), 12u);
    EXPECT_EQ(file->metadata()[0].first, "a.u8");  // file order
    EXPECT_EQ(file->metadata()[11].first, "a.f64");

    EXPECT_EQ(file->get_int("a.u8"), 200);
    EXPECT_EQ(file->get_int("a.i8"), -100);
    EXPECT_EQ(file->get_int("a.u16"), 60000);
    EXPECT_EQ(file->get_int("a.i16"), -30000);
    EXPECT_EQ(file->get_int("a.u32"), 4000000000LL);
    EXPECT_EQ(file->get_int("a.i32"), -2000000000);
    EXPECT_EQ(file->get_int("a.i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(file->get_int("a.u64"), std::nullopt);  // does not fit in int64
    EXPECT_EQ(file->find("a.u64")->unsigned_value, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(file->get_float("a.f32"), static_cast<double>(1e-5f));
    EXPECT_EQ(file->get_float("a.f64"), 0.1);
    EXPECT_EQ(file->get_float("a.u8"), 200.0);
    EXPECT_EQ(file->get_bool("a.bool"), true);
    EXPECT_EQ(file->get_string("a.string"), "hello\nworld");

    // Asking for the wrong kind gives nullopt, not a conversion.
    EXPECT_EQ(file->get_int("a.f32"), std::nullopt);
    EXPECT_EQ(file->get_int("a.bool"), std::nullopt);
    EXPECT_EQ(file->get_bool("a.u8"), std::nullopt);
    EXPECT_EQ(file->get_string("a.u8"), std::nullopt);
    EXPECT_EQ(file->get_int("missing"), std::nullopt);
    EXPECT_EQ(file->find("missing"), nullptr);

    EXPECT_EQ(file->find("a.u8")->type, GgufValueType::UINT8);
    EXPECT_EQ(file->find("a.f64")->type, GgufValueType::FLOAT64);
    EXPECT_EQ(file->find("a.f32")->to_display_string(), "1e-05");
    EXPECT_EQ(file->find("a.string")->to_display_string(), "\"hello\\nworld\"");
    EXPECT_EQ(file->find("a.bool")->to_display_string(), "true");
    EXPECT_EQ(file->find("a.i8")->to_display_string(), "-100");
    EXPECT_TRUE(file->tensors().empty());
}

TEST(GgufReader, ArraysRoundTrip) {
    const std::vector<std::string> tokens{"<s>", "</s>", "hello", "", "\xc4\xa0world"};
    const auto bytes =
        GgufWriter()
            .array("tokens", encode::string_array(tokens))
            .array("types", encode::array<int32_t>(5, {1, -2, 3}))
            .array("scores", encode::array<float>(6, {0.5f, -1.25f}))
            .array("flags", encode::array<uint8_t>(7, {1, 0}))
            .array("empty", encode::array<uint32_t>(4, {}))
            .array("nested",
                   encode::array_of_arrays({encode::array<uint8_t>(0, {1, 2}), encode::array<uint8_t>(0, {3})}))
            .bytes();
    auto file = parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->get_string_array("tokens"), tokens);
    EXPECT_EQ(file->get_int_array("types"), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(file->get_float_array("scores"), (std::vector<double>{0.5, -1.25}));
    EXPECT_EQ(file->get_float_array("types"), (std::vector<double>{1, -2, 3}));  // integers are numbers
    EXPECT_EQ(file->get_int_array("scores"), std::nullopt);
    EXPECT_EQ(file->get_string_array("types"), std::nullopt);
    EXPECT_EQ(file->get_int_array("tokens"), std::nullopt);
    EXPECT_EQ(file->get_int_array("empty"), std::vector<int64_t>{});
    EXPECT_EQ(file->get_string_array("empty"), std::nullopt);  // empty, but of the wrong kind

    const GgufValue* flags = file->find("flags");
    ASSERT_NE(flags, nullptr);
    EXPECT_EQ(flags->element_type, GgufValueType::BOOL);
    EXPECT_EQ(flags->elements.at(0).as_bool(), true);

    const GgufValue* nested = file->find("nested");
    ASSERT_NE(nested, nullptr);
    EXPECT_EQ(nested->element_type, GgufValueType::ARRAY);
    ASSERT_EQ(nested->elements.size(), 2u);
    EXPECT_EQ(nested->elements[0].elements.size(), 2u);
    EXPECT_EQ(nested->elements[1].elements[0].as_int(), 3);
    EXPECT_EQ(nested->to_display_string(), "[[1, 2], [3]]");
    EXPECT_EQ(file->get_int_array("nested"), std::nullopt);
}

TEST(GgufReader, LongArraysAreAbbreviatedForDisplay) {
    std::vector<int32_t> values(100);
    for (int i = 0; i < 100; ++i) values[i] = i;
    auto file = parse(GgufWriter().array("v", encode::array<int32_t>(5, values)).bytes());
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->find("v")->to_display_string(3), "[0, 1, 2, ... 97 more]");
    EXPECT_EQ(file->find("v")->to_display_string(0), "[... 100 more]");
}

GgufWriter model_like(uint32_t version) {
    GgufWriter writer(version);
    writer.string("general.architecture", "llama")
        .u32("llama.block_count", 1)
        .tensor({"token_embd.weight", {32, 2}, 3, filled(2 * 20, 1), {}})     // Q4_1: 20 bytes per 32
        .tensor({"output_norm.weight", {3}, 0, filled(12, 100), {}})          // F32
        .tensor({"blk.0.attn_q.weight", {64, 2}, 8, filled(4 * 34, 7), {}});  // Q8_0: 34 bytes per 32
    return writer;
}

void expect_model_like(const GgufFile& file, const std::vector<uint8_t>& bytes) {
    EXPECT_EQ(file.alignment(), 32u);
    EXPECT_EQ(file.data_offset() % 32, 0u);
    ASSERT_EQ(file.tensors().size(), 3u);
    const GgufTensorInfo* embd = file.tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->type, DType::Q4_1);
    EXPECT_EQ(embd->dims, (std::vector<uint64_t>{32, 2}));
    EXPECT_EQ(embd->element_count(), 64u);
    EXPECT_EQ(embd->row_length(), 32u);
    EXPECT_EQ(embd->row_count(), 2u);
    EXPECT_EQ(embd->size_bytes, 40u);
    EXPECT_EQ(embd->offset, 0u);
    EXPECT_EQ(embd->data, bytes.data() + file.data_offset());
    EXPECT_EQ(embd->data[0], 1);

    const GgufTensorInfo* norm = file.tensor("output_norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->type, DType::F32);
    EXPECT_EQ(norm->offset, 64u);  // 40 rounded up to the alignment
    EXPECT_EQ(norm->size_bytes, 12u);
    EXPECT_EQ(norm->data[0], 100);

    const GgufTensorInfo* q = file.tensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, DType::Q8_0);
    EXPECT_EQ(q->size_bytes, 4u * 34);
    EXPECT_EQ(q->data[1], 8);
    EXPECT_EQ(file.tensor("missing"), nullptr);
    EXPECT_EQ(file.tensors()[0].name, "token_embd.weight");  // file order
}

TEST(GgufReader, TensorsRoundTripInVersion3) {
    const auto bytes = model_like(3).bytes();
    auto file = parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->version(), 3u);
    expect_model_like(*file, bytes);
}

TEST(GgufReader, TensorsRoundTripInVersion2) {
    const auto bytes = model_like(2).bytes();
    auto file = parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->version(), 2u);
    expect_model_like(*file, bytes);
}

TEST(GgufReader, CustomAlignmentPlacesDataSection) {
    const auto bytes = GgufWriter()
                           .layout_alignment(128)
                           .u32("general.alignment", 128)
                           .tensor({"a", {4}, 0, filled(16, 0), {}})
                           .tensor({"b", {2, 2}, 1, filled(8, 0), {}})  // F16
                           .bytes();
    auto file = parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->alignment(), 128u);
    EXPECT_EQ(file->data_offset() % 128, 0u);
    EXPECT_EQ(file->tensor("b")->offset, 128u);
    EXPECT_EQ(file->tensor("b")->type, DType::F16);
    EXPECT_EQ(file->tensor("b")->size_bytes, 8u);
}

TEST(GgufReader, ScalarTensorHasOneElement) {
    auto file = parse(GgufWriter().tensor({"scale", {}, 0, filled(4, 0), {}}).bytes());
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->tensor("scale")->element_count(), 1u);
    EXPECT_EQ(file->tensor("scale")->size_bytes, 4u);
}

TEST(GgufReader, OpensFromDiskAndKeepsTheMapping) {
    const auto bytes = model_like(3).bytes();
    const std::string path = ::testing::TempDir() + "gguf_reader_test.gguf";
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->path(), path);
    GgufFile moved = std::move(file.value());
    EXPECT_EQ(moved.tensor("output_norm.weight")->data[0], 100);
    EXPECT_EQ(moved.get_string("general.architecture"), "llama");
    std::remove(path.c_str());
}

TEST(GgufReader, OpenErrorsNameThePath) {
    auto missing = GgufFile::open("/nonexistent/model.gguf");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/model.gguf"), std::string::npos);

    const std::string path = ::testing::TempDir() + "gguf_reader_test_bad.gguf";
    { std::ofstream(path, std::ios::binary) << "GGML not gguf"; }
    auto bad = GgufFile::open(path);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message.rfind("gguf: " + path + ": bad magic", 0), 0u) << bad.error().message;
    std::remove(path.c_str());
}

}  // namespace gguf_reader_test
}  // namespace
}  // namespace tempered
