"""/v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) through the real `anthropic` SDK.

- On Qwen2.5-Coder-0.5B-Instruct: messages.create and messages.stream validate against the SDK's types (the raw
  JSON through model_validate, every stream event through the SDK's event union) and agree (temperature 0);
  stop_sequences end with stop_reason "stop_sequence" and the string; tool use with tool_choice any gives a
  declared, valid tool_use block, and a tool_result turn gets an answer; count_tokens equals the templated
  prompt's length from /tokenize with the same conversation as chat messages; x-api-key is checked as a key is.
- On the tiny R1 model: thinking with budget_tokens gives a thinking block of exactly that many drawn tokens, the
  forced end reported in reasoning_budget, and a text block after it.
- A request as Claude Code sends it (system blocks with cache_control, metadata.user_id, anthropic-beta, tools
  with input_schema and cache_control, streamed) is served.
- Bad input: unknown block types, a tool_result for no tool_use, a missing max_tokens, wrong types, a 33 MiB
  body, a wrong key: 4xx in Anthropic's envelope, which the SDK raises as its own error classes.
"""
import json

import pytest

from helpers import REQUEST_TIMEOUT_S, running_server
from test_qwen2 import QWEN2_NAME, qwen2_args
from test_reasoning import MODEL_NAME as R1_NAME, tiny_model

anthropic = pytest.importorskip("anthropic")
jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")
from anthropic.types import Message, RawMessageStreamEvent  # noqa: E402

EVENT = pydantic.TypeAdapter(RawMessageStreamEvent)
KEY = "sk-messages-key"
# The SDK (2.x) no longer takes sampling arguments: what a client leaves out the server governs. The tests want
# greedy answers, so they send temperature as an extra field.
GREEDY = {"temperature": 0}
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1}},
                            "required": ["city"], "additionalProperties": False}}


@pytest.fixture(scope="module")
def qwen():
    with running_server(qwen2_args() + ["--api-key", KEY], name="messages-qwen") as server:
        yield server


def client(server, key=KEY):
    return anthropic.Anthropic(base_url=server.base_url, api_key=key, max_retries=0, timeout=REQUEST_TIMEOUT_S)


def raw_create(server, body, headers=None):
    response = server.post("/v1/messages", body, headers={"x-api-key": KEY, "anthropic-version": "2023-06-01",
                                                          **(headers or {})})
    assert response.status_code == 200, response.text[:500]
    raw = response.json()
    Message.model_validate(raw)
    return raw


def anthropic_error(response, status, type_name, contains=None):
    assert response.status_code == status, response.text[:300]
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == type_name, body
    assert body["error"]["message"]
    if contains:
        assert contains in body["error"]["message"] or contains == body["error"].get("param"), body
    return body


def test_create_and_stream_agree_and_validate(qwen):
    fields = dict(model=QWEN2_NAME, max_tokens=32, extra_body=GREEDY,
                  messages=[{"role": "user", "content": "Name three primary colors."}])
    whole = client(qwen).messages.create(**fields)
    Message.model_validate(whole.to_dict())
    assert whole.content[0].type == "text" and whole.content[0].text
    assert whole.stop_reason in ("end_turn", "max_tokens")
    assert whole.usage.output_tokens > 0
    with client(qwen).messages.stream(**fields) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == whole.content[0].text
    assert final.content[0].text == whole.content[0].text
    assert final.stop_reason == whole.stop_reason


def test_raw_stream_events_validate(qwen):
    body = {"model": QWEN2_NAME, "max_tokens": 12, "temperature": 0, "stream": True,
            "messages": [{"role": "user", "content": "Say hello."}]}
    names = []
    with qwen.client() as http:
        with http.stream("POST", "/v1/messages", json=body, headers={"x-api-key": KEY}) as response:
            assert response.status_code == 200
            name = None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[len("event: "):]
                elif line.startswith("data: "):
                    event = json.loads(line[len("data: "):])
                    assert event["type"] == name
                    EVENT.validate_python(event)
                    names.append(name)
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert "content_block_delta" in names


