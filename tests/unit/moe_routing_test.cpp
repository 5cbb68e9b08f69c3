// Expert routing against the NumPy reference of scripts/fixtures/make_moe_routing_fixtures.py: softmax
// and sigmoid scores, the correction bias (selection only), group-limited top-k, normalization, scaling
// and exact ties (the lower index wins). Plus the MoE metadata checks of read_moe_config.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "../support/gguf_writer.h"
#include "model_test_support.h"
#include "models/model_config.h"
#include "models/moe_routing.h"

namespace tempered {
namespace {
namespace moe_routing_test {

MoeConfig config_from_json(const nlohmann::json& j) {
    MoeConfig config;
    config.expert_count = j.at("expert_count").get<int64_t>();
    config.experts_per_token = j.at("experts_per_token").get<int64_t>();
    config.expert_ffn_dim = 1;
    config.gating = j.at("gating").get<std::string>() == "sigmoid" ? ExpertGating::Sigmoid : ExpertGating::Softmax;
    config.group_count = j.at("group_count").get<int64_t>();
    config.groups_per_token = j.at("groups_per_token").get<int64_t>();
    config.normalize_weights = j.at("normalize_weights").get<bool>();
    config.routed_scaling_factor = j.at("routed_scaling_factor").get<float>();
    return config;
}

std::vector<float> floats(const nlohmann::json& rows) {
    std::vector<float> values;
    for (const auto& row : rows) {
        if (row.is_array()) {
            for (const auto& v : row) values.push_back(v.get<float>());
        } else {
            values.push_back(row.get<float>());
        }
    }
    return values;
}

TEST(MoeRouting, ChoosesAndWeighsAsTheNumpyReference) {
    const auto fixture =
        nlohmann::json::parse(testing::read_text_file(testing::fixture_dir("model") / "moe_routing.json"));
    int cases = 0;
    int ties = 0;
    for (const auto& c : fixture.at("cases")) {
        SCOPED_TRACE(c.at("name").get<std::string>());
        const MoeConfig config = config_from_json(c.at("config"));
        ASSERT_TRUE(validate_moe_config(config).ok());
        const std::vector<float> logits = floats(c.at("logits"));
        const std::vector<float> bias =
            c.at("correction_bias").is_null() ? std::vector<float>{} : floats(c.at("correction_bias"));
        const auto tokens = static_cast<int64_t>(c.at("logits").size());
        std::vector<ExpertChoice> choices(static_cast<size_t>(tokens * config.experts_per_token));
        route_experts(config, logits.data(), bias.empty() ? nullptr : bias.data(), tokens, choices.data());
        for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t j = 0; j < config.experts_per_token; ++j) {
                const ExpertChoice& got = choices[static_cast<size_t>(t * config.experts_per_token + j)];
                const int expected_expert = c.at("experts")[static_cast<size_t>(t)][static_cast<size_t>(j)].get<int>();
                const float expected_weight =
                    c.at("weights")[static_cast<size_t>(t)][static_cast<size_t>(j)].get<float>();
                EXPECT_EQ(got.expert, expected_expert) << "token " << t << " choice " << j;
                EXPECT_NEAR(got.weight, expected_weight, 1e-6 * std::fabs(expected_weight) + 1e-12)
                    << "token " << t << " choice " << j;
            }
        }
        ++cases;
        if (c.at("name").get<std::string>().find("tie") != std::string::npos) ++ties;
    }
    EXPECT_GE(cases, 25);
    EXPECT_GE(ties, 4);
}

// The bias changes which experts win, never their weights: with a large bias on expert 3, expert 3 is
// chosen although its logit is the lowest, and weighs its own (small) softmax score.
TEST(MoeRouting, TheCorrectionBiasSelectsButDoesNotWeigh) {
    MoeConfig config;
    config.expert_count = 4;
    config.experts_per_token = 1;
    config.expert_ffn_dim = 1;
    const float logits[] = {2.0f, 1.0f, 0.0f, -1.0f};
    const float bias[] = {0.0f, 0.0f, 0.0f, 10.0f};
    ExpertChoice choice;
    route_experts(config, logits, bias, 1, &choice);
    EXPECT_EQ(choice.expert, 3);
    const double sum = std::exp(3.0) + std::exp(2.0) + std::exp(1.0) + 1.0;
    EXPECT_NEAR(choice.weight, 1.0 / sum, 1e-6);
}

// gpt-oss: the top k raw logits are chosen (the router bias is already in them), and their weights are the
// softmax of those k logits alone.
TEST(MoeRouting, GptOssWeighsTheChosenBySoftmaxOfTheirLogits) {
    MoeConfig config;
    config.expert_count = 5;
    config.experts_per_token = 3;
    config.expert_ffn_dim = 1;
    config.gating = ExpertGating::SoftmaxOfChosen;
    const float logits[] = {0.5f, 3.0f, -2.0f, 1.0f, 2.5f};
    ExpertChoice choices[3];
    float margin = 0.0f;
    route_experts(config, logits, nullptr, 1, choices, &margin);
    EXPECT_EQ(choices[0].expert, 1);
    EXPECT_EQ(choices[1].expert, 4);
    EXPECT_EQ(choices[2].expert, 3);
    const double sum = std::exp(3.0) + std::exp(2.5) + std::exp(1.0);
    EXPECT_NEAR(choices[0].weight, std::exp(3.0) / sum, 1e-6);
    EXPECT_NEAR(choices[1].weight, std::exp(2.5) / sum, 1e-6);
    EXPECT_NEAR(choices[2].weight, std::exp(1.0) / sum, 1e-6);
    EXPECT_FLOAT_EQ(margin, 0.5f);  // the third logit (1.0) minus the fourth (0.5)
}

using testing::GgufWriter;

// A deepseek2 file's MoE metadata as DeepSeek-V3 writes it (sizes shrunk), integer keys overridable.
GgufWriter deepseek_metadata(const std::map<std::string, uint32_t>& overrides = {}) {
    std::map<std::string, uint32_t> integers = {{"expert_count", 16},
                                                {"expert_used_count", 4},
                                                {"expert_shared_count", 1},
                                                {"expert_feed_forward_length", 32},
                                                {"leading_dense_block_count", 1},
                                                {"expert_group_count", 4},
                                                {"expert_group_used_count", 2},
                                                {"expert_gating_func", 2}};
    for (const auto& [key, value] : overrides) integers[key] = value;
    GgufWriter writer;
    writer.string("general.architecture", "deepseek2");
    for (const auto& [key, value] : integers) writer.u32("deepseek2." + key, value);
    writer.boolean("deepseek2.expert_weights_norm", true).f32("deepseek2.expert_weights_scale", 2.5f);
    return writer;
}

// The selection margin: the k-th minus the (k+1)-th eligible selection score, and the group boundary's.
TEST(MoeRouting, ReportsTheSelectionMargin) {
    auto sigmoid = [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
    MoeConfig config;
    config.expert_count = 4;
    config.experts_per_token = 2;
    config.expert_ffn_dim = 1;
    config.gating = ExpertGating::Sigmoid;
    ASSERT_TRUE(validate_moe_config(config).ok());
    const float logits[] = {0.5f, -1.0f, 2.0f, 0.25f};
    const float bias[] = {0.0f, 0.5f, 0.0f, 0.1f};
    ExpertChoice choices[2];
    float margin = 0.0f;
    route_experts(config, logits, bias, 1, choices, &margin);
    // selection: 0.622, 0.769, 0.881, 0.662: experts 2 and 1, then 3.
    EXPECT_EQ(choices[0].expert, 2);
    EXPECT_EQ(choices[1].expert, 1);
    EXPECT_FLOAT_EQ(margin, sigmoid(-1.0f) + 0.5f - (sigmoid(0.25f) + 0.1f));

    // Two groups of two, one kept, top-1: group scores 0.622 + 0.769 against 0.881 + 0.662 (group 1 kept,
    // margin 0.152); inside it 0.881 - 0.662 = 0.219: the group boundary is the nearer tie.
    config.experts_per_token = 1;
    config.group_count = 2;
    config.groups_per_token = 1;
    ASSERT_TRUE(validate_moe_config(config).ok());
    route_experts(config, logits, bias, 1, choices, &margin);
    EXPECT_EQ(choices[0].expert, 2);
    const float group_margin = (sigmoid(2.0f) + sigmoid(0.25f) + 0.1f) - (sigmoid(0.5f) + sigmoid(-1.0f) + 0.5f);
    EXPECT_NEAR(margin, group_margin, 1e-6f);  // summed in another order

    // Every expert chosen: nothing is left out, nothing can flip.
    config.group_count = 1;
    config.groups_per_token = 1;
    config.experts_per_token = 4;
    ExpertChoice all[4];
    route_experts(config, logits, bias, 1, all, &margin);
    EXPECT_TRUE(std::isinf(margin) && margin > 0.0f);
}

TEST(MoeConfigRead, ReadsEveryDeepseekKey) {
    const auto bytes = deepseek_metadata().bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto config = read_moe_config(*file, "deepseek2");
    ASSERT_TRUE(config.ok()) << config.error().message;
    ASSERT_TRUE(config->has_value());
    const MoeConfig& moe = **config;
    EXPECT_EQ(moe.expert_count, 16);
    EXPECT_EQ(moe.experts_per_token, 4);
    EXPECT_EQ(moe.shared_expert_count, 1);
    EXPECT_EQ(moe.expert_ffn_dim, 32);
    EXPECT_EQ(moe.leading_dense_layers, 1);
    EXPECT_EQ(moe.group_count, 4);
    EXPECT_EQ(moe.groups_per_token, 2);
    EXPECT_EQ(moe.gating, ExpertGating::Sigmoid);
    EXPECT_TRUE(moe.normalize_weights);
    EXPECT_FLOAT_EQ(moe.routed_scaling_factor, 2.5f);
    EXPECT_EQ(moe.experts_per_group(), 4);
}

TEST(MoeConfigRead, DefaultsAsLlamaCppsDeepseek2) {
    const auto bytes = GgufWriter()
                           .u32("deepseek2.expert_count", 8)
                           .u32("deepseek2.expert_used_count", 2)
                           .u32("deepseek2.expert_feed_forward_length", 16)
                           .f32("deepseek2.expert_weights_scale", 0.0f)  // 0: not scaled
                           .bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok());
    auto config = read_moe_config(*file, "deepseek2");
    ASSERT_TRUE(config.ok()) << config.error().message;
    ASSERT_TRUE(config->has_value());
    EXPECT_EQ((*config)->gating, ExpertGating::Softmax);
    EXPECT_FALSE((*config)->normalize_weights);
    EXPECT_FLOAT_EQ((*config)->routed_scaling_factor, 1.0f);
    EXPECT_FALSE((*config)->group_limited());
    EXPECT_EQ((*config)->shared_expert_count, 0);
}

TEST(MoeConfigRead, NoExpertsIsADenseModel) {
    const auto bytes = GgufWriter().u32("llama.block_count", 2).bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok());
    auto config = read_moe_config(*file, "llama");
    ASSERT_TRUE(config.ok());
    EXPECT_FALSE(config->has_value());
}

