// The reasoning split (src/reasoning): synthetic token streams with a toy vocabulary, then the real R1
// distill vocabulary and template carried by build/tiny-models/tiny-r1-qwen2*.gguf.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "formats/gguf.h"
#include "model_test_support.h"
#include "reasoning/reasoning_parser.h"
#include "tiny_r1_model.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tempered::reasoning {
namespace {
namespace reasoning_parser_test {

constexpr int32_t kThink = 3, kEndThink = 4;
// 11 and 12 are the two bytes of "é": a character split over two tokens.
const std::map<int32_t, std::string> kToyVocabulary = {{1, "Hello"}, {2, " world"},  {3, "<think>"}, {4, "</think>"},
                                                       {5, "\n"},    {6, "Paris"},   {7, "."},       {8, "hm"},
                                                       {9, "</"},    {10, "think>"}, {11, "\xC3"},   {12, "\xA9"}};

const ThinkTokens kMarkers{kThink, kEndThink};

// Each token with the text it stands for, as a detokenizer that holds nothing back emits it.
SplitText split_per_token(const std::vector<int32_t>& tokens, bool prompt_opened, int64_t* reasoning_tokens = nullptr) {
    ReasoningSplitter splitter(kMarkers, prompt_opened);
    SplitText out;
    for (int32_t token : tokens) splitter.feed(token, kToyVocabulary.at(token), out);
    splitter.finish("", out);
    if (reasoning_tokens) *reasoning_tokens = splitter.reasoning_tokens();
    return out;
}

TEST(ReasoningSplit, ModelOpenedThinkSplitsOnTheMarkers) {
    int64_t reasoning_tokens = 0;
    const SplitText out = split_per_token({3, 8, 5, 4, 5, 6, 7}, /*prompt_opened=*/false, &reasoning_tokens);
    EXPECT_EQ(out.reasoning, "hm\n");
    EXPECT_EQ(out.content, "\nParis.");
    EXPECT_EQ(reasoning_tokens, 4);  // <think> hm \n </think>
}

TEST(ReasoningSplit, PromptOpenedThinkStartsInReasoning) {
    int64_t reasoning_tokens = 0;
    const SplitText out = split_per_token({8, 5, 4, 6, 7}, /*prompt_opened=*/true, &reasoning_tokens);
    EXPECT_EQ(out.reasoning, "hm\n");
    EXPECT_EQ(out.content, "Paris.");
    EXPECT_EQ(reasoning_tokens, 3);  // hm \n </think>: the prompt's <think> is not the model's
}

TEST(ReasoningSplit, WithoutThinkEverythingIsContent) {
    int64_t reasoning_tokens = 0;
    const SplitText out = split_per_token({1, 2, 5, 6, 7}, /*prompt_opened=*/false, &reasoning_tokens);
    EXPECT_EQ(out.reasoning, "");
    EXPECT_EQ(out.content, "Hello world\nParis.");
    EXPECT_EQ(reasoning_tokens, 0);
}

TEST(ReasoningSplit, StreamEndingInsideReasoningGivesAllOfIt) {
    ReasoningSplitter splitter(kMarkers, /*prompt_opened_reasoning=*/true);
    SplitText out;
    for (int32_t token : {8, 5, 1, 11}) splitter.feed(token, token == 11 ? "" : kToyVocabulary.at(token), out);
    splitter.finish("\xEF\xBF\xBD", out);  // the detokenizer's flush of the unfinished character
    EXPECT_TRUE(splitter.in_reasoning());
    EXPECT_EQ(out.reasoning, "hm\nHello\xEF\xBF\xBD");
    EXPECT_EQ(out.content, "");
    EXPECT_EQ(splitter.reasoning_tokens(), 4);
}

TEST(ReasoningSplit, MarkerSpelledFromOrdinaryTokensIsText) {
    const SplitText out = split_per_token({8, 9, 10, 6}, /*prompt_opened=*/true);
    EXPECT_EQ(out.reasoning, "hm</think>Paris");
    EXPECT_EQ(out.content, "");
}

TEST(ReasoningSplit, MarkerThatDoesNotSwitchSidesStaysAsText) {
    const SplitText out = split_per_token({3, 8, 3, 4, 6, 4}, /*prompt_opened=*/false);
    EXPECT_EQ(out.reasoning, "hm<think>");
    EXPECT_EQ(out.content, "Paris</think>");
}

TEST(ReasoningSplit, HeldBackBytesArrivingWithAMarkerStayOnTheirSide) {
    ReasoningSplitter splitter(kMarkers, /*prompt_opened_reasoning=*/true);
    SplitText out;
    splitter.feed(11, "", out);                     // half of "é": held back by the detokenizer
    splitter.feed(4, "\xEF\xBF\xBD</think>", out);  // the marker proves it unfinished: U+FFFD, then the marker
    splitter.feed(6, "Paris", out);
    EXPECT_EQ(out.reasoning, "\xEF\xBF\xBD");
    EXPECT_EQ(out.content, "Paris");
}

// The texts of `tokens` re-cut at random: a token's bytes may be held back and emitted with a later token
// (as a detokenizer does with an unfinished character), but never past a marker, which flushes them.
std::vector<std::string> random_deltas(const std::vector<int32_t>& tokens, std::mt19937& random) {
    std::vector<std::string> deltas(tokens.size());
    std::string held;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& text = kToyVocabulary.at(tokens[i]);
        const bool marker = tokens[i] == kThink || tokens[i] == kEndThink;
        const size_t keep = marker || text.empty() ? text.size() : random() % (text.size() + 1);
        deltas[i] = held + text.substr(0, keep);
        held = text.substr(keep);
        if (marker) held.clear();
    }
    deltas.back() += held;  // what the final flush would give
    return deltas;
}

TEST(ReasoningSplit, WholeEqualsAnyCutIntoDeltas) {
    std::mt19937 random(13);
    const std::vector<std::vector<int32_t>> outputs = {
        {3, 8, 11, 12, 5, 4, 5, 6, 7}, {8, 9, 10, 1, 2, 4, 6, 11, 12, 7}, {1, 2, 5, 6}, {3, 1, 11, 12, 2}};
    for (const auto& tokens : outputs) {
        for (bool prompt_opened : {false, true}) {
            const SplitText whole = split_per_token(tokens, prompt_opened);
            for (int trial = 0; trial < 50; ++trial) {
                const std::vector<std::string> deltas = random_deltas(tokens, random);
                ReasoningSplitter splitter(kMarkers, prompt_opened);
                SplitText streamed;
                for (size_t i = 0; i < tokens.size(); ++i) {
                    SplitText step;
                    splitter.feed(tokens[i], deltas[i], step);
                    streamed.append(step);
                }
                splitter.finish("", streamed);
                EXPECT_EQ(streamed.reasoning, whole.reasoning);
                EXPECT_EQ(streamed.content, whole.content);
            }
        }
    }
}

TEST(ReasoningSplit, PromptOpensReasoningWhenItsLastMarkerOpens) {
    EXPECT_TRUE(prompt_opens_reasoning(kMarkers, {1, 2, 3, 5}));
    EXPECT_FALSE(prompt_opens_reasoning(kMarkers, {1, 3, 5, 5, 4, 5}));  // Qwen3, enable_thinking=false
    EXPECT_FALSE(prompt_opens_reasoning(kMarkers, {1, 2, 5}));
    EXPECT_FALSE(prompt_opens_reasoning(kMarkers, {}));
}

TEST(ReasoningParserChoice, DefaultComesFromTheTemplate) {
    EXPECT_EQ(detect_parser("{{ content.split('</think>')[-1] }}"), ReasoningParserKind::DeepSeekR1);
    EXPECT_EQ(detect_parser("{{'<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n'}}"),
              ReasoningParserKind::DeepSeekR1);
    EXPECT_EQ(detect_parser("{{'<|im_start|>assistant\\n'}}"), std::nullopt);
    EXPECT_EQ(parser_name(ReasoningParserKind::DeepSeekR1), "deepseek_r1");
    EXPECT_EQ(parser_from_name("deepseek_r1"), ReasoningParserKind::DeepSeekR1);
    EXPECT_EQ(parser_from_name("qwen3"), std::nullopt);
}

TEST(ReasoningParserChoice, ThinkTokensNeedBothMarkers) {
    auto lookup = [](std::string_view text) -> std::optional<int32_t> {
        if (text == "<think>") return 7;
        if (text == "</think>") return 9;
        return std::nullopt;
    };
    const std::optional<ThinkTokens> found = ThinkTokens::find(lookup);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->start, 7);
    EXPECT_EQ(found->end, 9);
    EXPECT_FALSE(ThinkTokens::find([](std::string_view text) -> std::optional<int32_t> {
        if (text == "<think>") return 7;
        return std::nullopt;
    }));
}

