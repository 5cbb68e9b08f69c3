"""Tool calls end to end on Qwen2.5-Coder-0.5B-Instruct through the openai SDK.

- Conversations (single calls, parallel calls, a call then a `tool` result then an answer), each asked
  whole and streamed at temperature 0 with one seed: every returned call names a declared tool and its
  arguments validate with Python `jsonschema`; every reported violation really is undeclared or invalid;
  the streamed deltas reassemble to exactly the whole response; the SDK's types parse every response and
  chunk strictly.
- Prompts that invite an undeclared tool, on a server with `--tool-call-validation off` and one with
  `flag`: the same text is generated on both, so every undeclared call `off` returns must be a violation
  under `flag` (and counted in tempered:tool_calls_total), and `flag` never returns one. The counts are
  printed (pytest -s) and asserted against each other.
- The 400s that name the parameter, tool_choice none, parallel_tool_calls false.
- `constrain` (the default): tool_choice "required" and a named function force calls, each declared and
  valid, whole and streamed alike, even on prompts that invite an undeclared tool; under "auto" no
  undeclared or invalid call is ever returned (a call opened with <tool_call> is held to the grammar; an
  untagged one is checked as under `flag`).

The 0.5B model mostly writes calls without the <tool_call> tags (bare JSON lines, or a ```json fence);
the Hermes parser reads those too. Requests run a few at a time: the server batches them, which keeps the
file within its CI budget on 2 cores.
"""
import concurrent.futures
import json
import subprocess

import pytest

from helpers import assert_error, running_server, tempered_bin
from test_qwen2 import QWEN2_NAME, qwen2_args

jsonschema = pytest.importorskip("jsonschema")
openai = pytest.importorskip("openai")
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

SEED = 11
MAX_TOKENS = 64
PARALLEL_REQUESTS = 6

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Get the current local time in a timezone or city",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}},
                       "required": ["timezone"]}}},
    {"type": "function", "function": {
        "name": "convert_currency", "description": "Convert an amount of money from one currency to another",
        "parameters": {"type": "object", "properties": {
            "amount": {"type": "number", "minimum": 0},
            "from_currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "to_currency": {"type": "string", "pattern": "^[A-Z]{3}$"}},
            "required": ["amount", "from_currency", "to_currency"]}}},
]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
SYSTEM = "You are a helpful assistant. When a tool can answer, call it, once for each thing the user asks about."