TEST(MoeConfigRead, RefusesInconsistentOrUnsupportedFiles) {
    const auto error_of = [](GgufWriter writer, const std::string& architecture = "deepseek2") {
        const auto bytes = writer.bytes();
        auto file = GgufFile::parse(bytes);
        if (!file.ok()) return std::string("parse: ") + file.error().message;
        auto config = read_moe_config(*file, architecture);
        return config.ok() ? std::string() : config.error().message;
    };
    EXPECT_NE(error_of(deepseek_metadata({{"expert_group_count", 3}})).find("divide"), std::string::npos);
    EXPECT_NE(error_of(deepseek_metadata({{"expert_group_used_count", 4}})).find("group_used"), std::string::npos);
    EXPECT_NE(error_of(deepseek_metadata({{"expert_used_count", 17}})).find("expert_used_count"), std::string::npos);
    EXPECT_NE(error_of(deepseek_metadata({{"expert_gating_func", 4}})).find("not supported"), std::string::npos);
    EXPECT_NE(error_of(GgufWriter().u32("deepseek2.expert_count", 8)).find("missing deepseek2.expert_used_count"),
              std::string::npos);
    EXPECT_NE(error_of(GgufWriter().u32("llama.expert_count", 8).u32("llama.expert_used_count", 2), "llama")
                  .find("only deepseek2"),
              std::string::npos);
    // gpt-oss routes by its own rule: shared experts or normalized weights in its file are refused, not ignored.
    const auto gpt_oss = [](const std::string& extra_key) {
        GgufWriter writer;
        writer.u32("gpt-oss.expert_count", 32).u32("gpt-oss.expert_used_count", 4);
        writer.u32("gpt-oss.expert_feed_forward_length", 2880);
        if (extra_key == "expert_weights_norm") writer.boolean("gpt-oss.expert_weights_norm", true);
        if (extra_key == "expert_shared_count") writer.u32("gpt-oss.expert_shared_count", 1);
        return writer;
    };
    EXPECT_EQ(error_of(gpt_oss(""), "gpt-oss"), "");
    EXPECT_NE(error_of(gpt_oss("expert_weights_norm"), "gpt-oss").find("gpt-oss with"), std::string::npos);
    EXPECT_NE(error_of(gpt_oss("expert_shared_count"), "gpt-oss").find("gpt-oss with"), std::string::npos);
}

