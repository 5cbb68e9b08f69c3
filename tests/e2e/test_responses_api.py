"""/v1/responses (OpenAI's Responses API) on Qwen2.5-Coder-0.5B-Instruct through the real `openai` SDK.

- responses.create and responses.stream, plain, with function tools, with text.format json_schema: every object
  and every stream event validates against the SDK's own pydantic types (model_validate on the raw JSON, so a
  missing field or a wrong literal fails); the streamed text equals the whole one (temperature 0, one seed).
- Tool calls are declared and their arguments valid (Python jsonschema); a function_call_output turn through
  previous_response_id gets an answer; GET and DELETE /v1/responses/{id}; store false keeps nothing.
- A body as Codex sends it (hosted tool types, custom tools, store false, include reasoning.encrypted_content,
  instructions, prompt_cache_key, stream) is served, the left-out tools named in `warnings`.
- Ids under API keys: another key's response is a 404 naming it.
- Bad input: wrong types, unknown item types, an output for no call, unknown ids, a 33 MiB body: 4xx in OpenAI's
  envelope, never a 5xx.
"""
import json

import pytest

from helpers import REQUEST_TIMEOUT_S, assert_error, running_server
from test_qwen2 import QWEN2_NAME, qwen2_args

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")
from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402

EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
SEED = 7
WEATHER = {"type": "function", "name": "get_weather", "description": "Get the current weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1}},
                          "required": ["city"], "additionalProperties": False}}
TIME = {"type": "function", "name": "get_time", "description": "Get the local time in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"], "additionalProperties": False}
KEYS = ("sk-responses-one", "sk-responses-two")


@pytest.fixture(scope="module")
def qwen():
    with running_server(qwen2_args(), name="responses-qwen") as server:
        yield server


def client(server, key="x"):
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0, timeout=REQUEST_TIMEOUT_S)


def raw_create(server, body, headers=None):
    """The response object as JSON, validated by the SDK's type."""
    response = server.post("/v1/responses", body, headers=headers)
    assert response.status_code == 200, response.text[:500]
    raw = response.json()
    Response.model_validate(raw)
    return raw


def streamed(server, **fields):
    """Every event of responses.stream validated by the SDK's union type; the final response."""
    events = []
    with client(server).responses.stream(**fields) as stream:
        for event in stream:
            EVENT.validate_python(event.to_dict())
            events.append(event)
        final = stream.get_final_response()
    Response.model_validate(final.to_dict(warnings=False))
    return events, final


