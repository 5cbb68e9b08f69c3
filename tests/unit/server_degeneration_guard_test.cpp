// The server's side of the degeneration guard: --degeneration-guard and the config file's value parsed
// (and refused with the key named), a request's repetition_detection over the server's guard, the
// choice's "degeneration" object in whole and streamed chat responses, and the guard's metrics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_test_support.h"
#include "server/chat_response.h"
#include "server/degeneration_response.h"
#include "server/generation_loop.h"
#include "serving_metrics_test_support.h"
#include "settings/degeneration_report.h"
#include "settings/degeneration_settings.h"

namespace tempered {
namespace {
namespace server_degeneration_guard_test {

DegenerationGuardSettings parsed(const std::string& flag) {
    auto settings = choose_degeneration_guard(flag, std::nullopt);
    EXPECT_TRUE(settings.ok()) << (settings.ok() ? "" : settings.error().message);
    return settings.ok() ? *settings : DegenerationGuardSettings{};
}

std::string refusal(const std::string& flag) {
    auto settings = choose_degeneration_guard(flag, std::nullopt);
    return settings.ok() ? "accepted" : settings.error().message;
}

TEST(DegenerationGuardFlag, DefaultsToFlagWithTheDefaultThresholds) {
    const DegenerationGuardSettings settings = parsed("");
    EXPECT_EQ(settings.guard.action, DegenerationAction::Flag);
    const RepetitionDetectionParams& detector = settings.guard.detector;
    EXPECT_EQ(detector.max_pattern_size, 128);
    EXPECT_EQ(detector.min_pattern_size, 1);
    EXPECT_EQ(detector.min_count, 3);
    EXPECT_EQ(detector.min_loop_tokens, 24);
    EXPECT_EQ(detector.min_loop_share, 0.2f);
    EXPECT_TRUE(detector.shapes);
    EXPECT_EQ(settings.guard.fallback.temperature, 0.7f);
    EXPECT_EQ(settings.guard.fallback.dry.multiplier, 0.8f);
    EXPECT_TRUE(settings.dry_sequence_breakers.empty()) << "the fallback's DRY must see loops across lines";
}

TEST(DegenerationGuardFlag, ABareActionNameKeepsTheDefaultThresholds) {
    for (const auto& [name, action] :
         std::vector<std::pair<std::string, DegenerationAction>>{{"off", DegenerationAction::Off},
                                                                 {"flag", DegenerationAction::Flag},
                                                                 {"stop", DegenerationAction::Stop},
                                                                 {"resample", DegenerationAction::Resample}}) {
        const DegenerationGuardSettings settings = parsed(name);
        EXPECT_EQ(settings.guard.action, action) << name;
        EXPECT_EQ(settings.guard.detector.min_loop_tokens, 24) << name;
    }
    EXPECT_FALSE(parsed("off").guard.active());
    EXPECT_TRUE(parsed("stop").guard.active());
}

TEST(DegenerationGuardFlag, AJsonObjectSetsThresholdsActionAndFallback) {
    const DegenerationGuardSettings settings = parsed(
        R"({"action": "resample", "max_pattern_size": 32, "min_pattern_size": 2, "min_count": 4,
            "min_loop_tokens": 0, "min_loop_share": 0.5, "shapes": false,
            "fallback": {"temperature": 1.0, "top_k": 40, "min_p": 0.05,
            "dry_multiplier": 0.5, "dry_base": 2, "dry_allowed_length": 3, "dry_penalty_last_n": 128,
            "dry_sequence_breakers": ["\n", "."]}})");
    const DegenerationGuard& guard = settings.guard;
    EXPECT_EQ(guard.action, DegenerationAction::Resample);
    EXPECT_EQ(guard.detector.max_pattern_size, 32);
    EXPECT_EQ(guard.detector.min_pattern_size, 2);
    EXPECT_EQ(guard.detector.min_count, 4);
    EXPECT_EQ(guard.detector.min_loop_tokens, 0);
    EXPECT_EQ(guard.detector.min_loop_share, 0.5f);
    EXPECT_FALSE(guard.detector.shapes);
    EXPECT_EQ(guard.fallback.temperature, 1.0f);
    EXPECT_EQ(guard.fallback.top_k, 40);
    EXPECT_EQ(guard.fallback.min_p, 0.05f);
    EXPECT_FALSE(guard.fallback.top_p);
    EXPECT_EQ(guard.fallback.dry.multiplier, 0.5f);
    EXPECT_EQ(guard.fallback.dry.base, 2.0f);
    EXPECT_EQ(guard.fallback.dry.allowed_length, 3);
    EXPECT_EQ(guard.fallback.dry.penalty_last_n, 128);
    EXPECT_EQ(settings.dry_sequence_breakers, (std::vector<std::string>{"\n", "."}));
    // Keys left out keep the defaults; an object without "action" is flag.
    const DegenerationGuardSettings partial = parsed(R"({"min_count": 5})");
    EXPECT_EQ(partial.guard.action, DegenerationAction::Flag);
    EXPECT_EQ(partial.guard.detector.min_count, 5);
    EXPECT_EQ(partial.guard.detector.max_pattern_size, 128);
}

TEST(DegenerationGuardFlag, BadValuesNameTheFlagAndTheKey) {
    EXPECT_EQ(refusal("{\"min_loop_share\": 1.5}"), "--degeneration-guard: min_loop_share must be between 0 and 1");
    EXPECT_EQ(refusal("{\"shapes\": 1}"), "--degeneration-guard: shapes must be true or false (got 1)");
    EXPECT_EQ(refusal("halt"), "--degeneration-guard: action must be one of off, flag, stop, resample (got \"halt\")");
    EXPECT_EQ(refusal("{\"min_count\": 1}"),
              "--degeneration-guard: min_count must be >= 2 when max_pattern_size is set");
    EXPECT_EQ(refusal("{\"max_pattern_size\": 4, \"min_pattern_size\": 8}"),
              "--degeneration-guard: min_pattern_size must be <= max_pattern_size");
    EXPECT_EQ(refusal("{\"max_pattern_size\": -3}"), "--degeneration-guard: max_pattern_size must be an integer >= 0");
    EXPECT_EQ(refusal("{\"fallback\": {\"temperature\": 3}}"),
              "--degeneration-guard: fallback.temperature must be in [0, 2]");
    EXPECT_EQ(refusal("{\"fallback\": {\"dry_base\": 0.5}}"), "--degeneration-guard: fallback.dry_base must be >= 1");
    EXPECT_NE(refusal("{\"fallback\": {\"seed\": 1}}").find("fallback.seed is not a fallback setting"),
              std::string::npos);
    EXPECT_NE(refusal("{\"treshold\": 1}").find("treshold is not a guard setting"), std::string::npos);
    EXPECT_EQ(refusal("{\"action\": "), "--degeneration-guard: not valid JSON: {\"action\": ");
    EXPECT_EQ(refusal("[1]"),
              "--degeneration-guard: expected an action name (off, flag, stop, resample) or a JSON object");
}

TEST(DegenerationGuardFlag, TheFlagWinsOverTheConfigFile) {
    const nlohmann::json file = {{"action", "stop"}, {"min_count", 6}};
    auto from_file = choose_degeneration_guard("", file);
    ASSERT_TRUE(from_file.ok());
    EXPECT_EQ(from_file->guard.action, DegenerationAction::Stop);
    EXPECT_EQ(from_file->guard.detector.min_count, 6);
    auto from_flag = choose_degeneration_guard("resample", file);
    ASSERT_TRUE(from_flag.ok());
    EXPECT_EQ(from_flag->guard.action, DegenerationAction::Resample);
    EXPECT_EQ(from_flag->guard.detector.min_count, 3);
    auto bad_file = choose_degeneration_guard("", nlohmann::json{{"action", 3}});
    ASSERT_FALSE(bad_file.ok());
    EXPECT_EQ(bad_file.error().message.rfind("--config: degeneration_guard: action", 0), 0u);
}

TEST(DegenerationGuardFlag, ARequestsRepetitionDetectionStopsThatRequest) {
    const DegenerationGuard server = parsed("resample").guard;
    EXPECT_EQ(guard_for_request(server, std::nullopt).action, DegenerationAction::Resample);
    const DegenerationGuard request = guard_for_request(server, RepetitionDetectionParams{8, 2, 4});
    EXPECT_EQ(request.action, DegenerationAction::Stop);
    EXPECT_EQ(request.detector.max_pattern_size, 8);
    EXPECT_EQ(request.detector.min_pattern_size, 2);
    EXPECT_EQ(request.detector.min_count, 4);
    EXPECT_EQ(request.detector.min_loop_tokens, 0);  // vLLM's thresholds exactly
    EXPECT_FALSE(guard_for_request(server, RepetitionDetectionParams{0, 0, 0}).active());
}

TEST(DegenerationGuardFlag, DescribeShowsWhatTheServerRuns) {
    const nlohmann::json described = parsed(R"({"action": "resample", "fallback": {"top_p": 0.9}})").describe();
    EXPECT_EQ(described["action"], "resample");
    EXPECT_EQ(described["min_loop_tokens"], 24);
    EXPECT_EQ(described["min_loop_share"], 0.2);
    EXPECT_EQ(described["shapes"], true);
    EXPECT_EQ(described["fallback"]["temperature"], 0.7);
    EXPECT_EQ(described["fallback"]["top_p"], 0.9);
    EXPECT_EQ(described["fallback"]["dry_multiplier"], 0.8);
    EXPECT_EQ(described["fallback"]["dry_penalty_last_n"], -1);
}

// --- the "degeneration" object ---

DegenerationReport resampled_report() {
    DegenerationReport report;
    report.loop = {42, 4, 5};
    report.action = DegenerationAction::Resample;
    SamplingParams before;
    before.temperature = 0.0f;
    SamplingParams after = before;
    after.temperature = 0.7f;
    DryParams dry_after{0.8f, 1.75f, 2, -1, nullptr};
    report.resampled = SamplingSwitch{before, DryParams{}, after, dry_after};
    return report;
}

const nlohmann::json kResolved = {{"temperature", {{"value", 0.0}, {"source", "request"}}},
                                  {"top_p", {{"value", 1.0}, {"source", "default"}}}};

TEST(DegenerationResponse, TheObjectNamesTheLoopAndWhatAResampleChanged) {
    const nlohmann::json shown = api::degeneration_json(to_api_degeneration(resampled_report(), kResolved));
    EXPECT_EQ(shown["detected_at_token"], 42);
    EXPECT_EQ(shown["period"], 4);
    EXPECT_EQ(shown["repeats"], 5);
    EXPECT_EQ(shown["phase"], "content");
    EXPECT_EQ(shown["action"], "resample");
    const nlohmann::json expected_sampling = {
        {"temperature", {{"value", 0.7}, {"source", "guard"}, {"replaced", {{"value", 0.0}, {"source", "request"}}}}},
        {"dry_multiplier",
         {{"value", 0.8}, {"source", "guard"}, {"replaced", {{"value", 0.0}, {"source", "default"}}}}}};
    EXPECT_EQ(shown["sampling"], expected_sampling);  // only what changed: top_p and DRY's base are the same
    EXPECT_FALSE(shown.contains("after_resample"));

    DegenerationReport flagged;
    flagged.loop = {3, 1, 20, LoopKind::Numbers};
    const nlohmann::json plain = api::degeneration_json(to_api_degeneration(flagged, kResolved));
    EXPECT_EQ(plain, nlohmann::json({{"detected_at_token", 3},
                                     {"period", 1},
                                     {"repeats", 20},
                                     {"kind", "numbers"},
                                     {"phase", "content"},
                                     {"action", "flag"}}));
}

struct ChatRun {
    Tokenizer tokenizer = testing::byte_tokenizer();
    ServingMetrics metrics{"m", "f16"};
    RequestLog log{/*json=*/true};
    std::shared_ptr<GenerationStream> engine = std::make_shared<GenerationStream>();

