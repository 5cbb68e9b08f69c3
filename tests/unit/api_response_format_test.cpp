// response_format on chat and completions: the three kinds, the schema kept in the client's key order,
// and a 400 naming each missing or ill-typed field.
#include <gtest/gtest.h>

#include <string>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/response_format.h"

namespace tempered::api {
namespace {
namespace api_response_format_test {

ApiResult<ResponseFormat> parse(const std::string& field_json) {
    const Json body = Json::parse(R"({"response_format":)" + field_json + "}");
    ResponseFormat format;
    if (auto e = parse_response_format(find_field(body, "response_format"), format)) return *e;
    return format;
}

void expect_invalid(const std::string& field_json, const std::string& param) {
    const auto result = parse(field_json);
    ASSERT_FALSE(result) << field_json;
    EXPECT_EQ(result.error().http_status, 400);
    EXPECT_EQ(result.error().param, param) << result.error().message;
    EXPECT_NE(result.error().message.find(param), std::string::npos) << result.error().message;
}

TEST(ResponseFormat, TheThreeKinds) {
    EXPECT_EQ(parse(R"({"type":"text"})")->kind, ResponseFormat::Kind::Text);
    EXPECT_EQ(parse(R"({"type":"json_object"})")->kind, ResponseFormat::Kind::JsonObject);
    const auto schema = parse(R"({"type":"json_schema","json_schema":{"name":"person","strict":true,
        "schema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}})");
    ASSERT_TRUE(schema);
    EXPECT_EQ(schema->kind, ResponseFormat::Kind::JsonSchema);
    EXPECT_EQ(schema->name, "person");
    EXPECT_TRUE(schema->strict);
    // Properties keep the order the client wrote: the grammar generates them in that order.
    EXPECT_EQ(schema->schema["properties"].begin().key(), "zeta");
    EXPECT_FALSE(parse(R"({"type":"json_schema","json_schema":{"name":"n","schema":{}}})")->strict);
}

TEST(ResponseFormat, MissingAndIllTypedFieldsAreNamed) {
    expect_invalid(R"("json")", "response_format");
    expect_invalid(R"({})", "response_format.type");
    expect_invalid(R"({"type":7})", "response_format.type");
    expect_invalid(R"({"type":"yaml"})", "response_format.type");
    expect_invalid(R"({"type":"json_schema"})", "response_format.json_schema");
    expect_invalid(R"({"type":"json_schema","json_schema":[]})", "response_format.json_schema");
    expect_invalid(R"({"type":"json_schema","json_schema":{"schema":{}}})", "response_format.json_schema.name");
    expect_invalid(R"({"type":"json_schema","json_schema":{"name":1,"schema":{}}})",
                   "response_format.json_schema.name");
    expect_invalid(R"({"type":"json_schema","json_schema":{"name":"n"}})", "response_format.json_schema.schema");
    expect_invalid(R"({"type":"json_schema","json_schema":{"name":"n","schema":"{}"}})",
                   "response_format.json_schema.schema");
    expect_invalid(R"({"type":"json_schema","json_schema":{"name":"n","schema":{},"strict":"yes"}})",
                   "response_format.json_schema.strict");
}

TEST(ResponseFormat, ChatAndCompletionsBothReadIt) {
    auto chat =
        parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}})");
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->generation.response_format.kind, ResponseFormat::Kind::JsonObject);
    auto completion = parse_completion_request(R"({"prompt":"hi","response_format":{"type":"json_schema",
        "json_schema":{"name":"n","schema":{"type":"integer"}}}})");
    ASSERT_TRUE(completion);
    EXPECT_EQ(completion->generation.response_format.kind, ResponseFormat::Kind::JsonSchema);
    EXPECT_EQ(completion->generation.response_format.schema["type"], "integer");
    auto bad = parse_completion_request(R"({"prompt":"hi","response_format":{"type":"xml"}})");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().param, "response_format.type");
    auto absent = parse_completion_request(R"({"prompt":"hi"})");
    ASSERT_TRUE(absent);
    EXPECT_EQ(absent->generation.response_format.kind, ResponseFormat::Kind::Text);
}

}  // namespace api_response_format_test
}  // namespace
}  // namespace tempered::api
