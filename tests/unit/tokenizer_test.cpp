// Tokenizer pieces on their own, without a model file: UTF-8 decoding and character classes, GPT-2 byte
// spelling, pre-tokenizer splits, BPE and SentencePiece merging on tiny hand-made vocabularies,
// special-token splitting, end-of-generation detection and the streaming detokenizer.
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/byte_encoding.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace tempered {
namespace {
namespace tokenizer_test {

using Ids = std::vector<int32_t>;

std::vector<std::string> split_words(std::string_view pre_name, std::string_view text) {
    auto pre = PreTokenizer::from_name(pre_name);
    EXPECT_TRUE(pre.ok());
    const auto code_points = utf8_to_code_points(text);
    std::vector<std::string> words;
    size_t begin = 0;
    for (const size_t length : pre->split(code_points)) {
        std::string word;
        for (size_t i = begin; i < begin + length; ++i) utf8_append(word, code_points[i]);
        words.push_back(word);
        begin += length;
    }
    return words;
}

using Words = std::vector<std::string>;

TEST(TokenizerUnicode, DecodesLikeLlamaCpp) {
    EXPECT_EQ(utf8_to_code_points("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
              (std::vector<uint32_t>{'a', 0xE9, 0x20AC, 0x1F600}));
    // Each bad byte is one U+FFFD and decoding goes on at the next byte.
    EXPECT_EQ(utf8_to_code_points("\xFF"
                                  "a\x80"),
              (std::vector<uint32_t>{0xFFFD, 'a', 0xFFFD}));
    EXPECT_EQ(utf8_to_code_points("\xE2\x82"
                                  "a"),
              (std::vector<uint32_t>{0xFFFD, 0xFFFD, 'a'}));
    EXPECT_EQ(utf8_to_code_points("\xC3"), (std::vector<uint32_t>{0xFFFD}));
    // Lead bytes are trusted: overlong forms and surrogates decode to their value ...
    EXPECT_EQ(utf8_to_code_points(std::string_view("\xC0\x80", 2)), (std::vector<uint32_t>{0}));
    EXPECT_EQ(utf8_to_code_points("\xED\xA0\x80"), (std::vector<uint32_t>{0xD800}));
    // ... but nothing above U+10FFFF survives (llama.cpp aborts there).
    EXPECT_EQ(utf8_to_code_points("\xF4\x90\x80\x80"), (std::vector<uint32_t>{0xFFFD}));
}

TEST(TokenizerUnicode, ClassesFollowUnicode15_1) {
    EXPECT_EQ(unicode_class('A'), UnicodeClass::kLetter);
    EXPECT_EQ(unicode_class('7'), UnicodeClass::kNumber);
    EXPECT_EQ(unicode_class(0x0663), UnicodeClass::kNumber);  // ARABIC-INDIC DIGIT THREE
    EXPECT_EQ(unicode_class(0x00BD), UnicodeClass::kNumber);  // VULGAR FRACTION ONE HALF
    EXPECT_EQ(unicode_class(0x4E2D), UnicodeClass::kLetter);  // 中
    EXPECT_EQ(unicode_class(0x0301), UnicodeClass::kMark);    // COMBINING ACUTE ACCENT
    EXPECT_EQ(unicode_class('!'), UnicodeClass::kPunctuation);
    EXPECT_EQ(unicode_class('$'), UnicodeClass::kSymbol);
    EXPECT_EQ(unicode_class(0x1F600), UnicodeClass::kSymbol);
    EXPECT_EQ(unicode_class(0x00A0), UnicodeClass::kSeparator);
    EXPECT_EQ(unicode_class(0x200B), UnicodeClass::kControl);  // ZERO WIDTH SPACE is Cf
    EXPECT_EQ(unicode_class(0x0378), UnicodeClass::kUnassigned);
    EXPECT_EQ(unicode_class(0x2FFC), UnicodeClass::kSymbol);      // new in Unicode 15.1
    EXPECT_EQ(unicode_class(0x0897), UnicodeClass::kUnassigned);  // assigned only in Unicode 16
    EXPECT_TRUE(unicode_is_whitespace(' '));
    EXPECT_TRUE(unicode_is_whitespace(0x00A0));
    EXPECT_TRUE(unicode_is_whitespace(0x3000));
    EXPECT_TRUE(unicode_is_whitespace(0x0085));
    EXPECT_FALSE(unicode_is_whitespace(0x200B));
}

TEST(TokenizerByteEncoding, SpellsBytesAsGpt2Does) {
    EXPECT_EQ(byte_to_gpt2_char(' '), "\xC4\xA0");   // Ġ
    EXPECT_EQ(byte_to_gpt2_char('\n'), "\xC4\x8A");  // Ċ
    EXPECT_EQ(byte_to_gpt2_char('a'), "a");
    EXPECT_EQ(byte_to_gpt2_char(0xAD), "\xC5\x83");  // the last of the 68 remapped bytes
    for (int byte = 0; byte < 256; ++byte) {
        const auto code_points = utf8_to_code_points(byte_to_gpt2_char(static_cast<uint8_t>(byte)));
        ASSERT_EQ(code_points.size(), 1u);
        EXPECT_EQ(gpt2_char_to_byte(code_points[0]), static_cast<uint8_t>(byte));
    }
    EXPECT_FALSE(gpt2_char_to_byte(0x4E2D).has_value());
}

TEST(TokenizerPreTokenizer, Gpt2) {
    EXPECT_EQ(split_words("gpt-2", "Hello world's  123 !!x\n\n y"),
              (Words{"Hello", " world", "'s", " ", " 123", " !!", "x", "\n\n", " y"}));
    EXPECT_EQ(split_words("gpt-2", "IT'S"), (Words{"IT", "'", "S"}));  // contractions are case-sensitive
    EXPECT_EQ(split_words("gpt-2", "\xC3\xA9t\xC3\xA9 \xD9\xA3\xD9\xA4"),
              (Words{"\xC3\xA9t\xC3\xA9", " \xD9\xA3\xD9\xA4"}));
    EXPECT_EQ(split_words("gpt-2",
                          "a\xC2\xA0"
                          "b"),
              (Words{"a", "\xC2\xA0", "b"}));  // NBSP is \s
    EXPECT_EQ(split_words("gpt-2", "trailing  "), (Words{"trailing", "  "}));
}

TEST(TokenizerPreTokenizer, SmollmIsolatesDigits) {
    EXPECT_EQ(split_words("smollm", "abc 123"), (Words{"abc", " ", "1", "2", "3"}));
    EXPECT_EQ(split_words("smollm", "x\xD9\xA3y"), (Words{"x", "\xD9\xA3", "y"}));
}

TEST(TokenizerPreTokenizer, Llama3AndQwen2) {
    const std::string text = "Hello  world\n\n  x 12345 ??\n";
    EXPECT_EQ(split_words("llama-bpe", text),
              (Words{"Hello", " ", " world", "\n\n", " ", " x", " ", "123", "45", " ??\n"}));
    EXPECT_EQ(split_words("qwen2", text),
              (Words{"Hello", " ", " world", "\n\n", " ", " x", " ", "1", "2", "3", "4", "5", " ??\n"}));
    EXPECT_EQ(split_words("llama3", "IT'S"), (Words{"IT", "'S"}));  // contractions in any case
}

// GPT-4o / o200k (gpt-oss): cased words, digit triples, punctuation runs taking trailing newlines and slashes.
// The expected splits are Python `regex`'s findall with o200k's original pattern (on ASCII, llama.cpp's form of
// it is the same); tests/unit/model_gpt_oss_oracle_test.cpp holds whole tokenizations to llama.cpp's.
TEST(TokenizerPreTokenizer, Gpt4o) {
    EXPECT_EQ(split_words("gpt-4o", "Hello  world\n\n  x 12345 ??\n"),
              (Words{"Hello", " ", " world", "\n\n", " ", " x", " ", "123", "45", " ??\n"}));
    EXPECT_EQ(split_words("gpt-4o", "HTTPServer getURL I'M you'LL"),
              (Words{"HTTPServer", " get", "URL", " I'M", " you'LL"}));
    EXPECT_EQ(split_words("gpt-4o", "(foo) a/b c//\n/d"), (Words{"(foo", ")", " a", "/b", " c", "//\n/", "d"}));
    EXPECT_EQ(split_words("gpt-4o", "don't WON'T"), (Words{"don't", " WON'T"}));
    EXPECT_EQ(split_words("gpt-4o", "x\t\tyz  "), (Words{"x", "\t", "\tyz", "  "}));
    EXPECT_EQ(split_words("gpt-4o", "CamelCase ABCdef aBC"), (Words{"Camel", "Case", " ABCdef", " a", "BC"}));
}

TEST(TokenizerPreTokenizer, DefaultSplitsPunctuationAndDigitTriples) {
    EXPECT_EQ(split_words("default", "a+b=12345"), (Words{"a", "+", "b", "=", "123", "45"}));
}

TEST(TokenizerPreTokenizer, UnknownNameIsAnError) {
    auto pre = PreTokenizer::from_name("no-such-pre-tokenizer");
    ASSERT_FALSE(pre.ok());
    EXPECT_NE(pre.error().message.find("no-such-pre-tokenizer"), std::string::npos);
}

// A byte-level BPE vocabulary: the 256 byte characters, then `extra` tokens.
VocabSpec bpe_spec(std::vector<std::string> extra, std::vector<std::string> merges) {
    VocabSpec spec;
    spec.model = TokenizerModel::kBytePairGpt2;
    spec.pre_tokenizer = "gpt-2";
    for (int byte = 0; byte < 256; ++byte) spec.tokens.push_back(byte_to_gpt2_char(static_cast<uint8_t>(byte)));
    for (auto& token : extra) spec.tokens.push_back(std::move(token));
    spec.merges = std::move(merges);
    return spec;
}

Tokenizer make(const VocabSpec& spec) {
    auto tokenizer = Tokenizer::from_spec(spec);
    EXPECT_TRUE(tokenizer.ok()) << (tokenizer.ok() ? "" : tokenizer.error().message);
    return std::move(*tokenizer);
}

TEST(TokenizerBpe, LowestRankMergesFirst) {
    // ids: 256 "ab", 257 "bc", 258 "abc"
    const Tokenizer left_first = make(bpe_spec({"ab", "bc", "abc"}, {"a b", "b c", "ab c"}));
    EXPECT_EQ(left_first.encode("abc", false, false), (Ids{258}));
    const Tokenizer right_first = make(bpe_spec({"ab", "bc", "abc"}, {"b c", "a b", "ab c"}));
    EXPECT_EQ(right_first.encode("abc", false, false), (Ids{'a', 257}));
    EXPECT_EQ(right_first.encode("abcab", false, false), (Ids{'a', 257, 256}));
    EXPECT_EQ(right_first.decode(Ids{'a', 257, 256}), "abcab");
}

TEST(TokenizerBpe, SpacesAreSpelledAndKept) {
    // "Ġb" = " b"
    const Tokenizer tokenizer = make(bpe_spec({"\xC4\xA0"
                                               "b"},
                                              {"\xC4\xA0 b"}));
    EXPECT_EQ(tokenizer.encode("a b", false, false), (Ids{'a', 256}));
    EXPECT_EQ(tokenizer.token_bytes(256), " b");
    EXPECT_EQ(tokenizer.token_text(256),
              "\xC4\xA0"
              "b");
    EXPECT_EQ(tokenizer.find_token("\xC4\xA0"
                                   "b"),
              256);
}

TEST(TokenizerBpe, InvalidUtf8BecomesReplacementCharacter) {
    const Tokenizer tokenizer = make(bpe_spec({}, {}));
    // U+FFFD is EF BF BD, each spelled as its own byte token when there is no merge.
    EXPECT_EQ(tokenizer.encode("a\xFF", false, false), (Ids{'a', 0xEF, 0xBF, 0xBD}));
}

TEST(TokenizerSpecialTokens, LongestClaimsFirstThenLeftToRight) {
    VocabSpec spec = bpe_spec({"ab", "bcd", "<|x|>", "@@"}, {});
    spec.token_types.assign(spec.tokens.size(), static_cast<int32_t>(GgufTokenType::kNormal));
    spec.token_types[256] = static_cast<int32_t>(GgufTokenType::kControl);      // "ab"
    spec.token_types[257] = static_cast<int32_t>(GgufTokenType::kControl);      // "bcd"
    spec.token_types[258] = static_cast<int32_t>(GgufTokenType::kControl);      // "<|x|>"
    spec.token_types[259] = static_cast<int32_t>(GgufTokenType::kUserDefined);  // "@@"
    const Tokenizer tokenizer = make(spec);
    // "bcd" is longer, so it claims its text although "ab" starts earlier.
    EXPECT_EQ(tokenizer.encode("abcd", false, true), (Ids{'a', 257}));
    EXPECT_EQ(tokenizer.encode("abab", false, true), (Ids{256, 256}));
    EXPECT_EQ(tokenizer.encode("x<|x|>y<|x|>", false, true), (Ids{'x', 258, 'y', 258}));
    // Without parse_special control tokens are text, user-defined ones still match.
    EXPECT_EQ(tokenizer.encode("<|x|>@@", false, false), (Ids{'<', '|', 'x', '|', '>', 259}));
    EXPECT_EQ(tokenizer.decode(Ids{258, 'a', 259}), "<|x|>a@@");
    EXPECT_EQ(tokenizer.decode(Ids{258, 'a', 259}, /*skip_special=*/true), "a@@");
}

TEST(TokenizerSpecialTokens, EndOfGenerationDetectedByText) {
    VocabSpec spec = bpe_spec({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, {});
    spec.eos_id = 256;
    const Tokenizer tokenizer = make(spec);
    EXPECT_TRUE(tokenizer.is_end_of_generation(256));
    EXPECT_FALSE(tokenizer.is_end_of_generation(257));
    EXPECT_TRUE(tokenizer.is_end_of_generation(258));
    // Typed as normal in the file, the end tokens become control tokens, as in llama.cpp.
    EXPECT_TRUE(tokenizer.is_control(258));
    EXPECT_FALSE(tokenizer.is_control(257));
    EXPECT_EQ(tokenizer.encode("<|im_end|>", false, true), (Ids{258}));
}

TEST(TokenizerSpecialTokens, EncodeChatAddsBosUnlessTheTemplateWroteIt) {
    VocabSpec spec = bpe_spec({"<s>", "<|im_start|>"}, {});
    spec.token_types.assign(spec.tokens.size(), static_cast<int32_t>(GgufTokenType::kNormal));
    spec.token_types[256] = spec.token_types[257] = static_cast<int32_t>(GgufTokenType::kControl);
    spec.bos_id = 256;
    spec.add_bos = true;
    const Tokenizer tokenizer = make(spec);
    EXPECT_EQ(tokenizer.encode_chat("<|im_start|>a"), (Ids{256, 257, 'a'}));
    EXPECT_EQ(tokenizer.encode_chat("<s><|im_start|>a"), (Ids{256, 257, 'a'}));  // not two BOS
    spec.add_bos = false;
    EXPECT_EQ(make(spec).encode_chat("<|im_start|>a"), (Ids{257, 'a'}));
}

TEST(TokenizerBpe, CleansUpSpacesWhereThePreTokenizerSaysSo) {
    const Tokenizer tokenizer = make(bpe_spec({}, {}));  // "gpt-2" cleans up, as in llama.cpp
    const std::string text = "a , b . c ' d 's e 're f 'll";
    Ids ids;
    for (const char c : text) ids.push_back(*tokenizer.find_token(byte_to_gpt2_char(static_cast<uint8_t>(c))));
    EXPECT_EQ(tokenizer.decode(ids), "a, b. c'd's e're f 'll");
    auto spec = bpe_spec({}, {});
    spec.pre_tokenizer = "smollm";  // does not
    EXPECT_EQ(make(spec).decode(ids), text);
}

TEST(TokenizerBpe, AddsBosAndEosWhenAsked) {
    VocabSpec spec = bpe_spec({"<s>", "</s>"}, {});
    spec.bos_id = 256;
    spec.eos_id = 257;
    spec.add_bos = true;
    spec.add_eos = true;
    const Tokenizer tokenizer = make(spec);
    EXPECT_EQ(tokenizer.encode("a", true, false), (Ids{256, 'a', 257}));
    EXPECT_EQ(tokenizer.encode("a", false, false), (Ids{'a'}));
    EXPECT_EQ(tokenizer.encode("", true, false), (Ids{256, 257}));
}

TEST(TokenizerBpe, RejectsBadSpecs) {
    EXPECT_FALSE(Tokenizer::from_spec(VocabSpec{}).ok());
    VocabSpec spec = bpe_spec({}, {});
    spec.scores = {1.0f};
    EXPECT_FALSE(Tokenizer::from_spec(spec).ok());
    spec = bpe_spec({}, {});
    spec.pre_tokenizer = "unheard-of";
    EXPECT_FALSE(Tokenizer::from_spec(spec).ok());
}

// A SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, then (text, score) pairs from id 259.
VocabSpec spm_spec(std::vector<std::pair<std::string, float>> pieces) {
    VocabSpec spec;
    spec.model = TokenizerModel::kSentencePiece;
    const auto add = [&](std::string text, float score, GgufTokenType type) {
        spec.tokens.push_back(std::move(text));
        spec.scores.push_back(score);
        spec.token_types.push_back(static_cast<int32_t>(type));
    };
    add("<unk>", 0, GgufTokenType::kUnknown);
    add("<s>", 0, GgufTokenType::kControl);
    add("</s>", 0, GgufTokenType::kControl);
    for (int byte = 0; byte < 256; ++byte) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", byte);
        add(hex, 0, GgufTokenType::kByte);
    }
    for (auto& [text, score] : pieces) add(text, score, GgufTokenType::kNormal);
    return spec;
}

constexpr int32_t kByte0 = 3;  // id of <0x00>
constexpr int32_t kPiece0 = 259;

TEST(TokenizerSentencePiece, HighestScoreMergesFirst) {
    // 259 ▁  260 a  261 b  262 c  263 ▁a  264 ab  265 bc  266 abc
    auto spec = spm_spec({{"\xE2\x96\x81", -1},
                          {"a", -2},
                          {"b", -2},
                          {"c", -2},
                          {"\xE2\x96\x81"
                           "a",
                           -1.5f},
                          {"ab", -0.5f},
                          {"bc", -0.3f},
                          {"abc", -0.1f}});
    spec.add_space_prefix = false;
    const Tokenizer tokenizer = make(spec);
    EXPECT_EQ(tokenizer.encode("abc", false, false), (Ids{266}));  // bc first, then a+bc
    EXPECT_EQ(tokenizer.encode("ab c", false, false), (Ids{264, 259, 262}));
    // Adds BOS by default; unknown characters fall back to their bytes.
    EXPECT_EQ(tokenizer.encode("\xC3\xA9", true, false), (Ids{1, kByte0 + 0xC3, kByte0 + 0xA9}));
    EXPECT_EQ(tokenizer.decode(Ids{1, kByte0 + 0xC3, kByte0 + 0xA9, 264}),
              "<s>\xC3\xA9"
              "ab");
    EXPECT_EQ(tokenizer.decode(Ids{1, kByte0 + 0xC3, kByte0 + 0xA9, 264}, true),
              "\xC3\xA9"
              "ab");
}

TEST(TokenizerSentencePiece, SpacePrefixAtStartAndAfterSpecialTokens) {
    auto spec = spm_spec({{"\xE2\x96\x81", -1},
                          {"a", -2},
                          {"\xE2\x96\x81"
                           "a",
                           -1.5f}});
    const Tokenizer tokenizer = make(spec);  // add_space_prefix defaults to true for SentencePiece
    EXPECT_EQ(tokenizer.encode("a", false, false), (Ids{kPiece0 + 2}));
    EXPECT_EQ(tokenizer.encode("a<s>a", false, true), (Ids{kPiece0 + 2, 1, kPiece0 + 2}));
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("a a", false, false)), "a a");  // the prefix space is removed
}

TEST(TokenizerStreaming, HoldsBackSplitCharacters) {
    const Tokenizer tokenizer = make(spm_spec({{"a", -1}}));
    StreamingDetokenizer stream(tokenizer);
    // € is E2 82 AC, one byte token each.
    EXPECT_EQ(stream.push(kByte0 + 0xE2), "");
    EXPECT_EQ(stream.push(kByte0 + 0x82), "");
    EXPECT_EQ(stream.pending_bytes(), 2u);
    EXPECT_EQ(stream.push(kByte0 + 0xAC), "\xE2\x82\xAC");
    // 😀 F0 9F 98 80 split 1 + 3 around nothing else.
    EXPECT_EQ(stream.push(kByte0 + 0xF0), "");
    EXPECT_EQ(stream.push(kByte0 + 0x9F), "");
    EXPECT_EQ(stream.push(kByte0 + 0x98), "");
    EXPECT_EQ(stream.push(kByte0 + 0x80), "\xF0\x9F\x98\x80");
    EXPECT_EQ(stream.flush(), "");
}

TEST(TokenizerStreaming, InvalidBytesBecomeReplacementCharacters) {
    const Tokenizer tokenizer = make(spm_spec({{"a", -1}}));
    StreamingDetokenizer stream(tokenizer);
    EXPECT_EQ(stream.push(kByte0 + 0xFF), "\xEF\xBF\xBD");  // can never start a character
    EXPECT_EQ(stream.push(kByte0 + 0xE2), "");
    EXPECT_EQ(stream.push(kPiece0),
              "\xEF\xBF\xBD"
              "a");  // an interrupted character
    EXPECT_EQ(stream.push(kByte0 + 0xF0), "");
    EXPECT_EQ(stream.push(kByte0 + 0x9F), "");
    EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");  // cut off at the end
    EXPECT_EQ(stream.pending_bytes(), 0u);
    EXPECT_EQ(stream.push(1), "<s>");
    StreamingDetokenizer skipping(tokenizer, /*skip_special=*/true);
    EXPECT_EQ(skipping.push(1), "");
}

TEST(TokenizerStreaming, ValidatesStrictly) {
    std::string out;
    // Surrogates, overlong forms and code points above U+10FFFF are replaced per maximal subpart.
    EXPECT_EQ(append_valid_utf8("\xED\xA0\x80", true, out), 3u);
    EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    out.clear();
    EXPECT_EQ(append_valid_utf8("\xC0\xAF"
                                "x",
                                true, out),
              3u);
    EXPECT_EQ(out,
              "\xEF\xBF\xBD\xEF\xBF\xBD"
              "x");
    out.clear();
    EXPECT_EQ(append_valid_utf8("\xF4\x90\x80\x80", true, out), 4u);
    EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    out.clear();
    EXPECT_EQ(append_valid_utf8("ab\xF0\x9F\x98", false, out), 2u);  // the incomplete tail waits
    EXPECT_EQ(out, "ab");
}

TEST(TokenizerStreaming, RandomBytesAlwaysComeOutValid) {
    std::mt19937 rng(7);
    for (int round = 0; round < 2000; ++round) {
        std::string bytes(rng() % 24, '\0');
        for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 128 : 0x80 + rng() % 128);
        std::string out;
        ASSERT_EQ(append_valid_utf8(bytes, true, out), bytes.size());
        std::string again;
        append_valid_utf8(out, true, again);
        EXPECT_EQ(again, out);  // what came out is valid UTF-8
        // Fed one byte at a time, the stream gives the same text.
        std::string streamed;
        std::string pending;
        for (const char c : bytes) {
            pending.push_back(c);
            pending.erase(0, append_valid_utf8(pending, false, streamed));
        }
        append_valid_utf8(pending, true, streamed);
        EXPECT_EQ(streamed, out);
    }
}

}  // namespace tokenizer_test
}  // namespace
}  // namespace tempered
