// typical_p through every path that reads the parameter table: the request (chat and completions), the
// operator's preferred values, the model's generation config, the policy, the report and the counted
// sources. Like DRY's, it is reported only once something sets it.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "sampling/generation_config.h"
#include "sampling/sampling_resolution.h"

namespace tempered {
namespace {
namespace sampling_typical_resolution_test {

const std::string kHello = R"("messages":[{"role":"user","content":"hi"}])";

std::map<std::string, ParamSource> counted_sources(const ResolvedSampling& resolved) {
    std::map<std::string, ParamSource> sources;
    resolved.for_each_source([&](std::string_view name, ParamSource source) { sources[std::string(name)] = source; });
    return sources;
}

TEST(TypicalResolution, OffByDefaultAndNeitherReportedNorCounted) {
    const ResolvedSampling resolved = resolve_sampling({}, {}, 1);
    EXPECT_EQ(resolved.typical_p.value, 1.0);
    EXPECT_EQ(resolved.typical_p.source, ParamSource::Default);
    EXPECT_FALSE(resolved.reported("typical_p"));
    EXPECT_FALSE(resolved.to_json().contains("typical_p"));
    EXPECT_EQ(resolved.to_json().size(), std::size(kSamplingParamNames));
    EXPECT_EQ(counted_sources(resolved).count("typical_p"), 0u);
    EXPECT_EQ(resolved.sampler_params().typical_p, 1.0f);
    EXPECT_FALSE(describe_sampling_defaults({}).contains("typical_p"));
}

TEST(TypicalResolution, RequestBeatsPreferredBeatsModelAndIsReported) {
    SamplingValues request, preferred, model;
    model.typical_p = 0.9;
    SamplingDefaultsConfig config{{}, model, std::nullopt};
    ResolvedSampling resolved = resolve_sampling(request, config, 1);
    EXPECT_EQ(resolved.to_json()["typical_p"], (nlohmann::json{{"value", 0.9}, {"source", "model"}}));
    preferred.typical_p = 0.8;
    config.preferred = preferred;
    resolved = resolve_sampling(request, config, 1);
    EXPECT_EQ(resolved.to_json()["typical_p"], (nlohmann::json{{"value", 0.8}, {"source", "preferred"}}));
    EXPECT_EQ(describe_sampling_defaults(config)["typical_p"],
              (nlohmann::json{{"value", 0.8}, {"source", "preferred"}}));
    request.typical_p = 0.5;
    resolved = resolve_sampling(request, config, 1);
    EXPECT_EQ(resolved.to_json()["typical_p"], (nlohmann::json{{"value", 0.5}, {"source", "request"}}));
    EXPECT_EQ(counted_sources(resolved).at("typical_p"), ParamSource::Request);
    EXPECT_EQ(counted_sources(resolved).size(), std::size(kSamplingParamNames) + 1);
    EXPECT_FLOAT_EQ(resolved.sampler_params().typical_p, 0.5f);
    EXPECT_FALSE(resolved.dry_reported());  // its own group: DRY stays out
}

TEST(TypicalResolution, AnExplicitOneIsReportedThoughItChangesNothing) {
    SamplingValues request;
    request.typical_p = 1.0;
    EXPECT_EQ(resolve_sampling(request, {}, 1).to_json()["typical_p"]["source"], "request");
}

TEST(TypicalResolution, PolicyCanBoundItForEveryRequest) {
    auto policy = parse_sampling_policy(nlohmann::json::parse(R"({"typical_p":{"max":0.95}})"), "test");
    ASSERT_TRUE(policy) << policy.error().message;
    const ResolvedSampling resolved = resolve_sampling({}, {{}, {}, *policy}, 1);
    EXPECT_EQ(
        resolved.to_json()["typical_p"],
        (nlohmann::json{{"value", 0.95}, {"source", "policy"}, {"replaced", {{"value", 1.0}, {"source", "default"}}}}));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"typical_p":{"min":0}})"), "t"));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"typical_p":{"max":1.5}})"), "t"));
}

TEST(TypicalValuesParse, PreferredParamsReadItAndNameABadValue) {
    auto values = parse_sampling_values(nlohmann::json::parse(R"({"typical_p":0.9})"), "--preferred-sampling-params");
    ASSERT_TRUE(values) << values.error().message;
    EXPECT_EQ(values->typical_p, 0.9);
    auto zero = parse_sampling_values(nlohmann::json::parse(R"({"typical_p":0})"), "--preferred-sampling-params");
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().message, "--preferred-sampling-params: typical_p must be in (0, 1] (1 turns it off)");
    auto text = parse_sampling_values(nlohmann::json::parse(R"({"typical_p":"0.9"})"), "x");
    ASSERT_FALSE(text);
    EXPECT_EQ(text.error().message, "x: typical_p must be a number");
}

TEST(TypicalGenerationConfig, ReadsHuggingFacesKeyAndSkipsABadValue) {
    auto config = parse_generation_config(R"({"typical_p":0.92,"temperature":0.7})", "gen.json");
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(config->values.typical_p, 0.92);
    auto bad = parse_generation_config(R"({"typical_p":1.5})", "gen.json");
    ASSERT_TRUE(bad);
    EXPECT_FALSE(bad->values.typical_p.has_value());
    ASSERT_EQ(bad->warnings.size(), 1u);
    EXPECT_EQ(bad->warnings[0], "gen.json: typical_p must be in (0, 1] (1 turns it off); ignored");
}

TEST(TypicalRequest, ChatAndCompletionsReadItAndRangesMatchTheSamplingModule) {
    auto chat = api::parse_chat_request("{" + kHello + R"(,"typical_p":0.9})");
    ASSERT_TRUE(chat) << chat.error().message;
    EXPECT_EQ(*chat->generation.sampling.typical_p.value, 0.9);
    EXPECT_EQ(api::to_sampling_values(chat->generation.sampling).typical_p, 0.9);
    auto completion = api::parse_completion_request(R"({"prompt":"hi","typical_p":0.5})");
    ASSERT_TRUE(completion) << completion.error().message;
    EXPECT_EQ(*completion->generation.sampling.typical_p.value, 0.5);
    auto null = api::parse_chat_request("{" + kHello + R"(,"typical_p":null})");
    ASSERT_TRUE(null);
    EXPECT_EQ(null->generation.sampling.typical_p.presence, api::Presence::Null);

    for (const double value : {-1.0, 0.0, 1e-9, 0.5, 1.0, 1.01, 2.0}) {
        std::ostringstream body;
        body << "{" << kHello << ",\"typical_p\":" << value << "}";
        const auto parsed = api::parse_chat_request(body.str());
        EXPECT_EQ(parsed.ok(), !check_sampling_range("typical_p", value).has_value()) << value;
        if (!parsed.ok()) {
            EXPECT_EQ(parsed.error().param, "typical_p");
            EXPECT_NE(parsed.error().message.find("(0, 1]"), std::string::npos) << parsed.error().message;
        }
    }
}

}  // namespace sampling_typical_resolution_test
}  // namespace
}  // namespace tempered
