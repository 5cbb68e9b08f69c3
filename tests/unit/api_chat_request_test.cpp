#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "api/chat_request.h"

namespace tempered::api {
namespace {
namespace api_chat_request_test {

// Parses and expects a 400 naming `param`.
void expect_invalid(const std::string& body, const std::string& param) {
    const ApiResult<ChatRequest> result = parse_chat_request(body);
    ASSERT_FALSE(result) << "accepted: " << body;
    EXPECT_EQ(result.error().http_status, 400) << body;
    EXPECT_EQ(result.error().type, "invalid_request_error") << body;
    EXPECT_EQ(result.error().param, param) << body << " -> " << result.error().message;
}

ChatRequest parse_ok(const std::string& body) {
    ApiResult<ChatRequest> result = parse_chat_request(body);
    EXPECT_TRUE(result) << body << " -> " << (result ? "" : result.error().message);
    return result ? std::move(result).value() : ChatRequest{};
}

const std::string kHello = R"("messages":[{"role":"user","content":"hi"}])";

TEST(ChatRequest, MinimalRequestAndDefaults) {
    const ChatRequest request = parse_ok("{" + kHello + "}");
    ASSERT_EQ(request.messages.size(), 1u);
    EXPECT_EQ(request.messages[0].role, Role::User);
    EXPECT_EQ(request.messages[0].content_kind, ContentKind::Text);
    EXPECT_EQ(request.messages[0].content, "hi");
    const GenerationRequest& g = request.generation;
    EXPECT_EQ(g.model, "");
    EXPECT_EQ(g.n, 1);
    EXPECT_FALSE(g.stream);
    EXPECT_FALSE(g.stream_options.include_usage);
    EXPECT_TRUE(g.stop.empty());
    EXPECT_EQ(g.sampling.temperature.presence, Presence::Omitted);
    EXPECT_EQ(g.max_tokens.presence, Presence::Omitted);
    EXPECT_FALSE(request.logprobs);
    EXPECT_TRUE(request.tools.is_null());
}

TEST(ChatRequest, SamplingRecordsOmittedNullAndGiven) {
    const ChatRequest request = parse_ok("{" + kHello +
                                         R"(,"temperature":null,"top_p":0.9,"top_k":-1,"min_p":0,
        "presence_penalty":-2,"frequency_penalty":2,"repetition_penalty":1.1,"seed":42})");
    const SamplingRequest& s = request.generation.sampling;
    EXPECT_EQ(s.temperature.presence, Presence::Null);
    EXPECT_FALSE(s.temperature.value.has_value());
    EXPECT_EQ(s.temperature.value_or(0.7), 0.7);
    EXPECT_EQ(s.top_p.presence, Presence::Given);
    EXPECT_DOUBLE_EQ(*s.top_p.value, 0.9);
    EXPECT_EQ(*s.top_k.value, -1);
    EXPECT_EQ(*s.min_p.value, 0.0);
    EXPECT_EQ(*s.presence_penalty.value, -2.0);
    EXPECT_EQ(*s.frequency_penalty.value, 2.0);
    EXPECT_DOUBLE_EQ(*s.repetition_penalty.value, 1.1);
    EXPECT_EQ(*s.seed.value, 42);
    EXPECT_EQ(s.seed.presence, Presence::Given);
}

TEST(ChatRequest, SamplingRanges) {
    for (const auto& [field, bad] : std::vector<std::pair<std::string, std::string>>{{"temperature", "2.01"},
                                                                                     {"temperature", "-0.1"},
                                                                                     {"top_p", "0"},
                                                                                     {"top_p", "1.5"},
                                                                                     {"top_k", "-2"},
                                                                                     {"top_k", "1.5"},
                                                                                     {"min_p", "1.01"},
                                                                                     {"presence_penalty", "-2.5"},
                                                                                     {"frequency_penalty", "3"},
                                                                                     {"repetition_penalty", "0"},
                                                                                     {"repetition_penalty", "2.1"},
                                                                                     {"temperature", "\"1\""},
                                                                                     {"seed", "\"7\""},
                                                                                     {"seed", "true"}}) {
        expect_invalid("{" + kHello + ",\"" + field + "\":" + bad + "}", field);
    }
    const ChatRequest edges =
        parse_ok("{" + kHello + R"(,"temperature":0,"top_p":1,"top_k":0,"repetition_penalty":2})");
    EXPECT_EQ(*edges.generation.sampling.temperature.value, 0.0);
    EXPECT_EQ(*edges.generation.sampling.top_k.value, 0);
    const ChatRequest integral = parse_ok("{" + kHello + R"(,"temperature":1,"top_k":40.0})");
    EXPECT_EQ(*integral.generation.sampling.temperature.value, 1.0);
    EXPECT_EQ(*integral.generation.sampling.top_k.value, 40);
}

// The API and the operator's --preferred-sampling-params must accept exactly the same values.
TEST(ChatRequest, SamplingRangesMatchTheSamplingModule) {
    const std::vector<double> probes = {-3, -2.5, -2, -1.5, -1, -0.5, -0.1, 0, 1e-9, 0.1, 0.5, 1, 1.5, 2, 2.01, 3, 50};
    for (const std::string_view name : kSamplingParamNames) {
        if (name == "seed") continue;
        for (const double value : probes) {
            if (name == "top_k" && value != static_cast<int64_t>(value)) continue;
            std::ostringstream body;
            body << "{" << kHello << ",\"" << name << "\":" << value << "}";
            const bool api_accepts = parse_chat_request(body.str()).ok();
            const bool sampling_accepts = !check_sampling_range(name, value).has_value();
            EXPECT_EQ(api_accepts, sampling_accepts) << name << " = " << value;
        }
    }
}

TEST(ChatRequest, ToSamplingValues) {
    const ChatRequest request = parse_ok("{" + kHello + R"(,"temperature":null,"top_p":0.9,"top_k":-1,"seed":7})");
    const SamplingValues values = to_sampling_values(request.generation.sampling);
    EXPECT_FALSE(values.temperature.has_value());
    EXPECT_EQ(values.top_p, 0.9);
    EXPECT_EQ(values.top_k, 0);
    EXPECT_EQ(values.seed, 7);
    EXPECT_FALSE(values.min_p.has_value());
}

TEST(ChatRequest, RangeMessageSaysTheBounds) {
    const auto result = parse_chat_request("{" + kHello + R"(,"top_p":0})");
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().message.find("(0, 1]"), std::string::npos) << result.error().message;
}

TEST(ChatRequest, InvalidJsonAndWrongTopLevel) {
    const auto broken = parse_chat_request("{\"messages\": [");
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().http_status, 400);
    EXPECT_EQ(broken.error().param, "");
    EXPECT_NE(broken.error().message.find("parse the JSON body"), std::string::npos);
    EXPECT_FALSE(parse_chat_request("[1,2]"));
    EXPECT_FALSE(parse_chat_request(""));
    EXPECT_FALSE(parse_chat_request("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}"));  // bad UTF-8
    // A number beyond double's range is nlohmann's out_of_range, not a parse_error (found by fuzz/).
    const auto overflow = parse_chat_request("{\"messages\": [], \"temperature\": 1e400}");
    ASSERT_FALSE(overflow);
    EXPECT_EQ(overflow.error().http_status, 400);
    EXPECT_EQ(overflow.error().param, "temperature");  // the field that holds it is named
}

