// Synthetic prompt sets against scripted servers: /tokenize in llama.cpp's dialect (it answers the
// other one with an empty list), a server without /tokenize, and the chat template's overhead.
#include <gtest/gtest.h>

#include <algorithm>

#include "http/http_server.h"
#include "loadgen/prompts.h"

namespace tempered::loadgen {
namespace {
namespace loadgen_prompt_set_test {

using namespace std::chrono_literals;

constexpr int64_t kTemplateTokens = 20;  // what the scripted chat template adds

int64_t words_in(const std::string& text) { return 1 + std::count(text.begin(), text.end(), ' '); }

// Tokenizes as one token per word plus BOS; speaks llama.cpp's dialect ({"content"}) only.
void add_llama_cpp_routes(http::HttpServer& server) {
    server.route("POST", "/tokenize", [](const http::HttpRequest& request) {
        const auto body = nlohmann::json::parse(request.body);
        nlohmann::json tokens = nlohmann::json::array();
        if (body.contains("content"))
            for (int64_t i = 0; i < words_in(body["content"].get<std::string>()) + 1; ++i) tokens.push_back(i);
        return http::HttpResponse::json(200, nlohmann::json{{"tokens", tokens}}.dump());
    });
    server.route("POST", "/v1/chat/completions", [](const http::HttpRequest& request) {
        const auto body = nlohmann::json::parse(request.body);
        const int64_t prompt = kTemplateTokens + 1 + words_in(body["messages"][0]["content"].get<std::string>());
        return http::HttpResponse::json(
            200, nlohmann::json{{"choices", nlohmann::json::array()}, {"usage", {{"prompt_tokens", prompt}}}}.dump());
    });
}

struct Fixture {
    Fixture() : server(options()) {
        add_llama_cpp_routes(server);
        EXPECT_TRUE(server.start().ok());
        url = BaseUrl{"http://127.0.0.1:" + std::to_string(server.port()), "", ""};
    }
    static http::HttpServerOptions options() {
        http::HttpServerOptions o;
        o.threads = 8;
        return o;
    }
    http::HttpServer server;
    BaseUrl url;
    std::vector<std::string> notes;
    std::function<void(const std::string&)> note = [this](const std::string& text) { notes.push_back(text); };
};

TEST(LoadgenPromptSet, SizedByTokenizeInTheDialectTheServerSpeaks) {
    Fixture fixture;
    HttpSession probe(fixture.url, 10s);
    auto set = synthetic_prompt_set(probe, {Endpoint::Completions, "m", 4, false, std::nullopt}, {10, 32, 7, 3, 10s},
                                    fixture.note);
    ASSERT_TRUE(set) << set.error().message;
    ASSERT_EQ(set->texts.size(), 10u);
    for (size_t i = 0; i < set->texts.size(); ++i) {
        EXPECT_EQ(words_in(set->texts[i]) + 1, 32) << i;  // + BOS
        EXPECT_EQ(set->texts[i], synthetic_prompt(7, i, 31));
    }
    EXPECT_TRUE(fixture.notes.empty());
    EXPECT_EQ(set->source, "synthetic, 32 tokens by the server's /tokenize");
}

TEST(LoadgenPromptSet, ChatMessageLeavesRoomForTheTemplate) {
    Fixture fixture;
    HttpSession probe(fixture.url, 10s);
    auto set =
        synthetic_prompt_set(probe, {Endpoint::Chat, "m", 4, true, std::nullopt}, {3, 64, 1, 2, 10s}, fixture.note);
    ASSERT_TRUE(set) << set.error().message;
    for (const std::string& text : set->texts) EXPECT_EQ(kTemplateTokens + 1 + words_in(text), 64);
    EXPECT_NE(set->source.find("chat template 20"), std::string::npos) << set->source;
}

TEST(LoadgenPromptSet, WithoutTokenizeWordsStandForTokens) {
    http::HttpServer server(Fixture::options());  // no routes: /tokenize is a 404
    ASSERT_TRUE(server.start().ok());
    HttpSession probe(BaseUrl{"http://127.0.0.1:" + std::to_string(server.port()), "", ""}, 10s);
    std::vector<std::string> notes;
    auto set = synthetic_prompt_set(probe, {Endpoint::Completions, "m", 4, false, std::nullopt}, {4, 16, 0, 2, 10s},
                                    [&](const std::string& text) { notes.push_back(text); });
    ASSERT_TRUE(set) << set.error().message;
    ASSERT_EQ(set->texts.size(), 4u);
    for (const std::string& text : set->texts) EXPECT_EQ(words_in(text), 16);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("no POST /tokenize"), std::string::npos);
}

}  // namespace loadgen_prompt_set_test
}  // namespace
}  // namespace tempered::loadgen
