"""Structured output end to end: `response_format` json_schema and json_object on chat and completions,
through the openai SDK against `tempered serve` on Qwen2.5-Coder-0.5B (and a few on SmolLM2, another
tokenizer). The grammar makes every answer valid by construction, so each one must parse with json.loads
and validate with `jsonschema` (an independent validator), streamed or whole, greedy or sampled.

SCHEMAS is the one list to swap for a larger corpus (tests/fixtures/grammar/ after the merge): each entry
is (id, schema, what to ask for). Strings carry maxLength and arrays maxItems so that a sampled answer
ends well inside max_tokens."""
import concurrent.futures
import copy
import json
import os
import pathlib
import re

import jsonschema
import openai
import pytest

from helpers import (assert_error, chat_body, completion_body, finish_reasons, model_args, running_server, stream_events,
                     stream_text)
from test_qwen2 import QWEN2_NAME, qwen2_args

NAME = {"type": "string", "maxLength": 24}

SCHEMAS = [
    ("flat_object", {"type": "object", "properties": {"name": NAME, "age": {"type": "integer", "minimum": 0,
                                                                          "maximum": 120}},
                     "required": ["name", "age"]}, "a person"),
    ("booleans_and_numbers", {"type": "object", "properties": {"in_stock": {"type": "boolean"},
                                                              "price": {"type": "number", "minimum": 0,
                                                                        "maximum": 1000}},
                              "required": ["in_stock", "price"]}, "a product in a shop"),
    ("enum", {"type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]},
                                               "size": {"enum": ["S", "M", "L", "XL"]}},
              "required": ["colour", "size"]}, "a T-shirt"),
    ("nested_arrays", {"type": "object", "properties": {
        "matrix": {"type": "array", "minItems": 1, "maxItems": 3,
                   "items": {"type": "array", "minItems": 1, "maxItems": 3,
                             "items": {"type": "integer", "minimum": -99, "maximum": 99}}}},
        "required": ["matrix"]}, "a small matrix of integers"),
    ("array_of_objects", {"type": "object", "properties": {
        "items": {"type": "array", "minItems": 1, "maxItems": 3,
                  "items": {"type": "object", "properties": {"sku": NAME, "qty": {"type": "integer", "minimum": 1,
                                                                                  "maximum": 50}},
                            "required": ["sku", "qty"]}}},
        "required": ["items"]}, "a shopping order"),
    ("any_of", {"type": "object", "properties": {
        "id": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 100000}, {"type": "string", "maxLength": 12}]},
        "note": {"anyOf": [NAME, {"type": "null"}]}},
        "required": ["id", "note"]}, "a database record"),
    ("one_of_shapes", {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "integer", "minimum": 1,
                                                                                 "maximum": 100}},
         "required": ["kind", "radius"]},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer", "minimum": 1,
                                                                               "maximum": 100}},
         "required": ["kind", "side"]}]}, "a geometric shape"),
    ("ref_defs", {"$defs": {"point": {"type": "object", "properties": {
        "x": {"type": "integer", "minimum": -100, "maximum": 100},
        "y": {"type": "integer", "minimum": -100, "maximum": 100}}, "required": ["x", "y"]}},
        "type": "object", "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
        "required": ["start", "end"]}, "a line segment"),
    ("recursive_ref", {"$defs": {"node": {"type": "object", "properties": {
        "label": {"type": "string", "maxLength": 8},
        "children": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}}},
        "required": ["label"]}}, "$ref": "#/$defs/node"}, "a tiny tree of labels"),
    ("pattern", {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "phone": {"type": "string", "pattern": "^\\+?[0-9]{2,3} [0-9]{3,4}$"}},
        "required": ["code", "phone"]}, "a flight code and a phone number"),
    ("formats", {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"},
        "id": {"type": "string", "format": "uuid"},
        "at": {"type": "string", "format": "time"},
        "logged": {"type": "string", "format": "date-time"}},
        "required": ["day", "id", "at", "logged"]}, "an appointment"),
    ("optional_properties", {"type": "object", "properties": {
        "title": NAME, "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
        "rating": {"type": "number", "minimum": 0, "maximum": 10}, "tags": {"type": "array", "maxItems": 3,
                                                                          "items": {"type": "string",
                                                                                    "maxLength": 10}}},
        "required": ["title"], "additionalProperties": False}, "a film"),
    ("top_level_array", {"type": "array", "minItems": 2, "maxItems": 4,
                         "items": {"type": "string", "enum": ["apple", "pear", "plum", "fig"]}}, "a list of fruit"),
    ("prefix_items", {"type": "object", "properties": {
        "pair": {"type": "array", "prefixItems": [NAME, {"type": "integer", "minimum": 0, "maximum": 9}]}},
        "required": ["pair"]}, "a name with a digit"),
    ("annotated_sdk_schema", {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Weather",
                              "description": "A weather report", "type": "object", "properties": {
        "city": {"type": "string", "maxLength": 20, "title": "City", "examples": ["Paris"]},
        "celsius": {"type": "integer", "minimum": -60, "maximum": 60, "default": 20}},
        "required": ["city", "celsius"]}, "the weather in a city"),
]