SINGLE = [
    "What's the weather in Paris?", "Is it raining in London right now?", "What time is it in Tokyo?",
    "Convert 100 USD to EUR.", "How warm is it in Madrid, in fahrenheit?", "Tell me the current time in New York.",
    "What's the weather like in Berlin today?", "How much is 50 GBP in JPY?", "Current time in Sydney, please.",
    "What is the weather in Rome?",
]
# Asked after one example exchange with two calls (FEW_SHOT): without it the 0.5B model calls one tool only.
PARALLEL = [
    "Get me the weather in Oslo and the local time in Oslo.", "Convert 10 USD to EUR and 20 USD to GBP.",
    "Get me the weather in Cairo and the local time in Cairo.", "Convert 5 EUR to USD and 7 EUR to CHF.",
]
PARALLEL_MAX_TOKENS = 80
# (question, the call the assistant made, what the tool answered)
FOLLOW_UPS = [
    ("What's the weather in Paris?", "get_weather", {"city": "Paris"}, {"temperature_c": 21, "sky": "sunny"}),
    ("What time is it in Tokyo?", "get_time", {"timezone": "Asia/Tokyo"}, {"time": "14:05"}),
    ("Convert 100 USD to EUR.", "convert_currency", {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
     {"result": 92.4}),
    ("Is it cold in Oslo?", "get_weather", {"city": "Oslo", "unit": "celsius"}, {"temperature_c": -3, "sky": "snow"}),
]
UNDECLARED = [
    "Send an email to bob@example.com saying the meeting moved to 3pm.", "Book a flight from Paris to Rome tomorrow.",
    "Search the web for the latest news about Rust.", "Set an alarm for 7am.", "Play the song Yesterday by the Beatles.",
    "Order a large pepperoni pizza.", "Create a calendar event for lunch with Ann on Friday.",
    "Turn on the living room lights.", "Call my mom.", "What is the stock price of AAPL?",
    "Post a tweet saying hello world.", "Translate 'good morning' into German with the translation tool.",
    "Add milk to my shopping list.", "Reserve a table for two at an Italian restaurant tonight.",
    "Send a text message to +15551234 saying I'm late.", "Look up the definition of 'serendipity'.",
    "Create a new GitHub issue titled 'Crash on start'.", "Start a 25 minute timer.",
    "Find me hotels in Lisbon for next weekend.", "Run the SQL query SELECT * FROM users.",
]


def messages_for(question):
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def history_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


# An earlier exchange in which the assistant called two tools at once, got both results and answered.
FEW_SHOT = [
    {"role": "user", "content": "What's the weather in Lima and in Quito?"},
    {"role": "assistant", "content": None, "tool_calls": [history_call("call_1", "get_weather", {"city": "Lima"}),
                                                          history_call("call_2", "get_weather", {"city": "Quito"})]},
    {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"temperature_c": 18})},
    {"role": "tool", "tool_call_id": "call_2", "content": json.dumps({"temperature_c": 12})},
    {"role": "assistant", "content": "It is 18 C in Lima and 12 C in Quito."},
]


def parallel_messages(question):
    return [{"role": "system", "content": SYSTEM}] + FEW_SHOT + [{"role": "user", "content": question}]


def follow_up_messages(question, name, arguments, result):
    return parallel_messages(question) + [
        {"role": "assistant", "content": None, "tool_calls": [history_call("call_1", name, arguments)]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result)}]


def request_fields(messages, **extra):
    fields = {"model": QWEN2_NAME, "messages": messages, "tools": TOOLS, "temperature": 0, "seed": SEED,
              "max_tokens": MAX_TOKENS}
    fields.update(extra)
    return fields


def ask_whole(server, fields):
    raw = server.openai().chat.completions.with_raw_response.create(**fields)
    body = raw.http_response.json()
    ChatCompletion.model_validate(body, strict=True)  # the SDK's own type, no coercion
    completion = raw.parse()
    choice = body["choices"][0]
    return {
        "content": choice["message"]["content"],
        "calls": [(call["function"]["name"], call["function"]["arguments"])
                  for call in choice["message"].get("tool_calls") or []],
        "ids": [call["id"] for call in choice["message"].get("tool_calls") or []],
        "violations": choice.get("tool_call_violations", []),
        "finish_reason": choice["finish_reason"],
        "sdk_calls": completion.choices[0].message.tool_calls or [],
    }


def ask_streamed(server, fields):
    stream = server.openai().chat.completions.create(stream=True, **fields)
    content, calls, ids, violations, finish_reason, role_seen = None, [], [], [], None, False
    for chunk in stream:
        ChatCompletionChunk.model_validate(chunk.to_dict(), strict=True)
        choice = chunk.choices[0]
        role_seen = role_seen or choice.delta.role == "assistant"
        if choice.delta.content:
            content = (content or "") + choice.delta.content
        for call in choice.delta.tool_calls or []:
            if call.id is not None:
                assert call.index == len(calls), "a call's id and name come once, in index order"
                assert call.type == "function" and call.function.name
                calls.append([call.function.name, call.function.arguments or ""])
                ids.append(call.id)
            else:
                assert call.function.name is None, "the name is sent once"
                calls[call.index][1] += call.function.arguments or ""
        violations += (choice.model_extra or {}).get("tool_call_violations") or []
        if choice.finish_reason is not None:
            finish_reason = choice.finish_reason
    assert role_seen
    return {"content": content, "calls": [tuple(call) for call in calls], "ids": ids, "violations": violations,
            "finish_reason": finish_reason}


