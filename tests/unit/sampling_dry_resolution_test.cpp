// DRY's five values as sampling parameters: layers, policy, what is reported and counted.
#include <gtest/gtest.h>

#include <map>

#include "sampling/sampling_resolution.h"

namespace tempered {
namespace {
namespace sampling_dry_resolution_test {

SamplingDefaultsConfig config_with(SamplingValues preferred, std::optional<SamplingPolicy> policy = std::nullopt) {
    return {std::move(preferred), {}, std::move(policy)};
}

std::map<std::string, ParamSource> counted_sources(const ResolvedSampling& resolved) {
    std::map<std::string, ParamSource> sources;
    resolved.for_each_source([&](std::string_view name, ParamSource source) { sources[std::string(name)] = source; });
    return sources;
}

TEST(DryResolution, OffByDefaultWithLlamaCppsOtherValuesAndNotReported) {
    const ResolvedSampling resolved = resolve_sampling({}, {}, 1);
    EXPECT_EQ(resolved.dry_multiplier.value, 0.0);
    EXPECT_DOUBLE_EQ(resolved.dry_base.value, 1.75);
    EXPECT_EQ(resolved.dry_allowed_length.value, 2);
    EXPECT_EQ(resolved.dry_penalty_last_n.value, -1);
    EXPECT_EQ(resolved.dry_sequence_breakers.value, (std::vector<std::string>{"\n", ":", "\"", "*"}));
    EXPECT_FALSE(resolved.dry_params().active());
    EXPECT_FALSE(resolved.dry_reported());
    const nlohmann::json json = resolved.to_json();
    EXPECT_FALSE(json.contains("dry_multiplier"));
    EXPECT_FALSE(json.contains("dry_sequence_breakers"));
    EXPECT_EQ(json.size(), std::size(kSamplingParamNames));
    EXPECT_EQ(counted_sources(resolved).count("dry_multiplier"), 0u);
}

TEST(DryResolution, RequestBeatsPreferredAndEachValueKeepsItsSource) {
    SamplingValues request, preferred;
    request.dry_multiplier = 0.8;
    preferred.dry_multiplier = 0.5;
    preferred.dry_allowed_length = 3;
    preferred.dry_sequence_breakers = std::vector<std::string>{"\n"};
    const ResolvedSampling resolved = resolve_sampling(request, config_with(preferred), 1);
    EXPECT_DOUBLE_EQ(resolved.dry_multiplier.value, 0.8);
    EXPECT_EQ(resolved.dry_multiplier.source, ParamSource::Request);
    EXPECT_EQ(resolved.dry_allowed_length.value, 3);
    EXPECT_EQ(resolved.dry_allowed_length.source, ParamSource::Preferred);
    EXPECT_EQ(resolved.dry_base.source, ParamSource::Default);
    EXPECT_EQ(resolved.dry_sequence_breakers.source, ParamSource::Preferred);

    const nlohmann::json json = resolved.to_json();
    EXPECT_EQ(json["dry_multiplier"], (nlohmann::json{{"value", 0.8}, {"source", "request"}}));
    EXPECT_EQ(json["dry_allowed_length"], (nlohmann::json{{"value", 3}, {"source", "preferred"}}));
    EXPECT_EQ(json["dry_base"], (nlohmann::json{{"value", 1.75}, {"source", "default"}}));
    EXPECT_EQ(json["dry_penalty_last_n"], (nlohmann::json{{"value", -1}, {"source", "default"}}));
    EXPECT_EQ(json["dry_sequence_breakers"],
              (nlohmann::json{{"value", nlohmann::json::array({"\n"})}, {"source", "preferred"}}));
    EXPECT_EQ(json["temperature"]["source"], "default");  // the others as before

    const auto sources = counted_sources(resolved);
    EXPECT_EQ(sources.at("dry_multiplier"), ParamSource::Request);
    EXPECT_EQ(sources.at("dry_sequence_breakers"), ParamSource::Preferred);
    EXPECT_EQ(sources.size(), std::size(kSamplingParamNames) + std::size(kDrySamplingParamNames) + 1);

    const DryParams params = resolved.dry_params();
    EXPECT_TRUE(params.active());
    EXPECT_FLOAT_EQ(params.multiplier, 0.8f);
    EXPECT_EQ(params.allowed_length, 3);
    EXPECT_EQ(params.penalty_last_n, -1);
    EXPECT_EQ(params.breakers, nullptr);  // the server adds them (they need the vocabulary)
}

TEST(DryResolution, AnExplicitZeroMultiplierIsReportedThoughDryStaysOff) {
    SamplingValues request;
    request.dry_multiplier = 0.0;
    const ResolvedSampling resolved = resolve_sampling(request, {}, 1);
    EXPECT_TRUE(resolved.dry_reported());
    EXPECT_FALSE(resolved.dry_params().active());
    EXPECT_EQ(resolved.to_json()["dry_multiplier"]["source"], "request");
}

TEST(DryResolution, PolicyCanTurnDryOnForEveryRequestAndSaysWhatItReplaced) {
    auto policy = parse_sampling_policy(
        nlohmann::json::parse(R"({"dry_multiplier":{"min":0.8},"dry_allowed_length":{"max":4}})"), "test");
    ASSERT_TRUE(policy) << policy.error().message;
    SamplingValues request;
    request.dry_allowed_length = 10;
    const ResolvedSampling resolved = resolve_sampling(request, config_with({}, *policy), 1);
    EXPECT_DOUBLE_EQ(resolved.dry_multiplier.value, 0.8);
    EXPECT_EQ(resolved.dry_multiplier.source, ParamSource::Policy);
    ASSERT_TRUE(resolved.dry_multiplier.replaced_value);
    EXPECT_EQ(*resolved.dry_multiplier.replaced_value, 0.0);
    EXPECT_EQ(resolved.dry_multiplier.replaced_source, ParamSource::Default);
    EXPECT_EQ(resolved.dry_allowed_length.value, 4);
    EXPECT_EQ(resolved.to_json()["dry_allowed_length"]["replaced"],
              (nlohmann::json{{"value", 10}, {"source", "request"}}));
    EXPECT_TRUE(resolved.dry_params().active());
}

TEST(DryResolution, PolicyRejectsTheBreakersAndOutOfRangeBounds) {
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"dry_sequence_breakers":{"min":1}})"), "t"));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"dry_base":{"min":0.5}})"), "t"));
    EXPECT_FALSE(parse_sampling_policy(nlohmann::json::parse(R"({"dry_allowed_length":{"max":1.5}})"), "t"));
}