def test_stop_sequences(qwen):
    raw = raw_create(qwen, {"model": QWEN2_NAME, "max_tokens": 32, "temperature": 0, "stop_sequences": ["!"],
                            "messages": [{"role": "user", "content": "Say hello!"}]})
    if raw["stop_reason"] == "stop_sequence":
        assert raw["stop_sequence"] == "!"
        assert "!" not in raw["content"][0]["text"]
    else:
        assert raw["stop_sequence"] is None


def test_tool_use_and_a_tool_result_turn(qwen):
    sdk = client(qwen)
    question = {"role": "user", "content": "What is the weather in Paris?"}
    reply = sdk.messages.create(model=QWEN2_NAME, max_tokens=64, extra_body=GREEDY, tools=[WEATHER],
                                tool_choice={"type": "any"}, messages=[question])
    Message.model_validate(reply.to_dict())
    uses = [block for block in reply.content if block.type == "tool_use"]
    assert uses and reply.stop_reason == "tool_use"
    for use in uses:
        assert use.name == "get_weather"
        jsonschema.validate(use.input, WEATHER["input_schema"])
    results = [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 21 C"} for use in uses]
    answer = sdk.messages.create(model=QWEN2_NAME, max_tokens=48, extra_body=GREEDY, tools=[WEATHER],
                                 messages=[question, {"role": "assistant", "content": reply.content},
                                           {"role": "user", "content": results}])
    Message.model_validate(answer.to_dict())
    assert answer.content
    # Streamed: the tool_use block's input arrives as input_json_delta and parses to the same input.
    with sdk.messages.stream(model=QWEN2_NAME, max_tokens=64, extra_body=GREEDY, tools=[WEATHER],
                             tool_choice={"type": "any"}, messages=[question]) as stream:
        final = stream.get_final_message()
    assert [b.input for b in final.content if b.type == "tool_use"] == [u.input for u in uses]


def test_output_config_format(qwen):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    reply = client(qwen).messages.create(model=QWEN2_NAME, max_tokens=64, extra_body=GREEDY,
                                         output_config={"format": {"type": "json_schema", "schema": schema}},
                                         messages=[{"role": "user", "content": "Invent a person."}])
    jsonschema.validate(json.loads(reply.content[0].text), schema)


def test_count_tokens_equals_the_templated_prompt(qwen):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    counted = client(qwen).messages.count_tokens(model=QWEN2_NAME, system="Be brief.", tools=[WEATHER],
                                                 messages=messages)
    chat_tools = [{"type": "function", "function": {"name": WEATHER["name"], "description": WEATHER["description"],
                                                    "parameters": WEATHER["input_schema"]}}]
    tokenized = qwen.post("/tokenize", {"model": QWEN2_NAME, "tools": chat_tools,
                                        "messages": [{"role": "system", "content": "Be brief."}] + messages},
                          headers={"Authorization": f"Bearer {KEY}"})
    assert tokenized.status_code == 200, tokenized.text
    assert counted.input_tokens == tokenized.json()["count"] > 0


# A request as Claude Code sends it (system as text blocks with cache_control, metadata.user_id, the
# anthropic-beta header, client tools with input_schema and cache_control on the last one, streamed; no sampling
# values, which the server's defaults fill). Its max_tokens is smaller here, to keep the test short.
CLAUDE_CODE_BODY = {
    "model": QWEN2_NAME,
    "max_tokens": 32,
    "stream": True,
    "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
               {"type": "text", "text": "Use the tools to answer.", "cache_control": {"type": "ephemeral"}}],
    "metadata": {"user_id": "user_abc_account__session_123"},
    "tools": [{"name": "Bash", "description": "Run a bash command.",
               "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                                "required": ["command"], "additionalProperties": False,
                                "$schema": "http://json-schema.org/draft-07/schema#"}},
              {"name": "Read", "description": "Read a file.",
               "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                                "required": ["file_path"]},
               "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>Be concise.</system-reminder>"},
        {"type": "text", "text": "What is in README.md?", "cache_control": {"type": "ephemeral"}}]}],
}