def check_calls(response, tool_names=SCHEMAS):
    """Every returned call is declared and valid; every violation really is undeclared or invalid."""
    assert all(call_id.startswith("call_") for call_id in response["ids"]), response
    assert len(set(response["ids"])) == len(response["ids"]), response
    for name, arguments in response["calls"]:
        assert name in tool_names, response
        jsonschema.Draft202012Validator(SCHEMAS[name]).validate(json.loads(arguments))
    for violation in response["violations"]:
        name, arguments = violation["name"], json.loads(violation["arguments"])
        assert name not in tool_names or not jsonschema.Draft202012Validator(SCHEMAS[name]).is_valid(arguments), (
            violation)
    if response["calls"]:
        assert response["finish_reason"] in ("tool_calls", "length"), response
    else:
        assert response["finish_reason"] in ("stop", "length"), response


def run_all(function, items):
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_REQUESTS) as pool:
        return list(pool.map(function, items))


@pytest.fixture(scope="module")
def flag_server():
    with running_server(qwen2_args() + ["--tool-call-validation", "flag"], name="tool-calls-flag") as server:
        yield server


@pytest.fixture(scope="module")
def constrain_server():
    with running_server(qwen2_args(), name="tool-calls-constrain") as server:
        yield server


@pytest.fixture(scope="module")
def off_server(tmp_path_factory):
    # `off` comes from the config file here (the flag is used for `flag`), so both ways are exercised.
    config = tmp_path_factory.mktemp("tool-calls") / "serve.json"
    config.write_text(json.dumps({"tool_call_validation": "off", "tool_call_parser": "hermes"}))
    with running_server(qwen2_args() + ["--config", str(config)], name="tool-calls-off") as server:
        yield server


def conversations():
    asks = [request_fields(messages_for(q)) for q in SINGLE]
    asks += [request_fields(parallel_messages(q), max_tokens=PARALLEL_MAX_TOKENS) for q in PARALLEL]
    asks += [request_fields(follow_up_messages(*case)) for case in FOLLOW_UPS]
    return asks


def test_conversations_whole_and_streamed_agree_and_every_call_validates(flag_server):
    asks = conversations()
    wholes = run_all(lambda fields: ask_whole(flag_server, fields), asks)
    streams = run_all(lambda fields: ask_streamed(flag_server, fields), asks)
    assert len(wholes) + len(streams) >= 30
    for fields, whole, streamed in zip(asks, wholes, streams):
        question = fields["messages"][-1]["content"]
        check_calls(whole)
        check_calls(streamed)
        for key in ("content", "calls", "violations", "finish_reason"):
            assert streamed[key] == whole[key], (question, key, whole, streamed)
        assert [call.function.name for call in whole["sdk_calls"]] == [name for name, _ in whole["calls"]]
    single = wholes[:len(SINGLE)]
    parallel = wholes[len(SINGLE):len(SINGLE) + len(PARALLEL)]
    follow_ups = wholes[len(SINGLE) + len(PARALLEL):]
    # The model does call the tools, and sometimes several at once; after a tool result it answers.
    assert sum(1 for r in single if r["calls"]) >= len(SINGLE) - 2, single
    assert sum(1 for r in parallel if len(r["calls"]) >= 2) >= len(PARALLEL) // 2, parallel
    assert sum(1 for r in follow_ups if r["content"] and not r["calls"]) >= len(FOLLOW_UPS) // 2, follow_ups
    print(f"\nconversations: {len(asks)} whole + {len(asks)} streamed; calls returned "
          f"{sum(len(r['calls']) for r in wholes)}, violations {sum(len(r['violations']) for r in wholes)}")