    GenerationJob job(bool stream) {
        GenerationJob out;
        out.streams = std::make_shared<StreamSet>();
        out.streams->add(engine, 0, /*prompt_tokens=*/5);
        out.builder = std::make_unique<ChatResponseBuilder>(tokenizer, api::make_chat_meta("m", ""),
                                                            ChatResponseBuilder::Shape{.stream = stream});
        out.stream = stream;
        out.sampling = kResolved;
        out.endpoint = "chat";
        out.request_id = "req-1";
        out.received = std::chrono::steady_clock::now();
        return out;
    }
    void push(std::string text, std::optional<DegenerationReport> report = std::nullopt,
              std::optional<FinishReason> finish = std::nullopt) {
        GenerationEvent event;
        ChoiceDelta delta;
        delta.text = std::move(text);
        delta.tokens = {'x'};
        delta.degeneration = std::move(report);
        delta.finish = finish;
        event.deltas.push_back(std::move(delta));
        engine->push(std::move(event));
    }
    void push_done() {
        GenerationEvent done;
        done.done = true;
        engine->push(done);
    }
};

TEST(DegenerationResponse, AWholeChatResponseCarriesTheObjectAndTheSwitchedSampling) {
    ChatRun run;
    run.push("la Femme, ");
    run.push("la Femme", resampled_report());
    run.push(" enfin.", std::nullopt, FinishReason::Stop);
    run.push_done();
    ::testing::internal::CaptureStderr();
    const http::HttpResponse response = run_generation(run.job(false), http::HttpRequest{}, run.metrics, run.log);
    ::testing::internal::GetCapturedStderr();
    const nlohmann::json body = nlohmann::json::parse(response.body);
    const nlohmann::json& choice = body["choices"][0];
    EXPECT_EQ(choice["message"]["content"], "la Femme, la Femme enfin.");
    EXPECT_EQ(choice["degeneration"]["period"], 4);
    EXPECT_EQ(choice["degeneration"]["action"], "resample");
    // Choice 0's switch also shows in the request's sampling report; what it did not change stays.
    EXPECT_EQ(body["sampling"]["temperature"]["source"], "guard");
    EXPECT_EQ(body["sampling"]["temperature"]["replaced"]["source"], "request");
    EXPECT_EQ(body["sampling"]["dry_multiplier"]["value"], 0.8);
    EXPECT_EQ(body["sampling"]["top_p"], kResolved["top_p"]);
}

TEST(DegenerationResponse, AChoiceWithoutALoopHasNoObject) {
    ChatRun run;
    run.push("Paris.", std::nullopt, FinishReason::Stop);
    run.push_done();
    ::testing::internal::CaptureStderr();
    const http::HttpResponse response = run_generation(run.job(false), http::HttpRequest{}, run.metrics, run.log);
    ::testing::internal::GetCapturedStderr();
    const nlohmann::json body = nlohmann::json::parse(response.body);
    EXPECT_FALSE(body["choices"][0].contains("degeneration"));
    EXPECT_EQ(body["sampling"], kResolved);
}

class RecordingWriter final : public http::StreamWriter {
public:
    bool write(std::string_view chunk) override {
        written.emplace_back(chunk);
        return true;
    }
    bool is_connection_alive() const override { return true; }
    std::vector<std::string> written;
};

std::vector<nlohmann::json> data_chunks(const std::vector<std::string>& written) {
    std::vector<nlohmann::json> chunks;
    for (const std::string& event : written) {
        if (event.rfind("data: {", 0) != 0) continue;
        chunks.push_back(nlohmann::json::parse(event.substr(6)));
    }
    return chunks;
}

TEST(DegenerationResponse, AStreamCarriesTheObjectOnTheDetectingChunkAndTheFinishReason) {
    ChatRun run;
    DegenerationReport stopped;
    stopped.loop = {9, 2, 3};
    stopped.action = DegenerationAction::Stop;
    run.push("ab");
    run.push("", stopped);  // text held back: no chunk of its own, so the report rides on the next one
    run.push("abab", stopped, FinishReason::Repetition);
    run.push_done();
    const http::HttpResponse response = run_generation(run.job(true), http::HttpRequest{}, run.metrics, run.log);
    RecordingWriter writer;
    ::testing::internal::CaptureStderr();
    response.producer(writer);
    ::testing::internal::GetCapturedStderr();
    const std::vector<nlohmann::json> chunks = data_chunks(writer.written);
    ASSERT_EQ(chunks.size(), 3u);  // the role, "ab", "abab"
    EXPECT_FALSE(chunks[1]["choices"][0].contains("degeneration"));
    const nlohmann::json& last = chunks[2]["choices"][0];
    EXPECT_EQ(last["finish_reason"], "repetition");
    EXPECT_EQ(last["degeneration"]["action"], "stop");
    EXPECT_EQ(last["degeneration"]["detected_at_token"], 9);
}

// --- metrics ---

using testing::series_value;

TEST(DegenerationMetrics, EachLoopCountsOnceByActionAndPhaseWithItsPeriod) {
    ServingMetrics metrics("m", "f16");
    const std::string flagged = "tempered:degeneration_detected_total{action=\"flag\",phase=\"content\"}";
    const std::string stopped = "tempered:degeneration_detected_total{action=\"stop\",phase=\"reasoning\"}";
    EXPECT_EQ(series_value(metrics, flagged), 0);  // every series exists from start-up
    EXPECT_EQ(series_value(metrics, stopped), 0);
    EXPECT_EQ(series_value(metrics, "vllm:request_success_total{model_name=\"m\",finished_reason=\"repetition\"}"), 0);
    metrics.on_degeneration(DegenerationAction::Flag, DegenerationPhase::Content, 4);
    metrics.on_degeneration(DegenerationAction::Stop, DegenerationPhase::Reasoning, 40);
    metrics.on_request_finished(RequestOutcome::Repetition, {}, {});
    EXPECT_EQ(series_value(metrics, flagged), 1);
    EXPECT_EQ(series_value(metrics, stopped), 1);
    EXPECT_EQ(series_value(metrics, "tempered:degeneration_loop_period_bucket{le=\"2\"}"), 0);
    EXPECT_EQ(series_value(metrics, "tempered:degeneration_loop_period_bucket{le=\"4\"}"), 1);
    EXPECT_EQ(series_value(metrics, "tempered:degeneration_loop_period_bucket{le=\"64\"}"), 2);
    EXPECT_EQ(series_value(metrics, "tempered:degeneration_loop_period_count"), 2);
    EXPECT_EQ(series_value(metrics, "vllm:request_success_total{model_name=\"m\",finished_reason=\"repetition\"}"), 1);
}

}  // namespace server_degeneration_guard_test
}  // namespace
}  // namespace tempered
