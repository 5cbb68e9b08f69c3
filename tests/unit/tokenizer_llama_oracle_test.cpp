// The tokenizer against llama.cpp on real vocabularies: ids, pieces, detokenized text and the
// end-of-generation set must equal what llama-cpp-python gave for the corpus in
// tests/fixtures/tokenizer (scripts/fixtures/make_tokenizer_fixtures.py; Qwen2.5's from llama-server by
// scripts/fixtures/make_qwen2_tokenizer_fixtures.py, which cannot send invalid UTF-8, cannot detokenize
// without special tokens and gives no eog/control lists or piece hashes, so those checks are left out
// where the fixture lacks them). Also checks
// decode(encode(x)) == x and streaming detokenization on every line, and reports encode speed.
// Skipped when a model is absent, unless TEMPERED_REQUIRE_MODELS=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "formats/gguf.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

#include "model_test_support.h"

namespace tempered {
namespace {
namespace tokenizer_llama_oracle_test {

const std::string kFixtureDir = std::string(TEMPERED_SOURCE_DIR) + "/tests/fixtures/tokenizer/";

std::string model_dir() { return testing::model_dir().string(); }
using testing::models_required;

std::string from_hex(const std::string& hex) {
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return bytes;
}

// {"text": s} or {"hex": h}
std::string bytes_of(const nlohmann::json& entry) {
    return entry.contains("hex") ? from_hex(entry["hex"].get<std::string>()) : entry["text"].get<std::string>();
}

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
    std::ifstream in(path);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
    return rows;
}

std::string fnv1a64(const Tokenizer& tokenizer, bool skip_special) {
    uint64_t hash = 0xCBF29CE484222325ull;
    const auto mix = [&](uint8_t byte) { hash = (hash ^ byte) * 0x100000001B3ull; };
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        const std::string_view piece = tokenizer.token_piece(id, skip_special);
        const auto length = static_cast<uint32_t>(piece.size());
        for (int shift = 0; shift < 32; shift += 8) mix(static_cast<uint8_t>(length >> shift));
        for (const char c : piece) mix(static_cast<uint8_t>(c));
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

std::string show_ids(const std::vector<int32_t>& ids) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < ids.size(); ++i) out << (i ? "," : "") << ids[i];
    return out.str() + "]";
}

// The text as a JSON string literal, invalid bytes replaced, for failure messages.
std::string escaped(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

bool is_valid_utf8(std::string_view bytes) {
    std::string out;
    return append_valid_utf8(bytes, true, out) == bytes.size() && out == bytes;
}

class TokenizerOracle : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        rows_ = read_jsonl(kFixtureDir + GetParam() + ".jsonl");
        ASSERT_FALSE(rows_.empty());
        header_ = rows_.front();
        rows_.erase(rows_.begin());
        for (const auto& entry : read_jsonl(kFixtureDir + "corpus.jsonl")) corpus_.push_back(entry);
        ASSERT_EQ(rows_.size(), corpus_.size());

        const std::string path = model_dir() + "/" + header_["model"].get<std::string>();
        if (!std::filesystem::exists(path)) {
            if (models_required()) FAIL() << "model missing and TEMPERED_REQUIRE_MODELS=1: " << path;
            GTEST_SKIP() << "model not present: " << path;
        }
        // Loaded once per model for the whole suite (Gemma's 262k-token vocabulary takes a while).
        static std::map<std::string, std::shared_ptr<const Tokenizer>> loaded;
        auto& tokenizer = loaded[path];
        if (!tokenizer) {
            const std::clock_t start = std::clock();
            auto file = GgufFile::open(path);
            ASSERT_TRUE(file.ok()) << file.error().message;
            auto built = Tokenizer::from_gguf(*file);
            ASSERT_TRUE(built.ok()) << built.error().message;
            tokenizer = std::make_shared<const Tokenizer>(std::move(*built));
            std::cout << "[ tokenizer ] " << GetParam() << ": loaded in "
                      << 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC << " ms CPU\n";
        }
        tokenizer_ = tokenizer;
    }

    nlohmann::json header_;
    std::vector<nlohmann::json> rows_;
    std::vector<nlohmann::json> corpus_;
    std::shared_ptr<const Tokenizer> tokenizer_;
};