def test_undeclared_tools_off_returns_them_flag_reports_and_counts_them(off_server, flag_server):
    asks = [request_fields(messages_for(q)) for q in UNDECLARED]
    before = flag_server.metrics()
    raw = run_all(lambda fields: ask_whole(off_server, fields), asks)
    flagged = run_all(lambda fields: ask_whole(flag_server, fields), asks)
    after = flag_server.metrics()

    def undeclared(calls):
        return [(name, arguments) for name, arguments in calls if name not in SCHEMAS]

    off_undeclared = sum(len(undeclared(r["calls"])) for r in raw)
    off_invalid = sum(1 for r in raw for name, arguments in r["calls"]
                      if name in SCHEMAS and not jsonschema.Draft202012Validator(SCHEMAS[name]).is_valid(
                          json.loads(arguments)))
    unknown_violations = sum(1 for r in flagged for v in r["violations"] if v["name"] not in SCHEMAS)
    bad_argument_violations = sum(1 for r in flagged for v in r["violations"] if v["name"] in SCHEMAS)
    for off, flag in zip(raw, flagged):
        check_calls(flag)
        assert not undeclared(flag["calls"])
        # Same model, same prompt, temperature 0: the text is the same, only what is returned differs.
        assert sorted(off["calls"]) == sorted(flag["calls"] + [(v["name"], v["arguments"]) for v in flag["violations"]])
    counted = {outcome: after.value("tempered:tool_calls_total", outcome=outcome) -
               before.value("tempered:tool_calls_total", outcome=outcome)
               for outcome in ("valid", "rejected_unknown_name", "rejected_bad_arguments", "unparsed")}
    assert counted["rejected_unknown_name"] == unknown_violations
    assert counted["rejected_bad_arguments"] == bad_argument_violations
    assert counted["valid"] == sum(len(r["calls"]) for r in flagged)
    print(f"\n{len(UNDECLARED)} prompts inviting an undeclared tool: off returned {off_undeclared} undeclared and "
          f"{off_invalid} invalid calls; flag returned none, reported {unknown_violations} undeclared and "
          f"{bad_argument_violations} invalid; counted {counted}")
    assert off_undeclared == unknown_violations
    assert off_undeclared >= len(UNDECLARED) // 2, "the prompts should tempt the model"


def test_parameter_errors_name_the_parameter(flag_server):
    base = {"model": QWEN2_NAME, "messages": messages_for("hi"), "max_tokens": 4}
    assert_error(flag_server.post("/v1/chat/completions", {**base, "tool_choice": "auto"}), 400, param="tool_choice")
    assert_error(flag_server.post("/v1/chat/completions", {
        **base, "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "send_email"}}}),
        400, param="tool_choice.function.name")
    bad_tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "not": {"const": "a"}}}}}}
    assert_error(flag_server.post("/v1/chat/completions", {**base, "tools": TOOLS + [bad_tool]}), 400,
                 param="tools[3].function.parameters", message_contains="'not'")


def test_tool_choice_none_leaves_calls_as_content_and_parallel_false_keeps_one(flag_server):
    plain = ask_whole(flag_server, request_fields(messages_for(SINGLE[0]), tool_choice="none"))
    assert plain["calls"] == [] and plain["violations"] == [] and plain["finish_reason"] == "stop"
    assert "get_weather" in plain["content"], plain  # the tools were still in the prompt
    one = ask_whole(flag_server, request_fields(parallel_messages(PARALLEL[0]), parallel_tool_calls=False,
                                                max_tokens=PARALLEL_MAX_TOKENS))
    assert len(one["calls"]) == 1, one
    assert all("parallel_tool_calls" in v["reason"] for v in one["violations"]), one


