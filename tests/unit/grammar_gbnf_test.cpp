// GBNF out and in (grammar/gbnf.h): a grammar written and read back accepts exactly what it accepted (random
// sentences of each, and their one-byte mutations, agree), characters survive the byte/code-point change
// (utf8_ranges.h), and a client's bad grammar is refused with a message, never a crash or a hang.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/left_recursion.h"
#include "grammar/utf8_ranges.h"
#include "grammar_test_support.h"
#include "toolcalls/tool_call_grammar.h"

namespace tempered::grammar {
namespace {
namespace grammar_gbnf_test {

using testing::matches;

// A random sentence of `grammar`: random bytes the matcher allows, ended at random once complete.
std::optional<std::string> random_sentence(const Grammar& grammar, std::mt19937& rng) {
    Matcher matcher(grammar);
    std::string out;
    while (out.size() < 2000) {
        if (matcher.is_complete() && (!matcher.can_continue() || rng() % 8 == 0)) return out;
        ByteSet allowed;
        for (size_t i = 0; i < matcher.leaf_count(); ++i)
            allowed.add_all(grammar.byte_sets[grammar.elements[matcher.leaf_position(i)].index]);
        std::vector<uint8_t> choices;
        for (unsigned byte = 0; byte < 256; ++byte)
            if (allowed.contains(static_cast<uint8_t>(byte))) choices.push_back(static_cast<uint8_t>(byte));
        if (choices.empty()) return std::nullopt;
        const uint8_t byte = choices[rng() % choices.size()];
        EXPECT_TRUE(matcher.accept_byte(byte));
        out += static_cast<char>(byte);
    }
    return std::nullopt;
}

Grammar round_trip(const Grammar& grammar) {
    auto text = write_gbnf(grammar);
    EXPECT_TRUE(text) << (text ? "" : text.error().message);
    if (!text) return Grammar{};
    auto read = read_gbnf(*text);
    EXPECT_TRUE(read) << (read ? "" : read.error().message) << "\n" << *text;
    return read ? std::move(read.value()) : Grammar{};
}

// Sentences of either grammar, and each with one byte changed, are accepted by both or by neither.
void expect_same_language(const Grammar& a, const Grammar& b, int samples = 200) {
    std::mt19937 rng(7);
    int compared = 0;
    for (int i = 0; i < samples; ++i) {
        for (const Grammar* source : {&a, &b}) {
            auto sentence = random_sentence(*source, rng);
            if (!sentence) continue;
            std::string mutated = *sentence;
            if (!mutated.empty()) mutated[rng() % mutated.size()] = static_cast<char>(rng() % 256);
            for (const std::string& text : {*sentence, mutated}) {
                EXPECT_EQ(matches(a, text), matches(b, text)) << "'" << text << "'";
                ++compared;
            }
        }
    }
    EXPECT_GT(compared, samples);
}

TEST(Utf8Ranges, ExprSpellsExactlyTheEncodingsOfItsCodePoints) {
    const std::vector<CodePointRange> ranges = {{'a', 'c'},       {0xE9, 0xE9},      {0x7F0, 0x812},
                                                {0xD7F0, 0xE010}, {0xFFF0, 0x10010}, {0x10FFF0, kMaxCodePoint}};
    GrammarBuilder builder;
    const RuleId root = builder.add_rule();
    builder.define(root, utf8_expr(ranges));
    const Grammar grammar = std::move(builder.build(root).value());
    auto in_ranges = [&](uint32_t cp) {
        for (const auto& r : ranges)
            if (cp >= r.first && cp <= r.last && !(cp >= 0xD800 && cp <= 0xDFFF)) return true;
        return false;
    };
    auto encode = [](uint32_t cp) {
        std::string s;
        if (cp < 0x80) return std::string(1, static_cast<char>(cp));
        if (cp < 0x800) return s + static_cast<char>(0xC0 | (cp >> 6)) + static_cast<char>(0x80 | (cp & 0x3F));
        if (cp < 0x10000)
            return s + static_cast<char>(0xE0 | (cp >> 12)) + static_cast<char>(0x80 | ((cp >> 6) & 0x3F)) +
                   static_cast<char>(0x80 | (cp & 0x3F));
        return s + static_cast<char>(0xF0 | (cp >> 18)) + static_cast<char>(0x80 | ((cp >> 12) & 0x3F)) +
               static_cast<char>(0x80 | ((cp >> 6) & 0x3F)) + static_cast<char>(0x80 | (cp & 0x3F));
    };
    for (uint32_t cp = 0; cp <= kMaxCodePoint; cp += (cp < 0x11000 || cp > 0x10FF00) ? 1 : 997)
        ASSERT_EQ(matches(grammar, encode(cp)), in_ranges(cp)) << std::hex << cp;
    EXPECT_FALSE(matches(grammar, "\xC0\xA1"));      // an overlong 'a'
    EXPECT_FALSE(matches(grammar, "\xED\xA0\x80"));  // a surrogate
}

TEST(Utf8Ranges, CodePointsOfLeadAndContinuationSets) {
    const ByteSet tail = ByteSet::range(0x80, 0xBF);
    const std::vector<ByteSet> one{tail}, two{tail, tail};
    EXPECT_EQ(code_points_of(ByteSet::range(0xC2, 0xDF), one), (std::vector<CodePointRange>{{0x80, 0x7FF}}));
    EXPECT_EQ(code_points_of(ByteSet::range(0xE1, 0xEC), two), (std::vector<CodePointRange>{{0x1000, 0xCFFF}}));
    // E0 80..9F would be overlong: left out, not aliased onto shorter characters.
    EXPECT_EQ(code_points_of(ByteSet::single(0xE0), two), (std::vector<CodePointRange>{{0x800, 0xFFF}}));
    EXPECT_FALSE(code_points_of(ByteSet::range(0xC2, 0xE1), one));  // leads of two lengths
    EXPECT_FALSE(code_points_of(ByteSet::range(0xC2, 0xDF), two));  // too many continuations
    EXPECT_FALSE(code_points_of(ByteSet::single('a'), {}));
    EXPECT_FALSE(code_points_of(ByteSet::range(0xC2, 0xDF), std::vector<ByteSet>{ByteSet::range(0x41, 0x90)}));
}

TEST(Gbnf, JsonSchemaGrammarsSurviveTheRoundTrip) {
    for (const char* schema : {
             R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer",
                 "minimum": 0, "maximum": 150}}, "required": ["name"]})",
             R"({"type": "array", "items": {"enum": ["naïve", "日本", "🙂", 3, null]}, "maxItems": 3})",
             R"({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                 "id": {"type": "string", "pattern": "^[a-f0-9]{4}-é+$"}}, "additionalProperties": true})",
             R"({"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
                 "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}},
                 "$ref": "#/$defs/node"})",
             R"({"anyOf": [{"type": "number", "exclusiveMinimum": -2.5}, {"type": "boolean"}]})",
         }) {
        SCOPED_TRACE(schema);
        const Grammar original = testing::schema_grammar(schema);
        expect_same_language(original, round_trip(original));
    }
    const Grammar object = json_object_grammar();
    expect_same_language(object, round_trip(object));
}

