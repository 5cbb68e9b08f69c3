// CORS (--allowed-origins) and GuardedRoutes: the key check and CORS around real routes on a real socket.
#include <gtest/gtest.h>

#include <atomic>

#include "edge/guarded_routes.h"
#include "http/http_server.h"
#include "http/httplib_include.h"

namespace tempered {
namespace {
namespace edge_cors_test {

http::HttpRequest from_origin(const std::string& origin) {
    http::HttpRequest request;
    if (!origin.empty()) request.headers.emplace("Origin", origin);
    return request;
}

CorsPolicy policy(const std::string& origins) {
    auto parsed = CorsPolicy::parse(origins);
    EXPECT_TRUE(parsed) << parsed.error().message;
    return parsed ? *parsed : CorsPolicy{};
}

TEST(CorsPolicy, ParsesStarAndOriginListsAndRefusesPaths) {
    EXPECT_FALSE(policy("").enabled());
    EXPECT_TRUE(policy("*").enabled());
    EXPECT_TRUE(policy("https://a.example, http://localhost:3000").enabled());
    for (const char* bad : {"a.example", "https://a.example/", "https://a.example/app", "https://", "https://a b"})
        EXPECT_FALSE(CorsPolicy::parse(bad)) << bad;
}

TEST(CorsPolicy, EchoesAnAllowedOriginAndNothingForOthers) {
    const CorsPolicy listed = policy("https://a.example,http://localhost:3000");
    EXPECT_EQ(listed.allow_origin("https://a.example"), "https://a.example");
    EXPECT_EQ(listed.allow_origin("http://localhost:3000"), "http://localhost:3000");
    EXPECT_EQ(listed.allow_origin("https://evil.example"), std::nullopt);
    EXPECT_EQ(listed.allow_origin("https://a.example.evil"), std::nullopt);
    EXPECT_EQ(listed.allow_origin(""), std::nullopt);
    EXPECT_EQ(policy("*").allow_origin("https://anyone.example"), "*");
    EXPECT_EQ(CorsPolicy{}.allow_origin("https://a.example"), std::nullopt);
}

TEST(CorsPolicy, DecoratesOnlyAllowedOriginsAndVariesOnOrigin) {
    const CorsPolicy listed = policy("https://a.example");
    http::HttpResponse allowed;
    listed.decorate(from_origin("https://a.example"), allowed);
    EXPECT_EQ(allowed.headers.find("Access-Control-Allow-Origin")->second, "https://a.example");
    EXPECT_EQ(allowed.headers.find("Vary")->second, "Origin");
    http::HttpResponse refused;
    listed.decorate(from_origin("https://evil.example"), refused);
    EXPECT_FALSE(refused.headers.count("Access-Control-Allow-Origin"));
    http::HttpResponse off;
    CorsPolicy{}.decorate(from_origin("https://a.example"), off);
    EXPECT_TRUE(off.headers.empty());
}

TEST(CorsPolicy, PreflightNamesMethodsHeadersAndMaxAge) {
    http::HttpRequest request = from_origin("https://a.example");
    request.headers.emplace("Access-Control-Request-Method", "POST");
    request.headers.emplace("Access-Control-Request-Headers", "authorization, content-type, x-stainless-os");
    const http::HttpResponse response = policy("https://a.example").preflight(request, {"POST", "GET"});
    EXPECT_EQ(response.status, 204);
    EXPECT_EQ(response.headers.find("Access-Control-Allow-Methods")->second, "POST, GET, OPTIONS");
    const std::string headers = response.headers.find("Access-Control-Allow-Headers")->second;
    for (const char* name : {"Authorization", "Content-Type", "x-stainless-os"})
        EXPECT_NE(headers.find(name), std::string::npos) << headers;
    EXPECT_EQ(response.headers.find("Access-Control-Max-Age")->second, std::to_string(CorsPolicy::kMaxAgeSeconds));

    request.headers.erase("Access-Control-Request-Headers");
    request.headers.emplace("Access-Control-Request-Headers", "x-a\r\nset-cookie: 1");
    const http::HttpResponse odd = policy("https://a.example").preflight(request, {"POST"});
    EXPECT_EQ(odd.headers.find("Access-Control-Allow-Headers")->second.find("cookie"), std::string::npos);

    const http::HttpResponse refused =
        policy("https://a.example").preflight(from_origin("https://evil.example"), {"POST"});
    EXPECT_EQ(refused.status, 204);
    EXPECT_FALSE(refused.headers.count("Access-Control-Allow-Origin"));
    EXPECT_FALSE(refused.headers.count("Access-Control-Allow-Methods"));
}

// One keyed route and one probe behind GuardedRoutes, on a real socket.
class GuardedRoutesTest : public ::testing::Test {
protected:
    void start(const CorsPolicy& cors) {
        cors_ = cors;
        GuardedRoutes routes(server_, access_, cors_);
        routes.route("POST", "/v1/completions", [this](const http::HttpRequest&) {
            ++calls_;
            return http::HttpResponse::json(200, "{}");
        });
        routes.route("GET", "/health", [](const http::HttpRequest&) { return http::HttpResponse::json(200, "{}"); });
        routes.add_preflight_routes();
        ASSERT_TRUE(server_.start());
    }
    httplib::Client client() { return httplib::Client("127.0.0.1", server_.port()); }

