// The loop channels (output/loop_channel.h) and the watch that runs them (output/loop_watch.h): which tokens are
// numbers, a numbered list going round seen by the numbers channel and not by the tokens one, names nesting
// forever seen by the nesting channel under a grammar and an array of records left alone, periods reported in
// tokens, and the watch reporting the first channel's loop once. On SmolLM2's own tokens.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "model_test_support.h"
#include "output/loop_watch.h"
#include "output/token_shapes.h"
#include "tokenizer/tokenizer.h"

namespace tempered {
namespace {
namespace output_loop_channel_test {

struct Vocabulary {
    std::shared_ptr<const Tokenizer> tokenizer;
    std::shared_ptr<const TokenShapes> shapes;
};

const Vocabulary* smollm2() {
    static std::optional<Vocabulary> loaded;
    if (loaded) return &*loaded;
    auto file = GgufFile::open((testing::model_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf").string());
    if (!file.ok()) return nullptr;
    auto built = Tokenizer::from_gguf(*file);
    if (!built.ok()) return nullptr;
    auto tokenizer = std::make_shared<const Tokenizer>(std::move(*built));
    std::vector<std::string> texts;
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) texts.push_back(tokenizer->decode({&id, 1}));
    loaded = Vocabulary{tokenizer, std::make_shared<const TokenShapes>(texts)};
    return &*loaded;
}

RepetitionDetectionParams guard_params(bool shapes) {
    RepetitionDetectionParams params{128, 1, 3, 24};
    params.shapes = shapes;
    return params;
}

// The first loop a fresh watch sees in `text`, and the index of the token that showed it.
std::optional<LoopSighting> first_loop(const Vocabulary& vocabulary, const std::string& text, bool shapes,
                                       bool structured) {
    LoopWatch watch(guard_params(shapes), vocabulary.shapes, structured);
    for (const int32_t token : vocabulary.tokenizer->encode(text, false, false))
        if (watch.observe(token) == LoopWatch::Seen::FirstLoop) return watch.first_loop();
    return std::nullopt;
}

std::string numbered_list_going_round(int from, int to) {
    std::string text = "Here is the list:\n";
    for (int n = from; n <= to; ++n) text += std::to_string(n) + ". to be or not to be\n";
    return text;
}

// {"name": "N0", "children": [{"name": "N1", "children": [ ... `levels` deep, as the loop leaves it (unclosed).
std::string names_nesting(int levels) {
    const std::vector<std::string> names = {"Alice", "Bob",  "Carol",   "Dave", "Erin",   "Frank", "Grace", "Heidi",
                                            "Ivan",  "Judy", "Mallory", "Niaj", "Olivia", "Peggy", "Rupert"};
    std::string text;
    for (int level = 0; level < levels; ++level)
        text += "{\"name\": \"" + names[static_cast<size_t>(level) % names.size()] + "\", \"children\": [";
    return text;
}

TEST(TokenShapes, NumbersAreDigitsAfterOptionalWhitespace) {
    const TokenShapes shapes({"7", " 73", "\n1", "a1", "1a", " ", "", " 5", "73"});
    EXPECT_EQ(shapes.number_unit(0), shapes.number_unit(8));  // "7" and "73": one unit, no whitespace
    EXPECT_LT(shapes.number_unit(0), 0);
    EXPECT_LT(shapes.number_unit(1), 0);
    EXPECT_EQ(shapes.number_unit(1), shapes.number_unit(7));  // " 73" and " 5": the same whitespace
    EXPECT_NE(shapes.number_unit(1), shapes.number_unit(0));
    EXPECT_NE(shapes.number_unit(2), shapes.number_unit(1));  // "\n1" is not " 1"
    EXPECT_EQ(shapes.number_unit(3), 0);
    EXPECT_EQ(shapes.number_unit(4), 0);
    EXPECT_EQ(shapes.number_unit(5), 0);
    EXPECT_EQ(shapes.number_unit(6), 0);
    EXPECT_EQ(shapes.number_unit(-1), 0);
    EXPECT_EQ(shapes.number_unit(9), 0);
    EXPECT_TRUE(shapes.continues_number(0));
    EXPECT_FALSE(shapes.continues_number(1));
    EXPECT_EQ(shapes.bytes(2), "\n1");
    EXPECT_EQ(shapes.bytes(99), "");
}

TEST(LoopChannels, ANumberedListGoingRoundIsANumbersLoopAndNotATokensOne) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const Vocabulary* vocabulary = smollm2();
    ASSERT_TRUE(vocabulary);
    // 9 -> 10 and 99 -> 100 change how many digit tokens a number takes; the loop goes on through both.
    const std::string text = numbered_list_going_round(95, 110);
    EXPECT_FALSE(first_loop(*vocabulary, text, /*shapes=*/false, false));
    const auto loop = first_loop(*vocabulary, text, /*shapes=*/true, false);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->kind, LoopKind::Numbers);
    EXPECT_GE(loop->repeats, kNumbersMinCopies);
    // The period is the last copy's tokens: " to be or not to be\n" and the number with its ". ".
    const auto last_copy = vocabulary->tokenizer->encode("97. to be or not to be\n", false, false);
    EXPECT_EQ(loop->period, static_cast<int32_t>(last_copy.size()));
}

TEST(LoopChannels, AnExactLoopIsStillATokensLoop) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const Vocabulary* vocabulary = smollm2();
    ASSERT_TRUE(vocabulary);
    std::string text = "The end";
    for (int i = 0; i < 20; ++i) text += "</div>";
    const auto loop = first_loop(*vocabulary, text, /*shapes=*/true, false);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->kind, LoopKind::Tokens);
    // One more copy adds one period of tokens (in a run, the tokenizer may merge across copies).
    const auto tokens_of = [&](const std::string& t) { return vocabulary->tokenizer->encode(t, false, false).size(); };
    EXPECT_EQ(loop->period, static_cast<int32_t>(tokens_of(text + "</div>") - tokens_of(text)));
}

