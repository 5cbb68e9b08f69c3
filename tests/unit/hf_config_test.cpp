// config.json read as GGUF metadata (hf/hf_config.h) and HF tensor names as GGUF's (hf/hf_tensors.h):
// the keys each family's loader reads, the refusals that name what is wrong, the rope forms of
// transformers 4 and 5, Gemma 3's constants checked, FP8's block size.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hf/hf_config.h"
#include "hf/hf_tensors.h"

namespace tempered {
namespace {
namespace hf_config_test {

using nlohmann::json;

json llama_config() {
    return json::parse(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 576, "intermediate_size": 1536,
        "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-05, "rope_theta": 100000.0, "hidden_act": "silu", "tie_word_embeddings": true})");
}

const GgufValue* find(const HfModelDescription& model, const std::string& key) {
    for (const auto& [name, value] : model.metadata)
        if (name == key) return &value;
    return nullptr;
}

std::string error_of(const json& config) {
    auto model = describe_hf_model(config);
    return model ? "" : model.error().message;
}

TEST(HfConfig, LlamaBecomesTheLlamaKeys) {
    auto model = describe_hf_model(llama_config());
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(model->architecture, "llama");
    EXPECT_EQ(*find(*model, "general.architecture")->as_string(), "llama");
    EXPECT_EQ(find(*model, "llama.block_count")->as_int(), 30);
    EXPECT_EQ(find(*model, "llama.attention.head_count_kv")->as_int(), 3);
    EXPECT_EQ(find(*model, "llama.attention.key_length")->as_int(), 64);  // hidden / heads
    EXPECT_FLOAT_EQ(static_cast<float>(*find(*model, "llama.rope.freq_base")->as_float()), 100000.0f);
    EXPECT_EQ(find(*model, "llama.rope.scaling.type"), nullptr);
    EXPECT_TRUE(model->permute_query_key);
    EXPECT_FALSE(model->norms_plus_one);
    EXPECT_TRUE(model->head_name.empty());  // tied
}

TEST(HfConfig, RopeScalingInBothSpellings) {
    json config = llama_config();
    config.erase("rope_theta");
    config["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "linear"}, {"factor", 4.0}};
    auto model = describe_hf_model(config);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_FLOAT_EQ(static_cast<float>(*find(*model, "llama.rope.freq_base")->as_float()), 500000.0f);
    EXPECT_EQ(*find(*model, "llama.rope.scaling.type")->as_string(), "linear");
    EXPECT_FLOAT_EQ(static_cast<float>(*find(*model, "llama.rope.scaling.factor")->as_float()), 4.0f);

    config = llama_config();
    config["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    model = describe_hf_model(config);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(*find(*model, "llama.rope.scaling.type")->as_string(), "yarn");
    EXPECT_EQ(find(*model, "llama.rope.scaling.original_context_length")->as_int(), 32768);

    config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    EXPECT_NE(error_of(config).find("rope type 'llama3' is not supported"), std::string::npos);
}

TEST(HfConfig, RefusesWhatItCannotRun) {
    json config = llama_config();
    config["architectures"] = {"MistralForCausalLM"};
    EXPECT_NE(error_of(config).find("architecture 'MistralForCausalLM' is not supported (supported: LlamaForCausalLM"),
              std::string::npos);
    config = llama_config();
    config.erase("num_hidden_layers");
    EXPECT_NE(error_of(config).find("missing \"num_hidden_layers\""), std::string::npos);
    config = llama_config();
    config["hidden_size"] = -5;
    EXPECT_NE(error_of(config).find("\"hidden_size\" is not a positive integer"), std::string::npos);
    config = llama_config();
    config["hidden_act"] = "gelu";
    EXPECT_NE(error_of(config).find("activation 'gelu'"), std::string::npos);
    config = llama_config();
    config["quantization_config"] = {{"quant_method", "awq"}};
    EXPECT_NE(error_of(config).find("quantization 'awq' is not supported"), std::string::npos);
    EXPECT_NE(error_of(json::array()).find("not a JSON object"), std::string::npos);
}

TEST(HfConfig, Gemma3ConstantsAreChecked) {
    json config = json::parse(R"({"architectures": ["Gemma3ForCausalLM"], "hidden_size": 640, "intermediate_size": 2048,
        "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "hidden_activation": "gelu_pytorch_tanh",
        "sliding_window": 512, "query_pre_attn_scalar": 256,
        "rope_parameters": {"full_attention": {"rope_theta": 1000000.0, "rope_type": "default"},
                            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
        "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                        "sliding_attention", "full_attention"]})");
    auto model = describe_hf_model(config);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_TRUE(model->norms_plus_one);
    EXPECT_FALSE(model->permute_query_key);
    EXPECT_EQ(find(*model, "gemma3.attention.sliding_window")->as_int(), 512);
    EXPECT_FLOAT_EQ(static_cast<float>(*find(*model, "gemma3.rope.freq_base")->as_float()), 1e6f);
    config["rope_parameters"]["sliding_attention"]["rope_theta"] = 20000.0;
    EXPECT_NE(error_of(config).find("rope_local_base_freq"), std::string::npos);
    config["rope_parameters"]["sliding_attention"]["rope_theta"] = 10000.0;
    config["layer_types"][0] = "full_attention";
    EXPECT_NE(error_of(config).find("layer_types"), std::string::npos);
}

TEST(HfConfig, Fp8BlockSize) {
    json config = llama_config();
    config["quantization_config"] = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"weight_block_size", {128, 64}}};
    auto model = describe_hf_model(config);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(model->fp8_block_rows, 128);
    EXPECT_EQ(model->fp8_block_cols, 64);
}

TEST(HfTensorNames, FamiliesAndPrefixes) {
    auto llama = describe_hf_model(llama_config());
    ASSERT_TRUE(llama);
    EXPECT_EQ(*gguf_tensor_name(*llama, "model.embed_tokens.weight"), "token_embd.weight");
    EXPECT_EQ(*gguf_tensor_name(*llama, "model.layers.7.self_attn.k_proj.weight"), "blk.7.attn_k.weight");
    EXPECT_EQ(*gguf_tensor_name(*llama, "model.layers.7.post_attention_layernorm.weight"), "blk.7.ffn_norm.weight");
    EXPECT_EQ(*gguf_tensor_name(*llama, "model.layers.0.self_attn.rotary_emb.inv_freq"), "");
    EXPECT_EQ(*gguf_tensor_name(*llama, "lm_head.weight"), "");                    // tied: a saved copy is not read
    EXPECT_FALSE(gguf_tensor_name(*llama, "model.layers.30.mlp.up_proj.weight"));  // past num_hidden_layers
    EXPECT_FALSE(gguf_tensor_name(*llama, "model.layers.1.mlp.experts.0.up_proj.weight"));

    json gemma = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {
        "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 6, "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": 256, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
        "sliding_window": 512}})");
    auto multimodal = describe_hf_model(gemma);
    ASSERT_TRUE(multimodal) << multimodal.error().message;
    EXPECT_EQ(*gguf_tensor_name(*multimodal, "language_model.model.layers.5.post_attention_layernorm.weight"),
              "blk.5.post_attention_norm.weight");
    EXPECT_EQ(*gguf_tensor_name(*multimodal, "model.language_model.layers.5.pre_feedforward_layernorm.weight"),
              "blk.5.ffn_norm.weight");
    EXPECT_EQ(*gguf_tensor_name(*multimodal, "vision_tower.vision_model.embeddings.patch_embedding.weight"), "");
    EXPECT_EQ(*gguf_tensor_name(*multimodal, "model.vision_tower.encoder.layers.0.mlp.fc1.weight"), "");
}

TEST(HfTensorNames, DeepSeekPredictionLayersAreSkipped) {
    json config = json::parse(R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4, "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-6, "hidden_act": "silu", "kv_lora_rank": 64, "q_lora_rank": 96, "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16, "v_head_dim": 48, "n_routed_experts": 8, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1, "n_group": 2,
        "topk_group": 1, "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5,
        "num_nextn_predict_layers": 1})");
    auto model = describe_hf_model(config);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(find(*model, "deepseek2.attention.key_length")->as_int(), 48);
    EXPECT_EQ(find(*model, "deepseek2.expert_gating_func")->as_int(), 2);
    EXPECT_EQ(*gguf_tensor_name(*model, "model.layers.1.self_attn.kv_b_proj.weight"), "blk.1.attn_kv_b.weight");
    EXPECT_EQ(*gguf_tensor_name(*model, "model.layers.3.eh_proj.weight"), "");  // the prediction layer
    EXPECT_FALSE(gguf_tensor_name(*model, "model.layers.4.eh_proj.weight"));
    config["scoring_func"] = "relu";
    EXPECT_NE(error_of(config).find("scoring_func 'relu'"), std::string::npos);
}

}  // namespace hf_config_test
}  // namespace
}  // namespace tempered
