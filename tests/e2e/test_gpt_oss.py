"""gpt-oss served end to end on the tiny random-weight GGUF (tiny-gpt-oss-f32 from
scripts/fixtures/make_gpt_oss_models.py: the architecture and harmony's tokens and chat template; random weights,
so behaviour is checked, not text quality): the server reads harmony (its analysis channel as reasoning, its
calls as the harmony family), a multi-turn conversation with a tool call, its result and past reasoning renders
token for token as Python jinja2 renders the model's template with what the chat API documents
(reasoning_content handed over as `thinking`, arguments as an object, reasoning_effort as the template's
variable), and streamed answers equal whole ones. Without the file the tests are skipped, or fail when
TEMPERED_REQUIRE_MODELS=1."""
import datetime
import json
import os
import pathlib

import gguf
import jinja2
import jinja2.ext
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from helpers import running_server, stream_events

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = pathlib.Path(os.environ.get("TEMPERED_TINY_MODEL_DIR", REPO / "build" / "tiny-models")) / "tiny-gpt-oss-f32.gguf"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "reasoning_content": "Need the weather tool.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"},
    {"role": "assistant", "content": "It is 21 degrees."},
    {"role": "user", "content": "And tomorrow?"},
]


@pytest.fixture(scope="module")
def server():
    if not MODEL.exists():
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(f"missing {MODEL} (scripts/fixtures/make_gpt_oss_models.py)")
        pytest.skip(f"{MODEL} not found: scripts/fixtures/make_gpt_oss_models.py writes it")
    with running_server(["--model", str(MODEL), "--served-model-name", "gpt-oss", "--kv-cache-tokens", "2048"],
                        name="gpt-oss") as running:
        yield running


def template_of(path):
    reader = gguf.GGUFReader(str(path))
    return reader.fields["tokenizer.chat_template"].contents()


def jinja2_render(messages, **context):
    """The template rendered as transformers renders chat templates (scripts/fixtures/render_chat_templates.py)."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env.from_string(template_of(MODEL)).render(messages=messages, add_generation_prompt=True, **context)


def as_the_template_gets_them(messages):
    """The chat API's messages as the chat endpoint hands them to a template that reads `thinking`: past
    reasoning under that name, a call's arguments as an object, a call turn's null content as ""."""
    out = []
    for message in messages:
        entry = {k: v for k, v in message.items() if k != "reasoning_content"}
        if "reasoning_content" in message:
            entry["thinking"] = message["reasoning_content"]
        if "tool_calls" in message:
            entry["content"] = entry["content"] or ""
            entry["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                                   for c in message["tool_calls"]]
        out.append(entry)
    return out


def test_the_server_reads_harmony(server):
    log = server.log()
    assert "reasoning: split with the harmony parser" in log, log[-3000:]
    assert "harmony" in [line for line in log.splitlines() if "tool call" in line][0], log[-3000:]


def test_a_conversation_with_a_tool_result_renders_as_jinja2(server):
    for effort in ("low", "high"):
        tokens = server.post("/tokenize", {"messages": CONVERSATION, "tools": TOOLS,
                                           "reasoning_effort": effort}).json()["tokens"]
        expected_text = jinja2_render(as_the_template_gets_them(CONVERSATION), tools=TOOLS, reasoning_effort=effort)
        assert f"Reasoning: {effort}" in expected_text
        assert "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>" in expected_text
        expected = server.post("/tokenize", {"prompt": expected_text, "add_special_tokens": False}).json()["tokens"]
        assert tokens == expected, server.post("/detokenize", {"tokens": tokens}).json()["prompt"]


def test_a_call_turn_with_content_and_reasoning_renders_both_as_its_analysis(server):
    """The template refuses an assistant call message with both content and thinking; tempered hands it the
    reasoning, then the content after a blank line, as that turn's analysis message (rendered while no later
    final answer exists: the template drops the reasoning of answered turns)."""
    messages = [dict(m) for m in CONVERSATION[:4]]
    messages[2]["content"] = "Let me check."
    tokens = server.post("/tokenize", {"messages": messages, "tools": TOOLS}).json()["tokens"]
    text = server.post("/detokenize", {"tokens": tokens}).json()["prompt"]
    assert "<|channel|>analysis<|message|>Need the weather tool.\n\nLet me check.<|end|>" in text


def test_streamed_answers_equal_whole_ones(server):
    client = server.openai()
    for request in ({"messages": [{"role": "user", "content": "Hi"}]},
                    {"messages": CONVERSATION, "tools": TOOLS, "reasoning_effort": "low"}):
        whole = client.chat.completions.create(model="gpt-oss", max_tokens=40, temperature=0, **request)
        status, _, events = stream_events(server.client(), "/v1/chat/completions",
                                          {"model": "gpt-oss", "max_tokens": 40, "temperature": 0, "stream": True,
                                           **request})
        assert status == 200, events
        deltas = [e["choices"][0]["delta"] for e in events if e != "[DONE]" and e.get("choices")]
        message = whole.choices[0].message.model_dump()
        assert "".join(d.get("content") or "" for d in deltas) == (message["content"] or "")
        assert "".join(d.get("reasoning_content") or "" for d in deltas) == (message.get("reasoning_content") or "")
