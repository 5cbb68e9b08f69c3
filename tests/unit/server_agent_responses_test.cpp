// The Responses and Messages builders (server/responses_response.h, server/messages_response.h) from the
// engine's deltas: items and blocks open and close in order, the streamed deltas add up to the whole
// answer, finish reasons map onto status / stop_reason, and the response store keeps what it may.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/messages_response.h"
#include "server/response_store.h"
#include "server/responses_response.h"

namespace tempered {
namespace {
namespace server_agent_responses_test {

std::vector<ChoiceDelta> reasoned_answer(FinishReason finish, std::optional<std::string> stop = std::nullopt) {
    std::vector<ChoiceDelta> deltas(3);
    deltas[0].reasoning_text = "Hmm.";
    deltas[1].text = "It is ";
    deltas[2].text = "Paris.";
    deltas[2].finish = finish;
    deltas[2].stop_string = std::move(stop);
    ReasoningReport report;
    report.reasoned = true;
    report.tokens = 2;
    report.budget = 2;
    report.forced_end = ForcedEnd::Budget;
    report.reasoning_tokens = 5;
    deltas[2].reasoning = report;
    return deltas;
}

std::vector<nlohmann::json> run(ResponseBuilder& builder, const std::vector<ChoiceDelta>& deltas,
                                const api::Usage& usage) {
    std::vector<nlohmann::json> events = builder.opening_chunks();
    for (const ChoiceDelta& delta : deltas)
        for (nlohmann::json& event : builder.on_delta(delta)) events.push_back(std::move(event));
    for (nlohmann::json& event : builder.closing_chunks(usage, false)) events.push_back(std::move(event));
    return events;
}

std::vector<std::string> types(const std::vector<nlohmann::json>& events) {
    std::vector<std::string> out;
    for (const nlohmann::json& event : events) out.push_back(event["type"]);
    return out;
}

TEST(ResponsesBuilder, ItemsOpenAndCloseInOrderAndTheStreamAddsUpToTheWhole) {
    ResponsesBuilder streamed({{"id", "resp_1"}}, true, nlohmann::json::object());
    const std::vector<nlohmann::json> events = run(streamed, reasoned_answer(FinishReason::Stop), {10, 7, 4});
    EXPECT_EQ(
        types(events),
        (std::vector<std::string>{
            "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
            "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
            "response.output_item.done", "response.output_item.added", "response.content_part.added",
            "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
            "response.content_part.done", "response.output_item.done", "response.completed"}));
    for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i]["sequence_number"], i);
    const nlohmann::json& done = events.back()["response"];
    ResponsesBuilder whole({{"id", "resp_2"}}, false, nlohmann::json::object());
    for (const ChoiceDelta& delta : reasoned_answer(FinishReason::Stop)) EXPECT_TRUE(whole.on_delta(delta).empty());
    nlohmann::json body = whole.final_body({10, 7, 4});
    EXPECT_EQ(body["status"], "completed");
    EXPECT_EQ(body["output"][1]["content"][0]["text"], "It is Paris.");
    EXPECT_EQ(body["output"][0]["content"][0]["text"], "Hmm.");
    EXPECT_EQ(done["output"][1]["content"], body["output"][1]["content"]);
    EXPECT_EQ(body["usage"]["output_tokens_details"]["reasoning_tokens"], 5);
    EXPECT_EQ(body["usage"]["input_tokens_details"]["cached_tokens"], 4);
    EXPECT_EQ(body["reasoning_budget"]["forced_end"], "budget");
}

TEST(ResponsesBuilder, LengthAndGuardStopsAreIncomplete) {
    ResponsesBuilder cut({}, false, nlohmann::json::object());
    for (const ChoiceDelta& delta : reasoned_answer(FinishReason::Length)) cut.on_delta(delta);
    nlohmann::json body = cut.final_body({});
    EXPECT_EQ(body["status"], "incomplete");
    EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(body["output"][1]["status"], "incomplete");
    ResponsesBuilder looped({}, true, nlohmann::json::object());
    const std::vector<nlohmann::json> events = run(looped, reasoned_answer(FinishReason::Repetition), {});
    EXPECT_EQ(events.back()["type"], "response.incomplete");
    EXPECT_EQ(events.back()["response"]["incomplete_details"]["reason"], "content_filter");
}

TEST(ResponsesBuilder, TheFinishedResponseGoesToTheStoreOnce) {
    int stored = 0;
    ResponsesBuilder builder({{"id", "resp_3"}}, true, nlohmann::json::object());
    builder.on_finished([&](const nlohmann::json& response) {
        ++stored;
        EXPECT_EQ(response["status"], "completed");
    });
    run(builder, reasoned_answer(FinishReason::Stop), {});
    EXPECT_EQ(stored, 1);
    EXPECT_EQ(builder.frame({{"type", "response.created"}}).rfind("event: response.created\ndata: ", 0), 0u);
}

TEST(MessagesBuilder, BlocksStopReasonsAndUsage) {
    MessagesBuilder streamed({{"id", "msg_1"}}, true, 10, nlohmann::json::object());
    const std::vector<nlohmann::json> events = run(streamed, reasoned_answer(FinishReason::Stop, "END"), {10, 7, 4});
    EXPECT_EQ(types(events),
              (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                        "content_block_stop", "content_block_start", "content_block_delta",
                                        "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
    EXPECT_EQ(events[0]["message"]["usage"]["input_tokens"], 10);
    EXPECT_EQ(events[2]["delta"]["type"], "thinking_delta");
    EXPECT_EQ(events[8]["delta"]["stop_reason"], "stop_sequence");
    EXPECT_EQ(events[8]["delta"]["stop_sequence"], "END");
    EXPECT_EQ(events[8]["usage"]["input_tokens"], 6);  // Anthropic's: the prompt tokens not read from cache
    EXPECT_EQ(events[8]["usage"]["cache_read_input_tokens"], 4);

    MessagesBuilder whole({{"id", "msg_2"}}, false, 10, nlohmann::json::object());
    for (const ChoiceDelta& delta : reasoned_answer(FinishReason::Length)) whole.on_delta(delta);
    const nlohmann::json body = whole.final_body({10, 7, 0});
    EXPECT_EQ(body["stop_reason"], "max_tokens");
    EXPECT_EQ(body["content"][0], (nlohmann::json{{"type", "thinking"}, {"thinking", "Hmm."}, {"signature", ""}}));
    EXPECT_EQ(body["content"][1]["text"], "It is Paris.");
    MessagesBuilder looped({}, false, 1, nlohmann::json::object());
    for (const ChoiceDelta& delta : reasoned_answer(FinishReason::Repetition)) looped.on_delta(delta);
    EXPECT_EQ(looped.final_body({})["stop_reason"], "end_turn");
    EXPECT_EQ(looped.error_response(api::invalid_request("bad", "x")).body,
              R"({"error":{"message":"bad","param":"x","type":"invalid_request_error"},"type":"error"})");
}

TEST(ResponseStore, OwnersCountsAndAge) {
    ResponseStore store({2, std::chrono::seconds(3600)});
    const auto now = std::chrono::steady_clock::now();
    store.put("a", {{{"id", "a"}}, api::Json::array(), "alice", now});
    EXPECT_TRUE(store.get("a", "alice"));
    EXPECT_FALSE(store.get("a", "bob"));
    EXPECT_FALSE(store.get("a", std::nullopt));
    EXPECT_FALSE(store.erase("a", "bob"));
    store.put("b", {{{"id", "b"}}, api::Json::array(), "alice", now});
    store.put("c", {{{"id", "c"}}, api::Json::array(), "alice", now});
    EXPECT_FALSE(store.get("a", "alice"));  // the oldest, past the count
    EXPECT_EQ(store.size(), 2u);
    EXPECT_TRUE(store.erase("b", "alice"));
    EXPECT_FALSE(store.get("b", "alice"));
    store.put("old", {{{"id", "old"}}, api::Json::array(), std::nullopt, now - std::chrono::hours(2)});
    EXPECT_FALSE(store.get("old", std::nullopt));  // past the TTL
    ResponseStore none({0, std::chrono::seconds(60)});
    none.put("x", {{}, api::Json::array(), std::nullopt, now});
    EXPECT_EQ(none.size(), 0u);
}

}  // namespace server_agent_responses_test
}  // namespace
}  // namespace tempered