TEST_P(TokenizerOracle, VocabularyMatches) {
    const Tokenizer& t = *tokenizer_;
    EXPECT_EQ(t.vocab_size(), header_["vocab_size"].get<int32_t>());
    EXPECT_EQ(t.bos_id().value_or(-1), header_["bos"].get<int32_t>());
    EXPECT_EQ(t.eos_id().value_or(-1), header_["eos"].get<int32_t>());
    EXPECT_EQ(t.adds_bos(), header_["add_bos"].get<bool>());
    EXPECT_EQ(t.adds_eos(), header_["add_eos"].get<bool>());
    if (!header_.contains("eog")) return;  // a llama-server fixture (qwen2): no vocabulary API to list these
    std::vector<int32_t> eog, control;
    for (int32_t id = 0; id < t.vocab_size(); ++id) {
        if (t.is_end_of_generation(id)) eog.push_back(id);
        if (t.is_control(id)) control.push_back(id);
    }
    EXPECT_EQ(eog, header_["eog"].get<std::vector<int32_t>>());
    EXPECT_EQ(control, header_["control"].get<std::vector<int32_t>>());
    EXPECT_EQ(fnv1a64(t, false), header_["pieces_fnv1a64"].get<std::string>());
    EXPECT_EQ(fnv1a64(t, true), header_["pieces_plain_fnv1a64"].get<std::string>());
}

TEST_P(TokenizerOracle, EncodeMatchesLlamaCpp) {
    const Tokenizer& t = *tokenizer_;
    size_t compared = 0, mismatches = 0;
    const auto check = [&](const std::string& text, bool add_special, bool parse_special,
                           const nlohmann::json& expected_json) {
        const auto expected = expected_json.get<std::vector<int32_t>>();
        const auto actual = t.encode(text, add_special, parse_special);
        ++compared;
        if (actual == expected) return;
        if (++mismatches <= 10) {
            ADD_FAILURE() << GetParam() << " add_special=" << add_special << " parse_special=" << parse_special
                          << "\n  text:     " << escaped(text) << "\n  expected: " << show_ids(expected)
                          << "\n  actual:   " << show_ids(actual);
        }
    };
    for (size_t i = 0; i < rows_.size(); ++i) {
        const std::string text = bytes_of(corpus_[i]);
        const auto& row = rows_[i];
        if (row.contains("unsent")) continue;  // invalid UTF-8 that llama-server could not be sent
        check(text, false, true, row["special"]);
        check(text, false, false, row.contains("plain") ? row["plain"] : row["special"]);
        if (row.contains("bos")) check(text, true, true, row["bos"]);
    }
    EXPECT_EQ(mismatches, 0u) << compared << " encodings compared";
    std::cout << "[ tokenizer ] " << GetParam() << ": " << rows_.size() << " lines, " << compared
              << " encodings compared, " << mismatches << " mismatches\n";
}

TEST_P(TokenizerOracle, DecodeMatchesLlamaCpp) {
    const Tokenizer& t = *tokenizer_;
    size_t compared = 0;
    for (size_t i = 0; i < rows_.size(); ++i) {
        const auto& row = rows_[i];
        if (!row.contains("detok")) continue;
        const auto ids = row["special"].get<std::vector<int32_t>>();
        EXPECT_EQ(t.decode(ids, false), bytes_of(row["detok"]["keep"])) << escaped(bytes_of(corpus_[i]));
        if (row["detok"].contains("skip")) {  // llama-server only detokenizes with special tokens kept
            EXPECT_EQ(t.decode(ids, true), bytes_of(row["detok"]["skip"])) << escaped(bytes_of(corpus_[i]));
        }
        ++compared;
    }
    EXPECT_GT(compared, 400u);
}

TEST_P(TokenizerOracle, DecodeInvertsEncode) {
    const Tokenizer& t = *tokenizer_;
    size_t compared = 0;
    for (const auto& entry : corpus_) {
        if (entry.contains("hex")) continue;  // invalid UTF-8 does not survive byte-level BPE
        const std::string text = entry["text"].get<std::string>();
        EXPECT_EQ(t.decode(t.encode(text, false, true)), text);
        EXPECT_EQ(t.decode(t.encode(text, false, false)), text);
        ++compared;
    }
    EXPECT_GT(compared, 2000u);
}