// The tiny R1-template models (scripts/fixtures/make_tiny_models.py): the real DeepSeek-R1-Distill-Qwen
// vocabulary and template; their random weights do not matter here.
class R1Vocabulary : public ::testing::Test {
protected:
    void load(const std::string& name) {
        testing::TinyR1Model model;
        testing::load_tiny_r1_model(name, model);
        file_ = std::move(model.file);
        tokenizer_ = std::move(model.tokenizer);
        chat_template_ = model.chat_template;
    }

    std::vector<int32_t> prompt_tokens() const {
        ChatTemplateInputs inputs;
        inputs.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Capital of France?"}}});
        inputs.bos_token = "<｜begin▁of▁sentence｜>";
        auto rendered = apply_chat_template(chat_template_, inputs);
        EXPECT_TRUE(rendered.ok());
        last_prompt_ = rendered.ok() ? rendered.value() : "";
        return tokenizer_->encode_chat(last_prompt_);
    }

    ThinkTokens markers() const {
        auto found = ThinkTokens::find([this](std::string_view text) { return tokenizer_->find_token(text); });
        EXPECT_TRUE(found);
        return found.value_or(ThinkTokens{});
    }

    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string chat_template_;
    mutable std::string last_prompt_;
};

TEST_F(R1Vocabulary, RevisedTemplateOpensThinkInThePrompt) {
    load("tiny-r1-qwen2.gguf");
    if (!tokenizer_) return;
    EXPECT_EQ(detect_parser(chat_template_), ReasoningParserKind::DeepSeekR1);
    const ThinkTokens found = markers();
    EXPECT_EQ(found.start, 151648);
    EXPECT_EQ(found.end, 151649);
    const std::vector<int32_t> prompt = prompt_tokens();
    EXPECT_TRUE(last_prompt_.ends_with("<｜Assistant｜><think>\n")) << last_prompt_;
    EXPECT_TRUE(prompt_opens_reasoning(found, prompt));
}

