// What a benchmark sends: the base URL, synthetic prompts (deterministic, distinct, sized by a token
// counter), the prompts file, and the request body. Also the report's treatment of absent values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include "loadgen/prompts.h"
#include "loadgen/report.h"
#include "loadgen/request.h"
#include "loadgen/server.h"

namespace tempered::loadgen {
namespace {
namespace loadgen_workload_test {

TEST(LoadgenBaseUrl, AcceptsTheRootOrTheV1BaseUrl) {
    for (const char* text : {"http://127.0.0.1:8000", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1",
                             "http://127.0.0.1:8000/v1/", "127.0.0.1:8000/v1"}) {
        auto url = parse_base_url(text);
        ASSERT_TRUE(url) << text;
        EXPECT_EQ(url->origin, "http://127.0.0.1:8000") << text;
        EXPECT_EQ(url->path_prefix, "") << text;
        EXPECT_EQ(url->path("/v1/completions"), "/v1/completions");
    }
    auto proxied = parse_base_url("https://example.org/llm/v1");
    ASSERT_TRUE(proxied);
    EXPECT_EQ(proxied->origin, "https://example.org");
    EXPECT_EQ(proxied->path("/tokenize"), "/llm/tokenize");
    auto v6 = parse_base_url("http://[::1]:8080");
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->origin, "http://[::1]:8080");
}

TEST(LoadgenBaseUrl, RejectsWhatCannotBeConnectedTo) {
    for (const char* text : {"ftp://host", "http://", "http://:80", "http://host:0", "http://host:99999",
                             "http://host:x", "http://host:"}) {
        auto url = parse_base_url(text);
        EXPECT_FALSE(url) << text;
        if (!url) {
            EXPECT_NE(url.error().message.find("--url"), std::string::npos);
        }
    }
}

TEST(LoadgenPromptWords, SeededDeterministicAndDistinctPerIndex) {
    EXPECT_EQ(synthetic_prompt(7, 3, 20), synthetic_prompt(7, 3, 20));
    EXPECT_NE(synthetic_prompt(7, 3, 20), synthetic_prompt(7, 4, 20));
    EXPECT_NE(synthetic_prompt(7, 3, 20), synthetic_prompt(8, 3, 20));
    // A longer prompt extends the shorter one: calibration only adds or drops words at the end.
    const std::string short_prompt = synthetic_prompt(1, 0, 5), long_prompt = synthetic_prompt(1, 0, 9);
    EXPECT_EQ(long_prompt.rfind(short_prompt + " ", 0), 0u);
    std::string words = synthetic_prompt(1, 0, 12);
    EXPECT_EQ(std::count(words.begin(), words.end(), ' '), 11);
    // Prompts differ from their first words on, so that no two share a prefix-cache block.
    std::set<std::string> starts;
    for (uint64_t i = 0; i < 64; ++i) starts.insert(synthetic_prompt(0, i, 4));
    EXPECT_EQ(starts.size(), 64u);
}

TEST(LoadgenPromptWords, WordsAreLowerCaseWithoutSpaces) {
    std::set<std::string_view> seen;
    for (std::string_view word : common_words()) {
        EXPECT_FALSE(word.empty());
        for (char c : word) EXPECT_TRUE(c >= 'a' && c <= 'z') << word;
        EXPECT_TRUE(seen.insert(word).second) << "duplicate word " << word;
    }
    EXPECT_GE(seen.size(), 200u);
}

int64_t word_count(const std::string& text) { return 1 + std::count(text.begin(), text.end(), ' '); }

TEST(LoadgenCalibration, AddsBosAndFindsTheWordCount) {
    int calls = 0;
    TokenCounter with_bos = [&](const std::string& text) -> Result<int64_t> {
        ++calls;
        return word_count(text) + 1;
    };
    auto prompt = calibrate_prompt(with_bos, 0, 5, 32, 32);
    ASSERT_TRUE(prompt);
    EXPECT_EQ(prompt->tokens, 32);
    EXPECT_EQ(prompt->words, 31);
    EXPECT_EQ(prompt->text, synthetic_prompt(0, 5, 31));
    EXPECT_EQ(calls, 2);  // the guess, then the correction
}

TEST(LoadgenCalibration, ClosestWhenAWordStepsOverTheTarget) {
    // Every word is two tokens: 15 words make 30, 16 make 32, and 31 cannot be made.
    TokenCounter two_per_word = [](const std::string& text) -> Result<int64_t> { return 2 * word_count(text); };
    auto prompt = calibrate_prompt(two_per_word, 0, 0, 31, 31);
    ASSERT_TRUE(prompt);
    EXPECT_EQ(prompt->tokens, 30);  // a tie between 30 and 32 goes to the shorter
    auto exact = calibrate_prompt(two_per_word, 0, 0, 32, 32);
    ASSERT_TRUE(exact);
    EXPECT_EQ(exact->tokens, 32);
}

TEST(LoadgenCalibration, CounterFailureIsReturned) {
    TokenCounter broken = [](const std::string&) -> Result<int64_t> { return Error{"POST /tokenize: HTTP 404"}; };
    auto prompt = calibrate_prompt(broken, 0, 0, 10, 10);
    ASSERT_FALSE(prompt);
    EXPECT_EQ(prompt.error().message, "POST /tokenize: HTTP 404");
}

class PromptsFile : public ::testing::Test {
protected:
    std::string write(const std::string& contents) {
        path_ = ::testing::TempDir() + "loadgen_prompts_" + std::to_string(getpid()) + ".jsonl";
        std::ofstream(path_) << contents;
        return path_;
    }
    void TearDown() override {
        if (!path_.empty()) std::remove(path_.c_str());
    }
    std::string path_;
};

TEST_F(PromptsFile, ReadsPromptFieldsAndSkipsBlankLines) {
    auto prompts = read_prompts_file(write("{\"prompt\": \"one\", \"id\": 1}\n\n  \n{\"prompt\": \"two\\nlines\"}\n"));
    ASSERT_TRUE(prompts) << prompts.error().message;
    EXPECT_EQ(*prompts, (std::vector<std::string>{"one", "two\nlines"}));
}

TEST_F(PromptsFile, NamesTheBadLine) {
    auto not_json = read_prompts_file(write("{\"prompt\": \"ok\"}\nplain text\n"));
    ASSERT_FALSE(not_json);
    EXPECT_NE(not_json.error().message.find(":2: not valid JSON"), std::string::npos) << not_json.error().message;
    auto no_field = read_prompts_file(write("{\"text\": \"x\"}\n"));
    ASSERT_FALSE(no_field);
    EXPECT_NE(no_field.error().message.find(":1: expected an object with a string \"prompt\""), std::string::npos);
    auto empty = read_prompts_file(write("\n\n"));
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("holds no prompt"), std::string::npos);
}

TEST(LoadgenPromptsFileMissing, SaysWhichFile) {
    auto missing = read_prompts_file("/nonexistent/prompts.jsonl");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("/nonexistent/prompts.jsonl"), std::string::npos);
}

