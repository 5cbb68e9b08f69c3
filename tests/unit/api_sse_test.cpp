#include <gtest/gtest.h>

#include "api/sse.h"

namespace tempered::api {
namespace {
namespace api_sse_test {

TEST(Sse, DataEventFraming) {
    EXPECT_EQ(sse_data("{\"a\":1}"), "data: {\"a\":1}\n\n");
    EXPECT_EQ(sse_data("line1\nline2"), "data: line1\ndata: line2\n\n");
    EXPECT_EQ(sse_data("[DONE]"), "data: [DONE]\n\n");
}

TEST(Sse, JsonEventIsOneLine) {
    const nlohmann::json value = {{"text", "two\nlines"}};
    EXPECT_EQ(sse_json(value), "data: {\"text\":\"two\\nlines\"}\n\n");
}

TEST(Sse, JsonEventSurvivesInvalidUtf8) {
    const nlohmann::json value = {{"token", std::string("\xe2\x80")}};  // half of a character
    const std::string event = sse_json(value);
    EXPECT_EQ(event.rfind("data: ", 0), 0u);
    EXPECT_NE(event.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

TEST(Sse, LineSeparatorsInsideStringsAreEscaped) {
    // U+0085, U+2028, U+2029 raw would end a line for str.splitlines-style readers (httpx's iter_lines).
    const std::string text =
        "a\xC2\x85"
        "b\xE2\x80\xA8"
        "c\xE2\x80\xA9"
        "d\xE2\x80\xA6";  // ... and U+2026 kept
    const std::string event = sse_json({{"content", text}});
    EXPECT_EQ(event, "data: {\"content\":\"a\\u0085b\\u2028c\\u2029d\xE2\x80\xA6\"}\n\n");
    EXPECT_EQ(nlohmann::json::parse(event.substr(6, event.size() - 8))["content"], text);
}

TEST(Sse, ErrorEventCarriesTheEnvelope) {
    const std::string event = sse_error(internal_error("engine died"));
    ASSERT_EQ(event.rfind("data: ", 0), 0u);
    ASSERT_EQ(event.substr(event.size() - 2), "\n\n");
    const auto json = nlohmann::json::parse(event.substr(6, event.size() - 8));
    EXPECT_EQ(json["error"]["message"], "engine died");
    EXPECT_EQ(json["error"]["type"], "server_error");
}

TEST(Sse, ResponseHeaders) {
    const http::HttpResponse response = sse_response([](http::StreamWriter&) {});
    EXPECT_TRUE(response.is_streaming());
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.content_type, "text/event-stream");
    EXPECT_EQ(response.headers.find("cache-control")->second, "no-cache");
    EXPECT_EQ(response.headers.find("X-Accel-Buffering")->second, "no");
}

}  // namespace api_sse_test
}  // namespace
}  // namespace tempered::api
