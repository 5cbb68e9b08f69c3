// response_format -> Constraint: none for text, one shared json_object grammar, a compiled schema, and
// a 400 naming the keyword and its JSON pointer for a schema the compiler refuses. The vocabulary the
// grammar sees: the bytes the client sees, nothing for control and end-of-generation tokens.
#include <gtest/gtest.h>

#include <string>

#include "engine_test_support.h"
#include "server/structured_output.h"

namespace tempered {
namespace {
namespace server_structured_output_test {

api::ResponseFormat schema_format(const std::string& schema) {
    api::ResponseFormat format;
    format.kind = api::ResponseFormat::Kind::JsonSchema;
    format.name = "test";
    format.schema = api::Json::parse(schema);
    return format;
}

TEST(StructuredOutput, EachKindGetsItsConstraint) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    StructuredOutput structured(tokenizer, tokenizer.vocab_size());
    EXPECT_EQ(*structured.constraint_for(api::ResponseFormat{}), nullptr);

    api::ResponseFormat json_object;
    json_object.kind = api::ResponseFormat::Kind::JsonObject;
    const auto first = structured.constraint_for(json_object);
    ASSERT_TRUE(first && *first);
    EXPECT_EQ(*first, *structured.constraint_for(json_object));  // one grammar for every request
    grammar::ConstraintState state(*first);
    EXPECT_FALSE(state.allows('['));
    EXPECT_TRUE(state.allows('{'));

    const auto schema = structured.constraint_for(schema_format(R"({"type":"array","items":{"type":"integer"}})"));
    ASSERT_TRUE(schema && *schema);
    EXPECT_EQ(&(*schema)->vocabulary(), &(*first)->vocabulary());  // one vocabulary per model
    grammar::ConstraintState array(*schema);
    EXPECT_TRUE(array.allows('['));
}

TEST(StructuredOutput, ARepeatedSchemaReusesItsCompiledConstraint) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    StructuredOutput structured(tokenizer, tokenizer.vocab_size());
    const auto first = structured.constraint_for(schema_format(R"({"type":"integer"})"));
    const auto other = structured.constraint_for(schema_format(R"({"type":"boolean"})"));
    const auto again = structured.constraint_for(schema_format(R"({"type":"integer"})"));
    ASSERT_TRUE(first && other && again);
    EXPECT_EQ(*first, *again);
    EXPECT_NE(*first, *other);
    // Key order is part of the schema (it orders the generated properties): another order, another grammar.
    const auto ab = structured.constraint_for(schema_format(R"({"properties":{"a":{},"b":{}}})"));
    const auto ba = structured.constraint_for(schema_format(R"({"properties":{"b":{},"a":{}}})"));
    ASSERT_TRUE(ab && ba);
    EXPECT_NE(*ab, *ba);
    // Beyond the cache's size the least recently used schema is compiled afresh.
    for (int i = 0; i < 40; ++i)
        ASSERT_TRUE(structured.constraint_for(schema_format(R"({"const":)" + std::to_string(i) + "}")));
    const auto recompiled = structured.constraint_for(schema_format(R"({"type":"integer"})"));
    ASSERT_TRUE(recompiled);
    EXPECT_NE(*recompiled, *first);
}

TEST(StructuredOutput, ASchemaTheCompilerRefusesIsA400NamingTheKeywordAndPointer) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    StructuredOutput structured(tokenizer, tokenizer.vocab_size());
    const auto refused = structured.constraint_for(
        schema_format(R"({"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}})"));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().http_status, 400);
    EXPECT_EQ(refused.error().param, "response_format");
    EXPECT_NE(refused.error().message.find("uniqueItems"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("/properties/tags"), std::string::npos) << refused.error().message;
}

TEST(StructuredOutput, TheVocabularyHasNoBytesForControlOrEndTokens) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    const auto vocabulary = grammar_vocabulary(tokenizer, tokenizer.vocab_size() + 3);  // padded logits
    ASSERT_EQ(vocabulary.n_tokens(), static_cast<size_t>(tokenizer.vocab_size() + 3));
    EXPECT_EQ(vocabulary.token_bytes['a'], "a");
    EXPECT_EQ(vocabulary.token_bytes[testing::kEndOfText], "");
    EXPECT_EQ(vocabulary.end_of_generation, std::vector<int32_t>{testing::kEndOfText});
    EXPECT_EQ(vocabulary.token_bytes.back(), "");
}

}  // namespace server_structured_output_test
}  // namespace
}  // namespace tempered
