// --max-tokens-limit, --max-prompt-tokens and --max-request-tokens: an explicit value over a bound is a
// 400 naming the field; an omitted max_tokens is lowered to fit.
#include <gtest/gtest.h>

#include "edge/request_limits.h"

namespace tempered {
namespace {
namespace edge_request_limits_test {

api::GenerationRequest asking(std::optional<int64_t> max_tokens, int n = 1, std::string param = "max_tokens") {
    api::GenerationRequest generation;
    if (max_tokens) generation.max_tokens = api::RequestedValue<int64_t>::of(*max_tokens);
    generation.n = n;
    generation.max_tokens_param = std::move(param);
    return generation;
}

TEST(RequestLimits, NoLimitsKeepTheRequestOrTheFallback) {
    const RequestLimits none;
    EXPECT_EQ(*choice_max_tokens(none, asking(5000, 16), 100, 3), 5000);
    EXPECT_EQ(*choice_max_tokens(none, asking(std::nullopt, 16), 4000, 3), 4000);
    EXPECT_FALSE(check_prompt_tokens(none, 1'000'000, "messages"));
}

TEST(RequestLimits, MaxTokensOverTheLimitIsA400NamingTheField) {
    const RequestLimits limits{.max_tokens = 512};
    EXPECT_EQ(*choice_max_tokens(limits, asking(512), 4000, 1), 512);
    auto over = choice_max_tokens(limits, asking(513, 1, "max_completion_tokens"), 4000, 1);
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().http_status, 400);
    EXPECT_EQ(over.error().param, "max_completion_tokens");
    EXPECT_EQ(over.error().code, "invalid_value");
    EXPECT_NE(over.error().message.find("--max-tokens-limit"), std::string::npos);
    // Omitted: the context room, capped at the limit; a smaller room stays as it is.
    EXPECT_EQ(*choice_max_tokens(limits, asking(std::nullopt), 4000, 1), 512);
    EXPECT_EQ(*choice_max_tokens(limits, asking(std::nullopt), 16, 1), 16);
}

TEST(RequestLimits, RequestTotalBoundsChoicesTimesMaxTokens) {
    const RequestLimits limits{.max_request_tokens = 1000};
    EXPECT_EQ(*choice_max_tokens(limits, asking(250, 4), 4000, 1), 250);
    auto many_choices = choice_max_tokens(limits, asking(251, 4), 4000, 1);
    ASSERT_FALSE(many_choices);
    EXPECT_EQ(many_choices.error().param, "n");
    auto many_prompts = choice_max_tokens(limits, asking(300, 1), 4000, 4);
    ASSERT_FALSE(many_prompts);
    EXPECT_EQ(many_prompts.error().param, "prompt");
    auto one_choice = choice_max_tokens(limits, asking(1001), 4000, 1);
    ASSERT_FALSE(one_choice);
    EXPECT_EQ(one_choice.error().param, "max_tokens");
    // Huge values do not overflow the product.
    EXPECT_FALSE(choice_max_tokens(limits, asking(std::numeric_limits<int64_t>::max(), 16), 4000, 1000));
    // Omitted: each choice gets its share.
    EXPECT_EQ(*choice_max_tokens(limits, asking(std::nullopt, 3), 4000, 1), 333);
    EXPECT_EQ(*choice_max_tokens(limits, asking(std::nullopt, 2), 16, 2), 16);
    auto no_share = choice_max_tokens(limits, asking(std::nullopt, 16), 4000, 100);
    ASSERT_FALSE(no_share);
    EXPECT_EQ(no_share.error().param, "n");
}

TEST(RequestLimits, LongPromptIsContextLengthExceededNamingIt) {
    const RequestLimits limits{.max_prompt_tokens = 100};
    EXPECT_FALSE(check_prompt_tokens(limits, 100, "messages"));
    auto error = check_prompt_tokens(limits, 101, "prompt[2]");
    ASSERT_TRUE(error);
    EXPECT_EQ(error->http_status, 400);
    EXPECT_EQ(error->param, "prompt[2]");
    EXPECT_EQ(error->code, "context_length_exceeded");
    EXPECT_NE(error->message.find("--max-prompt-tokens"), std::string::npos);
}

}  // namespace edge_request_limits_test
}  // namespace
}  // namespace tempered
