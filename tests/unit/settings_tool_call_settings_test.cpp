// --tool-call-parser and --tool-call-validation (settings/tool_call_settings.h): the flag's value wins over
// the config file's, which wins over the defaults; a value no family or mode has is an error that names
// the flag and lists the registry's families.
#include <gtest/gtest.h>

#include "settings/tool_call_settings.h"

namespace tempered {
namespace {
namespace settings_tool_call_settings_test {

TEST(ToolCallSettings, FlagThenConfigFileThenDefault) {
    auto defaults = tool_call_settings("", "", "", "");
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->parser, "auto");
    EXPECT_EQ(defaults->validation, ToolCallValidation::Constrain);

    auto from_file = tool_call_settings("", "", "mistral", "off");
    ASSERT_TRUE(from_file);
    EXPECT_EQ(from_file->parser, "mistral");
    EXPECT_EQ(from_file->validation, ToolCallValidation::Off);

    auto from_flags = tool_call_settings("none", "flag", "mistral", "off");
    ASSERT_TRUE(from_flags);
    EXPECT_EQ(from_flags->parser, "none");
    EXPECT_EQ(from_flags->validation, ToolCallValidation::Flag);
}

TEST(ToolCallSettings, UnknownValuesNameTheFlagAndWhatIsLegal) {
    auto parser = tool_call_settings("qwen", "", "", "");
    ASSERT_FALSE(parser);
    EXPECT_EQ(parser.error().message,
              "--tool-call-parser must be auto, none, harmony, hermes, llama3_json or mistral (got 'qwen')");
    auto validation = tool_call_settings("", "", "", "strict");
    ASSERT_FALSE(validation);
    EXPECT_EQ(validation.error().message, "--tool-call-validation must be off, flag or constrain (got 'strict')");
}

}  // namespace settings_tool_call_settings_test
}  // namespace
}  // namespace tempered
