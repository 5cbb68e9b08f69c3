"""Property tests of the grammar engine on the schema corpus (tests/fixtures/grammar/schemas.json),
against independent references: Python's `jsonschema` (with format checking) and `hypothesis-jsonschema`.

(a) Every string the engine samples as a complete sentence of a schema's grammar (random byte walks in
    build/tempered_grammar_sample) parses as JSON and validates.
(b) Every valid instance hypothesis-jsonschema generates, written in the engine's canonical layout
    (json.dumps, properties reordered into schema order), is accepted, except where it falls outside a
    restriction src/grammar/json_schema.h (or regex.h) documents; those are counted per reason and the
    counts printed. Generated instances that do not validate are not the engine's business and are
    dropped (also counted): the generator predates draft 2020-12 and does not know every format.

Size: GRAMMAR_PROPERTY_CASES (default 25) sampled strings and as many generated instances per schema;
the default keeps CI under a minute. The full run (>= 10k cases of each kind) is recorded in
bench/results/grammar_properties-*.txt with its command.
"""

import collections
import json
import os
import re
import warnings

import pytest

jsonschema = pytest.importorskip("jsonschema")
hypothesis = pytest.importorskip("hypothesis")
hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from grammar_bridge import engine_binary, run_engine  # noqa: F401 (engine_binary: an autouse fixture)
CORPUS_PATH = os.path.join(os.path.dirname(__file__), "..", "fixtures", "grammar", "schemas.json")
CASES = int(os.environ.get("GRAMMAR_PROPERTY_CASES", "25"))
CORPUS = json.load(open(CORPUS_PATH, encoding="utf-8"))
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER



def validator(schema):
    return jsonschema.Draft202012Validator(schema, format_checker=FORMATS)



def test_corpus_has_sixty_schemas_that_all_compile():
    assert len(CORPUS) >= 60
    assert len({entry["name"] for entry in CORPUS}) == len(CORPUS)
    for entry, answer in zip(CORPUS, run_engine([{"schema": e["schema"], "check": []} for e in CORPUS])):
        jsonschema.Draft202012Validator.check_schema(entry["schema"])
        assert answer["ok"], (entry["name"], answer)


def test_every_sampled_sentence_parses_and_validates():
    requests = [{"schema": e["schema"], "samples": CASES, "seed": i} for i, e in enumerate(CORPUS)]
    checked = 0
    for entry, answer in zip(CORPUS, run_engine(requests)):
        assert answer["ok"], answer
        assert len(answer["samples"]) >= CASES // 2, (entry["name"], len(answer["samples"]))
        check = validator(entry["schema"])
        for sample in answer["samples"]:
            value = json.loads(sample)
            errors = [error.message for error in check.iter_errors(value)]
            assert not errors, (entry["name"], sample, errors)
            checked += 1
    print(f"\n(a) {checked} sampled sentences over {len(CORPUS)} schemas parse and validate")
    assert checked >= CASES * len(CORPUS) // 2


# ---- (b): generated instances in the canonical layout ----

