"""Property test of the grammar engine against Python's `jsonschema` (an independent validator).

Every string the engine samples as a complete sentence of a schema's grammar must parse as JSON and
validate against the schema; canonical (`json.dumps`) renderings of hand-made valid instances must be
accepted, and unsupported keywords must be refused by name. The engine is reached through
build/tempered_grammar_sample (GRAMMAR_SAMPLE_BIN to override), one JSON request per line.
Needs `jsonschema` importable; skipped otherwise.
"""

import json

import pytest

jsonschema = pytest.importorskip("jsonschema")

from grammar_bridge import engine_binary, run_engine  # noqa: F401 (engine_binary: an autouse fixture)
SAMPLES_PER_SCHEMA = 250

# (schema, valid instances in any layout; they are re-rendered canonically before the check)
SCHEMAS = [
    ({"type": "string"}, ["", "a\"b\\c\n", "é€😀"]),
    ({"type": "integer"}, [0, -7, 123456789]),
    ({"type": "number"}, [0, -1.5, 2e10, 3.25]),
    ({"type": "boolean"}, [True, False]),
    ({"type": "null"}, [None]),
    ({"type": ["integer", "string"]}, [1, "x"]),
    ({"type": "string", "minLength": 2, "maxLength": 4}, ["ab", "abcd", "éé"]),
    ({"type": "integer", "minimum": -20, "maximum": 345}, [-20, 0, 99, 345]),
    ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, [1, 9]),
    ({"type": "integer", "minimum": 1000}, [1000, 99999999]),
    ({"type": "integer", "maximum": -5}, [-5, -600]),
    ({"type": "number", "minimum": -2.5, "maximum": 7.25}, [-2, 0, 6.5, 7]),
    ({"type": "number", "exclusiveMinimum": 0}, [1, 0.5 + 1]),
    ({"enum": ["red", "green", 1, None, [1, 2], {"k": "v"}]}, ["red", None, [1, 2], {"k": "v"}]),
    ({"const": {"a": [True, None]}}, [{"a": [True, None]}]),
    ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
      "required": ["name"], "additionalProperties": False}, [{"name": "x"}, {"name": "y", "age": 3}]),
    ({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"type": "string"}}},
     [{}, {"b": None}, {"a": True, "c": "z"}]),
    ({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
      "additionalProperties": {"type": "string", "maxLength": 3}}, [{"id": 1}, {"id": 2, "k": "abc"}]),
    ({"type": "object"}, [{}, {"a": [1, {"b": None}]}]),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, [{}, {"x": 1, "y": 2}]),
    ({"type": "array", "items": {"type": "integer"}}, [[], [1, 2, 3]]),
    ({"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3}, [["a", "b"], ["a", "b", "c"]]),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False, "minItems": 1},
     [["a"], ["a", 1]]),
    ({"type": "array", "prefixItems": [{"const": "op"}], "items": {"type": "boolean"}, "maxItems": 4},
     [["op"], ["op", True, False, True]]),
    ({"type": "array"}, [[], [1, "a", None, [True]]]),
    ({"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string", "pattern": "^x+$"}]}, [5, 77, "xxx"]),
    ({"oneOf": [{"type": "null"}, {"type": "array", "items": {"type": "number"}, "maxItems": 2}]}, [None, [1.5]]),
    ({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
                                                                   "maxItems": 2}},
                         "required": ["v"], "additionalProperties": False}},
      "$ref": "#/$defs/node"}, [{"v": 1}, {"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]}]),
    ({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
      "required": ["next"], "additionalProperties": False}, [{"next": None}, {"next": {"next": None}}]),
    ({"definitions": {"u": {"type": "string", "format": "uuid"}}, "type": "array", "items": {"$ref": "#/definitions/u"}},
     [["123e4567-e89b-12d3-a456-426614174000"]]),
    ({"type": "string", "pattern": "^[A-Z]{2,3}-\\d{3}$"}, ["AB-123", "XYZ-000"]),
    ({"type": "string", "pattern": "^(ab|cd)"}, ["abyy", "cd", "ab"]),
    ({"type": "string", "pattern": "^v\\d"}, ["v1", "v2 and more"]),
    ({"type": "string", "pattern": "^(foo|ba[rz])+(\\.txt)?$"}, ["foo", "barbaz.txt"]),
    ({"type": "string", "pattern": "^[^\"\\\\]*\\\\?\"?$"}, ["plain", "a\\\""]),
    ({"type": "string", "pattern": "^\\w+\\s\\w+$"}, ["hello world", "a\tb"]),
    ({"type": "string", "pattern": "^.{1,5}$"}, ["a", "é\"\\b"]),
    ({"type": "string", "format": "date"}, ["2024-02-29"]),
    ({"type": "string", "format": "time"}, ["23:59:59Z", "01:02:03.5+05:30"]),
    ({"type": "string", "format": "date-time"}, ["2025-01-01T00:00:00Z"]),
    ({"type": "string", "format": "email"}, ["a.b@example.com"]),
    ({"title": "T", "description": "D", "$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": "c",
      "type": "object", "properties": {"q": {"type": "string", "description": "query", "default": "x",
                                             "examples": ["y"]}}, "required": ["q"]}, [{"q": "z"}]),
]

UNSUPPORTED = [
    ({"type": "integer", "multipleOf": 2}, "multipleOf", ""),
    ({"allOf": [{"type": "string"}]}, "allOf", ""),
    ({"type": "object", "properties": {"a": {"not": {"type": "null"}}}}, "not", "/properties/a"),
    ({"type": "array", "items": {"type": "string", "contentEncoding": "base64"}}, "contentEncoding", "/items"),
    ({"type": "array", "uniqueItems": True}, "uniqueItems", ""),
    ({"type": "string", "format": "ipv4"}, "format", ""),
]



def canonical(value):
    return json.dumps(value, ensure_ascii=False)



def test_every_sampled_sentence_parses_and_validates():
    requests = [{"schema": schema, "samples": SAMPLES_PER_SCHEMA, "seed": i} for i, (schema, _) in enumerate(SCHEMAS)]
    checked = 0
    for (schema, _), answer in zip(SCHEMAS, run_engine(requests)):
        assert answer["ok"], answer
        assert len(answer["samples"]) >= SAMPLES_PER_SCHEMA // 2, (schema, len(answer["samples"]))
        for sample in answer["samples"]:
            value = json.loads(sample)
            jsonschema.validate(value, schema)
            checked += 1
    assert checked >= 10_000


def test_canonical_valid_instances_are_accepted():
    requests = []
    for schema, instances in SCHEMAS:
        for instance in instances:
            jsonschema.validate(instance, schema)  # the test's own instances must be valid
        requests.append({"schema": schema, "check": [canonical(i) for i in instances]})
    for (schema, instances), answer in zip(SCHEMAS, run_engine(requests)):
        assert answer["ok"], answer
        assert answer["accepted"] == [True] * len(instances), (schema, instances, answer["accepted"])


def test_non_canonical_layouts_are_rejected():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    value = {"a": [1, 2]}
    layouts = [json.dumps(value, separators=(",", ":")), json.dumps(value, indent=2), json.dumps(value)]
    (answer,) = run_engine([{"schema": schema, "check": layouts}])
    assert answer["accepted"] == [False, False, True]


def test_unsupported_keywords_are_named_with_their_pointer():
    answers = run_engine([{"schema": schema} for schema, _, _ in UNSUPPORTED])
    for (schema, keyword, pointer), answer in zip(UNSUPPORTED, answers):
        assert not answer["ok"], schema
        assert answer["keyword"] == keyword, answer
        assert answer["pointer"] == pointer, answer
