"""Structured answers that always close (engine/grammar_closing.h), on Qwen2.5-Coder-0.5B-Instruct.

Asked for "a small tree of names" with a recursive schema at temperature 0, the model nests one level per name
until max_tokens: the answer is closed along the grammar's shortest way to a complete sentence instead of being
cut inside a string, so it parses and validates, with finish_reason "length" and "closed_early": true. The same
for every recursive schema of the grammar corpus at 64, 128 and 200 tokens, on chat (whole and streamed) and
completions, and for a tool call's arguments under --tool-call-validation constrain. A max_tokens that cannot
hold the shortest sentence at all is a 400 naming it.
"""
import concurrent.futures
import json

import pytest

from helpers import running_server
from test_qwen2 import QWEN2_NAME, qwen2_args
from test_structured_output import CORPUS

jsonschema = pytest.importorskip("jsonschema")

TREE = {"type": "object", "properties": {"name": {"type": "string"},
                                         "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name", "children"], "additionalProperties": False}
RECURSIVE = [entry for entry in CORPUS if "$ref" in json.dumps(entry["schema"])]


@pytest.fixture(scope="module")
def qwen():
    with running_server(qwen2_args(), name="grammar-closing") as server:
        yield server


def response_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


def chat(server, schema, max_tokens, question="Write a small tree of names as JSON.", stream=False):
    """(text, finish_reason, closed_early); None when max_tokens cannot hold the shortest answer (a 400)."""
    body = {"model": QWEN2_NAME, "messages": [{"role": "user", "content": question}], "temperature": 0,
            "max_tokens": max_tokens, "response_format": response_format(schema)}
    if not stream:
        response = server.post("/v1/chat/completions", body)
        if response.status_code == 400 and response.json()["error"]["param"] == "max_tokens":
            return None
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        return choice["message"]["content"], choice["finish_reason"], choice.get("closed_early", False)
    text, reason, closed = "", None, False
    with server.client() as http:
        with http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                for choice in json.loads(line[6:])["choices"]:
                    text += choice["delta"].get("content") or ""
                    reason = choice["finish_reason"] or reason
                    closed = closed or choice.get("closed_early", False)
    return text, reason, closed


def check(text, reason, closed, schema):
    jsonschema.validate(json.loads(text), schema)
    assert reason in ("stop", "length")
    assert closed == (reason == "length"), (reason, closed, text[-80:])


@pytest.mark.parametrize("max_tokens", [24, 64, 128, 200])
def test_the_tree_of_names_parses_at_every_limit(qwen, max_tokens):
    whole = chat(qwen, TREE, max_tokens)
    check(*whole, TREE)
    assert chat(qwen, TREE, max_tokens, stream=True) == whole


def test_every_recursive_corpus_schema_closes(qwen):
    """Run a few at a time: the server batches them."""
    cases = [(entry, max_tokens) for entry in RECURSIVE for max_tokens in (64, 128, 200)]

    def one(case):
        entry, max_tokens = case
        return chat(qwen, entry["schema"], max_tokens, f"Answer in JSON only: a value named {entry['name']}.")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, cases))
    answered = {}
    for (entry, max_tokens), answer in zip(cases, answers):
        if answer is None:  # the limit cannot hold the schema's shortest answer: refused up front
            continue
        check(*answer, entry["schema"])
        answered[entry["name"]] = answered.get(entry["name"], 0) + 1
    assert set(answered) == {entry["name"] for entry in RECURSIVE}, answered


def test_completions_close_too(qwen):
    response = qwen.post("/v1/completions", {"model": QWEN2_NAME, "prompt": "A family tree as JSON:\n",
                                             "temperature": 0, "max_tokens": 40,
                                             "response_format": response_format(TREE)})
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    check(choice["text"], choice["finish_reason"], choice.get("closed_early", False), TREE)


def test_tool_arguments_close_under_constrain(qwen):
    tool = {"type": "function", "function": {"name": "save_tree", "description": "Save a tree of names.",
                                             "parameters": TREE}}
    for max_tokens in (40, 80):
        response = qwen.post("/v1/chat/completions", {
            "model": QWEN2_NAME, "temperature": 0, "max_tokens": max_tokens, "tools": [tool],
            "tool_choice": "required",
            "messages": [{"role": "user", "content": "Save a deep family tree of at least ten names."}]})
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        calls = choice["message"].get("tool_calls") or []
        assert calls and not choice.get("tool_call_violations"), choice
        for call in calls:
            jsonschema.validate(json.loads(call["function"]["arguments"]), TREE)


def test_a_limit_below_the_shortest_answer_is_a_400(qwen):
    response = qwen.post("/v1/chat/completions", {
        "model": QWEN2_NAME, "max_tokens": 3, "messages": [{"role": "user", "content": "x"}],
        "response_format": response_format(TREE)})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "max_tokens" and "shortest" in error["message"]
