#!/usr/bin/env python3
"""Structured output on a real model, over the 67-schema corpus: validity and decode speed.

For each schema in tests/fixtures/grammar/schemas.json, one chat request on Qwen2.5-Coder-0.5B asks for a
value of that schema with `response_format: json_schema` (strict), streamed, at temperature 0.7 with a
seed; the answer must parse and validate with Python `jsonschema` (format checking on). The same prompt is
then sent without response_format, `ignore_eos` on and the same max_tokens, as the unconstrained twin.
Requests go one at a time, so each one's decode rate (tokens after the first / time from first to last
token) is a single stream's. Reports the validity counts, the median decode tok/s of both runs and their
ratio, and the server's own tempered:grammar_mask_seconds (count, mean). Keywords outside the supported
set are sent too: each must be a 400 naming it.

Usage: bench/structured_output.py [--bin build/tempered] [--model qwen2.5-coder-0.5b-instruct] [--max-tokens 128]
       [--limit N] [--out bench/results/structured_output-<UTC>.json]
Needs `openai` and `jsonschema` (tests/requirements.txt) and the model (scripts/pull_model.py).
"""
import argparse
import copy
import json
import os
import platform
import re
import signal
import statistics
import sys
import time
import urllib.error
import urllib.request

import jsonschema
from openai import OpenAI

from local_server import start_server

# Draft 2020-12's checkers (a bare FormatChecker() would also apply draft 3's "time", %H:%M:%S, which
# refuses RFC 3339 times), with RFC 3339 `time` / `date-time` checked by regex: jsonschema checks those
# only when rfc3339-validator is installed.
_TIME = r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
FORMATS = copy.deepcopy(jsonschema.Draft202012Validator.FORMAT_CHECKER)
FORMATS.checks("time")(lambda value: not isinstance(value, str) or re.fullmatch(_TIME, value) is not None)
FORMATS.checks("date-time")(lambda value: not isinstance(value, str) or re.fullmatch(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]" + _TIME, value) is not None)
CORPUS = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "grammar", "schemas.json")
UNSUPPORTED = {"not": {"type": "string", "not": {"const": "a"}},
               "allOf": {"allOf": [{"type": "string"}, {"minLength": 2}]},
               "if": {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}},
               "uniqueItems": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
               "patternProperties": {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}}



def mask_histogram(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    values = {}
    for line in text.splitlines():
        for key in ("tempered:grammar_mask_seconds_sum", "tempered:grammar_mask_seconds_count"):
            if line.startswith(key):
                values[key] = float(line.split()[-1])
    return values


def streamed(client, model, messages, max_tokens, extra):
    start = time.perf_counter()
    stamps, text, usage = [], "", None
    stream = client.chat.completions.create(model=model, messages=messages, max_tokens=max_tokens, stream=True,
                                            stream_options={"include_usage": True}, temperature=0.7, seed=5,
                                            **extra)
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        if chunk.choices and chunk.choices[0].delta.content:
            stamps.append(time.perf_counter())
            text += chunk.choices[0].delta.content
    tokens = usage.completion_tokens if usage else 0
    rate = (tokens - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and tokens > 1 else None
    return text, tokens, rate, time.perf_counter() - start


def unsupported_errors(port, model):
    named = {}
    for keyword, schema in UNSUPPORTED.items():
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": "x"}], "max_tokens": 4,
                           "response_format": {"type": "json_schema",
                                               "json_schema": {"name": "x", "schema": schema}}}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=30)
            named[keyword] = "accepted"
        except urllib.error.HTTPError as error:
            message = json.loads(error.read())["error"]["message"]
            named[keyword] = error.code == 400 and f"'{keyword}'" in message
    return named


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("TEMPERED_BIN", "build/tempered"))
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--limit", type=int, default=0, help="only the first N schemas (0: all)")
    parser.add_argument("--out", default=time.strftime("bench/results/structured_output-%Y-%m-%dT%H%M%SZ.json",
                                                       time.gmtime()))
    args = parser.parse_args()
    corpus = json.load(open(CORPUS))
    if args.limit:
        corpus = corpus[:args.limit]
    process, port = start_server(args.bin, args.model)
    rows = []
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=600)
        for entry in corpus:
            name, schema = entry["name"], entry["schema"]
            messages = [{"role": "user", "content": f"Write one JSON value named {name} that follows this JSON "
                                                    f"Schema:\n{json.dumps(schema)}"}]
            format_ = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
            text, tokens, rate, seconds = streamed(client, args.model, messages, args.max_tokens,
                                                   {"response_format": format_})
            row = {"name": name, "tokens": tokens, "decode_tok_s": rate, "seconds": round(seconds, 3)}
            try:
                jsonschema.validate(json.loads(text), schema, format_checker=FORMATS)
                row["valid"] = True
            except (ValueError, jsonschema.ValidationError) as error:
                row["valid"], row["error"], row["text"] = False, str(error)[:200], text[:300]
            _, free_tokens, free_rate, _ = streamed(client, args.model, messages, args.max_tokens,
                                                    {"extra_body": {"ignore_eos": True}})
            row["free_tokens"], row["free_decode_tok_s"] = free_tokens, free_rate
            rows.append(row)
            print(json.dumps(row), flush=True)
        mask = mask_histogram(port)
        errors = unsupported_errors(port, args.model)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    constrained = [r["decode_tok_s"] for r in rows if r["decode_tok_s"]]
    free = [r["free_decode_tok_s"] for r in rows if r["free_decode_tok_s"]]
    count = mask.get("tempered:grammar_mask_seconds_count", 0)

    def pooled(tokens_key, rate_key):  # all decoded tokens over all decoding time, so long answers weigh more
        spans = [((r[tokens_key] - 1), (r[tokens_key] - 1) / r[rate_key]) for r in rows if r[rate_key]]
        return sum(t for t, _ in spans) / sum(s for _, s in spans)

    report = {
        "model": args.model, "schemas": len(rows), "max_tokens": args.max_tokens,
        "valid": sum(r["valid"] for r in rows), "hit_max_tokens": sum(r["tokens"] >= args.max_tokens for r in rows),
        "median_decode_tok_s": {"constrained": statistics.median(constrained), "free": statistics.median(free),
                                "ratio": statistics.median(constrained) / statistics.median(free)},
        "pooled_decode_tok_s": {"constrained": pooled("tokens", "decode_tok_s"),
                                "free": pooled("free_tokens", "free_decode_tok_s"),
                                "ratio": pooled("tokens", "decode_tok_s") / pooled("free_tokens", "free_decode_tok_s")},
        "grammar_mask": {"count": count,
                         "mean_us": 1e6 * mask.get("tempered:grammar_mask_seconds_sum", 0) / count if count else None},
        "unsupported_keyword_400_naming_it": errors,
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "load_1min_at_end": os.getloadavg()[0]},
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    summary = {k: v for k, v in report.items() if k != "rows"}
    print(json.dumps(summary, indent=1))
    print("wrote", args.out)
    return 0 if report["valid"] == len(rows) and all(v is True for v in errors.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