TEST(LoopChannels, NamesNestingForeverAreANestingLoopUnderAGrammarOnly) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const Vocabulary* vocabulary = smollm2();
    ASSERT_TRUE(vocabulary);
    const std::string text = names_nesting(12);
    EXPECT_FALSE(first_loop(*vocabulary, text, /*shapes=*/true, /*structured=*/false));
    const auto loop = first_loop(*vocabulary, text, /*shapes=*/true, /*structured=*/true);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->kind, LoopKind::Nesting);
    EXPECT_EQ(loop->repeats, kNestingMinCopies);
    // Seen on the last token of the kNestingMinCopies-th level.
    const auto levels = vocabulary->tokenizer->encode(names_nesting(kNestingMinCopies), false, false);
    EXPECT_EQ(loop->detected_at_token, static_cast<int64_t>(levels.size()) - 1);
    // A small tree, nested as deep as a loop but closed, is left alone: fewer levels than the channel needs.
    std::string small_tree = names_nesting(kNestingMinCopies - 1) + "]}]}]}";
    EXPECT_FALSE(first_loop(*vocabulary, small_tree, true, true)) << small_tree;
}

TEST(LoopChannels, IndentationDoesNotHideTheNesting) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const Vocabulary* vocabulary = smollm2();
    ASSERT_TRUE(vocabulary);
    std::string text = "{\n";
    for (int level = 1; level <= 10; ++level) {
        const std::string indent(static_cast<size_t>(2 * level), ' ');
        text += indent + "\"name\": \"Person " + std::to_string(level) + "\",\n" + indent + "\"children\": [\n" +
                indent + "  {\n";
    }
    const auto loop = first_loop(*vocabulary, text, true, true);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->kind, LoopKind::Nesting);
}

TEST(LoopChannels, AnArrayOfRecordsAndEscapedQuotesAreNoLoop) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const Vocabulary* vocabulary = smollm2();
    ASSERT_TRUE(vocabulary);
    const std::vector<std::string> names = {"Alice", "Bob",   "Carol", "Dave", "Erin",    "Frank",
                                            "Grace", "Heidi", "Ivan",  "Judy", "Mallory", "Niaj"};
    std::string records = "[";
    for (size_t i = 0; i < names.size(); ++i)
        records += std::string(i ? ", " : "") + "{\"name\": \"" + names[i] +
                   "\", \"age\": " + std::to_string(20 + 7 * i) + ", \"tags\": [\"x" + std::to_string(i) + "\"]}";
    records += "]";
    EXPECT_FALSE(first_loop(*vocabulary, records, true, true)) << records;
    // Brackets inside strings (escaped quotes included) are contents, not structure.
    std::string quoted = "{\"notes\": [";
    for (const std::string& name : names) quoted += "\"say \\\"{[\\\" to " + name + "\", ";
    quoted += "\"end\"]}";
    EXPECT_FALSE(first_loop(*vocabulary, quoted, true, true)) << quoted;
}

TEST(LoopWatch, OneLoopIsReportedOnceWhicheverChannelsSeeIt) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const Vocabulary* vocabulary = smollm2();
    ASSERT_TRUE(vocabulary);
    // A list going round with the same number each time: the tokens channel and the numbers channel both see it.
    std::string text = "Start\n";
    for (int i = 0; i < 20; ++i) text += "7. to be or not to be\n";
    LoopWatch watch(guard_params(true), vocabulary->shapes, true);
    int first_loops = 0;
    int later_loops = 0;
    for (const int32_t token : vocabulary->tokenizer->encode(text, false, false)) {
        const auto seen = watch.observe(token);
        first_loops += seen == LoopWatch::Seen::FirstLoop;
        later_loops += seen == LoopWatch::Seen::LoopAfterRestart;
    }
    EXPECT_EQ(first_loops, 1);
    EXPECT_EQ(later_loops, 0);
    ASSERT_TRUE(watch.first_loop());
    EXPECT_EQ(watch.first_loop()->kind, LoopKind::Tokens);
    EXPECT_EQ(watch.first_loop()->repeats, 20);  // followed to the end
}

}  // namespace output_loop_channel_test
}  // namespace
}  // namespace tempered