TEST(MoeConfigRead, GptOssGatingIsTheArchitectures) {
    const auto bytes = GgufWriter()
                           .u32("gpt-oss.expert_count", 32)
                           .u32("gpt-oss.expert_used_count", 4)
                           .u32("gpt-oss.expert_feed_forward_length", 2880)
                           .bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok());
    auto config = read_moe_config(*file, "gpt-oss");
    ASSERT_TRUE(config.ok()) << config.error().message;
    ASSERT_TRUE(config->has_value());
    EXPECT_EQ((*config)->gating, ExpertGating::SoftmaxOfChosen);
    EXPECT_FALSE((*config)->normalize_weights);
    EXPECT_EQ((*config)->leading_dense_layers, 0);
}
// read_model_config fills ModelConfig::experts, and a dense file leaves it empty.
TEST(MoeConfigRead, ModelConfigCarriesTheExperts) {
    const auto llama_keys = [](GgufWriter writer, const std::string& arch) {
        writer.u32(arch + ".block_count", 2)
            .u32(arch + ".embedding_length", 64)
            .u32(arch + ".feed_forward_length", 128)
            .u32(arch + ".attention.head_count", 4)
            .u32(arch + ".context_length", 256)
            .f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f)
            .tensor({"token_embd.weight", {64, 10}, 0, std::vector<uint8_t>(64 * 10 * 4), {}});
        return writer;
    };
    const auto dense_bytes = llama_keys(GgufWriter().string("general.architecture", "llama"), "llama").bytes();
    auto dense = GgufFile::parse(dense_bytes);
    ASSERT_TRUE(dense.ok()) << dense.error().message;
    auto dense_config = read_model_config(*dense, RopeStyle::AdjacentPairs);
    ASSERT_TRUE(dense_config.ok()) << dense_config.error().message;
    EXPECT_FALSE(dense_config->experts.has_value());

    const auto mixtral_bytes = llama_keys(GgufWriter()
                                              .string("general.architecture", "llama")
                                              .u32("llama.expert_count", 8)
                                              .u32("llama.expert_used_count", 2),
                                          "llama")
                                   .bytes();
    auto mixtral = GgufFile::parse(mixtral_bytes);
    ASSERT_TRUE(mixtral.ok()) << mixtral.error().message;
    auto mixtral_config = read_model_config(*mixtral, RopeStyle::AdjacentPairs);
    ASSERT_FALSE(mixtral_config.ok());
    EXPECT_NE(mixtral_config.error().message.find("llama with experts"), std::string::npos);
}

}  // namespace moe_routing_test
}  // namespace
}  // namespace tempered