TEST(LoadgenRequestBody, CompletionsStreamed) {
    const auto body = generation_body({Endpoint::Completions, "m", 16, true, std::nullopt}, "some words");
    EXPECT_EQ(body, nlohmann::json::parse(R"({"model":"m","prompt":"some words","max_tokens":16,"ignore_eos":true,
                                              "stream":true,"stream_options":{"include_usage":true}})"));
    EXPECT_EQ(endpoint_route(Endpoint::Completions), "/v1/completions");
}

TEST(LoadgenRequestBody, TemperatureIsSentOnlyWhenGiven) {
    const auto body = generation_body({Endpoint::Completions, "m", 4, false, 0.0}, "x");
    ASSERT_TRUE(body.contains("temperature"));
    EXPECT_EQ(body["temperature"], 0.0);
}

TEST(LoadgenRequestBody, ChatNotStreamedSendsNoSamplingValues) {
    const auto body = generation_body({Endpoint::Chat, "m", 8, false, std::nullopt}, "hi");
    EXPECT_EQ(body, nlohmann::json::parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}],
                                              "max_tokens":8,"ignore_eos":true})"));
    EXPECT_FALSE(body.contains("temperature"));
    EXPECT_EQ(endpoint_route(Endpoint::Chat), "/v1/chat/completions");
}

// The value on the table row that starts with `label`.
std::string table_value(const std::string& table, const std::string& label) {
    const size_t at = table.find("\n" + label);
    if (at == std::string::npos) return "<no row " + label + ">";
    const size_t end = table.find('\n', at + 1);
    const std::string rest = table.substr(at + 1 + label.size(), end - at - 1 - label.size());
    return rest.substr(rest.find_first_not_of(' '));
}

TEST(LoadgenReport, AbsentValuesAreNullAndDashes) {
    RunDescription run;
    run.url = "http://127.0.0.1:8000";
    run.model = "m";
    run.requests = 1;
    BenchSummary summary;
    summary.duration_s = 1;
    summary.completed = 1;
    summary.output_tokens = {16, 16, 16, 16.0};
    summary.e2e_ms = Distribution{1, 100, 100, 100, 100, 100, 100};
    summary.errors = {{"HTTP 500: boom", 2}};
    const auto json = report_json(run, summary);
    EXPECT_TRUE(json["ttft_ms"].is_null());
    EXPECT_TRUE(json["prompt_tokens"].is_null());
    EXPECT_EQ(json["e2e_latency_ms"]["p99"], 100.0);
    EXPECT_EQ(json["output_tokens"]["total"], 16);
    EXPECT_EQ(json["errors"][0]["message"], "HTTP 500: boom");
    EXPECT_EQ(json["errors"][0]["count"], 2);
    const std::string table = report_table(run, summary);
    EXPECT_EQ(table_value(table, "Mean prompt tokens:"), "-") << table;
    EXPECT_EQ(table_value(table, "Total output tokens:"), "16") << table;
    EXPECT_NE(table.find("2 x HTTP 500: boom"), std::string::npos) << table;
    EXPECT_NE(table.find("need --stream"), std::string::npos) << table;
}

}  // namespace loadgen_workload_test
}  // namespace
}  // namespace tempered::loadgen