TEST(ChatRequest, MessagesShape) {
    expect_invalid("{}", "messages");
    expect_invalid(R"({"messages":null})", "messages");
    expect_invalid(R"({"messages":"hi"})", "messages");
    expect_invalid(R"({"messages":[]})", "messages");
    expect_invalid(R"({"messages":["hi"]})", "messages[0]");
    expect_invalid(R"({"messages":[{"content":"hi"}]})", "messages[0].role");
    expect_invalid(R"({"messages":[{"role":"robot","content":"hi"}]})", "messages[0].role");
    expect_invalid(R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":5}]})",
                   "messages[1].content");
    expect_invalid(R"({"messages":[{"role":"user","content":"a"},{"role":"user"}]})", "messages[1].content");
    expect_invalid(R"({"messages":[{"role":"user","content":null}]})", "messages[0].content");
    expect_invalid(R"({"messages":[{"role":"user","content":"a","name":3}]})", "messages[0].name");
}

TEST(ChatRequest, ContentParts) {
    const ChatRequest request =
        parse_ok(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
    const ChatMessage& message = request.messages[0];
    EXPECT_EQ(message.content_kind, ContentKind::Parts);
    EXPECT_EQ(message.content, "ab");
    ASSERT_EQ(message.parts.size(), 2u);
    EXPECT_EQ(message.parts[1].text, "b");
    expect_invalid(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})",
                   "messages[0].content[0].type");
    expect_invalid(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", "messages[0].content[0].text");
    expect_invalid(R"({"messages":[{"role":"user","content":["a"]}]})", "messages[0].content[0]");
}

