// Upstream mode's pure parts: the /v1/completions body a generation becomes (every sampling value explicit,
// the prompt as ids, token ids asked for), server-sent events read from any cut of the bytes, the base URL,
// and a choice fed the upstream's token ids giving what our engine's postprocess gives for the same tokens.
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "upstream/completion_body.h"
#include "upstream/sse_reader.h"
#include "upstream/upstream_choice.h"
#include "upstream/upstream_generator.h"

namespace tempered::upstream {
namespace {

TEST(UpstreamBody, EverySamplingValueIsExplicitAndThePromptIsIds) {
    GenerationOptions options;
    options.prompt = {1, 2, 3};
    options.n = 2;
    options.max_tokens = 9;
    options.seed = 42;
    options.sampling.temperature = 0.0f;
    options.sampling.logit_bias = {{7, -100.0f}};
    options.penalties.repetition = 1.1f;
    const nlohmann::json body = completion_body(options, "m");
    EXPECT_EQ(body["prompt"], nlohmann::json::array({1, 2, 3}));
    EXPECT_EQ(body["n"], 2);
    EXPECT_EQ(body["max_tokens"], 9);
    EXPECT_EQ(body["seed"], 42);
    EXPECT_EQ(body["temperature"], 0.0);
    EXPECT_EQ(body["top_p"], 1.0);
    EXPECT_EQ(body["top_k"], 0);
    EXPECT_EQ(body["min_p"], 0.0);
    EXPECT_FLOAT_EQ(body["repetition_penalty"].get<float>(), 1.1f);
    EXPECT_EQ(body["logit_bias"]["7"], -100.0);
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["return_token_ids"], true);
    EXPECT_FALSE(body.contains("stop")) << "stop strings are matched on the front, on content only";
    EXPECT_FALSE(body.contains("dry_multiplier")) << "DRY is sent only when on";
}

TEST(UpstreamSse, DataLinesComeOutWhateverTheCut) {
    const std::string stream = ": keep-alive\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata:{\"b\":2}\n\ndata: [DONE]\n\n";
    for (size_t size : {1u, 2u, 5u, 1000u}) {
        SseReader reader;
        std::vector<std::string> payloads;
        for (size_t at = 0; at < stream.size(); at += size)
            for (std::string& payload : reader.feed(std::string_view(stream).substr(at, size)))
                payloads.push_back(std::move(payload));
        EXPECT_EQ(payloads, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"})) << size;
        EXPECT_FALSE(reader.holds_partial_line());
    }
}

TEST(UpstreamUrl, SchemeHostPortAndAPrefixWithoutV1) {
    auto plain = parse_upstream_url("http://127.0.0.1:8000");
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->scheme_host_port, "http://127.0.0.1:8000");
    EXPECT_EQ(plain->path_prefix, "");
    auto with_v1 = parse_upstream_url("https://gpu.example.com/team/v1/");
    ASSERT_TRUE(with_v1);
    EXPECT_EQ(with_v1->scheme_host_port, "https://gpu.example.com");
    EXPECT_EQ(with_v1->path_prefix, "/team");
    EXPECT_FALSE(parse_upstream_url("127.0.0.1:8000"));
    EXPECT_FALSE(parse_upstream_url("ftp://host"));
    EXPECT_FALSE(parse_upstream_url("http://"));
}

// The upstream's ids, detokenized on the front, stop strings on the front: a stop string in the middle of
// a token ends the choice with the text before it, and the tokens after it are ignored.
TEST(UpstreamChoice, TokensAreDetokenizedAndStopStringsMatchedOnTheFront) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    GenerationOptions options;
    options.prompt = tokenizer.encode("hi", false, false);
    options.stop = {"lo w"};
    UpstreamChoice choice(0, options, tokenizer);
    ChoiceDelta delta;
    for (int32_t token : tokenizer.encode("hello world", false, false)) choice.take_token(token, delta, nullptr);
    EXPECT_TRUE(choice.finished());
    EXPECT_EQ(delta.text, "hel");
    ASSERT_TRUE(delta.finish);
    EXPECT_EQ(*delta.finish, FinishReason::Stop);
    EXPECT_EQ(delta.tokens.size(), 7u) << "the tokens up to the one that completed the stop string";
}

TEST(UpstreamChoice, TheUpstreamsEndReleasesWhatWasHeldBack) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    GenerationOptions options;
    options.stop = {"STOP"};
    UpstreamChoice choice(0, options, tokenizer);
    ChoiceDelta delta;
    for (int32_t token : tokenizer.encode("ab ST", false, false)) choice.take_token(token, delta, nullptr);
    EXPECT_EQ(delta.text, "ab ");
    choice.end(FinishReason::Length, delta);
    EXPECT_EQ(delta.text, "ab ST");
    EXPECT_EQ(*delta.finish, FinishReason::Length);
}

}  // namespace
}  // namespace tempered::upstream