class Walk:
    """Resolves $ref against one root schema and picks, for a value, the subschemas it is checked against."""

    def __init__(self, root):
        self.root = root
        self.check = validator(root)

    def resolve(self, schema):
        for _ in range(16):
            if not isinstance(schema, dict) or "$ref" not in schema:
                return schema
            ref = schema["$ref"]
            schema = self.root
            for part in ref[2:].split("/") if ref != "#" else []:
                schema = schema[part.replace("~1", "/").replace("~0", "~")]
        return schema

    def valid(self, value, schema):
        return self.check.evolve(schema=schema).is_valid(value)

    def branches(self, value, schema):
        """The resolved non-combinator schemas `value` meets, following anyOf/oneOf into every valid branch."""
        schema = self.resolve(schema)
        if not isinstance(schema, dict):
            return [schema]
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                found = []
                for option in schema[combinator]:
                    if self.valid(value, option):
                        found.extend(self.branches(value, option))
                return found
        return [schema]

    def canonical(self, value, schema):
        """`value` with object members in the order the engine writes them (the first valid branch's)."""
        options = self.branches(value, schema)
        schema = options[0] if options else True
        if not isinstance(schema, dict):
            return value
        for literal in [schema["const"]] if "const" in schema else schema.get("enum", []):
            if literal == value:
                return literal  # written as the schema spells it
        if isinstance(value, dict):
            properties = schema.get("properties", {})
            declared = list(properties) + sorted(set(schema.get("required", [])) - set(properties))
            ordered = {}
            for name in declared:
                if name in value:
                    ordered[name] = self.canonical(value[name], properties.get(name, True))
            extra_schema = schema.get("additionalProperties", True)
            for name, member in value.items():
                if name not in ordered:
                    ordered[name] = self.canonical(member, extra_schema)
            return ordered
        if isinstance(value, list):
            prefix = schema.get("prefixItems", [])
            rest = schema.get("items", True)
            return [self.canonical(item, prefix[i] if i < len(prefix) else rest) for i, item in enumerate(value)]
        return value

    def leaves(self, value, schema):
        """(value, schema) for every array, object and scalar of `value` with each resolved schema it meets."""
        for option in self.branches(value, schema):
            if not isinstance(option, dict):
                continue
            yield value, option
            if isinstance(value, dict):
                properties = option.get("properties", {})
                for name, member in value.items():
                    yield from self.leaves(member, properties.get(name, option.get("additionalProperties", True)))
            elif isinstance(value, list):
                prefix = option.get("prefixItems", [])
                for i, item in enumerate(value):
                    yield from self.leaves(item, prefix[i] if i < len(prefix) else option.get("items", True))


# Formats as the engine writes them (json_schema.cpp kFormats): a documented subset of the RFCs.
ENGINE_FORMATS = {
    "email": r"[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+",
    "time": r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)",
}
ENGINE_FORMATS["date-time"] = r"\d{4}-\d\d-\d\dT" + ENGINE_FORMATS["time"]


KIND_KEYWORDS = {"object": ("properties", "required", "additionalProperties"),
                 "array": ("items", "prefixItems", "minItems", "maxItems"),
                 "string": ("minLength", "maxLength", "pattern", "format"),
                 "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")}


def kind_of(value):
    if isinstance(value, bool) or value is None:
        return "literal"
    return {dict: "object", list: "array", str: "string", int: "number", float: "number"}[type(value)]


def implied_kind(schema):
    """For a schema without type/const/enum/anyOf: the kind its first group of keywords implies."""
    if any(k in schema for k in ("type", "const", "enum", "anyOf", "oneOf", "$ref")):
        return None
    for kind, keywords in KIND_KEYWORDS.items():
        if any(k in schema for k in keywords):
            return {kind}
    return None


DIGIT_CAPS = "number beyond the digit caps (json_schema.h: 19 integer, 16 fraction, 3 exponent digits)"


def beyond_digit_caps(value):
    """A number anywhere in `value` with more digits than the engine writes."""
    if isinstance(value, dict):
        return any(beyond_digit_caps(member) for member in value.values())
    if isinstance(value, list):
        return any(beyond_digit_caps(item) for item in value)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    digits = re.fullmatch(r"-?(\d+)(?:\.(\d+))?(?:[eE][+-]?(\d+))?", json.dumps(value))
    return bool(digits) and (len(digits.group(1)) > 19 or len(digits.group(2) or "") > 16
                             or len(digits.group(3) or "") > 3)