TEST(ChatRequest, AllRolesToolCallsAndToolResults) {
    const ChatRequest request = parse_ok(R"({"messages":[
        {"role":"system","content":"s"},
        {"role":"developer","content":"d"},
        {"role":"user","content":"u","name":"alice"},
        {"role":"assistant","content":null,"tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"sunny"},
        {"role":"assistant","content":"It is sunny."}]})");
    ASSERT_EQ(request.messages.size(), 6u);
    EXPECT_EQ(request.messages[0].role, Role::System);
    EXPECT_EQ(request.messages[1].role, Role::Developer);
    EXPECT_EQ(request.messages[2].name, "alice");
    const ChatMessage& call = request.messages[3];
    EXPECT_EQ(call.content_kind, ContentKind::None);
    ASSERT_EQ(call.tool_calls.size(), 1u);
    EXPECT_EQ(call.tool_calls[0].id, "call_1");
    EXPECT_EQ(call.tool_calls[0].name, "get_weather");
    EXPECT_EQ(call.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
    EXPECT_EQ(request.messages[4].tool_call_id, "call_1");
    EXPECT_EQ(role_name(request.messages[4].role), "tool");

    expect_invalid(R"({"messages":[{"role":"tool","content":"x"}]})", "messages[0].tool_call_id");
    expect_invalid(R"({"messages":[{"role":"assistant"}]})", "messages[0].content");
    expect_invalid(R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{}}]}]})",
                   "messages[0].tool_calls[0].function.name");
    expect_invalid(R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]})",
                   "messages[0].tool_calls[0].id");
}

TEST(ChatRequest, LengthFields) {
    EXPECT_EQ(*parse_ok("{" + kHello + R"(,"max_tokens":10})").generation.max_tokens.value, 10);
    EXPECT_EQ(*parse_ok("{" + kHello + R"(,"max_completion_tokens":7,"max_tokens":10})").generation.max_tokens.value,
              7);
    EXPECT_EQ(parse_ok("{" + kHello + R"(,"max_completion_tokens":null})").generation.max_tokens.presence,
              Presence::Null);
    EXPECT_EQ(*parse_ok("{" + kHello + R"(,"max_completion_tokens":null,"max_tokens":3})").generation.max_tokens.value,
              3);
    expect_invalid("{" + kHello + R"(,"max_tokens":0})", "max_tokens");
    expect_invalid("{" + kHello + R"(,"max_completion_tokens":-1})", "max_completion_tokens");
    expect_invalid("{" + kHello + R"(,"max_tokens":"5"})", "max_tokens");
    EXPECT_EQ(*parse_ok("{" + kHello + R"(,"min_tokens":2,"max_tokens":5})").generation.min_tokens.value, 2);
    expect_invalid("{" + kHello + R"(,"min_tokens":6,"max_tokens":5})", "min_tokens");
}