TEST(DryResolution, DefaultsTableShowsDryOnlyWhenTheOperatorSetsIt) {
    EXPECT_FALSE(describe_sampling_defaults({}).contains("dry_multiplier"));
    SamplingValues preferred;
    preferred.dry_multiplier = 0.8;
    const nlohmann::json table = describe_sampling_defaults(config_with(preferred));
    EXPECT_EQ(table["dry_multiplier"], (nlohmann::json{{"value", 0.8}, {"source", "preferred"}}));
    EXPECT_EQ(table["dry_sequence_breakers"]["source"], "default");
}

TEST(DryValuesParse, ReadsTheFiveKeysAndNamesTheBadOne) {
    auto values =
        parse_sampling_values(nlohmann::json::parse(R"({"dry_multiplier":0.8,"dry_base":2,"dry_allowed_length":3,)"
                                                    R"("dry_penalty_last_n":-1,"dry_sequence_breakers":["\n","###"]})"),
                              "--preferred-sampling-params");
    ASSERT_TRUE(values) << values.error().message;
    EXPECT_EQ(*values->dry_multiplier, 0.8);
    EXPECT_EQ(*values->dry_base, 2.0);
    EXPECT_EQ(*values->dry_allowed_length, 3);
    EXPECT_EQ(*values->dry_penalty_last_n, -1);
    EXPECT_EQ(*values->dry_sequence_breakers, (std::vector<std::string>{"\n", "###"}));
    EXPECT_FALSE(values->empty());

    const std::vector<std::pair<std::string, std::string>> bad = {
        {R"({"dry_multiplier":-0.1})", "dry_multiplier"},
        {R"({"dry_base":0.9})", "dry_base"},
        {R"({"dry_allowed_length":-1})", "dry_allowed_length"},
        {R"({"dry_allowed_length":2.5})", "dry_allowed_length"},
        {R"({"dry_penalty_last_n":-2})", "dry_penalty_last_n"},
        {R"({"dry_penalty_last_n":3000000000})", "dry_penalty_last_n"},
        {R"({"dry_sequence_breakers":[]})", "dry_sequence_breakers"},
        {R"({"dry_sequence_breakers":"\n"})", "dry_sequence_breakers"},
        {R"({"dry_sequence_breakers":["a",1]})", "dry_sequence_breakers[1]"},
    };
    for (const auto& [text, name] : bad) {
        auto parsed = parse_sampling_values(nlohmann::json::parse(text), "config");
        ASSERT_FALSE(parsed) << text;
        EXPECT_NE(parsed.error().message.find("config: " + name + " "), std::string::npos)
            << text << " -> " << parsed.error().message;
    }
}

}  // namespace sampling_dry_resolution_test
}  // namespace
}  // namespace tempered
