"""Past reasoning in the history, on the tiny R1 model with bench/templates/reasoning_in_history.jinja (a template
that shows the reasoning of the assistant turns after the last user message, as Qwen3's does):

- chat's reasoning_content (and vLLM's `reasoning`), the Responses API's reasoning items and the Messages API's
  thinking blocks all reach the template: the same conversation renders to the same prompt three ways, and
  without the reasoning to a shorter one;
- an agent turn that sends its reasoning back reuses the generated reasoning from the prefix cache (turn 2's cached
  tokens go past turn 1's prompt);
- --log-level debug writes where each prompt left the prefix cache.
"""
import json

import pytest

from helpers import REPO, running_server
from test_reasoning import MODEL_NAME, tiny_model

TEMPLATE = REPO / "bench" / "templates" / "reasoning_in_history.jinja"
TOOL = {"name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string", "enum": ["a.txt", "b.txt"]}},
                       "required": ["path"], "additionalProperties": False}}
THOUGHT = "I should read a.txt first."


@pytest.fixture(scope="module")
def server():
    args = tiny_model("tiny-r1-qwen2.gguf") + ["--chat-template", str(TEMPLATE), "--log-level", "debug"]
    with running_server(args, name="reasoning-history") as running:
        yield running


def chat_conversation(reasoning_key="reasoning_content", thought=THOUGHT):
    assistant = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]}
    if thought:
        assistant[reasoning_key] = thought
    return [{"role": "user", "content": "What is in a.txt?"}, assistant,
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"}]


def chat_prompt_tokens(server, messages):
    response = server.post("/tokenize", {"model": MODEL_NAME, "messages": messages,
                                         "tools": [{"type": "function", "function": TOOL}]})
    assert response.status_code == 200, response.text
    return response.json()


def test_reasoning_reaches_the_template_under_both_names(server):
    kept = chat_prompt_tokens(server, chat_conversation())
    alias = chat_prompt_tokens(server, chat_conversation("reasoning"))
    dropped = chat_prompt_tokens(server, chat_conversation(thought=None))
    assert kept["tokens"] == alias["tokens"]
    assert kept["count"] > dropped["count"]
    text = server.post("/detokenize", {"model": MODEL_NAME, "tokens": kept["tokens"]}).json()["prompt"]
    assert f"<think>\n{THOUGHT}\n</think>" in text


def test_the_three_apis_render_the_same_prompt(server):
    chat = chat_prompt_tokens(server, chat_conversation())["count"]
    responses_input = [
        {"role": "user", "content": "What is in a.txt?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": THOUGHT}]},
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "a.txt"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "hello"}]
    responses = server.post("/v1/responses", {"model": MODEL_NAME, "input": responses_input, "max_output_tokens": 1,
                                              "store": False, "tools": [{"type": "function", **TOOL}]})
    assert responses.status_code == 200, responses.text
    messages = server.post("/v1/messages/count_tokens", {
        "model": MODEL_NAME,
        "tools": [{"name": TOOL["name"], "description": TOOL["description"], "input_schema": TOOL["parameters"]}],
        "messages": [{"role": "user", "content": "What is in a.txt?"},
                     {"role": "assistant", "content": [
                         {"type": "thinking", "thinking": THOUGHT, "signature": ""},
                         {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.txt"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                                   "content": "hello"}]}]})
    assert messages.status_code == 200, messages.text
    assert responses.json()["usage"]["input_tokens"] == chat == messages.json()["input_tokens"]


def test_an_agent_turn_reuses_its_reasoning_and_the_log_says_where_it_left_the_cache(server):
    messages = [{"role": "user", "content": "Read the files one at a time."}]
    body = {"model": MODEL_NAME, "tools": [{"type": "function", "function": TOOL}], "tool_choice": "required",
            "max_tokens": 88, "thinking_token_budget": 48, "temperature": 0.8, "seed": 3}
    first = server.post("/v1/chat/completions", {**body, "messages": messages}).json()
    message = first["choices"][0]["message"]
    assert message["reasoning_content"] and message["tool_calls"], message
    messages += [{"role": "assistant", "content": "", "tool_calls": message["tool_calls"],
                  "reasoning_content": message["reasoning_content"]},
                 {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "hello"}]
    second = server.post("/v1/chat/completions", {**body, "messages": messages, "seed": 4}).json()
    first_prompt = first["usage"]["prompt_tokens"]
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached > first_prompt, (cached, first_prompt)  # generated reasoning came from the cache
    notes = [line for line in server.log().splitlines() if " debug " in line and "prefix cache:" in line]
    assert any(second["id"] in line and f"{cached} of {second['usage']['prompt_tokens']} prompt tokens reused"
               in line and f"leaves the cache at token {cached}" in line for line in notes), notes[-3:]


def test_a_reasoning_response_streams_its_reasoning_item(server):
    openai = pytest.importorskip("openai")
    pydantic = pytest.importorskip("pydantic")
    from openai.types.responses import Response, ResponseStreamEvent

    event_type = pydantic.TypeAdapter(ResponseStreamEvent)
    client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="x", max_retries=0)
    fields = dict(model=MODEL_NAME, input="What is the capital of France?", max_output_tokens=24,
                  extra_body={"thinking_token_budget": 6, "seed": 11, "temperature": 1.0})
    whole = client.responses.create(**fields)
    Response.model_validate(whole.to_dict())
    assert [item.type for item in whole.output][:2] == ["reasoning", "message"]
    assert whole.usage.output_tokens_details.reasoning_tokens > 0
    assert whole.to_dict()["reasoning_budget"]["forced_end"] == "budget"
    # The random model never ends its answer, so max_output_tokens does: the stream ends with response.incomplete
    # (the SDK's get_final_response wants response.completed), whose response is the final one.
    events = list(client.responses.create(**fields, stream=True))
    for event in events:
        event_type.validate_python(event.to_dict())
    assert events[-1].type == "response.incomplete" and whole.status == "incomplete"
    reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert reasoning == whole.output[0].content[0].text
    assert events[-1].response.output_text == whole.output_text