TEST(ChatRequest, ChoicesStopAndStreaming) {
    EXPECT_EQ(parse_ok("{" + kHello + R"(,"n":16})").generation.n, 16);
    expect_invalid("{" + kHello + R"(,"n":0})", "n");
    expect_invalid("{" + kHello + R"(,"n":17})", "n");

    EXPECT_EQ(parse_ok("{" + kHello + R"(,"stop":"\n"})").generation.stop, std::vector<std::string>{"\n"});
    EXPECT_EQ(parse_ok("{" + kHello + R"(,"stop":["a","","b"]})").generation.stop,
              (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(parse_ok("{" + kHello + R"(,"stop":null})").generation.stop.empty());
    expect_invalid("{" + kHello + R"(,"stop":["a","b","c","d","e"]})", "stop");
    expect_invalid("{" + kHello + R"(,"stop":["a",1]})", "stop[1]");
    expect_invalid("{" + kHello + R"(,"stop":5})", "stop");

    const ChatRequest streamed = parse_ok("{" + kHello + R"(,"stream":true,"stream_options":{"include_usage":true}})");
    EXPECT_TRUE(streamed.generation.stream);
    EXPECT_TRUE(streamed.generation.stream_options.include_usage);
    expect_invalid("{" + kHello + R"(,"stream":"yes"})", "stream");
    expect_invalid("{" + kHello + R"(,"stream_options":{"include_usage":true}})", "stream_options");
    expect_invalid("{" + kHello + R"(,"stream":true,"stream_options":{"include_usage":1}})",
                   "stream_options.include_usage");
    EXPECT_FALSE(parse_ok("{" + kHello + R"(,"stream":false,"stream_options":null})").generation.stream);
}

TEST(ChatRequest, Logprobs) {
    const ChatRequest request = parse_ok("{" + kHello + R"(,"logprobs":true,"top_logprobs":20})");
    EXPECT_TRUE(request.logprobs);
    EXPECT_EQ(request.top_logprobs, 20);
    expect_invalid("{" + kHello + R"(,"logprobs":true,"top_logprobs":21})", "top_logprobs");
    expect_invalid("{" + kHello + R"(,"top_logprobs":2})", "top_logprobs");
    expect_invalid("{" + kHello + R"(,"logprobs":1})", "logprobs");
}

TEST(ChatRequest, LogitBias) {
    const ChatRequest request = parse_ok("{" + kHello + R"(,"logit_bias":{"50256":-100,"7":5.5}})");
    ASSERT_EQ(request.generation.logit_bias.size(), 2u);
    EXPECT_EQ(request.generation.logit_bias[0], (std::pair<int64_t, double>{7, 5.5}));
    EXPECT_EQ(request.generation.logit_bias[1], (std::pair<int64_t, double>{50256, -100.0}));
    expect_invalid("{" + kHello + R"(,"logit_bias":{"abc":1}})", "logit_bias");
    expect_invalid("{" + kHello + R"(,"logit_bias":{"-1":1}})", "logit_bias");
    expect_invalid("{" + kHello + R"(,"logit_bias":{"5":101}})", "logit_bias.5");
    expect_invalid("{" + kHello + R"(,"logit_bias":{"5":"1"}})", "logit_bias.5");
    expect_invalid("{" + kHello + R"(,"logit_bias":[1]})", "logit_bias");

    EXPECT_FALSE(validate_chat_request(request, ModelLimits{60000}).has_value());
    const auto out_of_vocab = validate_chat_request(request, ModelLimits{50000});
    ASSERT_TRUE(out_of_vocab.has_value());
    EXPECT_EQ(out_of_vocab->param, "logit_bias");
    EXPECT_NE(out_of_vocab->message.find("50256"), std::string::npos);
}

// Chat templates print tools with `tojson` and iterate their keys: they must see the client's order,
// as a Python dict keeps it, not nlohmann::json's sorted order.
TEST(ChatRequest, ToolsKwargsAndCallArgumentsKeepTheClientsKeyOrder) {
    const std::string function =
        R"({"name":"get_weather","parameters":{"type":"object","required":["zip","city"],)"
        R"("properties":{"zip":{"type":"string"},"city":{"type":"string"}}},"description":"Weather."})";
    const std::string tools = R"("tools":[{"type":"function","function":)" + function + "}]";
    const std::string call_history =
        R"("messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function",)"
        R"("function":{"name":"get_weather","arguments":{"zip":"1","city":"x"}}}]}])";
    const ChatRequest request =
        parse_ok("{" + call_history + "," + tools + R"(,"chat_template_kwargs":{"zeta":1,"alpha":2}})");
    EXPECT_EQ(request.tools[0]["function"].dump(), function);
    EXPECT_EQ(request.tools[0].begin().key(), "type");
    EXPECT_EQ(request.chat_template_kwargs.dump(), R"({"zeta":1,"alpha":2})");
    ASSERT_EQ(request.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(request.messages[1].tool_calls[0].arguments, R"({"zip":"1","city":"x"})");
}

TEST(ChatRequest, ToolsToolChoiceAndResponseFormatAreKept) {
    const std::string tools =
        R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
    const ChatRequest request = parse_ok("{" + kHello + "," + tools +
                                         R"(,"tool_choice":{"type":"function","function":{"name":"get_weather"}},
        "parallel_tool_calls":false,"response_format":{"type":"json_object"},
        "chat_template_kwargs":{"enable_thinking":false}})");
    ASSERT_TRUE(request.tools.is_array());
    EXPECT_EQ(request.tools[0]["function"]["parameters"]["type"], "object");
    EXPECT_EQ(request.tool_choice.mode, ToolChoice::Mode::Function);
    EXPECT_EQ(request.tool_choice.function_name, "get_weather");
    EXPECT_FALSE(request.parallel_tool_calls);
    EXPECT_EQ(request.generation.response_format.kind, ResponseFormat::Kind::JsonObject);
    EXPECT_EQ(request.chat_template_kwargs["enable_thinking"], false);

    EXPECT_EQ(parse_ok("{" + kHello + "," + tools + R"(,"tool_choice":"required"})").tool_choice.mode,
              ToolChoice::Mode::Required);
    expect_invalid("{" + kHello + R"(,"tool_choice":"required"})", "tool_choice");
    expect_invalid("{" + kHello + "," + tools + R"(,"tool_choice":"sometimes"})", "tool_choice");
    expect_invalid("{" + kHello + "," + tools + R"(,"tool_choice":{"type":"function","function":{"name":"nope"}}})",
                   "tool_choice.function.name");
    expect_invalid("{" + kHello + R"(,"tools":[{"type":"function","function":{}}]})", "tools[0].function.name");
    expect_invalid("{" + kHello + R"(,"tools":[{"type":"code_interpreter"}]})", "tools[0].type");
    expect_invalid("{" + kHello + R"(,"tools":{}})", "tools");
    expect_invalid("{" + kHello + R"(,"response_format":{"type":"yaml"}})", "response_format.type");
    expect_invalid("{" + kHello + R"(,"response_format":{"type":"json_schema"}})", "response_format.json_schema");
    expect_invalid("{" + kHello + R"(,"chat_template_kwargs":[]})", "chat_template_kwargs");
}

TEST(ChatRequest, ToolChoiceIsReadIntoItsMode) {
    const std::string tools =
        R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
    EXPECT_EQ(parse_ok("{" + kHello + "," + tools + "}").tool_choice.mode, ToolChoice::Mode::Auto);
    EXPECT_EQ(parse_ok("{" + kHello + "," + tools + R"(,"tool_choice":"auto"})").tool_choice.mode,
              ToolChoice::Mode::Auto);
    const ChatRequest none = parse_ok("{" + kHello + "," + tools + R"(,"tool_choice":"none"})");
    EXPECT_EQ(none.tool_choice.mode, ToolChoice::Mode::None);
    EXPECT_EQ(none.tool_choice.function_name, "");
}

TEST(ChatRequest, UnknownFieldsAreIgnoredAndCommonFieldsRead) {
    const ChatRequest request = parse_ok("{" + kHello + R"(,"model":"m","user":"u-1","ignore_eos":true,
        "metadata":{"x":1},"store":false,"service_tier":"auto","extra_body_field":[1,2]})");
    EXPECT_EQ(request.generation.model, "m");
    EXPECT_EQ(request.generation.user, "u-1");
    EXPECT_TRUE(request.generation.ignore_eos);
    expect_invalid("{" + kHello + R"(,"model":7})", "model");
    expect_invalid("{" + kHello + R"(,"ignore_eos":"no"})", "ignore_eos");
}

}  // namespace api_chat_request_test
}  // namespace
}  // namespace tempered::api

