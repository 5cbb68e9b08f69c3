// Tool calls in chat answers, from the engine's text deltas to OpenAI's shapes: the whole message
// (tool_calls, content null, finish_reason tool_calls), the stream (id and name once per call, then
// arguments that add up to the whole response's), violations under flag, nothing checked under off,
// parallel_tool_calls false, tool_choice none, the 400 for a schema the compiler refuses, and the counter.
#include <gtest/gtest.h>

#include "api/chat_request.h"
#include "engine_test_support.h"
#include "output/output_processor.h"
#include "server/chat_response.h"
#include "server/chat_tool_calls.h"

namespace tempered {
namespace {
namespace server_chat_tool_calls_test {

const std::string kTools = R"("tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
        "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}])";

const std::string kAnswer =
    "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"send_email\", \"arguments\": {\"to\": \"bob\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": 3}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>";

api::ChatRequest chat_request(const std::string& extra) {
    auto parsed =
        api::parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], )" + kTools + extra + "}");
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
    return std::move(parsed).value();
}

ToolCallSetup setup_for(const std::string& extra, ToolCallValidation validation) {
    auto setup = tool_call_setup(chat_request(extra), {toolcalls::ToolCallFamily::Hermes, validation});
    EXPECT_TRUE(setup && *setup);
    return std::move(**setup);
}

// The answer as the engine delivers it: in pieces of `piece` bytes, each read by the choice's output
// processor (output/, Hermes calls, as the engine's sequence runs it), the last one finishing with `finish`.
std::vector<nlohmann::json> run_builder(ChatResponseBuilder& builder, const std::string& text, size_t piece,
                                        FinishReason finish = FinishReason::Stop,
                                        toolcalls::ToolCallFamily family = toolcalls::ToolCallFamily::Hermes) {
    OutputProcessor output(OutputOptions{{}, nullptr, {}, family});
    std::vector<nlohmann::json> chunks;
    for (size_t at = 0; at < text.size(); at += piece) {
        std::vector<OutputDelta> outs{output.push({std::string_view(text).substr(at, piece), std::nullopt})};
        ChoiceDelta delta;
        if (at + piece >= text.size()) {
            delta.finish = finish;
            outs.push_back(output.finish());
        }
        for (OutputDelta& out : outs) {
            delta.text += out.content;
            for (auto& call : out.calls) delta.calls.push_back(std::move(call));
            delta.unparsed_calls += out.unparsed_calls;
        }
        for (nlohmann::json& chunk : builder.on_delta(delta)) chunks.push_back(std::move(chunk));
    }
    return chunks;
}

nlohmann::json whole_message(const ToolCallSetup& setup, ServingMetrics& metrics, const std::string& text,
                             FinishReason finish = FinishReason::Stop) {
    static const Tokenizer tokenizer = testing::byte_tokenizer();
    ChatResponseBuilder builder(tokenizer, api::make_chat_meta("m", ""), {.choices = 1, .stream = false});
    builder.read_tool_calls(setup, metrics);
    run_builder(builder, text, 7, finish, setup.family);
    return builder.final_body({})["choices"][0];
}

double counter(const ServingMetrics& metrics, const std::string& outcome) {
    const std::string text = metrics.render();
    const std::string series = "tempered:tool_calls_total{outcome=\"" + outcome + "\"} ";
    const size_t at = text.find(series);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size()));
}

