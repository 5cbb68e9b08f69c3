// The load-time probe render (chat/chat_template_probe.h): every real template in the fixtures passes it,
// a template that stops itself with raise_exception() passes, and a runaway or broken one fails with the
// limit or error that stopped it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template_probe.h"

namespace tempered {
namespace {
namespace chat_template_probe_test {

Result<std::string> probe(const std::string& source) {
    auto parsed = ChatTemplate::parse(source);
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
    if (!parsed) return parsed.error();
    return probe_chat_template(*parsed, source, ChatTemplateProbe{"<s>", "</s>", {}});
}

void expect_probe_failure(const std::string& source, const std::string& needle) {
    const auto result = probe(source);
    ASSERT_FALSE(result.ok()) << source;
    EXPECT_NE(result.error().message.find(needle), std::string::npos) << result.error().message;
}

TEST(ChatTemplateProbe, EveryFixtureTemplatePasses) {
    const auto dir = std::filesystem::path(TEMPERED_SOURCE_DIR) / "tests/fixtures/chat_templates/templates";
    int probed = 0, noted = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        auto parsed = ChatTemplate::parse(text.str());
        if (!parsed) continue;  // not probed at load either: such a model serves completions only
        const auto result = probe_chat_template(*parsed, text.str(), ChatTemplateProbe{"<s>", "</s>", {}});
        EXPECT_TRUE(result.ok()) << entry.path().filename() << ": " << (result.ok() ? "" : result.error().message);
        if (result.ok() && !result->empty()) ++noted;
        ++probed;
    }
    EXPECT_GE(probed, 20);
    // Two real templates do not fit the probe (Hermes 3's tool-use template needs tools, llama.cpp's R1
    // template serializes a generator): noted, not refused.
    EXPECT_LE(noted, 2);
}

TEST(ChatTemplateProbe, ACleanTemplatePassesWithoutANote) {
    const auto result = probe(
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}");
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(*result, "");
}

TEST(ChatTemplateProbe, ADeliberateRaisePasses) {
    const auto result = probe(
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not "
        "supported') }}{% endif %}{{ m.content }}{% endfor %}");
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(*result, "");
}

TEST(ChatTemplateProbe, ATemplateThatDoesNotFitTheProbeIsNotedNotRefused) {
    const auto result = probe("{% for t in tools %}{{ t }}{% endfor %}{{ messages[0].content.missing() }}");
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_NE(result->find("system, user, assistant, user"), std::string::npos) << *result;
    EXPECT_NE(result->find("400"), std::string::npos) << *result;
}

TEST(ChatTemplateProbe, RunawayTemplatesFailNamingTheLimit) {
    expect_probe_failure("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                         "max_loop_iterations (1000000)");
    expect_probe_failure("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "max_depth (256)");
    expect_probe_failure("{% for i in range(100000) %}{{ 'x' * 10000 }}{% endfor %}", "max_output_bytes (4194304)");
    // Loops over the conversation: the probe's four messages make it run away too.
    expect_probe_failure(
        "{% for m in messages %}{% for i in range(100000) %}{% for j in range(100000) %}"
        "{% endfor %}{% endfor %}{% endfor %}",
        "system, user, assistant, user");
}

TEST(ChatTemplateProbe, ToolsAreProbedWhenTheTemplateMentionsThem) {
    const std::string runaway_with_tools =
        "{% if tools %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif %}"
        "{% for m in messages %}{{ m.content }}{% endfor %}";
    expect_probe_failure(runaway_with_tools, "tool");
    expect_probe_failure(runaway_with_tools, "max_loop_iterations");
    const auto clean = probe(
        "{% if tools %}{% for t in tools %}{{ t.function.name }}{{ t.function.parameters|tojson }}"
        "{% endfor %}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}");
    ASSERT_TRUE(clean.ok()) << clean.error().message;
    EXPECT_EQ(*clean, "");
}

}  // namespace chat_template_probe_test
}  // namespace
}  // namespace tempered