def test_create_and_stream_agree_and_validate(qwen):
    fields = dict(model=QWEN2_NAME, input="Name three primary colors.", temperature=0, max_output_tokens=32,
                  extra_body={"seed": SEED})
    whole = client(qwen).responses.create(**fields)
    Response.model_validate(whole.to_dict())
    assert whole.status in ("completed", "incomplete")
    assert whole.output_text
    assert whole.usage.output_tokens > 0 and whole.usage.input_tokens > 0
    assert whole.to_dict()["sampling"]["temperature"] == {"value": 0.0, "source": "request"}
    events, final = streamed(qwen, **fields)
    types = [event.type for event in events]
    assert types[0] == "response.created" and types[-1] in ("response.completed", "response.incomplete")
    assert "response.output_text.delta" in types
    assert final.output_text == whole.output_text
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert deltas == whole.output_text
    numbers = [event.sequence_number for event in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


def test_max_output_tokens_cut_is_incomplete(qwen):
    raw = raw_create(qwen, {"model": QWEN2_NAME, "input": "Count from one to fifty in words.",
                            "max_output_tokens": 4, "temperature": 0})
    assert raw["status"] == "incomplete"
    assert raw["incomplete_details"] == {"reason": "max_output_tokens"}
    assert raw["usage"]["output_tokens"] == 4


def check_call(item):
    assert item["type"] == "function_call"
    assert item["name"] in ("get_weather", "get_time")
    schema = (WEATHER if item["name"] == "get_weather" else TIME)["parameters"]
    jsonschema.validate(json.loads(item["arguments"]), schema)
    assert item["call_id"].startswith("call_")


def test_tools_whole_streamed_and_a_tool_turn(qwen):
    body = {"model": QWEN2_NAME, "input": "What is the weather in Paris?", "tools": [WEATHER, TIME],
            "tool_choice": "required", "temperature": 0, "max_output_tokens": 64}
    raw = raw_create(qwen, body)
    calls = [item for item in raw["output"] if item["type"] == "function_call"]
    assert calls, raw["output"]
    for call in calls:
        check_call(call)
    events, final = streamed(qwen, **{k: v for k, v in body.items()})
    streamed_calls = [item.to_dict() for item in final.output if item.type == "function_call"]
    assert [(c["name"], c["arguments"]) for c in streamed_calls] == [(c["name"], c["arguments"]) for c in calls]
    assert any(event.type == "response.function_call_arguments.delta" for event in events)

    # The tool's result goes back through previous_response_id; the answer is text.
    answer = raw_create(qwen, {"model": QWEN2_NAME, "previous_response_id": raw["id"], "tools": [WEATHER, TIME],
                               "temperature": 0, "max_output_tokens": 48,
                               "input": [{"type": "function_call_output", "call_id": call["call_id"],
                                          "output": json.dumps({"city": "Paris", "sky": "sunny", "celsius": 21})}
                                         for call in calls]})
    assert answer["previous_response_id"] == raw["id"]
    text = "".join(part["text"] for item in answer["output"] if item["type"] == "message"
                   for part in item["content"])
    for item in answer["output"]:
        if item["type"] == "function_call":
            check_call(item)
    assert text or any(item["type"] == "function_call" for item in answer["output"])


def test_text_format_json_schema(qwen):
    fields = dict(model=QWEN2_NAME, input="Invent a person.", temperature=0, max_output_tokens=64,
                  text={"format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}})
    whole = client(qwen).responses.create(**fields)
    jsonschema.validate(json.loads(whole.output_text), PERSON)
    _, final = streamed(qwen, **fields)
    assert final.output_text == whole.output_text


def test_store_retrieve_delete_and_chain(qwen):
    sdk = client(qwen)
    first = sdk.responses.create(model=QWEN2_NAME, input="My name is Ada. Reply with OK.", temperature=0,
                                 max_output_tokens=8)
    got = sdk.responses.retrieve(first.id)
    assert got.id == first.id and got.output_text == first.output_text
    second = sdk.responses.create(model=QWEN2_NAME, previous_response_id=first.id, input="What is my name?",
                                  temperature=0, max_output_tokens=16)
    # The stored conversation went into the prompt: more input tokens than the question alone.
    alone = sdk.responses.create(model=QWEN2_NAME, input="What is my name?", temperature=0, max_output_tokens=16)
    assert second.usage.input_tokens > alone.usage.input_tokens
    assert second.usage.input_tokens_details.cached_tokens > 0  # the earlier turn's prefix was reused
    deleted = qwen.client().delete(f"/v1/responses/{first.id}")
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    assert_error(qwen.get(f"/v1/responses/{first.id}"), 404, param="response_id")
    assert_error(qwen.post("/v1/responses", {"model": QWEN2_NAME, "previous_response_id": first.id, "input": "x"}),
                 404, param="previous_response_id")
    unstored = raw_create(qwen, {"model": QWEN2_NAME, "input": "hi", "store": False, "max_output_tokens": 2})
    assert_error(qwen.get(f"/v1/responses/{unstored['id']}"), 404)


# A request as Codex sends it (codex-rs codex-api/src/common.rs, ResponsesApiRequest: model, instructions, input,
# tools, tool_choice "auto", parallel_tool_calls, reasoning, store false, stream true, include
# ["reasoning.encrypted_content"], prompt_cache_key, text.verbosity, client_metadata; hosted and custom tools beside
# function tools). Codex sends no max_output_tokens or sampling values: the server's --max-tokens-limit bounds it.
CODEX_BODY = {
    "model": QWEN2_NAME,
    "instructions": "You are Codex, a coding agent. Use the shell tool to run commands.",
    "input": [{"type": "message", "role": "user",
               "content": [{"type": "input_text", "text": "List the files in the current directory."}]}],
    "tools": [
        {"type": "function", "name": "shell", "description": "Runs a shell command and returns its output.",
         "strict": False,
         "parameters": {"type": "object", "properties": {
             "command": {"type": "array", "items": {"type": "string"}},
             "workdir": {"type": "string"}, "timeout_ms": {"type": "number"}},
             "required": ["command"], "additionalProperties": False}},
        {"type": "custom", "name": "apply_patch", "description": "Edit files with a patch.",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}},
        {"type": "web_search"},
        {"type": "local_shell"},
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "0199a1f0-codex-session",
    "text": {"verbosity": "medium"},
    "client_metadata": {"x-codex-installation-id": "test"},
}


def test_a_codex_request_is_served():
    with running_server(qwen2_args() + ["--max-tokens-limit", "48"], name="responses-codex") as qwen:
        with qwen.client() as http:
            with http.stream("POST", "/v1/responses", json=CODEX_BODY) as response:
                assert response.status_code == 200
                events = []
                name = None
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        name = line[len("event: "):]
                    elif line.startswith("data: "):
                        event = json.loads(line[len("data: "):])
                        assert event["type"] == name
                        EVENT.validate_python(event)
                        events.append(event)
        final = events[-1]["response"]
        assert final["status"] in ("completed", "incomplete")
        assert final["store"] is False
        assert final["usage"]["output_tokens"] <= 48
        warned = " ".join(final["warnings"])
        for left_out in ("custom", "web_search", "local_shell"):
            assert left_out in warned
        for item in final["output"]:
            if item["type"] == "function_call":
                assert item["name"] == "shell"
                jsonschema.validate(json.loads(item["arguments"]), CODEX_BODY["tools"][0]["parameters"])
        assert_error(qwen.get(f"/v1/responses/{final['id']}"), 404)


def test_another_keys_response_is_not_found():
    with running_server(qwen2_args() + ["--api-key", KEYS[0], "--api-key", KEYS[1]], name="responses-keys") as keyed:
        mine = client(keyed, KEYS[0]).responses.create(model=QWEN2_NAME, input="hi", max_output_tokens=2)
        assert client(keyed, KEYS[0]).responses.retrieve(mine.id).id == mine.id
        with pytest.raises(openai.NotFoundError):
            client(keyed, KEYS[1]).responses.retrieve(mine.id)
        with pytest.raises(openai.NotFoundError):
            client(keyed, KEYS[1]).responses.create(model=QWEN2_NAME, input="hi", previous_response_id=mine.id,
                                                   max_output_tokens=2)
        with pytest.raises(openai.AuthenticationError):
            client(keyed, "sk-wrong").responses.create(model=QWEN2_NAME, input="hi", max_output_tokens=2)


BAD_BODIES = [
    ({"model": QWEN2_NAME}, "input"),
    ({"model": QWEN2_NAME, "input": 3}, "input"),
    ({"model": QWEN2_NAME, "input": [3]}, "input[0]"),
    ({"model": QWEN2_NAME, "input": [{"type": "image_generation_call"}]}, "input[0].type"),
    ({"model": QWEN2_NAME, "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input[0].content[0].type"),
    ({"model": QWEN2_NAME, "input": [{"type": "function_call_output", "call_id": "call_nope", "output": "x"}]},
     "input[0].call_id"),
    ({"model": QWEN2_NAME, "input": "hi", "tools": "x"}, "tools"),
    ({"model": QWEN2_NAME, "input": "hi", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": QWEN2_NAME, "input": "hi", "text": {"format": {"type": "xml"}}}, "text.format.type"),
    ({"model": QWEN2_NAME, "input": "hi", "reasoning": {"effort": "maximal"}}, "reasoning.effort"),
    ({"model": QWEN2_NAME, "input": "hi", "max_output_tokens": -1}, "max_output_tokens"),
    ({"model": QWEN2_NAME, "input": "hi", "temperature": "hot"}, "temperature"),
    ({"model": QWEN2_NAME, "input": "hi", "store": "yes"}, "store"),
    ({"model": QWEN2_NAME, "input": "hi", "background": True}, "background"),
    ({"model": QWEN2_NAME, "input": "hi", "previous_response_id": 5}, "previous_response_id"),
    ({"model": QWEN2_NAME, "input": "hi", "tools": [{"type": "web_search"}], "tool_choice": "required"},
     "tool_choice"),
]


@pytest.mark.parametrize("body,param", BAD_BODIES, ids=[param for _, param in BAD_BODIES])
def test_bad_input_is_a_4xx_naming_the_field(qwen, body, param):
    assert_error(qwen.post("/v1/responses", body), 400, param=param)


def test_unknown_ids_and_huge_bodies(qwen):
    assert_error(qwen.get("/v1/responses/resp_doesnotexist"), 404, param="response_id")
    assert_error(qwen.client().delete("/v1/responses/resp_doesnotexist"), 404)
    huge = '{"model": "m", "input": "' + "a" * (33 << 20) + '"}'
    response = qwen.post("/v1/responses", content=huge, headers={"Content-Type": "application/json"})
    assert_error(response, 413)