# jsonschema checks "time" and "date-time" only with the rfc3339-validator package installed (its plain
# FormatChecker would apply draft 3's "HH:MM:SS" instead); RFC 3339's full-time / date-time, written here.
_TIME = r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
FORMATS = copy.deepcopy(jsonschema.Draft202012Validator.FORMAT_CHECKER)
FORMATS.checks("time")(lambda value: not isinstance(value, str) or re.fullmatch(_TIME, value) is not None)
FORMATS.checks("date-time")(lambda value: not isinstance(value, str) or re.fullmatch(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]" + _TIME, value) is not None)

# (endpoint, stream, temperature): every schema runs through all four with TEMPERED_LONG_E2E=1 (bench/README.md).
# CI runs each schema through two that together take both endpoints, streamed and whole (greedy for even
# schemas, sampled for odd ones), so every mode still meets half of the schemas at half the requests.
MODES = [("chat", False, 0.0), ("chat", True, 1.0), ("completions", False, 1.0), ("completions", True, 0.0)]
LONG_E2E = os.environ.get("TEMPERED_LONG_E2E") == "1"


def schema_modes(schemas):
    """pytest params (schema_id, schema, topic, endpoint, stream, temperature): the cross product in the long
    run, else the pair of MODES above for each schema."""
    params = []
    for i, (schema_id, schema, topic) in enumerate(schemas):
        modes = MODES if LONG_E2E else [MODES[0], MODES[3]] if i % 2 == 0 else [MODES[1], MODES[2]]
        for endpoint, stream, temperature in modes:
            params.append(pytest.param(schema_id, schema, topic, endpoint, stream, temperature,
                                       id=f"{schema_id}-{endpoint}-{'stream' if stream else 'whole'}-t{temperature:g}"))
    return params

MAX_TOKENS = 320
SEED = 1234


def response_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}


def ask(server, model, endpoint, stream, temperature, request_format, topic, n=1):
    """The answer texts (one per choice) and their finish reasons, through the SDK."""
    client = server.openai()
    common = dict(model=model, max_tokens=MAX_TOKENS, temperature=temperature, seed=SEED, n=n, stream=stream)
    if endpoint == "chat":
        reply = client.chat.completions.create(
            messages=[{"role": "user", "content": f"Answer in JSON only: {topic}."}], response_format=request_format,
            **common)
    else:  # the SDK's legacy completions have no response_format parameter; the server reads it all the same
        reply = client.completions.create(prompt=f"A JSON document describing {topic}:\n",
                                          extra_body={"response_format": request_format}, **common)
    texts, reasons = [""] * n, [None] * n
    for chunk in (reply if stream else [reply]):
        for choice in chunk.choices:
            if endpoint == "chat":
                texts[choice.index] += (choice.delta.content if stream else choice.message.content) or ""
            else:
                texts[choice.index] += choice.text or ""
            reasons[choice.index] = choice.finish_reason or reasons[choice.index]
    return texts, reasons


def assert_valid(text, reason, schema):
    assert reason == "stop", f"finish_reason {reason}: {text!r}"
    instance = json.loads(text)
    jsonschema.validate(instance, schema, format_checker=FORMATS)
    return instance


