// Oracle test: real chat templates rendered by our interpreter must match Python jinja2 (configured
// as transformers configures it) byte for byte. Expected outputs come from
// scripts/fixtures/render_chat_templates.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "formats/gguf.h"

namespace tempered {
namespace {
namespace chat_template_fixtures_test {

const std::filesystem::path kFixtures = std::filesystem::path(TEMPERED_SOURCE_DIR) / "tests/fixtures/chat_templates";

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Shows where two renders first differ.
std::string first_difference(const std::string& expected, const std::string& actual) {
    size_t i = 0;
    while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
    const size_t from = i > 40 ? i - 40 : 0;
    return "at byte " + std::to_string(i) + "\n  expected: ..." + nlohmann::json(expected.substr(from, 120)).dump() +
           "\n  actual:   ..." + nlohmann::json(actual.substr(from, 120)).dump();
}

TEST(ChatTemplateFixtures, MatchPythonJinja2ByteForByte) {
    size_t compared = 0, mismatches = 0, templates = 0;
    for (const auto& entry : std::filesystem::directory_iterator(kFixtures / "expected")) {
        if (entry.path().extension() != ".json") continue;
        ++templates;
        const auto fixture = nlohmann::ordered_json::parse(read_file(entry.path()));
        const std::string template_name = fixture["template"].get<std::string>();
        const std::string source = read_file(kFixtures / "templates" / template_name);
        ASSERT_FALSE(source.empty()) << template_name;
        const auto now = std::chrono::system_clock::from_time_t(fixture["now_epoch"].get<std::time_t>());
        for (const auto& c : fixture["cases"]) {
            ChatTemplateInputs inputs;
            inputs.messages = c["messages"];
            inputs.tools = c["tools"];
            inputs.add_generation_prompt = c["add_generation_prompt"].get<bool>();
            inputs.bos_token = fixture["bos_token"].get<std::string>();
            inputs.eos_token = fixture["eos_token"].get<std::string>();
            inputs.extra_context = c["extra_context"];
            inputs.now = [now] { return now; };
            const auto result = apply_chat_template(source, inputs);
            const std::string label = template_name + " :: " + c["name"].get<std::string>();
            ++compared;
            if (c.contains("error")) {
                const std::string expected_error = c["error"].get<std::string>();
                bool ok = !result.ok();
                // raise_exception messages are the template's own: they must come through verbatim.
                if (ok && c["error_type"] == "TemplateError") {
                    ok = result.error().message.find(expected_error) != std::string::npos;
                }
                if (!ok) {
                    ++mismatches;
                    ADD_FAILURE() << label << ": expected error '" << expected_error << "', got "
                                  << (result.ok() ? "output:\n" + result.value() : "error: " + result.error().message);
                }
                continue;
            }
            const std::string expected = c["expected"].get<std::string>();
            if (!result.ok()) {
                ++mismatches;
                ADD_FAILURE() << label << ": unexpected error: " << result.error().message;
            } else if (result.value() != expected) {
                ++mismatches;
                ADD_FAILURE() << label << ": output differs " << first_difference(expected, result.value());
            }
        }
    }
    std::cout << "[ chat templates ] " << templates << " templates, " << compared << " cases compared, " << mismatches
              << " mismatches\n";
    EXPECT_GE(templates, 6u);
    EXPECT_GE(compared, 100u);
    EXPECT_EQ(mismatches, 0u);
}

// A fixture that is the template stored in a real model file: check it still is, when the model has
// been pulled on this machine. Qwen2.5-Coder-0.5B-Instruct's GGUF carries Qwen2.5-7B-Instruct's template
// byte for byte, so that fixture's 30 jinja2 renders (8 with tools) are also the served model's.
void expect_model_template_is_fixture(const std::string& model_file, const std::string& fixture) {
    const char* home = std::getenv("HOME");
    const std::filesystem::path model =
        std::filesystem::path(home ? home : "/root") / ".cache/tempered/models" / model_file;
    if (!std::filesystem::exists(model)) GTEST_SKIP() << "model not pulled: " << model;
    auto gguf = GgufFile::open(model.string());
    ASSERT_TRUE(gguf.ok()) << gguf.error().message;
    const auto chat_template = gguf->get_string("tokenizer.chat_template");
    ASSERT_TRUE(chat_template.has_value());
    EXPECT_EQ(*chat_template, read_file(kFixtures / "templates" / fixture));
}

TEST(ChatTemplateFixtures, SmolLM2FixtureIsTheModelsTemplate) {
    expect_model_template_is_fixture("SmolLM2-135M-Instruct.Q4_1.gguf", "HuggingFaceTB-SmolLM2-135M-Instruct.jinja");
}

TEST(ChatTemplateFixtures, Qwen25FixtureIsQwen25CodersTemplate) {
    expect_model_template_is_fixture("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja");
}

}  // namespace chat_template_fixtures_test
}  // namespace
}  // namespace tempered
