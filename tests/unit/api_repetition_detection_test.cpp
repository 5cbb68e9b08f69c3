// repetition_detection on chat and completions: vLLM's three keys, 0 meaning off / 1 as vLLM reads it,
// and a 400 that names the key at fault.
#include <gtest/gtest.h>

#include <string>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/repetition_detection.h"

namespace tempered::api {
namespace {
namespace api_repetition_detection_test {

ApiResult<std::optional<RepetitionDetectionParams>> parse(const std::string& field_json) {
    const Json body = Json::parse(R"({"repetition_detection":)" + field_json + "}");
    std::optional<RepetitionDetectionParams> params;
    if (auto e = parse_repetition_detection(find_field(body, "repetition_detection"), params)) return *e;
    return params;
}

void expect_invalid(const std::string& field_json, const std::string& param) {
    const auto result = parse(field_json);
    ASSERT_FALSE(result) << field_json;
    EXPECT_EQ(result.error().http_status, 400);
    EXPECT_EQ(result.error().param, param) << result.error().message;
    EXPECT_NE(result.error().message.find(param), std::string::npos) << result.error().message;
}

TEST(RepetitionDetectionField, ReadsTheThreeKeysAndDefaultsMinPatternSizeToOne) {
    const auto full = parse(R"({"max_pattern_size":30,"min_pattern_size":5,"min_count":2})");
    ASSERT_TRUE(full);
    ASSERT_TRUE(full->has_value());
    EXPECT_EQ((*full)->max_pattern_size, 30);
    EXPECT_EQ((*full)->min_pattern_size, 5);
    EXPECT_EQ((*full)->min_count, 2);

    const auto short_form = parse(R"({"max_pattern_size":8,"min_count":3.0})");
    ASSERT_TRUE(short_form);
    EXPECT_EQ((*short_form)->min_pattern_size, 1);
    EXPECT_EQ((*short_form)->min_count, 3);

    const auto off = parse(R"({})");  // vLLM's defaults: all zero, detection off
    ASSERT_TRUE(off);
    ASSERT_TRUE(off->has_value());
    EXPECT_FALSE((*off)->enabled());

    const auto null = parse("null");
    ASSERT_TRUE(null);
    EXPECT_FALSE(null->has_value());
}

TEST(RepetitionDetectionField, BadShapesAndValuesNameTheKey) {
    expect_invalid(R"(8)", "repetition_detection");
    expect_invalid(R"([8,1,3])", "repetition_detection");
    expect_invalid(R"({"max_pattern_size":"8","min_count":3})", "repetition_detection.max_pattern_size");
    expect_invalid(R"({"max_pattern_size":8.5,"min_count":3})", "repetition_detection.max_pattern_size");
    expect_invalid(R"({"max_pattern_size":-1})", "repetition_detection.max_pattern_size");
    expect_invalid(R"({"max_pattern_size":100000,"min_count":3})", "repetition_detection.max_pattern_size");
    expect_invalid(R"({"max_pattern_size":4,"min_pattern_size":5,"min_count":3})",
                   "repetition_detection.min_pattern_size");
    expect_invalid(R"({"max_pattern_size":8})", "repetition_detection.min_count");
    expect_invalid(R"({"max_pattern_size":8,"min_count":1})", "repetition_detection.min_count");
    expect_invalid(R"({"max_pattern_size":8,"min_count":3,"window":5})", "repetition_detection.window");
}

TEST(RepetitionDetectionField, ChatAndCompletionsBothReadIt) {
    auto chat = parse_chat_request(
        R"({"messages":[{"role":"user","content":"hi"}],"repetition_detection":{"max_pattern_size":16,"min_count":4}})");
    ASSERT_TRUE(chat);
    ASSERT_TRUE(chat->generation.repetition_detection.has_value());
    EXPECT_EQ(chat->generation.repetition_detection->max_pattern_size, 16);
    EXPECT_EQ(chat->generation.repetition_detection->min_count, 4);

    auto bad = parse_completion_request(R"({"prompt":"hi","repetition_detection":{"max_pattern_size":8}})");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().param, "repetition_detection.min_count");

    auto absent = parse_completion_request(R"({"prompt":"hi"})");
    ASSERT_TRUE(absent);
    EXPECT_FALSE(absent->generation.repetition_detection.has_value());
}

}  // namespace api_repetition_detection_test
}  // namespace
}  // namespace tempered::api
