#include <gtest/gtest.h>

#include "http/router.h"

namespace tempered::http {
namespace {
namespace http_router_test {

HttpHandler reply(int status) {
    return [status](const HttpRequest&) { return HttpResponse::json(status, "{}"); };
}

TEST(HttpRouter, MatchesLiteralsAndPlaceholders) {
    Router router;
    router.add("GET", "/v1/models", reply(1));
    router.add("GET", "/v1/models/{model}", reply(2));
    router.add("POST", "/v1/chat/completions", reply(3));

    auto list = router.match("GET", "/v1/models");
    ASSERT_EQ(list.outcome, Router::Outcome::Matched);
    EXPECT_EQ((*list.handler)(HttpRequest{}).status, 1);

    auto one = router.match("GET", "/v1/models/org/name");
    EXPECT_EQ(one.outcome, Router::Outcome::NotFound);  // a placeholder is one segment

    auto model = router.match("GET", "/v1/models/llama");
    ASSERT_EQ(model.outcome, Router::Outcome::Matched);
    EXPECT_EQ(model.path_params.at("model"), "llama");
    EXPECT_EQ((*model.handler)(HttpRequest{}).status, 2);

    EXPECT_EQ(router.match("GET", "/v1/models/").outcome, Router::Outcome::NotFound);
    EXPECT_EQ(router.match("GET", "/v1/model").outcome, Router::Outcome::NotFound);
    EXPECT_EQ(router.match("POST", "/v1/chat/completions/").outcome, Router::Outcome::NotFound);
}

TEST(HttpRouter, WrongMethodListsAllowedMethods) {
    Router router;
    router.add("POST", "/v1/completions", reply(1));
    router.add("DELETE", "/v1/completions", reply(2));
    auto match = router.match("GET", "/v1/completions");
    EXPECT_EQ(match.outcome, Router::Outcome::MethodNotAllowed);
    EXPECT_EQ(match.allowed_methods, (std::vector<std::string>{"POST", "DELETE"}));
}

TEST(HttpRouter, HeadUsesGetRoute) {
    Router router;
    router.add("GET", "/health", reply(200));
    EXPECT_EQ(router.match("HEAD", "/health").outcome, Router::Outcome::Matched);
}

TEST(HttpRouter, FirstMatchWins) {
    Router router;
    router.add("GET", "/v1/models/special", reply(1));
    router.add("GET", "/v1/models/{model}", reply(2));
    EXPECT_EQ((*router.match("GET", "/v1/models/special").handler)(HttpRequest{}).status, 1);
    EXPECT_EQ((*router.match("GET", "/v1/models/other").handler)(HttpRequest{}).status, 2);
}

TEST(HttpHeaders, CaseInsensitive) {
    HttpRequest request;
    request.headers.emplace("Content-Type", "application/json");
    EXPECT_EQ(request.header("content-type"), "application/json");
    EXPECT_TRUE(request.has_header("CONTENT-TYPE"));
    EXPECT_EQ(request.header("accept"), "");
}

}  // namespace http_router_test
}  // namespace
}  // namespace tempered::http
