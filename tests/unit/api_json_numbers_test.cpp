// Numbers no double holds (1e309, -1e400) make nlohmann refuse the body; integers past int64 (2^64)
// arrive as doubles. Either way a request gets a 400 that names the field, wherever the number sits.
#include <gtest/gtest.h>

#include "api/chat_request.h"
#include "api/completion_request.h"

namespace tempered::api {
namespace {
namespace api_json_numbers_test {

const std::string kHello = R"("messages":[{"role":"user","content":"hi"}])";

ApiError chat_error(const std::string& body) {
    ApiResult<ChatRequest> result = parse_chat_request(body);
    EXPECT_FALSE(result) << "accepted: " << body;
    return result ? ApiError{} : result.error();
}

void expect_chat_invalid(const std::string& fields, const std::string& param, const std::string& code) {
    const ApiError error = chat_error("{" + kHello + "," + fields + "}");
    EXPECT_EQ(error.http_status, 400) << fields;
    EXPECT_EQ(error.type, "invalid_request_error") << fields;
    EXPECT_EQ(error.param, param) << fields << " -> " << error.message;
    EXPECT_EQ(error.code, code) << fields;
}

void expect_completion_invalid(const std::string& body, const std::string& param) {
    ApiResult<CompletionRequest> result = parse_completion_request(body);
    ASSERT_FALSE(result) << "accepted: " << body;
    EXPECT_EQ(result.error().http_status, 400) << body;
    EXPECT_EQ(result.error().param, param) << body << " -> " << result.error().message;
}

TEST(JsonNumbers, OverflowNamesTheSamplingField) {
    expect_chat_invalid(R"("temperature":1e309)", "temperature", "invalid_value");
    expect_chat_invalid(R"("top_p":-1e309)", "top_p", "invalid_value");
    expect_chat_invalid(R"("presence_penalty":1E+400)", "presence_penalty", "invalid_value");
    expect_chat_invalid(R"("frequency_penalty":-1e999,"temperature":1)", "frequency_penalty", "invalid_value");
    expect_chat_invalid(R"("temperature":0.5,"seed":1e309)", "seed", "invalid_value");
    expect_chat_invalid(R"("max_tokens":1e400)", "max_tokens", "invalid_value");
    expect_chat_invalid(R"("max_completion_tokens":-1e400)", "max_completion_tokens", "invalid_value");
    const ApiError error = chat_error("{" + kHello + R"(,"temperature":1e309})");
    EXPECT_NE(error.message.find("'temperature'"), std::string::npos) << error.message;
    EXPECT_NE(error.message.find("out of range"), std::string::npos) << error.message;
}

TEST(JsonNumbers, OverflowNamesNestedFields) {
    expect_chat_invalid(R"("logit_bias":{"42":1,"50256":1e309})", "logit_bias.50256", "invalid_value");
    expect_chat_invalid(R"("stop":["a","b"],"response_format":{"type":"json_schema","json_schema":{"name":"x",
        "schema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number","maximum":1e309}}}}})",
                        "response_format.json_schema.schema.properties.b.maximum", "invalid_value");
    expect_chat_invalid(R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":
        {"name":"g","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":-1e400}}}}}])",
                        "tools[1].function.parameters.properties.n.minimum", "invalid_value");
    expect_chat_invalid(R"("repetition_detection":{"min_count":[1,{"a":[2,3]},1e309]})",
                        "repetition_detection.min_count[2]", "invalid_value");
    // The messages come first in the body: their elements are counted before the overflow is reached.
    const ApiError error = chat_error(
        R"({"messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"text","x":1e309}]}]})");
    EXPECT_EQ(error.param, "messages[1].content[0].x");
}

TEST(JsonNumbers, OverflowInCompletionsAndAtTheTop) {
    expect_completion_invalid(R"({"prompt":[[1,2],[3,1e309]]})", "prompt[1][1]");
    expect_completion_invalid(R"({"prompt":"x","temperature":1e309})", "temperature");
    const ApiResult<Json> top = parse_json_object("1e309");
    ASSERT_FALSE(top);
    EXPECT_EQ(top.error().http_status, 400);
    EXPECT_EQ(top.error().param, "");
}

TEST(JsonNumbers, IntegersBeyondInt64AreOutOfRangeNotWrongType) {
    // 2^64 and 1e19 are integers, just too large: invalid_value, not invalid_type.
    expect_chat_invalid(R"("seed":18446744073709551616)", "seed", "invalid_value");
    expect_chat_invalid(R"("max_tokens":1e19)", "max_tokens", "invalid_value");
    expect_chat_invalid(R"("n":-1e300)", "n", "invalid_value");
    expect_chat_invalid(R"("top_logprobs":123456789012345678901234567890)", "top_logprobs", "invalid_value");
    expect_chat_invalid(R"("max_tokens":2.5)", "max_tokens", "invalid_type");
}

TEST(JsonNumbers, LargeButFiniteAndNegativeZero) {
    expect_chat_invalid(R"("temperature":1e308)", "temperature", "invalid_value");
    ApiResult<ChatRequest> zero = parse_chat_request("{" + kHello + R"(,"temperature":-0.0,"top_k":-0})");
    ASSERT_TRUE(zero) << zero.error().message;
    EXPECT_EQ(*zero->generation.sampling.temperature.value, 0.0);
    EXPECT_EQ(*zero->generation.sampling.top_k.value, 0);
    // NaN and Infinity are not JSON: a parse error, still a 400.
    for (const char* body : {R"("temperature":NaN)", R"("temperature":Infinity)"}) {
        const ApiError error = chat_error("{" + kHello + "," + body + "}");
        EXPECT_EQ(error.http_status, 400);
        EXPECT_EQ(error.code, "invalid_json");
    }
}

}  // namespace api_json_numbers_test
}  // namespace
}  // namespace tempered::api
