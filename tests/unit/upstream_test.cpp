// Upstream mode's pure parts: the /v1/completions body a generation becomes (every sampling value explicit,
// the prompt as ids, token ids asked for), server-sent events read from any cut of the bytes, the base URL,
// and a choice fed the upstream's token ids giving what our engine's postprocess gives for the same tokens.
#include <gtest/gtest.h>

#include "engine/degeneration_guard.h"
#include "engine_test_support.h"
#include "upstream/chunk_reader.h"
#include "upstream/completion_body.h"
#include "upstream/llamacpp_native.h"
#include "upstream/sse_reader.h"
#include "upstream/upstream_choice.h"
#include "upstream/upstream_generator.h"

namespace tempered::upstream {
namespace {
namespace upstream_test {

TEST(UpstreamBody, EverySamplingValueIsExplicitAndThePromptIsIds) {
    GenerationOptions options;
    options.prompt = {1, 2, 3};
    options.n = 2;
    options.max_tokens = 9;
    options.seed = 42;
    options.sampling.temperature = 0.0f;
    options.sampling.logit_bias = {{7, -100.0f}};
    options.penalties.repetition = 1.1f;
    const nlohmann::json body = completion_body(options, "m", capabilities_of(UpstreamKind::Tempered));
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

// Each kind gets the fields it takes; a value that would change the draw and is not sent is reported.
TEST(UpstreamBody, EachKindGetsWhatItTakes) {
    GenerationOptions options;
    options.sampling.top_k = 40;
    options.sampling.typical_p = 0.9f;
    options.penalties.repetition = 1.1f;
    const nlohmann::json openai = completion_body(options, "m", capabilities_of(UpstreamKind::OpenAi));
    for (const char* field : {"top_k", "min_p", "typical_p", "repetition_penalty", "return_token_ids"})
        EXPECT_FALSE(openai.contains(field)) << field;
    EXPECT_EQ(unapplied_sampling(options, capabilities_of(UpstreamKind::OpenAi)),
              (std::vector<std::string>{"top_k", "typical_p", "repetition_penalty"}));
    const nlohmann::json llamacpp = completion_body(options, "m", capabilities_of(UpstreamKind::LlamaCpp));
    EXPECT_FLOAT_EQ(llamacpp["repeat_penalty"].get<float>(), 1.1f);
    EXPECT_FALSE(llamacpp.contains("repetition_penalty"));
    EXPECT_EQ(unapplied_sampling(options, capabilities_of(UpstreamKind::Vllm)), std::vector<std::string>{"typical_p"});
    EXPECT_TRUE(unapplied_sampling(options, capabilities_of(UpstreamKind::Tempered)).empty());
    EXPECT_EQ(parse_upstream_kind("llamacpp").value(), UpstreamKind::LlamaCpp);
    EXPECT_FALSE(parse_upstream_kind("auto")) << "auto is the caller's: detect_upstream_kind";
}

// llama-server's native /completion: its names in the body, its chunks read as OpenAI completion chunks.
TEST(UpstreamLlamaCpp, NativeBodyAndChunks) {
    GenerationOptions options;
    options.prompt = {1, 2};
    options.max_tokens = 7;
    options.penalties.repetition = 1.2f;
    options.dry.multiplier = 0.8f;
    const nlohmann::json body = llamacpp_completion_body(options);
    EXPECT_EQ(body["n_predict"], 7);
    EXPECT_EQ(body["return_tokens"], true);
    EXPECT_FLOAT_EQ(body["repeat_penalty"].get<float>(), 1.2f);
    EXPECT_EQ(body["dry_sequence_breakers"], nlohmann::json::array()) << "ours are none: llama.cpp's would apply";
    EXPECT_FALSE(body.contains("model"));
    const nlohmann::json partial = from_llamacpp_chunk(
        nlohmann::json::parse(R"({"index": 1, "content": " Paris", "tokens": [7], "stop": false})"));
    EXPECT_EQ(partial, nlohmann::json::parse(R"({"choices": [{"index": 1, "text": " Paris", "token_ids": [7]}]})"));
    const nlohmann::json last = from_llamacpp_chunk(
        nlohmann::json::parse(R"({"content": "", "tokens": [], "stop": true, "stop_type": "limit"})"));
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
    const nlohmann::json odd = from_llamacpp_chunk(nlohmann::json::parse(R"({"index": "x", "content": 3, "stop": 1})"));
    EXPECT_EQ(odd, nlohmann::json::parse(R"({"choices": [{"index": 0}]})")) << "wrong types read as absent";
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

// Logprobs named by id: parsed in token order, each token's alternatives most likely first (ties: lower id),
// whatever order the JSON object keeps them in; names that are not "token_id:<id>" are skipped.
TEST(UpstreamLogprobs, NamedByIdAndOrderedAsOurOwn) {
    const nlohmann::json choice = nlohmann::json::parse(R"({"logprobs": {
        "tokens": ["token_id:5", "token_id:7", "hello"],
        "token_logprobs": [-0.5, -1.25, -2.0],
        "top_logprobs": [{"token_id:9": -2.0, "token_id:5": -0.5, "token_id:3": -2.0}, {"token_id:7": -1.25}, {}]}})");
    const std::vector<TokenLogprob> logprobs = read_logprobs(choice);
    ASSERT_EQ(logprobs.size(), 2u);
    EXPECT_EQ(logprobs[0].token, 5);
    EXPECT_EQ(logprobs[0].logprob, -0.5f);
    EXPECT_EQ(logprobs[0].top, (std::vector<std::pair<int32_t, float>>{{5, -0.5f}, {3, -2.0f}, {9, -2.0f}}));
    EXPECT_EQ(logprobs[1].token, 7);
    EXPECT_TRUE(read_logprobs(nlohmann::json::parse(R"({"text": "x"})")).empty());
    EXPECT_TRUE(read_logprobs(nlohmann::json::parse(R"({"logprobs": {"tokens": ["token_id:1"]}})")).empty());
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

// A budget the upstream cannot be told about: after exactly `budget` reasoning tokens the choice appends the
// forced end itself, drops what the upstream draws after it, and asks for a continuation whose prompt is the
// prompt and every token so far, with what is left of max_tokens.
TEST(UpstreamChoice, ABudgetAppendsTheForcedEndAndAsksForAContinuation) {
    const Tokenizer tokenizer = testing::thinking_tokenizer();
    GenerationOptions options;
    options.prompt = {'x', testing::kThinkStart};
    options.max_tokens = 12;
    options.reasoning.markers = reasoning::ThinkTokens{testing::kThinkStart, testing::kThinkEnd};
    options.reasoning.prompt_opens_reasoning = true;
    options.reasoning.budget = 3;
    options.reasoning.forced_end = {'\n', testing::kThinkEnd, '\n'};
    UpstreamChoice choice(0, options, tokenizer);
    ChoiceDelta delta;
    for (int32_t token : {'a', 'b', 'c', 'd', 'e'}) choice.take_token(token, delta, nullptr);
    EXPECT_EQ(delta.tokens, (std::vector<int32_t>{'a', 'b', 'c', '\n', testing::kThinkEnd, '\n'}))
        << "'d' and 'e', drawn past the budget, are dropped";
    EXPECT_EQ(delta.reasoning_text, "abc\n");
    EXPECT_TRUE(choice.awaiting_continuation());
    EXPECT_FALSE(choice.finished());
    choice.end(FinishReason::Length, delta);  // the upstream's end of the cut leg does not end the choice
    EXPECT_FALSE(choice.finished());

    const GenerationOptions next = choice.continuation();
    EXPECT_FALSE(choice.awaiting_continuation());
    EXPECT_EQ(next.prompt,
              (std::vector<int32_t>{'x', testing::kThinkStart, 'a', 'b', 'c', '\n', testing::kThinkEnd, '\n'}));
    EXPECT_EQ(next.max_tokens, 6);
    EXPECT_EQ(next.n, 1);
    ChoiceDelta content;
    for (int32_t token : {'O', 'K'}) choice.take_token(token, content, nullptr);
    choice.end(FinishReason::Stop, content);
    EXPECT_EQ(content.text, "OK");
    ASSERT_TRUE(content.reasoning);
    EXPECT_EQ(content.reasoning->tokens, 3);
    EXPECT_EQ(content.reasoning->forced_end, ForcedEnd::Budget);
}

// The guard's resample: the choice stops taking the upstream's draw at the loop and continues with the
// guard's fallback sampling.
TEST(UpstreamChoice, AResampleContinuesWithTheFallbackSampling) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    GenerationOptions options;
    options.max_tokens = 200;
    options.sampling.temperature = 0.0f;
    options.guard = default_degeneration_guard();
    options.guard.action = DegenerationAction::Resample;
    UpstreamChoice choice(0, options, tokenizer);
    ChoiceDelta delta;
    int taken = 0;
    while (!choice.awaiting_continuation() && taken < 150) {
        choice.take_token("ab"[taken % 2], delta, nullptr);
        ++taken;
    }
    ASSERT_TRUE(choice.awaiting_continuation()) << "the guard saw no loop in 150 tokens of \"abab...\"";
    ASSERT_TRUE(delta.degeneration && delta.degeneration->resampled);
    const GenerationOptions next = choice.continuation();
    EXPECT_EQ(next.sampling.temperature, *options.guard.fallback.temperature);
    EXPECT_EQ(next.dry.multiplier, options.guard.fallback.dry.multiplier);
    EXPECT_EQ(next.max_tokens, 200 - taken);
    EXPECT_EQ(next.prompt.size(), static_cast<size_t>(taken));
}

}  // namespace upstream_test
}  // namespace
}  // namespace tempered::upstream