def test_a_claude_code_request_is_served(qwen):
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01",
               "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"}
    with qwen.client() as http:
        with http.stream("POST", "/v1/messages", json=CLAUDE_CODE_BODY, headers=headers) as response:
            assert response.status_code == 200, response.read()[:300]
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    for event in events:
        EVENT.validate_python(event)
    assert events[-1]["type"] == "message_stop"


def test_keys_and_bad_input_answer_in_anthropics_envelope(qwen):
    with pytest.raises(anthropic.AuthenticationError):
        client(qwen, "sk-wrong").messages.create(model=QWEN2_NAME, max_tokens=4,
                                                 messages=[{"role": "user", "content": "hi"}])
    anthropic_error(qwen.post("/v1/messages", {"model": QWEN2_NAME, "max_tokens": 4, "messages": []}), 401,
                    "authentication_error")
    sdk = client(qwen)
    with pytest.raises(anthropic.BadRequestError):
        sdk.messages.create(model=QWEN2_NAME, max_tokens=4,
                            messages=[{"role": "user", "content": [{"type": "hologram", "text": "x"}]}])
    headers = {"x-api-key": KEY}
    bad = [
        ({"model": QWEN2_NAME, "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        ({"model": QWEN2_NAME, "max_tokens": 4}, "messages"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "messages": "hi"}, "messages"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_none", "content": "x"}]}]},
         "messages[0].content[0].tool_use_id"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "messages": [
            {"role": "user", "content": [{"type": "image", "source": {}}]}]}, "messages[0].content[0].type"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "tools": [{"name": "x"}],
          "messages": [{"role": "user", "content": "hi"}]}, "tools[0].input_schema"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "tool_choice": {"type": "sometimes"}, "tools": [WEATHER],
          "messages": [{"role": "user", "content": "hi"}]}, "tool_choice.type"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "thinking": {"type": "enabled"},
          "messages": [{"role": "user", "content": "hi"}]}, "thinking.budget_tokens"),
        ({"model": QWEN2_NAME, "max_tokens": "many", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        ({"model": QWEN2_NAME, "max_tokens": 4, "temperature": 9, "messages": [{"role": "user", "content": "hi"}]},
         "temperature"),
    ]
    for body, param in bad:
        response = qwen.post("/v1/messages", body, headers=headers)
        error = anthropic_error(response, 400, "invalid_request_error")
        assert error["error"].get("param") == param, (param, error)
    anthropic_error(qwen.post("/v1/messages", {"model": "claude-opus", "max_tokens": 4,
                                               "messages": [{"role": "user", "content": "hi"}]}, headers=headers),
                    404, "not_found_error")
    huge = '{"max_tokens": 4, "messages": [{"role": "user", "content": "' + "a" * (33 << 20) + '"}]}'
    response = qwen.post("/v1/messages", content=huge, headers={**headers, "Content-Type": "application/json"})
    anthropic_error(response, 413, "request_too_large")


@pytest.fixture(scope="module")
def r1():
    with running_server(tiny_model("tiny-r1-qwen2.gguf"), name="messages-r1") as server:
        yield server


def test_thinking_budget_on_the_r1_model(r1):
    sdk = anthropic.Anthropic(base_url=r1.base_url, api_key="x", max_retries=0, timeout=REQUEST_TIMEOUT_S)
    fields = dict(model=R1_NAME, max_tokens=24, thinking={"type": "enabled", "budget_tokens": 6},
                  messages=[{"role": "user", "content": "What is the capital of France?"}],
                  extra_body={"seed": 11, "temperature": 1.0})
    reply = sdk.messages.create(**fields)
    Message.model_validate(reply.to_dict())
    kinds = [block.type for block in reply.content]
    assert kinds[0] == "thinking" and "text" in kinds, kinds
    extra = reply.to_dict()
    assert extra["reasoning_budget"]["forced_end"] == "budget"
    assert extra["reasoning_budget"]["tokens"] == 6
    with sdk.messages.stream(**fields) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == kinds
    assert final.content[0].thinking == reply.content[0].thinking
