// The family registry: each family is found by its name and by its template markers, and text written
// in a family's call syntax (what its grammar makes the model write, from the trigger on) is what its
// own parser reads back as calls, so a descriptor and its parser cannot drift apart.
#include <gtest/gtest.h>

#include "toolcalls/tool_call_family.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {
namespace {
namespace toolcalls_family_test {

std::string joined(const std::vector<std::string_view>& markers) {
    std::string text;
    for (std::string_view marker : markers) text += std::string(marker) + " ";
    return text;
}

// One call as the family's grammar writes it, with {"a": 1} as its arguments.
std::string written_call(const CallSyntax& syntax, std::string_view name) {
    return std::string(syntax.call_open) + "{\"name\": \"" + std::string(name) + "\", \"" +
           std::string(syntax.arguments_key) + "\": {\"a\": 1}" + std::string(syntax.call_close);
}

TEST(ToolCallFamilies, EachIsFoundByItsNameAndByItsTemplateMarkers) {
    ASSERT_EQ(tool_call_families().size(), 4u);
    for (const ToolCallFamilyDescriptor* family : tool_call_families()) {
        EXPECT_EQ(family_from_name(family->name), family->id);
        EXPECT_EQ(family_name(family->id), family->name);
        EXPECT_EQ(&describe(family->id), family);
        ASSERT_FALSE(family->template_markers.empty()) << family->name;
        for (const std::vector<std::string_view>& markers : family->template_markers)
            EXPECT_EQ(detect_family(joined(markers)), family->id) << joined(markers);
    }
    EXPECT_FALSE(family_from_name("none"));
    EXPECT_FALSE(detect_family("{% for message in messages %}{{ message.content }}{% endfor %}"));
}

// Harmony's grammar is a message header, not a call region (tests/unit/harmony_test.cpp holds it to its parser).
TEST(ToolCallFamilies, WhatTheSyntaxWritesTheParserReads) {
    for (const ToolCallFamilyDescriptor* family : tool_call_families()) {
        if (family->lazy_only) continue;
        const CallSyntax& syntax = family->syntax;
        const std::string text = std::string(syntax.region_open) + written_call(syntax, "f") +
                                 std::string(syntax.separator) + written_call(syntax, "g") +
                                 std::string(syntax.region_close);
        EXPECT_TRUE(text.starts_with(family->trigger)) << family->name;
        const ParsedText parsed = parse_tool_calls(family->id, text);
        EXPECT_EQ(parsed.content, "") << family->name;
        EXPECT_EQ(parsed.unparsed, 0) << family->name;
        ASSERT_EQ(parsed.calls.size(), 2u) << family->name;
        EXPECT_EQ(parsed.calls[0].name, "f");
        EXPECT_EQ(parsed.calls[1].name, "g");
        EXPECT_EQ(parsed.calls[1].arguments, R"({"a":1})");
    }
}

}  // namespace toolcalls_family_test
}  // namespace
}  // namespace tempered::toolcalls
