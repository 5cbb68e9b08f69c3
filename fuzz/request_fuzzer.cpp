// libFuzzer target for the request parsers of src/api: any body must come back from parse_chat_request /
// parse_completion_request as a request or an ApiError, never crash or throw (an escaping exception is a
// bug, so nothing here catches). A parsed request is also validated against a small vocabulary, and a
// response_format json_schema is compiled into a grammar as the server does (src/grammar); a schema the
// compiler refuses must do so with a SchemaError, never by crashing; every grammar's shortest sentence is one
// the grammar accepts; a structured_outputs GBNF grammar is read
// (grammar/gbnf.h) and, when it reads, written back and read again. The same body is read as a Responses and as a
// Messages request (api/responses_request.h, api/messages_request.h), and the chat body each amounts to goes
// through the chat parser, as the server does.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/messages_request.h"
#include "api/responses_request.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/shortest_completion.h"

namespace {

constexpr tempered::api::ModelLimits kLimits{.vocab_size = 49152};

// The shortest sentence a grammar has, as a request's max_tokens check and the answer's closing use it: what it
// spells, the grammar accepts.
void check_shortest_sentence(const tempered::grammar::Grammar& grammar) {
    const tempered::grammar::CompletionLengths lengths(grammar);
    const auto sentence = lengths.shortest_sentence();
    if (!sentence) return;
    tempered::grammar::Matcher matcher(grammar);
    if (!matcher.accept_bytes(*sentence) || !matcher.is_complete()) __builtin_trap();
}

// What the server does with a parsed response_format before generating.
void compile_response_format(const tempered::api::ResponseFormat& format) {
    using Kind = tempered::api::ResponseFormat::Kind;
    if (format.kind == Kind::Grammar) {
        auto grammar = tempered::grammar::read_gbnf(format.grammar);
        if (!grammar) return;
        check_shortest_sentence(*grammar);
        auto written = tempered::grammar::write_gbnf(*grammar);
        const bool readable_size = written && written->size() <= tempered::grammar::kMaxGbnfBytes;
        if (readable_size && !tempered::grammar::read_gbnf(*written)) __builtin_trap();  // what we write, we read
        return;
    }
    if (format.kind != Kind::JsonSchema) return;
    auto grammar = tempered::grammar::compile_json_schema(format.schema);
    if (grammar && grammar->rule_alternatives.empty()) __builtin_trap();  // a grammar has its root rule
    if (grammar) check_shortest_sentence(*grammar);
}

// The Responses and Messages translations of the body, and their chat bodies through chat's parser.
void translate_agent_requests(std::string_view body) {
    auto json = tempered::api::parse_json_object(body);
    if (!json) return;
    if (auto request = tempered::api::parse_responses_request(*json)) {
        // The input once as this request's and once as a stored conversation before it.
        auto chat = tempered::api::responses_chat_body(*request, request->input_items);
        if (chat) (void)tempered::api::parse_chat_request_json(*chat);
    } else if (request.error().message.empty()) {
        __builtin_trap();
    }
    for (bool count_only : {false, true}) {
        auto request = tempered::api::parse_messages_request(*json, count_only);
        if (request)
            (void)tempered::api::parse_chat_request_json(request->chat_body);
        else if (request.error().message.empty())
            __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    if (auto chat = tempered::api::parse_chat_request(body)) {
        tempered::api::validate_chat_request(*chat, kLimits);
        tempered::api::to_sampling_values(chat->generation.sampling);
        compile_response_format(chat->generation.response_format);
    } else if (chat.error().message.empty()) {
        __builtin_trap();  // an error tells the client what was wrong
    }
    if (auto completion = tempered::api::parse_completion_request(body)) {
        tempered::api::validate_completion_request(*completion, kLimits);
        compile_response_format(completion->generation.response_format);
    }
    translate_agent_requests(body);
    return 0;
}
