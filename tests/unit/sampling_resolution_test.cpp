#include <gtest/gtest.h>

#include "sampling/generation_config.h"
#include "sampling/sampling_resolution.h"

namespace tempered {
namespace {
namespace sampling_resolution_test {

SamplingDefaultsConfig config_with(SamplingValues preferred, SamplingValues model,
                                   std::optional<SamplingPolicy> policy = std::nullopt) {
    return {std::move(preferred), std::move(model), std::move(policy)};
}

TEST(SamplingResolution, EmptyEverywhereGivesOpenAiDefaults) {
    auto resolved = resolve_sampling({}, {}, uint64_t{42} << 33);
    EXPECT_EQ(resolved.temperature.value, 1.0);
    EXPECT_EQ(resolved.temperature.source, ParamSource::Default);
    EXPECT_EQ(resolved.top_p.value, 1.0);
    EXPECT_EQ(resolved.top_k.value, 0);
    EXPECT_EQ(resolved.presence_penalty.value, 0.0);
    EXPECT_EQ(resolved.repetition_penalty.value, 1.0);
    EXPECT_EQ(resolved.seed.source, ParamSource::Default);
    EXPECT_EQ(resolved.seed.value, 42);  // the caller's random seed, cut to 31 bits for JSON clients
}

TEST(SamplingResolution, LayersInOrderRequestPreferredModelDefault) {
    SamplingValues request, preferred, model;
    request.temperature = 0.0;  // an explicit 0 is honoured: greedy
    preferred.temperature = 0.6;
    preferred.top_p = 0.95;
    model.top_p = 0.9;
    model.top_k = 20;
    auto resolved = resolve_sampling(request, config_with(preferred, model), 1);
    EXPECT_EQ(resolved.temperature.value, 0.0);
    EXPECT_EQ(resolved.temperature.source, ParamSource::Request);
    EXPECT_EQ(resolved.top_p.value, 0.95);
    EXPECT_EQ(resolved.top_p.source, ParamSource::Preferred);
    EXPECT_EQ(resolved.top_k.value, 20);
    EXPECT_EQ(resolved.top_k.source, ParamSource::Model);
    EXPECT_EQ(resolved.min_p.source, ParamSource::Default);
}

TEST(SamplingResolution, PolicyClampsExplicitValuesAndSaysWhatItReplaced) {
    auto policy = parse_sampling_policy(nlohmann::json::parse(R"({"temperature":{"min":0.3}})"), "test");
    ASSERT_TRUE(policy) << policy.error().message;
    SamplingValues request;
    request.temperature = 0.1;
    auto resolved = resolve_sampling(request, config_with({}, {}, *policy), 1);
    EXPECT_DOUBLE_EQ(resolved.temperature.value, 0.3);
    EXPECT_EQ(resolved.temperature.source, ParamSource::Policy);
    ASSERT_TRUE(resolved.temperature.replaced_value);
    EXPECT_DOUBLE_EQ(*resolved.temperature.replaced_value, 0.1);
    EXPECT_EQ(resolved.temperature.replaced_source, ParamSource::Request);
    auto json = resolved.to_json();
    EXPECT_EQ(json["temperature"]["source"], "policy");
    EXPECT_EQ(json["temperature"]["replaced"]["source"], "request");
}

TEST(SamplingResolution, PolicyLeavesValuesInsideItsBoundsAlone) {
    auto policy = parse_sampling_policy(nlohmann::json::parse(R"({"temperature":{"min":0.3,"max":1.2}})"), "test");
    ASSERT_TRUE(policy);
    SamplingValues request;
    request.temperature = 0.7;
    auto resolved = resolve_sampling(request, config_with({}, {}, *policy), 1);
    EXPECT_EQ(resolved.temperature.source, ParamSource::Request);
    EXPECT_FALSE(resolved.temperature.replaced_value);
}

TEST(SamplingResolution, GreedyRuleUsesTheDefaultTheRequestWouldHaveHad) {
    auto policy = parse_sampling_policy(nlohmann::json::parse(R"({"temperature":{"greedy":"use_default"}})"), "test");
    ASSERT_TRUE(policy);
    SamplingValues request, preferred, model;
    request.temperature = 0.0;
    model.temperature = 0.7;
    auto from_model = resolve_sampling(request, config_with({}, model, *policy), 1);
    EXPECT_DOUBLE_EQ(from_model.temperature.value, 0.7);
    EXPECT_EQ(from_model.temperature.source, ParamSource::Policy);
    preferred.temperature = 0.6;
    auto from_preferred = resolve_sampling(request, config_with(preferred, model, *policy), 1);
    EXPECT_DOUBLE_EQ(from_preferred.temperature.value, 0.6);
}

TEST(SamplingResolution, WithoutPolicyExplicitValuesAreNeverChanged) {
    SamplingValues request, preferred;
    request.temperature = 0.0;
    request.top_k = 1;
    preferred.temperature = 0.6;
    auto resolved = resolve_sampling(request, config_with(preferred, {}), 1);
    EXPECT_EQ(resolved.temperature.value, 0.0);
    EXPECT_EQ(resolved.top_k.value, 1);
}

TEST(SamplingValuesParse, RejectsUnknownKeysAndOutOfRangeValues) {
    EXPECT_FALSE(parse_sampling_values(nlohmann::json::parse(R"({"temprature":0.6})"), "flag"));
    EXPECT_FALSE(parse_sampling_values(nlohmann::json::parse(R"({"temperature":3})"), "flag"));
    EXPECT_FALSE(parse_sampling_values(nlohmann::json::parse(R"({"top_p":0})"), "flag"));
    EXPECT_FALSE(parse_sampling_values(nlohmann::json::parse(R"({"top_k":2.5})"), "flag"));
    auto ok = parse_sampling_values(nlohmann::json::parse(R"({"temperature":0.6,"top_k":-1,"min_p":null})"), "flag");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(*ok->temperature, 0.6);
    EXPECT_EQ(*ok->top_k, 0);
    EXPECT_FALSE(ok->min_p);
}

TEST(SamplingPolicyParse, RejectsNonsense) {
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"temp":{"min":0.3}})"), "p"));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"temperature":{"min":0.9,"max":0.3}})"), "p"));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"top_p":{"greedy":"use_default"}})"), "p"));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"temperature":{"min":5}})"), "p"));
}

