// A Hugging Face directory's weights (formats/safetensors_directory.h): one file or shards through the
// index, and an index that lies (a tensor not where it says, one in two shards, a shard path that leaves
// the directory) refused by name.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/safetensors_directory.h"

namespace tempered {
namespace {
namespace formats_safetensors_directory_test {

namespace fs = std::filesystem;

// A file of one-byte (U8) tensors, each holding its own index.
void write_shard(const fs::path& path, const std::vector<std::string>& names) {
    std::string header = "{";
    for (size_t i = 0; i < names.size(); ++i)
        header += (i ? "," : "") + ("\"" + names[i] + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[") +
                  std::to_string(i) + "," + std::to_string(i + 1) + "]}";
    header += "}";
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i)));
    out << header;
    for (size_t i = 0; i < names.size(); ++i) out.put(static_cast<char>(i));
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

class SafetensorsDirectoryTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("tempered-st-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string error_of() {
        auto opened = SafetensorsDirectory::open(dir_.string());
        return opened ? "" : opened.error().message;
    }
    fs::path dir_;
};

TEST_F(SafetensorsDirectoryTest, ReadsOneFile) {
    write_shard(dir_ / "model.safetensors", {"a", "b"});
    auto opened = SafetensorsDirectory::open(dir_.string());
    ASSERT_TRUE(opened) << opened.error().message;
    ASSERT_NE(opened->tensor("b"), nullptr);
    EXPECT_EQ(opened->tensor("b")->data[0], 1);
    EXPECT_EQ(opened->tensors().size(), 2u);
}

TEST_F(SafetensorsDirectoryTest, ReadsShardsThroughTheIndex) {
    write_shard(dir_ / "model-00001-of-00002.safetensors", {"x", "y"});
    write_shard(dir_ / "model-00002-of-00002.safetensors", {"z"});
    write_text(dir_ / "model.safetensors.index.json",
               R"({"metadata":{"total_size":3},"weight_map":{"x":"model-00001-of-00002.safetensors",)"
               R"("z":"model-00002-of-00002.safetensors","y":"model-00001-of-00002.safetensors"}})");
    auto opened = SafetensorsDirectory::open(dir_.string());
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(opened->shards().size(), 2u);
    ASSERT_NE(opened->tensor("z"), nullptr);
    EXPECT_EQ(opened->tensor("z")->data[0], 0);
    EXPECT_EQ(opened->tensor("y")->data[0], 1);
    EXPECT_EQ(opened->tensors().size(), 3u);
}

TEST_F(SafetensorsDirectoryTest, RefusesAnIndexThatLies) {
    write_shard(dir_ / "one.safetensors", {"x"});
    write_shard(dir_ / "two.safetensors", {"x", "y"});
    write_text(dir_ / "model.safetensors.index.json", R"({"weight_map":{"y":"one.safetensors"}})");
    EXPECT_NE(error_of().find("puts tensor 'y' in one.safetensors, which does not hold it"), std::string::npos);
    write_text(dir_ / "model.safetensors.index.json",
               R"({"weight_map":{"x":"one.safetensors","y":"two.safetensors"}})");
    EXPECT_NE(error_of().find("tensor 'x' is in two shards"), std::string::npos);
    write_text(dir_ / "model.safetensors.index.json", R"({"weight_map":{"x":"../one.safetensors"}})");
    EXPECT_NE(error_of().find("not a file name here"), std::string::npos);
    write_text(dir_ / "model.safetensors.index.json", R"({"weight_map":{"x":"three.safetensors"}})");
    EXPECT_NE(error_of().find("three.safetensors"), std::string::npos);
    write_text(dir_ / "model.safetensors.index.json", R"({"weight_map":[]})");
    EXPECT_NE(error_of().find("no \"weight_map\" object"), std::string::npos);
}

TEST_F(SafetensorsDirectoryTest, SaysWhatIsMissing) {
    EXPECT_NE(error_of().find("no model.safetensors or model.safetensors.index.json"), std::string::npos);
}

}  // namespace formats_safetensors_directory_test
}  // namespace
}  // namespace tempered