@pytest.fixture(scope="module")
def qwen():
    with running_server(qwen2_args(), name="structured-qwen2") as server:
        yield server


@pytest.mark.parametrize("schema_id,schema,topic,endpoint,stream,temperature", schema_modes(SCHEMAS))
def test_every_answer_validates_against_its_schema(qwen, schema_id, schema, topic, endpoint, stream, temperature):
    texts, reasons = ask(qwen, QWEN2_NAME, endpoint, stream, temperature, response_format(schema), topic)
    assert_valid(texts[0], reasons[0], schema)


def test_json_object_mode_gives_an_object_on_both_endpoints(qwen):
    for endpoint, stream in (("chat", False), ("completions", True)):
        texts, reasons = ask(qwen, QWEN2_NAME, endpoint, stream, 1.0, {"type": "json_object"}, "a cat")
        assert reasons[0] == "stop", texts[0]
        assert isinstance(json.loads(texts[0]), dict), texts[0]


def test_n_choices_each_follow_the_schema(qwen):
    schema = SCHEMAS[0][1]
    for endpoint in ("chat", "completions"):
        texts, reasons = ask(qwen, QWEN2_NAME, endpoint, False, 1.0, response_format(schema), "a person", n=2)
        for text, reason in zip(texts, reasons):
            assert_valid(text, reason, schema)


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_an_unsupported_keyword_is_a_400_naming_it(qwen, endpoint):
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "uniqueItems": True}}}
    with pytest.raises(openai.BadRequestError) as raised:
        ask(qwen, QWEN2_NAME, endpoint, False, 0.0, response_format(schema), "tags")
    error = raised.value.body
    assert error["param"] == "response_format"
    assert "uniqueItems" in error["message"] and "/properties/tags" in error["message"], error["message"]


def test_missing_fields_are_a_400_naming_them(qwen):
    response = qwen.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "response_format.json_schema.name"


def test_the_response_reports_the_grammar_and_metrics_count_it(qwen):
    before = qwen.metrics()
    body = {"model": QWEN2_NAME, "max_tokens": 64, "temperature": 0, "prompt": "A JSON object:",
            "response_format": {"type": "json_object"}}
    whole = qwen.post("/v1/completions", body).json()
    assert whole["sampling"]["response_format"] == {"value": "json_object", "source": "request"}
    status, _, events = stream_events(qwen.client(), "/v1/completions", {**body, "stream": True})
    assert status == 200
    assert events[0]["sampling"]["response_format"]["value"] == "json_object"
    assert finish_reasons(events) == {0: "stop"}
    assert isinstance(json.loads(stream_text(events, chat=False)), dict)
    after = qwen.metrics()
    counted = after.value("tempered:structured_requests_total", kind="json_object") - before.value(
        "tempered:structured_requests_total", kind="json_object")
    assert counted == 2
    assert after.value("tempered:grammar_mask_seconds_count") > before.value("tempered:grammar_mask_seconds_count")
    assert after.types["tempered:grammar_mask_seconds"] == "histogram"


@pytest.fixture(scope="module")
def smollm():
    with running_server(model_args(), name="structured-smollm2") as server:
        yield server


@pytest.mark.parametrize("endpoint,stream,temperature", MODES,
                         ids=[f"{e}-{'stream' if s else 'whole'}-t{t:g}" for e, s, t in MODES])
@pytest.mark.parametrize("schema_id,schema,topic", [SCHEMAS[i] for i in (0, 2, 7, 9)],
                         ids=[SCHEMAS[i][0] for i in (0, 2, 7, 9)])
def test_another_tokenizer_smollm2(smollm, schema_id, schema, topic, endpoint, stream, temperature):
    texts, reasons = ask(smollm, "smollm2-135m-instruct", endpoint, stream, temperature, response_format(schema),
                         topic)
    assert_valid(texts[0], reasons[0], schema)