def documented_restriction(value, leaf_schema):
    """The documented restriction that keeps the engine from writing this scalar this way, if any."""
    implied = implied_kind(leaf_schema)
    if implied and kind_of(value) not in implied:
        return "untyped schema whose keywords imply another kind of value (json_schema.h: no type)"
    if isinstance(value, list):
        if "prefixItems" in leaf_schema and "items" not in leaf_schema and len(value) > len(leaf_schema["prefixItems"]):
            return "items after prefixItems without `items` (json_schema.h: the tuple is closed)"
        return None
    if isinstance(value, dict):
        declared = set(leaf_schema.get("properties", {})) | set(leaf_schema.get("required", []))
        if "properties" in leaf_schema and "additionalProperties" not in leaf_schema and set(value) - declared:
            return "extra member without additionalProperties (json_schema.h: absent means none)"
        return None
    text = json.dumps(value, ensure_ascii=False)
    types = leaf_schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    bounded = any(k in leaf_schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
    if isinstance(value, float) and "integer" in types and "number" not in types:
        return "integer written with a fraction (json_schema.h: integers without fraction or exponent)"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "number" in types and bounded:
        if re.search(r"[.eE]", text) or text.startswith("-0"):
            return "bounded number with exponent or fraction (json_schema.h: bounded numbers)"
    if isinstance(value, str) and "pattern" in leaf_schema:
        if not re.search(leaf_schema["pattern"], value, re.ASCII):
            return "pattern class matched a non-ASCII character (regex.h: \\d \\w \\s are ASCII)"
        if any(ord(c) < 0x20 and c != "\t" for c in value):
            return "pattern wildcard matched a control character (regex.h)"
    if isinstance(value, str) and leaf_schema.get("format") in ENGINE_FORMATS:
        if not re.fullmatch(ENGINE_FORMATS[leaf_schema["format"]], value, re.ASCII):
            return f"format {leaf_schema['format']} outside the engine's regex (json_schema.h: formats)"
    return None


def generator_schema(schema, root=None, depth=0):
    """The schema in the draft-7 terms hypothesis-jsonschema knows: prefixItems as array `items`, and
    $refs inlined with recursion cut at a few levels (a deeper ref becomes `false`, so every instance
    is still valid against the original)."""
    root = schema if root is None else root
    if isinstance(schema, list):
        return [generator_schema(s, root, depth) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        if depth >= 3:
            return False
        return generator_schema(Walk(root).resolve(schema), root, depth + 1)
    out = {k: generator_schema(v, root, depth) if k not in ("const", "enum", "$defs", "definitions") else v
           for k, v in schema.items() if k not in ("$defs", "definitions")}
    if "prefixItems" in out:
        out["additionalItems"] = out.pop("items", True)
        out["items"] = out.pop("prefixItems")
    return out


def generated_instances(schema, count, seed_value):
    found = []
    strategy = hypothesis_jsonschema.from_schema(
        generator_schema(schema), custom_formats={"uuid": st.uuids().map(str)})

    @seed(seed_value)
    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.generate])
    @given(strategy)
    def collect(value):
        found.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    return found


def test_generated_valid_instances_in_canonical_layout_are_accepted():
    counts = collections.Counter()
    filtered = collections.Counter()
    requests, pending = [], []
    for i, entry in enumerate(CORPUS):
        walk = Walk(entry["schema"])
        try:
            instances = generated_instances(entry["schema"], CASES, i)
        except Exception as error:  # the generator's own limits (e.g. an unsatisfiable draft-7 reading)
            counts[f"schema the generator cannot handle: {type(error).__name__}"] += 1
            continue
        texts = []
        for value in instances:
            if not walk.check.is_valid(value):
                counts["generated instance not valid (dropped)"] += 1
                continue
            texts.append(json.dumps(walk.canonical(value, entry["schema"]), ensure_ascii=False))
            pending.append((entry, walk, value, texts[-1]))
        requests.append({"schema": entry["schema"], "check": texts})
    accepted = [flag for answer in run_engine(requests) for flag in answer["accepted"]]
    assert len(accepted) == len(pending)
    failures = []
    for (entry, walk, value, text), ok in zip(pending, accepted):
        if ok:
            counts["accepted"] += 1
            continue
        reasons = {documented_restriction(v, s) for v, s in walk.leaves(value, entry["schema"])} - {None}
        if beyond_digit_caps(value):
            reasons.add(DIGIT_CAPS)
        if reasons:
            filtered[sorted(reasons)[0]] += 1
        else:
            failures.append((entry["name"], text))
    print(f"\n(b) {counts['accepted']} generated instances accepted; {dict(counts)}")
    for reason, n in filtered.most_common():
        print(f"    filtered {n}: {reason}")
    assert not failures, failures[:10]
    assert counts["accepted"] >= CASES * len(CORPUS) // 4