namespace tempered::api {
namespace {
namespace api_chat_request_test {

// Mutated bodies must come back as a value or an ApiError, never as a crash or an exception.
TEST(ChatRequest, SurvivesMutatedBodies) {
    const std::string seed = R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},
        {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"c","content":"r"}],"temperature":0.5,"top_k":5,"stop":["a"],"n":2,
        "logit_bias":{"1":2},"logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},
        "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"})";
    ASSERT_TRUE(parse_chat_request(seed));
    std::mt19937 random(1234);
    const std::string alphabet = "{}[]\":,0123456789.-etrufalsn \\x";
    for (int iteration = 0; iteration < 3000; ++iteration) {
        std::string body = seed;
        const int edits = 1 + static_cast<int>(random() % 4);
        for (int e = 0; e < edits; ++e) {
            const size_t at = random() % body.size();
            switch (random() % 3) {
                case 0: body[at] = alphabet[random() % alphabet.size()]; break;
                case 1: body.erase(at, 1 + random() % 8); break;
                default: body.insert(at, 1, alphabet[random() % alphabet.size()]); break;
            }
        }
        EXPECT_NO_THROW({
            const auto result = parse_chat_request(body);
            if (!result) {
                EXPECT_EQ(result.error().http_status, 400);
            }
        }) << body;
    }
}