    static AccessSettings one_key() {
        AccessSettings settings;
        settings.keys = {{"ops", "sk-ops"}};
        return settings;
    }

    AccessControl access_{one_key()};
    CorsPolicy cors_;
    std::atomic<int> calls_{0};
    http::HttpServer server_;  // last: stopped before what its handlers use goes
};

TEST_F(GuardedRoutesTest, WithoutTheKeyTheHandlerNeverRuns) {
    start(CorsPolicy{});
    auto cli = client();
    auto missing = cli.Post("/v1/completions", "{}", "application/json");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 401);
    EXPECT_EQ(missing->get_header_value("WWW-Authenticate"), "Bearer");
    auto wrong = cli.Post("/v1/completions", {{"Authorization", "Bearer sk-nope"}}, "{}", "application/json");
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401);
    EXPECT_EQ(calls_, 0);
    auto right = cli.Post("/v1/completions", {{"Authorization", "Bearer sk-ops"}}, "{}", "application/json");
    ASSERT_TRUE(right);
    EXPECT_EQ(right->status, 200);
    EXPECT_EQ(calls_, 1);
    auto probe = cli.Get("/health");
    ASSERT_TRUE(probe);
    EXPECT_EQ(probe->status, 200);
    // CORS off: OPTIONS is the router's 405, with no CORS header.
    auto options = cli.Options("/v1/completions");
    ASSERT_TRUE(options);
    EXPECT_EQ(options->status, 405);
    EXPECT_FALSE(options->has_header("Access-Control-Allow-Origin"));
}

TEST_F(GuardedRoutesTest, PreflightNeedsNoKeyAndRefusalsCarryCors) {
    start(policy("https://a.example"));
    auto cli = client();
    const httplib::Headers origin = {{"Origin", "https://a.example"}, {"Access-Control-Request-Method", "POST"}};
    auto preflight = cli.Options("/v1/completions", origin);
    ASSERT_TRUE(preflight);
    EXPECT_EQ(preflight->status, 204);
    EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Origin"), "https://a.example");
    EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS");
    // A browser must be able to read the 401 to tell the user.
    auto refused = cli.Post("/v1/completions", {{"Origin", "https://a.example"}}, "{}", "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401);
    EXPECT_EQ(refused->get_header_value("Access-Control-Allow-Origin"), "https://a.example");
    EXPECT_EQ(calls_, 0);
}

}  // namespace edge_cors_test
}  // namespace
}  // namespace tempered
