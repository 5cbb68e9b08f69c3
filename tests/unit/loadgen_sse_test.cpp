// The client-side SSE parser and the reading of OpenAI payloads: events split across reads, several
// events in one read, CRLF, comments, multi-line data, the [DONE] terminator, and the error shapes.
#include <gtest/gtest.h>

#include "loadgen/request.h"
#include "loadgen/server.h"

namespace tempered::loadgen {
namespace {
namespace loadgen_sse_test {

std::vector<std::string> feed_all(SseParser& parser, std::initializer_list<std::string_view> reads) {
    std::vector<std::string> events;
    for (auto bytes : reads) parser.feed(bytes, events);
    return events;
}

TEST(LoadgenSse, EventsInOneRead) {
    SseParser parser;
    const auto events = feed_all(parser, {"data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"});
    EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
    EXPECT_FALSE(parser.has_partial_event());
    EXPECT_EQ(events.back(), kDonePayload);
}

TEST(LoadgenSse, EventSplitAcrossReads) {
    SseParser parser;
    std::vector<std::string> events;
    parser.feed("da", events);
    parser.feed("ta: {\"text\":", events);
    EXPECT_TRUE(events.empty());
    EXPECT_TRUE(parser.has_partial_event());
    parser.feed("\"hi\"}\n", events);
    EXPECT_TRUE(events.empty());  // the blank line has not come yet
    parser.feed("\ndata: [DO", events);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0], "{\"text\":\"hi\"}");
    parser.feed("NE]\n\n", events);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1], "[DONE]");
    EXPECT_FALSE(parser.has_partial_event());
}

TEST(LoadgenSse, EveryByteSeparately) {
    const std::string stream = "data: {\"x\":1}\r\n\r\n: keep-alive\r\n\r\ndata: [DONE]\r\n\r\n";
    SseParser parser;
    std::vector<std::string> events;
    for (char c : stream) parser.feed(std::string_view(&c, 1), events);
    EXPECT_EQ(events, (std::vector<std::string>{"{\"x\":1}", "[DONE]"}));
}

TEST(LoadgenSse, CommentsOtherFieldsAndMultiLineData) {
    SseParser parser;
    const auto events = feed_all(parser, {": ping\n\n", "event: message\nid: 7\ndata: a\ndata:b\n\n", "retry: 10\n\n"});
    EXPECT_EQ(events, (std::vector<std::string>{"a\nb"}));  // a comment or a field alone is no event
}

TEST(LoadgenSse, CutShortStreamLeavesAPartialEvent) {
    SseParser parser;
    const auto events = feed_all(parser, {"data: {\"text\":\"x\"}\n"});
    EXPECT_TRUE(events.empty());
    EXPECT_TRUE(parser.has_partial_event());
}

TEST(LoadgenPayload, CompletionChunkText) {
    const auto chunk =
        nlohmann::json::parse(R"({"choices":[{"index":0,"text":"Hello","finish_reason":null}],"usage":null})");
    const PayloadContent content = read_payload(chunk, Endpoint::Completions);
    EXPECT_EQ(content.text_bytes, 5u);
    EXPECT_FALSE(content.prompt_tokens);
    EXPECT_FALSE(content.error);
}

TEST(LoadgenPayload, ChatRoleChunkCarriesNoText) {
    const auto role = nlohmann::json::parse(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})");
    EXPECT_EQ(read_payload(role, Endpoint::Chat).text_bytes, 0u);
    const auto content = nlohmann::json::parse(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})");
    EXPECT_EQ(read_payload(content, Endpoint::Chat).text_bytes, 2u);
    const auto reasoning = nlohmann::json::parse(R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})");
    EXPECT_EQ(read_payload(reasoning, Endpoint::Chat).text_bytes, 3u);
    const auto whole = nlohmann::json::parse(R"({"choices":[{"message":{"role":"assistant","content":"Done."}}]})");
    EXPECT_EQ(read_payload(whole, Endpoint::Chat).text_bytes, 5u);
}

TEST(LoadgenPayload, UsageChunk) {
    const auto chunk = nlohmann::json::parse(
        R"({"choices":[],"usage":{"prompt_tokens":32,"completion_tokens":16,"total_tokens":48}})");
    const PayloadContent content = read_payload(chunk, Endpoint::Completions);
    EXPECT_EQ(content.text_bytes, 0u);
    EXPECT_EQ(content.prompt_tokens, 32);
    EXPECT_EQ(content.completion_tokens, 16);
}

TEST(LoadgenPayload, ErrorShapes) {
    EXPECT_EQ(error_message(nlohmann::json::parse(R"({"error":{"message":"bad","type":"x"}})")), "bad");
    EXPECT_EQ(error_message(nlohmann::json::parse(R"({"error":"plain"})")), "plain");
    EXPECT_EQ(error_message(nlohmann::json::parse(R"({"object":"error","message":"vllm says"})")), "vllm says");
    EXPECT_EQ(error_message(nlohmann::json::parse(R"({"detail":"Not Found"})")), "Not Found");
    EXPECT_FALSE(error_message(nlohmann::json::parse(R"({"choices":[]})")));
    EXPECT_FALSE(error_message(nlohmann::json::parse(R"({"error":null,"choices":[]})")));
}

TEST(LoadgenPayload, DescribeHttpError) {
    EXPECT_EQ(describe_http_error(404, R"({"error":{"message":"The model `x` does not exist."}})"),
              "HTTP 404: The model `x` does not exist.");
    EXPECT_EQ(describe_http_error(502, "<html>\nBad Gateway</html>"), "HTTP 502: <html> Bad Gateway</html>");
    EXPECT_EQ(describe_http_error(500, ""), "HTTP 500");
    const std::string long_body(1000, 'x');
    EXPECT_EQ(describe_http_error(500, long_body), "HTTP 500: " + std::string(200, 'x') + "...");
}

}  // namespace loadgen_sse_test
}  // namespace
}  // namespace tempered::loadgen