TEST_F(R1Vocabulary, OriginalTemplateLeavesThinkToTheModel) {
    load("tiny-r1-qwen2-original-template.gguf");
    if (!tokenizer_) return;
    EXPECT_EQ(detect_parser(chat_template_), ReasoningParserKind::DeepSeekR1);
    const std::vector<int32_t> prompt = prompt_tokens();
    EXPECT_TRUE(last_prompt_.ends_with("<｜Assistant｜>")) << last_prompt_;
    EXPECT_FALSE(prompt_opens_reasoning(markers(), prompt));
}

// An answer as the model would write it, tokenized by the real vocabulary and streamed through the real
// detokenizer: the split falls on the marker ids, the multi-byte text survives either side.
TEST_F(R1Vocabulary, StreamedThroughTheDetokenizer) {
    load("tiny-r1-qwen2-original-template.gguf");
    if (!tokenizer_) return;
    const std::string answer = "<think>\nLa capitale? Évidemment 巴黎.\n</think>\n\nParis — 巴黎.";
    const std::vector<int32_t> tokens = tokenizer_->encode(answer, false, /*parse_special=*/true);
    ReasoningSplitter splitter(markers(), /*prompt_opened_reasoning=*/false);
    StreamingDetokenizer detokenizer(*tokenizer_);
    SplitText out;
    for (int32_t token : tokens) splitter.feed(token, detokenizer.push(token), out);
    splitter.finish(detokenizer.flush(), out);
    EXPECT_EQ(out.reasoning, "\nLa capitale? Évidemment 巴黎.\n");
    EXPECT_EQ(out.content, "\n\nParis — 巴黎.");
    EXPECT_FALSE(splitter.in_reasoning());
}

}  // namespace reasoning_parser_test
}  // namespace
}  // namespace tempered::reasoning