TEST(GenerationConfig, DoSampleFalseMeansGreedy) {
    auto parsed = parse_generation_config(R"({"do_sample": false, "temperature": 0.7, "top_p": 0.8})", "gc");
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed->values.temperature, 0.0);
    EXPECT_EQ(*parsed->values.top_p, 0.8);
}

TEST(GenerationConfig, ReadsSamplingKeysAndSkipsInvalidOnes) {
    auto parsed = parse_generation_config(
        R"({"bos_token_id": 1, "temperature": 0.7, "top_k": 20, "repetition_penalty": 1.05, "top_p": 7})", "gc");
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed->values.temperature, 0.7);
    EXPECT_EQ(*parsed->values.top_k, 20);
    EXPECT_EQ(*parsed->values.repetition_penalty, 1.05);
    EXPECT_FALSE(parsed->values.top_p);
    EXPECT_EQ(parsed->warnings.size(), 1u);
    EXPECT_FALSE(parse_generation_config("not json", "gc"));
}

TEST(SamplingDefaultsTable, ListsEveryParameterWithItsSource) {
    SamplingValues preferred;
    preferred.temperature = 0.6;
    auto table = describe_sampling_defaults(config_with(preferred, {}));
    for (auto name : kSamplingParamNames) EXPECT_TRUE(table.contains(std::string(name))) << name;
    EXPECT_EQ(table["temperature"]["value"], 0.6);
    EXPECT_EQ(table["temperature"]["source"], "preferred");
    EXPECT_EQ(table["seed"]["value"], "random");
}

}  // namespace sampling_resolution_test
}  // namespace
}  // namespace tempered