TEST(Gbnf, ToolCallGrammarsSurviveTheRoundTrip) {
    const auto tools = toolcalls::DeclaredTools::from_request(nlohmann::ordered_json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}])"));
    ASSERT_TRUE(tools);
    for (auto family : {toolcalls::ToolCallFamily::Hermes, toolcalls::ToolCallFamily::Llama3Json,
                        toolcalls::ToolCallFamily::Mistral}) {
        auto grammar = toolcalls::build_tool_call_grammar({family, &*tools, true});
        ASSERT_TRUE(grammar);
        expect_same_language(*grammar, round_trip(*grammar));
    }
}

TEST(Gbnf, WritesReadableLiteralsAndClasses) {
    const Grammar grammar = testing::schema_grammar(R"({"enum": ["a b", "é"]})");
    const auto text = write_gbnf(grammar);
    ASSERT_TRUE(text);
    EXPECT_NE(text->find("root ::="), std::string::npos) << *text;
    EXPECT_NE(text->find("\"\\u0022a b\\u0022\""), std::string::npos) << *text;
    const Grammar keys = testing::schema_grammar(R"({"enum": ["get_weather-[x]"]})");
    EXPECT_NE(write_gbnf(keys)->find("get_weather\\u002D\\u005Bx\\u005D"), std::string::npos) << *write_gbnf(keys);
    EXPECT_NE(text->find("\\u00E9"), std::string::npos) << *text;
}

TEST(Gbnf, RefusesToWriteACharacterSplitAcrossRules) {
    GrammarBuilder builder;
    const RuleId root = builder.add_rule();
    const RuleId tail = builder.add_rule();
    builder.define(tail, Expr::byte_set(ByteSet::range(0x80, 0xBF)));
    builder.define(root, Expr::sequence({Expr::byte_set(ByteSet::range(0xC2, 0xDF)), Expr::reference(tail)}));
    auto grammar = builder.build(root);
    ASSERT_TRUE(grammar);
    EXPECT_FALSE(write_gbnf(*grammar));
}

