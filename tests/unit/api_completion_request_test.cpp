#include <gtest/gtest.h>

#include "api/completion_request.h"

namespace tempered::api {
namespace {
namespace api_completion_request_test {

void expect_invalid(const std::string& body, const std::string& param) {
    const ApiResult<CompletionRequest> result = parse_completion_request(body);
    ASSERT_FALSE(result) << "accepted: " << body;
    EXPECT_EQ(result.error().http_status, 400);
    EXPECT_EQ(result.error().param, param) << body << " -> " << result.error().message;
}

CompletionRequest parse_ok(const std::string& body) {
    ApiResult<CompletionRequest> result = parse_completion_request(body);
    EXPECT_TRUE(result) << body << " -> " << (result ? "" : result.error().message);
    return result ? std::move(result).value() : CompletionRequest{};
}

using Ids = std::vector<int32_t>;

TEST(CompletionRequest, PromptForms) {
    const CompletionRequest text = parse_ok(R"({"prompt":"Once upon"})");
    ASSERT_EQ(text.prompts.size(), 1u);
    EXPECT_EQ(std::get<std::string>(text.prompts[0]), "Once upon");
    EXPECT_FALSE(text.prompt_is_batch);

    const CompletionRequest ids = parse_ok(R"({"prompt":[1,2,3]})");
    ASSERT_EQ(ids.prompts.size(), 1u);
    EXPECT_EQ(std::get<Ids>(ids.prompts[0]), (Ids{1, 2, 3}));

    const CompletionRequest texts = parse_ok(R"({"prompt":["a","b"]})");
    ASSERT_EQ(texts.prompts.size(), 2u);
    EXPECT_TRUE(texts.prompt_is_batch);
    EXPECT_EQ(std::get<std::string>(texts.prompts[1]), "b");

    const CompletionRequest batches = parse_ok(R"({"prompt":[[1,2],[3],"c"]})");
    ASSERT_EQ(batches.prompts.size(), 3u);
    EXPECT_EQ(std::get<Ids>(batches.prompts[1]), (Ids{3}));
    EXPECT_EQ(std::get<std::string>(batches.prompts[2]), "c");

    EXPECT_EQ(std::get<std::string>(parse_ok(R"({"prompt":""})").prompts[0]), "");
}

TEST(CompletionRequest, PromptErrors) {
    expect_invalid(R"({})", "prompt");
    expect_invalid(R"({"prompt":null})", "prompt");
    expect_invalid(R"({"prompt":5})", "prompt");
    expect_invalid(R"({"prompt":[]})", "prompt");
    expect_invalid(R"({"prompt":[1,"a"]})", "prompt[1]");
    expect_invalid(R"({"prompt":[1,-2]})", "prompt[1]");
    expect_invalid(R"({"prompt":[1.5]})", "prompt[0]");
    expect_invalid(R"({"prompt":[1, 3000000000]})", "prompt[1]");
    expect_invalid(R"({"prompt":[[1],[]]})", "prompt[1]");
    expect_invalid(R"({"prompt":[[1],[2,"x"]]})", "prompt[1][1]");
    expect_invalid(R"({"prompt":["a",{}]})", "prompt[1]");
}

TEST(CompletionRequest, TokenIdsAreCheckedAgainstTheVocabulary) {
    EXPECT_FALSE(validate_completion_request(parse_ok(R"({"prompt":[0,99]})"), ModelLimits{100}).has_value());
    const auto single = validate_completion_request(parse_ok(R"({"prompt":[0,100]})"), ModelLimits{100});
    ASSERT_TRUE(single.has_value());
    EXPECT_EQ(single->param, "prompt[1]");
    const auto batch = validate_completion_request(parse_ok(R"({"prompt":["x",[5,1000]]})"), ModelLimits{100});
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->param, "prompt[1][1]");
    const auto bias =
        validate_completion_request(parse_ok(R"({"prompt":"x","logit_bias":{"100":1}})"), ModelLimits{100});
    ASSERT_TRUE(bias.has_value());
    EXPECT_EQ(bias->param, "logit_bias");
}

TEST(CompletionRequest, LogprobsEchoAndLength) {
    const CompletionRequest request = parse_ok(R"({"prompt":"x","logprobs":5,"echo":true,"max_tokens":0})");
    ASSERT_TRUE(request.logprobs.has_value());
    EXPECT_EQ(*request.logprobs, 5);
    EXPECT_TRUE(request.echo);
    EXPECT_EQ(*request.generation.max_tokens.value, 0);  // scoring the prompt with echo
    EXPECT_EQ(*parse_ok(R"({"prompt":"x","logprobs":20})").logprobs, 20);
    EXPECT_EQ(*parse_ok(R"({"prompt":"x","logprobs":0})").logprobs, 0);
    EXPECT_FALSE(parse_ok(R"({"prompt":"x","logprobs":null})").logprobs.has_value());
    expect_invalid(R"({"prompt":"x","logprobs":21})", "logprobs");
    expect_invalid(R"({"prompt":"x","logprobs":true})", "logprobs");
    expect_invalid(R"({"prompt":"x","echo":1})", "echo");
    expect_invalid(R"({"prompt":"x","max_tokens":-1})", "max_tokens");
}

TEST(CompletionRequest, SharedFields) {
    const CompletionRequest request = parse_ok(R"({"prompt":"x","model":"m","n":3,"stop":["\n\n"],"stream":true,
        "stream_options":{"include_usage":true},"temperature":0,"seed":1,"suffix":"ignored","best_of":2})");
    EXPECT_EQ(request.generation.model, "m");
    EXPECT_EQ(request.generation.n, 3);
    EXPECT_EQ(request.generation.stop, std::vector<std::string>{"\n\n"});
    EXPECT_TRUE(request.generation.stream_options.include_usage);
    EXPECT_EQ(*request.generation.sampling.temperature.value, 0.0);
    EXPECT_EQ(request.generation.sampling.top_p.presence, Presence::Omitted);
    expect_invalid(R"({"prompt":"x","temperature":5})", "temperature");
}

}  // namespace api_completion_request_test
}  // namespace
}  // namespace tempered::api
