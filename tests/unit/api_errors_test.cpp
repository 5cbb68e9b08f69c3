#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/errors.h"

namespace tempered::api {
namespace {
namespace api_errors_test {

using nlohmann::json;

TEST(ApiErrors, EnvelopeHasAllFourFieldsWithNullsWhenAbsent) {
    const json body = json::parse(invalid_request("bad").body());
    ASSERT_TRUE(body.contains("error"));
    const json& error = body["error"];
    EXPECT_EQ(error["message"], "bad");
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_TRUE(error.contains("param") && error["param"].is_null());
    EXPECT_TRUE(error.contains("code") && error["code"].is_null());
    EXPECT_EQ(error.size(), 4u);
}

TEST(ApiErrors, ParamAndCodeWhenGiven) {
    const ApiError error = invalid_request("Invalid value", "messages[1].content", "invalid_value");
    EXPECT_EQ(error.http_status, 400);
    const json body = error.to_json()["error"];
    EXPECT_EQ(body["param"], "messages[1].content");
    EXPECT_EQ(body["code"], "invalid_value");
}

TEST(ApiErrors, ModelNotFound) {
    const ApiError error = model_not_found("gpt-9");
    EXPECT_EQ(error.http_status, 404);
    EXPECT_EQ(error.code, "model_not_found");
    EXPECT_EQ(error.param, "model");
    EXPECT_NE(error.message.find("gpt-9"), std::string::npos);
}

TEST(ApiErrors, ContextLengthExceededSaysTheLimit) {
    const ApiError error = context_length_exceeded(2048, 2000, 100);
    EXPECT_EQ(error.http_status, 400);
    EXPECT_EQ(error.code, "context_length_exceeded");
    EXPECT_EQ(error.type, "invalid_request_error");
    EXPECT_EQ(error.param, "messages");
    EXPECT_NE(error.message.find("maximum context length is 2048 tokens"), std::string::npos) << error.message;
    EXPECT_NE(error.message.find("2100"), std::string::npos);
    EXPECT_EQ(context_length_exceeded(10, 11, 0, "prompt").param, "prompt");
}

TEST(ApiErrors, StatusesAndRetryAfter) {
    EXPECT_EQ(payload_too_large(1024).http_status, 413);
    EXPECT_NE(payload_too_large(1024).message.find("1024"), std::string::npos);
    EXPECT_EQ(internal_error("x").http_status, 500);
    EXPECT_EQ(internal_error("x").type, "server_error");

    const ApiError busy = rate_limited("queue full", 3);
    EXPECT_EQ(busy.http_status, 429);
    EXPECT_EQ(busy.code, "rate_limit_exceeded");
    const http::HttpResponse response = to_http_response(busy);
    EXPECT_EQ(response.status, 429);
    EXPECT_EQ(response.content_type, "application/json");
    ASSERT_EQ(response.headers.count("retry-after"), 1u);
    EXPECT_EQ(response.headers.find("Retry-After")->second, "3");

    const ApiError unavailable = service_unavailable("loading", 10);
    EXPECT_EQ(unavailable.http_status, 503);
    EXPECT_EQ(to_http_response(unavailable).headers.find("Retry-After")->second, "10");
    EXPECT_EQ(to_http_response(service_unavailable("stopping")).headers.count("Retry-After"), 0u);
}

TEST(ApiErrors, InvalidUtf8InMessageDoesNotThrow) {
    const ApiError error = invalid_request(std::string("bad \xff byte"));
    json parsed;
    EXPECT_NO_THROW(parsed = json::parse(error.body()));
    EXPECT_EQ(parsed["error"]["type"], "invalid_request_error");
}

TEST(ApiErrors, HttpErrorRenderer) {
    const http::HttpResponse not_found = http_error_response(404, "Invalid URL (GET /x)");
    EXPECT_EQ(not_found.status, 404);
    const json error = json::parse(not_found.body)["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_EQ(error["message"], "Invalid URL (GET /x)");
    EXPECT_EQ(json::parse(http_error_response(413, "too big").body)["error"]["code"], "request_too_large");
    EXPECT_EQ(json::parse(http_error_response(500, "oops").body)["error"]["type"], "server_error");
}

TEST(ApiResult, HoldsValueOrError) {
    ApiResult<int> good = 3;
    ASSERT_TRUE(good);
    EXPECT_EQ(*good, 3);
    ApiResult<int> bad = invalid_request("no", "n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().param, "n");
}

}  // namespace api_errors_test
}  // namespace
}  // namespace tempered::api