TEST(Gbnf, ReadsLlamaCppStyleGrammars) {
    const std::string text = R"(# a list of moves
root   ::= move ("," ws move)* "."
move   ::= piece [a-h] [1-8] | "O-O" ("-O")?
piece  ::= [KQRBN]? # pawns have none
ws     ::= [ \t\n]{0,2}
)";
    auto grammar = read_gbnf(text);
    ASSERT_TRUE(grammar) << grammar.error().message;
    EXPECT_TRUE(matches(*grammar, "e4, Nf3,\t O-O-O."));
    EXPECT_FALSE(matches(*grammar, "e9."));
    EXPECT_FALSE(matches(*grammar, "e4,   Nf3."));
    auto multi = read_gbnf("root ::= (\n  \"a\" |\n  [^a-z\\x00-\\x1F] \"\\u00e9\"\n) .{1,2}\n");
    ASSERT_TRUE(multi) << multi.error().message;
    EXPECT_TRUE(matches(*multi, "aé"));
    EXPECT_TRUE(matches(*multi, "Zéé🙂"));
    EXPECT_FALSE(matches(*multi, "zéé"));
}

// root ::= r1, r1 ::= r2, ... a chain of `length` rules entered before the character at its end.
std::string chain(int length) {
    std::string out = "root ::= r1\n";
    for (int i = 1; i < length; ++i) out += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
    return out + "r" + std::to_string(length) + " ::= \"x\"\n";
}

std::string repeated(const std::string& text, int times) {
    std::string out;
    for (int i = 0; i < times; ++i) out += text;
    return out;
}

TEST(Gbnf, BadGrammarsAreRefusedWithAReason) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"item ::= \"a\"\n", "no 'root'"},
        {"root ::= missing\n", "'missing' is used but never defined"},
        {"root ::= \"a\"\nroot ::= \"b\"\n", "defined twice"},
        {"root ::= root \"a\" | \"b\"\n", "left recursion"},
        {"root ::= x \"a\"\nx ::= y\ny ::= \"\" | root\n", "left recursion"},
        {"root ::= \"a\"{2001}\n", "over 2000"},
        {"root ::= \"a\"{3,2}\n", "below its minimum"},
        {"root ::= \"abc\n", "closing"},
        {"root ::= [abc\n", "closing"},
        {"root ::= \"\\q\"\n", "unknown escape"},
        {"root ::= \"\\uD800\"\n", "names no character"},
        {"root ::= <[12]>\n", "token references"},
        {"root ::= * \"a\"\n", "nothing before it"},
        {"root ::= (\"a\"\n", "expected ')'"},
        {"root = \"a\"\n", "'::='"},
        {"root ::= \"\xff\"\n", "UTF-8"},
        {"root ::= " + std::string(70, '(') + "\"a\"" + std::string(70, ')') + "\n", "nested too deep"},
        {"root ::= " + repeated("\"a\"{2000} ", 101) + "\n", "too many items"},
        {"root ::= \"a\"*****\n", "stacked"},
    };
    for (const auto& [text, reason] : cases) {
        auto grammar = read_gbnf(text);
        ASSERT_FALSE(grammar) << text;
        EXPECT_NE(grammar.error().message.find(reason), std::string::npos) << text << " -> " << grammar.error().message;
    }
}

TEST(Gbnf, LongChainsOfRulesBeforeACharacterDoNotExhaustTheStack) {
    // The matcher's closure enters every rule of the chain before it meets the byte: 50k rules, and 60k
    // entries through nullable repetitions that complete one after another in a sequence.
    auto grammar = read_gbnf(chain(50000));
    ASSERT_TRUE(grammar) << grammar.error().message;
    EXPECT_TRUE(matches(*grammar, "x"));
    auto nullable = read_gbnf("root ::= " + repeated("(\"\"){0,2000} ", 30) + "\"x\"\n");
    ASSERT_TRUE(nullable) << nullable.error().message;
    EXPECT_TRUE(matches(*nullable, "x"));
    EXPECT_FALSE(matches(*nullable, "y"));
}

TEST(Gbnf, NullableLoopsAreNotLeftRecursion) {
    auto grammar = read_gbnf("root ::= (\"a\"?)* \"b\"\n");
    ASSERT_TRUE(grammar) << grammar.error().message;
    EXPECT_TRUE(matches(*grammar, "aab"));
    EXPECT_TRUE(matches(*grammar, "b"));
}

}  // namespace grammar_gbnf_test
}  // namespace
}  // namespace tempered::grammar