TEST(ChatRequest, ReasoningBudgetFields) {
    const ChatRequest none = parse_ok("{" + kHello + "}");
    EXPECT_EQ(none.thinking_token_budget, std::nullopt);
    EXPECT_EQ(none.reasoning_effort, std::nullopt);
    const ChatRequest both = parse_ok("{" + kHello + R"(,"thinking_token_budget":0,"reasoning_effort":"high"})");
    EXPECT_EQ(both.thinking_token_budget, 0);
    EXPECT_EQ(both.reasoning_effort, ReasoningEffort::High);
    const ChatRequest nulls = parse_ok("{" + kHello + R"(,"thinking_token_budget":null,"reasoning_effort":null})");
    EXPECT_EQ(nulls.thinking_token_budget, std::nullopt);
    EXPECT_EQ(nulls.reasoning_effort, std::nullopt);
    expect_invalid("{" + kHello + R"(,"thinking_token_budget":-1})", "thinking_token_budget");
    expect_invalid("{" + kHello + R"(,"thinking_token_budget":2.5})", "thinking_token_budget");
    expect_invalid("{" + kHello + R"(,"thinking_token_budget":"10"})", "thinking_token_budget");
    expect_invalid("{" + kHello + R"(,"reasoning_effort":"extreme"})", "reasoning_effort");
    expect_invalid("{" + kHello + R"(,"reasoning_effort":1})", "reasoning_effort");
}

}  // namespace api_chat_request_test
}  // namespace
}  // namespace tempered::api
