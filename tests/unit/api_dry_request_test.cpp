// The DRY request fields (chat and completions share them) and chat_template_kwargs' refused keys.
#include <gtest/gtest.h>

#include <sstream>

#include "api/chat_request.h"
#include "api/completion_request.h"

namespace tempered::api {
namespace {
namespace api_dry_request_test {

const std::string kHello = R"("messages":[{"role":"user","content":"hi"}])";

void expect_invalid(const std::string& fields, const std::string& param) {
    const std::string body = "{" + kHello + "," + fields + "}";
    const ApiResult<ChatRequest> result = parse_chat_request(body);
    ASSERT_FALSE(result) << "accepted: " << body;
    EXPECT_EQ(result.error().http_status, 400) << body;
    EXPECT_EQ(result.error().param, param) << body << " -> " << result.error().message;
    EXPECT_NE(result.error().message.find(param), std::string::npos) << result.error().message;
}

TEST(DryRequest, ReadsTheFiveFieldsOnChat) {
    auto parsed = parse_chat_request("{" + kHello +
                                     R"(,"dry_multiplier":0.8,"dry_base":1.5,"dry_allowed_length":3,)"
                                     R"("dry_penalty_last_n":256,"dry_sequence_breakers":["\n","User:"]})");
    ASSERT_TRUE(parsed) << parsed.error().message;
    const SamplingRequest& sampling = parsed->generation.sampling;
    EXPECT_EQ(*sampling.dry_multiplier.value, 0.8);
    EXPECT_EQ(*sampling.dry_base.value, 1.5);
    EXPECT_EQ(*sampling.dry_allowed_length.value, 3);
    EXPECT_EQ(*sampling.dry_penalty_last_n.value, 256);
    EXPECT_EQ(*sampling.dry_sequence_breakers.value, (std::vector<std::string>{"\n", "User:"}));
    const SamplingValues values = to_sampling_values(sampling);
    EXPECT_EQ(*values.dry_multiplier, 0.8);
    EXPECT_EQ(*values.dry_penalty_last_n, 256);
    EXPECT_EQ(*values.dry_sequence_breakers, (std::vector<std::string>{"\n", "User:"}));
}

TEST(DryRequest, OmittedAndNullAreNotSet) {
    auto parsed = parse_chat_request("{" + kHello + R"(,"dry_multiplier":null,"dry_sequence_breakers":null})");
    ASSERT_TRUE(parsed) << parsed.error().message;
    const SamplingRequest& sampling = parsed->generation.sampling;
    EXPECT_EQ(sampling.dry_multiplier.presence, Presence::Null);
    EXPECT_EQ(sampling.dry_sequence_breakers.presence, Presence::Null);
    EXPECT_EQ(sampling.dry_base.presence, Presence::Omitted);
    const SamplingValues values = to_sampling_values(sampling);
    EXPECT_FALSE(values.dry_multiplier || values.dry_sequence_breakers || values.dry_base);
}

TEST(DryRequest, CompletionsReadThemToo) {
    auto parsed = parse_completion_request(R"({"prompt":"x","dry_multiplier":1.0,"dry_sequence_breakers":["."]})");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed->generation.sampling.dry_multiplier.value, 1.0);
    EXPECT_EQ(*parsed->generation.sampling.dry_sequence_breakers.value, std::vector<std::string>{"."});
    auto bad = parse_completion_request(R"({"prompt":"x","dry_base":0})");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().param, "dry_base");
}

TEST(DryRequest, BadValuesAre400sNamingTheField) {
    expect_invalid(R"("dry_multiplier":-1)", "dry_multiplier");
    expect_invalid(R"("dry_multiplier":"0.8")", "dry_multiplier");
    expect_invalid(R"("dry_base":0.5)", "dry_base");
    expect_invalid(R"("dry_allowed_length":-1)", "dry_allowed_length");
    expect_invalid(R"("dry_allowed_length":1.5)", "dry_allowed_length");
    expect_invalid(R"("dry_penalty_last_n":-2)", "dry_penalty_last_n");
    expect_invalid(R"("dry_penalty_last_n":4294967296)", "dry_penalty_last_n");
    expect_invalid(R"("dry_sequence_breakers":"[\"\\n\"]")", "dry_sequence_breakers");  // llama-server: arrays only
    expect_invalid(R"("dry_sequence_breakers":[])", "dry_sequence_breakers");
    expect_invalid(R"("dry_sequence_breakers":["a",2])", "dry_sequence_breakers[1]");
    expect_invalid(R"("dry_sequence_breakers":[")" + std::string(kMaxDrySequenceBreakerBytes + 1, 'x') + R"("])",
                   "dry_sequence_breakers[0]");
    std::string many = R"("dry_sequence_breakers":[)";
    for (size_t i = 0; i <= kMaxDrySequenceBreakers; ++i) many += std::string(i ? "," : "") + "\"b\"";
    expect_invalid(many + "]", "dry_sequence_breakers");
}

// The API and --preferred-sampling-params must accept exactly the same DRY values.
TEST(DryRequest, RangesMatchTheSamplingModule) {
    const std::vector<double> probes = {-3, -2,  -1.5, -1, -0.5, 0,          0.5,       0.99,
                                        1,  1.5, 2,    3,  1e9,  2147483647, 2147483648};
    for (const std::string_view name : kDrySamplingParamNames) {
        for (const double value : probes) {
            std::ostringstream body;
            body.precision(17);
            body << "{" << kHello << ",\"" << name << "\":" << value << "}";
            const bool api_accepts = parse_chat_request(body.str()).ok();
            const bool sampling_accepts = !check_sampling_range(name, value).has_value();
            EXPECT_EQ(api_accepts, sampling_accepts) << name << " = " << value;
        }
    }
}

TEST(ChatTemplateKwargs, AnObjectIsKeptAndAnythingElseIsA400) {
    auto parsed = parse_chat_request("{" + kHello + R"(,"chat_template_kwargs":{"enable_thinking":false,"x":[1]}})");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->chat_template_kwargs.dump(), R"({"enable_thinking":false,"x":[1]})");
    expect_invalid(R"("chat_template_kwargs":[1])", "chat_template_kwargs");
    expect_invalid(R"("chat_template_kwargs":"enable_thinking")", "chat_template_kwargs");
}

// As vLLM: the server's own variables may be overridden (see chat_template_test), but not the messages,
// nor the template or tokenization themselves.
TEST(ChatTemplateKwargs, KeysThatAreNotTemplateVariablesAreRefused) {
    expect_invalid(R"("chat_template_kwargs":{"messages":[]})", "chat_template_kwargs.messages");
    expect_invalid(R"("chat_template_kwargs":{"chat_template":"{{ 1 }}"})", "chat_template_kwargs.chat_template");
    expect_invalid(R"("chat_template_kwargs":{"tokenize":false})", "chat_template_kwargs.tokenize");
    auto overriding = parse_chat_request("{" + kHello +
                                         R"(,"chat_template_kwargs":{"add_generation_prompt":false,)"
                                         R"("bos_token":"<b>","tools":[]}})");
    EXPECT_TRUE(overriding) << overriding.error().message;
}

}  // namespace api_dry_request_test
}  // namespace
}  // namespace tempered::api