@pytest.mark.parametrize("flag,value", [("--tool-call-parser", "qwen"), ("--tool-call-validation", "maybe")])
def test_bad_tool_call_flag_stops_serve_naming_it(flag, value):
    result = subprocess.run([str(tempered_bin()), "serve", *qwen2_args(), "--port", "0", flag, value],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert flag in result.stderr and value in result.stderr, result.stderr


def test_constrain_forces_declared_valid_calls_when_required_or_named(constrain_server):
    required = [request_fields(messages_for(q), tool_choice="required")
                for q in SINGLE[:6] + UNDECLARED[:6] if isinstance(q, str)]
    named = [request_fields(messages_for(q), tool_choice={"type": "function", "function": {"name": "get_time"}})
             for q in UNDECLARED[6:10]]
    asks = required + named
    before = constrain_server.metrics()
    wholes = run_all(lambda fields: ask_whole(constrain_server, fields), asks)
    streams = run_all(lambda fields: ask_streamed(constrain_server, fields), asks)
    after = constrain_server.metrics()
    for fields, whole, streamed in zip(asks, wholes, streams):
        check_calls(whole)
        assert whole["calls"] and not whole["violations"], (fields["messages"][-1], whole)
        assert whole["finish_reason"] == "tool_calls", whole
        for key in ("content", "calls", "violations", "finish_reason"):
            assert streamed[key] == whole[key], (key, whole, streamed)
    for whole in wholes[len(required):]:
        assert {name for name, _ in whole["calls"]} == {"get_time"}, whole
    structured = (after.value("tempered:structured_requests_total", kind="tool_call") -
                  before.value("tempered:structured_requests_total", kind="tool_call"))
    assert structured == 2 * len(asks)
    print(f"\nconstrain, required/named: {len(asks)} prompts x 2, "
          f"{sum(len(r['calls']) for r in wholes)} calls, all declared and valid")


def ask_undeclared_and_check(server):
    """The prompts inviting an undeclared tool, asked whole: every returned call is declared and valid. Returns
    (calls returned, violations reported)."""
    answers = run_all(lambda fields: ask_whole(server, fields), [request_fields(messages_for(q)) for q in UNDECLARED])
    for answer in answers:
        check_calls(answer)
        assert all(name in SCHEMAS for name, _ in answer["calls"]), answer
    return sum(len(a["calls"]) for a in answers), sum(len(a["violations"]) for a in answers)


def test_constrain_auto_never_returns_an_undeclared_or_invalid_call(constrain_server):
    calls, violations = ask_undeclared_and_check(constrain_server)
    print(f"\nconstrain, auto: {len(UNDECLARED)} prompts inviting an undeclared tool: returned "
          f"{calls} declared valid calls, reported {violations} untagged violations")


def test_constrain_through_a_tempered_upstream_equals_local(constrain_server):
    """Upstream mode: a front on Qwen2.5-Coder sends its tool-call grammar (GBNF, structured_outputs) to a tempered
    upstream that applies it; the calls equal local `constrain` call for call, whole and streamed."""
    asks = [request_fields(messages_for(q), tool_choice="required") for q in SINGLE[:3] + UNDECLARED[:3]]
    asks.append(request_fields(messages_for(UNDECLARED[6]),
                               tool_choice={"type": "function", "function": {"name": "get_time"}}))
    with running_server(qwen2_args() + ["--sampling-defaults", "openai"], name="tool-calls-upstream") as upstream:
        with running_server(qwen2_args() + ["--upstream", upstream.base_url], name="tool-calls-front") as front:
            before = upstream.metrics().value("tempered:structured_requests_total", kind="grammar") or 0
            through = run_all(lambda fields: ask_whole(front, fields), asks)
            streamed = run_all(lambda fields: ask_streamed(front, fields), asks)
            sent = upstream.metrics().value("tempered:structured_requests_total", kind="grammar") - before
    local = run_all(lambda fields: ask_whole(constrain_server, fields), asks)
    assert sent == 2 * len(asks)
    for front_answer, streamed_answer, local_answer in zip(through, streamed, local):
        check_calls(front_answer)
        for key in ("content", "calls", "violations", "finish_reason"):
            assert front_answer[key] == local_answer[key], (key, front_answer, local_answer)
            assert streamed_answer[key] == local_answer[key], (key, streamed_answer, local_answer)