def test_a_forced_token_is_reported_in_logprobs_as_the_model_scored_it(qwen):
    """After prose, the model would rather go on than open a JSON object: the grammar forces one (a token
    starting with "{"), and its logprob says how unlikely the model found it, not a certainty of 0."""
    body = {"model": QWEN2_NAME, "max_tokens": 24, "temperature": 0, "logprobs": 3,
            "prompt": "The capital of France is", "response_format": {"type": "json_object"}}
    reply = qwen.post("/v1/completions", body).json()
    choice = reply["choices"][0]
    assert choice["text"].startswith("{"), choice["text"]
    first = choice["logprobs"]["token_logprobs"][0]
    alternatives = choice["logprobs"]["top_logprobs"][0]
    assert choice["logprobs"]["tokens"][0].startswith("{")
    assert first < -1.0, (first, alternatives)
    assert max(alternatives.values()) > first, alternatives  # the model preferred something else
    free = qwen.post("/v1/completions", {**body, "response_format": {"type": "text"}}).json()
    assert not free["choices"][0]["text"].startswith("{")


CORPUS = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" / "grammar" / "schemas.json").read_text())


def test_the_sixty_seven_schema_corpus_validates_on_qwen(qwen):
    """Every corpus schema (tests/fixtures/grammar/schemas.json) once, greedy, whole: each answer parses and
    validates, those that end on their own and those a model that keeps nesting a recursive schema runs to
    max_tokens with (closed early: finish_reason "length", "closed_early" true; engine/grammar_closing.h)."""
    def one(entry):
        texts, reasons = ask(qwen, QWEN2_NAME, "chat", False, 0.0, response_format(entry["schema"]),
                             f"a value named {entry['name']}")
        return texts[0], reasons[0]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, CORPUS))
    cut = 0
    for entry, (text, reason) in zip(CORPUS, answers):
        if reason == "length":
            cut += 1
        assert_valid(text, "stop", entry["schema"])
    print(f"\ncorpus: {len(CORPUS)} schemas, all validated, {cut} closed early at max_tokens")
    assert len(CORPUS) >= 60


# vLLM's structured_outputs, as the upstream mode sends a grammar (GBNF) to a tempered upstream.
YES_NO = 'root ::= answer "."\nanswer ::= "yes" | "no" # one word\n'


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_structured_outputs_takes_a_gbnf_grammar(default_server, path):
    body = (chat_body("Is water wet?") if "chat" in path else completion_body("Is water wet? Answer:"))
    for fields in ({"temperature": 0}, {"temperature": 1.0, "seed": 3, "n": 3}):
        response = default_server.post(path, dict(body, max_tokens=8, structured_outputs={"grammar": YES_NO}, **fields))
        assert response.status_code == 200, response.text
        for choice in response.json()["choices"]:
            text = choice["message"]["content"] if "chat" in path else choice["text"]
            assert text in ("yes.", "no."), text
            assert choice["finish_reason"] == "stop"
    assert response.json()["sampling"]["response_format"]["value"] == "grammar"


def test_structured_outputs_json_follows_the_schema(default_server):
    schema = SCHEMAS[0][1]
    response = default_server.post("/v1/chat/completions", chat_body("A person as JSON.", max_tokens=60, temperature=0,
                                                                     structured_outputs={"json": schema}))
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert_valid(choice["message"]["content"], choice["finish_reason"], schema)


@pytest.mark.parametrize("fields,param,message", [
    ({"structured_outputs": {"grammar": "root ::= root \"a\" | \"b\""}}, "structured_outputs.grammar",
     "left recursion"),
    ({"structured_outputs": {"grammar": "root ::= undefined"}}, "structured_outputs.grammar", "never defined"),
    ({"structured_outputs": {"regex": "a+"}}, "structured_outputs.regex", "not supported"),
    ({"structured_outputs": {"grammar": YES_NO, "json": {}}}, "structured_outputs", "exactly one"),
    ({"structured_outputs": {"grammar": YES_NO}, "response_format": {"type": "json_object"}}, "structured_outputs",
     "not both"),
])
def test_a_bad_structured_outputs_is_a_400_naming_it(default_server, fields, param, message):
    assert_error(default_server.post("/v1/chat/completions", chat_body(max_tokens=4, **fields)), 400, param=param,
                 message_contains=message)