TEST(ChatToolCalls, FlagReturnsValidCallsAndReportsTheOthers) {
    ServingMetrics metrics("m", "f16");
    const nlohmann::json choice = whole_message(setup_for("", ToolCallValidation::Flag), metrics, kAnswer);
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    EXPECT_EQ(choice["message"]["content"], "Checking.");
    const nlohmann::json& calls = choice["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
    EXPECT_EQ(calls[0]["type"], "function");
    EXPECT_TRUE(calls[0]["id"].get<std::string>().starts_with("call_"));
    EXPECT_NE(calls[0]["id"], calls[1]["id"]);
    EXPECT_EQ(calls[1]["function"]["arguments"], R"({"zone":"CET"})");
    const nlohmann::json& violations = choice["tool_call_violations"];
    ASSERT_EQ(violations.size(), 2u);
    EXPECT_EQ(violations[0]["index"], 1);
    EXPECT_EQ(violations[0]["name"], "send_email");
    EXPECT_EQ(violations[0]["arguments"], R"({"to":"bob"})");
    EXPECT_NE(violations[0]["reason"].get<std::string>().find("send_email"), std::string::npos);
    EXPECT_EQ(violations[1]["index"], 2);
    EXPECT_EQ(counter(metrics, "valid"), 2);
    EXPECT_EQ(counter(metrics, "rejected_unknown_name"), 1);
    EXPECT_EQ(counter(metrics, "rejected_bad_arguments"), 1);
    EXPECT_EQ(counter(metrics, "unparsed"), 0);
}

// gpt-oss: harmony's calls (in the form the harmony splitter hands them over) are checked as every family's, under
// flag and under constrain alike (no grammar writes them): a call to an undeclared function is never returned.
TEST(ChatToolCalls, HarmonyCallsToUndeclaredFunctionsAreNeverReturned) {
    const auto call = [](const std::string& name, const std::string& arguments) {
        return "<|start|>assistant to=functions." + name + "<|channel|>commentary json<|message|>" + arguments +
               "<|call|>";
    };
    for (ToolCallValidation validation : {ToolCallValidation::Flag, ToolCallValidation::Constrain}) {
        ServingMetrics metrics("m", "f16");
        auto setup = tool_call_setup(chat_request(""), {toolcalls::ToolCallFamily::Harmony, validation});
        ASSERT_TRUE(setup && *setup);
        const nlohmann::json undeclared = whole_message(**setup, metrics, call("send_email", R"({"to": "bob"})"));
        EXPECT_FALSE(undeclared["message"].contains("tool_calls") && !undeclared["message"]["tool_calls"].empty());
        ASSERT_EQ(undeclared["tool_call_violations"].size(), 1u);
        EXPECT_EQ(undeclared["tool_call_violations"][0]["name"], "send_email");
        const nlohmann::json declared = whole_message(**setup, metrics, call("get_weather", R"({"city": "Paris"})"));
        ASSERT_EQ(declared["message"]["tool_calls"].size(), 1u);
        EXPECT_EQ(declared["message"]["tool_calls"][0]["function"]["name"], "get_weather");
        EXPECT_EQ(declared["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
        EXPECT_EQ(declared["finish_reason"], "tool_calls");
        EXPECT_EQ(counter(metrics, "rejected_unknown_name"), 1);
    }
}

TEST(ChatToolCalls, OffReturnsEveryParsedCallButStillCounts) {
    ServingMetrics metrics("m", "f16");
    const nlohmann::json choice = whole_message(setup_for("", ToolCallValidation::Off), metrics, kAnswer);
    EXPECT_EQ(choice["message"]["tool_calls"].size(), 4u);
    EXPECT_FALSE(choice.contains("tool_call_violations"));
    EXPECT_EQ(counter(metrics, "rejected_unknown_name"), 1);
}

TEST(ChatToolCalls, OnlyCallsMeansNullContentAndLengthStaysLength) {
    ServingMetrics metrics("m", "f16");
    const ToolCallSetup setup = setup_for("", ToolCallValidation::Constrain);
    const std::string call = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>";
    EXPECT_TRUE(whole_message(setup, metrics, call)["message"]["content"].is_null());
    EXPECT_EQ(whole_message(setup, metrics, call + "\nand", FinishReason::Length)["finish_reason"], "length");
    const nlohmann::json broken = whole_message(setup, metrics, "<tool_call>\n{\"name\": ");
    EXPECT_EQ(broken["message"]["content"], "<tool_call>\n{\"name\": ");
    EXPECT_EQ(broken["finish_reason"], "stop");
    EXPECT_EQ(counter(metrics, "unparsed"), 1);
}

TEST(ChatToolCalls, ParallelToolCallsFalseKeepsTheFirstCall) {
    ServingMetrics metrics("m", "f16");
    const nlohmann::json flagged =
        whole_message(setup_for(R"(, "parallel_tool_calls": false)", ToolCallValidation::Flag), metrics, kAnswer);
    ASSERT_EQ(flagged["message"]["tool_calls"].size(), 1u);
    EXPECT_EQ(flagged["tool_call_violations"].size(), 3u);  // two invalid, one beyond the first
    const nlohmann::json off =
        whole_message(setup_for(R"(, "parallel_tool_calls": false)", ToolCallValidation::Off), metrics, kAnswer);
    EXPECT_EQ(off["message"]["tool_calls"].size(), 1u);
}

TEST(ChatToolCalls, StreamSaysNameAndIdOnceThenArgumentsEqualToTheWholeResponse) {
    ServingMetrics metrics("m", "f16");
    const ToolCallSetup setup = setup_for("", ToolCallValidation::Flag);
    const nlohmann::json whole = whole_message(setup, metrics, kAnswer);
    for (size_t piece : {1, 3, 11}) {
        const Tokenizer tokenizer = testing::byte_tokenizer();
        ChatResponseBuilder builder(tokenizer, api::make_chat_meta("m", ""), {.choices = 1, .stream = true});
        builder.read_tool_calls(setup, metrics);
        std::string content;
        std::vector<nlohmann::json> calls;
        nlohmann::json violations = nlohmann::json::array();
        std::string finish;
        for (const nlohmann::json& chunk : run_builder(builder, kAnswer, piece)) {
            const nlohmann::json& choice = chunk["choices"][0];
            const nlohmann::json& delta = choice["delta"];
            if (delta.contains("content")) content += delta["content"].get<std::string>();
            for (const nlohmann::json& call : delta.value("tool_calls", nlohmann::json::array())) {
                const size_t index = call["index"];
                if (call.contains("id")) {
                    ASSERT_EQ(index, calls.size()) << "a call's id and name come once, in order";
                    EXPECT_EQ(call["type"], "function");
                    calls.push_back({{"id", call["id"]}, {"name", call["function"]["name"]}, {"arguments", ""}});
                } else {
                    EXPECT_FALSE(call["function"].contains("name"));
                }
                calls.at(index)["arguments"] =
                    calls.at(index)["arguments"].get<std::string>() + call["function"]["arguments"].get<std::string>();
            }
            for (const nlohmann::json& violation : choice.value("tool_call_violations", nlohmann::json::array()))
                violations.push_back(violation);
            if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
        }
        EXPECT_EQ(content, whole["message"]["content"]);
        ASSERT_EQ(calls.size(), whole["message"]["tool_calls"].size());
        for (size_t i = 0; i < calls.size(); ++i) {
            EXPECT_EQ(calls[i]["name"], whole["message"]["tool_calls"][i]["function"]["name"]);
            EXPECT_EQ(calls[i]["arguments"], whole["message"]["tool_calls"][i]["function"]["arguments"]);
        }
        EXPECT_EQ(violations, whole["tool_call_violations"]);
        EXPECT_EQ(finish, "tool_calls");
    }
}

TEST(ChatToolCalls, NoReadingWithoutToolsOrWithToolChoiceNoneOrWithoutAParser) {
    const ChosenToolCalls hermes{toolcalls::ToolCallFamily::Hermes, ToolCallValidation::Flag};
    auto none = tool_call_setup(chat_request(R"(, "tool_choice": "none")"), hermes);
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
    auto no_parser = tool_call_setup(chat_request(""), {std::nullopt, ToolCallValidation::Flag});
    ASSERT_TRUE(no_parser);
    EXPECT_FALSE(*no_parser);
    auto plain = api::parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}]})");
    ASSERT_TRUE(plain);
    auto no_tools = tool_call_setup(*plain, hermes);
    ASSERT_TRUE(no_tools);
    EXPECT_FALSE(*no_tools);
}

TEST(ChatToolCalls, NamedToolChoiceMakesOtherToolsUndeclared) {
    ServingMetrics metrics("m", "f16");
    const nlohmann::json choice =
        whole_message(setup_for(R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})",
                                ToolCallValidation::Flag),
                      metrics, kAnswer);
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_time");
}

TEST(ChatToolCalls, SchemaTheCompilerRefusesIsA400NamingParameterAndKeyword) {
    auto parsed = api::parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "not": {}}}}]})");
    ASSERT_TRUE(parsed);
    auto setup = tool_call_setup(*parsed, {toolcalls::ToolCallFamily::Hermes, ToolCallValidation::Flag});
    ASSERT_FALSE(setup);
    EXPECT_EQ(setup.error().http_status, 400);
    EXPECT_EQ(setup.error().param, "tools[0].function.parameters");
    EXPECT_NE(setup.error().message.find("'not'"), std::string::npos) << setup.error().message;
}

}  // namespace server_chat_tool_calls_test
}  // namespace
}  // namespace tempered