TEST_P(TokenizerOracle, StreamingDetokenizerYieldsWholeCharacters) {
    const Tokenizer& t = *tokenizer_;
    size_t held_back = 0;  // pushes that kept bytes of an unfinished character
    for (const auto& entry : corpus_) {
        if (entry.contains("hex")) continue;
        const std::string text = entry["text"].get<std::string>();
        StreamingDetokenizer stream(t);
        std::string streamed;
        for (const int32_t id : t.encode(text, false, true)) {
            const std::string chunk = stream.push(id);
            ASSERT_TRUE(is_valid_utf8(chunk)) << escaped(text);
            if (stream.pending_bytes() > 0) ++held_back;
            streamed += chunk;
        }
        streamed += stream.flush();
        EXPECT_EQ(streamed, text);
    }
    EXPECT_GT(held_back, 0u) << "no token of the corpus ends inside a character";
}

TEST_P(TokenizerOracle, ArbitraryBytesAreHandled) {
    const Tokenizer& t = *tokenizer_;
    std::mt19937 rng(11);
    const std::vector<std::string> seeds = {"<|im_start|>", "<end_of_turn>", "\n\n", "  ", "\xF0\x9F", "\xE2\x96\x81"};
    for (int round = 0; round < 300; ++round) {
        std::string text;
        const size_t parts = rng() % 12;
        for (size_t i = 0; i < parts; ++i) {
            if (rng() % 3 == 0) {
                text += seeds[rng() % seeds.size()];
            } else {
                text.push_back(static_cast<char>(rng() % 256));
            }
        }
        for (const bool parse_special : {false, true}) {
            const auto ids = t.encode(text, true, parse_special);
            for (const int32_t id : ids) ASSERT_TRUE(id >= 0 && id < t.vocab_size());
            StreamingDetokenizer stream(t);
            std::string streamed;
            for (const int32_t id : ids) streamed += stream.push(id);
            streamed += stream.flush();
            EXPECT_TRUE(is_valid_utf8(streamed));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Models, TokenizerOracle, ::testing::Values("smollm2", "gemma3", "qwen2"));

// The SmolLM2 vocabulary under other pre-tokenizers, so that the llama3, qwen2, gpt-2 and default
// splitters meet llama.cpp too (it read copies of the file's metadata with tokenizer.ggml.pre replaced).
TEST(TokenizerPreTokenizerOracle, SmolLm2VocabularyUnderOtherPreTokenizers) {
    auto rows = read_jsonl(kFixtureDir + "smollm2_pre_variants.jsonl");
    ASSERT_FALSE(rows.empty());
    const nlohmann::json header = rows.front();
    rows.erase(rows.begin());
    const auto corpus = read_jsonl(kFixtureDir + "corpus.jsonl");

    const std::string path = model_dir() + "/" + header["base"].get<std::string>();
    if (!std::filesystem::exists(path)) {
        if (models_required()) FAIL() << "model missing and TEMPERED_REQUIRE_MODELS=1: " << path;
        GTEST_SKIP() << "model not present: " << path;
    }
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto spec = VocabSpec::from_gguf(*file);
    ASSERT_TRUE(spec.ok()) << spec.error().message;

    for (const auto& pre : header["variants"].get<std::vector<std::string>>()) {
        spec->pre_tokenizer = pre;
        auto tokenizer = Tokenizer::from_spec(*spec);
        ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
        size_t mismatches = 0;
        for (const auto& row : rows) {
            const std::string text = bytes_of(corpus.at(row["line"].get<size_t>()));
            const auto expected = row[pre].get<std::vector<int32_t>>();
            const auto actual = tokenizer->encode(text, false, true);
            if (actual != expected && ++mismatches <= 5) {
                ADD_FAILURE() << pre << "\n  text:     " << escaped(text) << "\n  expected: " << show_ids(expected)
                              << "\n  actual:   " << show_ids(actual);
            }
        }
        EXPECT_EQ(mismatches, 0u) << pre;
        std::cout << "[ tokenizer ] smollm2 vocabulary, pre-tokenizer " << pre << ": " << rows.size() << " lines, "
                  << mismatches << " mismatches\n";
    }
}

}  // namespace tokenizer_llama_oracle_test
}  // namespace
}  // namespace tempered
