#!/usr/bin/env python3
"""Two tempered binaries, the same requests, the same bytes back: a check that a refactor left responses alone.

Starts `BEFORE serve` and `AFTER serve` on the same model (loopback ports, the same flags), sends each kind of
request below to both in the same order, and compares status, content type and body byte for byte after masking
what is random by design: response and tool-call ids (`chatcmpl-…`, `cmpl-…`, `call_…`), `created`, and a seed
the request did not give (`"seed": {"source": "default", "value": N}` in the sampling report). Every generating
request gives its own seed or temperature 0, so its text never depends on a masked value. A streamed answer is
compared as the concatenated SSE bytes. Exit 0 and "N kinds identical" when all match; else a diff per kind and
exit 1. Stdlib only. Usage (bench/response_identity.sh wraps it):

    bench/response_identity.py --before /work/base/build/tempered --after build/tempered [--record]
"""
import argparse
import datetime
import difflib
import hashlib
import http.client
import json
import os
import pathlib
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
SMOLLM2 = ("smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
QWEN_CODER = ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
READY_TIMEOUT_S = 180
REQUEST_TIMEOUT_S = 300

# What differs between two runs of the same binary: replaced by a fixed token before comparing.
MASKS = [
    (re.compile(rb'"id":"(chatcmpl-|cmpl-|call_)[A-Za-z0-9]+"'), rb'"id":"\1<masked>"'),
    (re.compile(rb'"created":[0-9]+'), rb'"created":"<masked>"'),
    (re.compile(rb'"seed":\{"source":"default","value":[0-9]+\}'), rb'"seed":{"source":"default","value":"<masked>"}'),
    (re.compile(rb'"seed":\{"value":[0-9]+,"source":"default"\}'), rb'"seed":{"value":"<masked>","source":"default"}'),
]

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {
        "type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
PERSON_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                 "required": ["name", "age"], "additionalProperties": False}


def chat(model, **fields):
    return ("POST", CHAT, json.dumps({"model": model, "messages": QUESTION, **fields}).encode())


def completion(model, prompt="The three primary colours are", **fields):
    return ("POST", COMPLETIONS, json.dumps({"model": model, "prompt": prompt, **fields}).encode())


def kinds_for(model, tools_model):
    """(kind, model key, [(method, path, body)]): each kind's requests, sent in this order."""
    m, q = model, tools_model
    return [
        ("chat whole", "main", [chat(m, max_tokens=32, seed=11, temperature=0.8)]),
        ("chat streamed", "main", [chat(m, max_tokens=32, seed=11, temperature=0.8, stream=True),
                                   chat(m, max_tokens=16, seed=12, stream=True,
                                        stream_options={"include_usage": True})]),
        ("completions whole", "main", [completion(m, max_tokens=24, seed=21, temperature=0.7)]),
        ("completions streamed", "main", [completion(m, max_tokens=24, seed=21, temperature=0.7, stream=True)]),
        ("n=2", "main", [chat(m, max_tokens=20, seed=31, temperature=1.0, n=2),
                         completion(m, max_tokens=16, seed=32, temperature=1.0, n=2, stream=True)]),
        ("logprobs", "main", [chat(m, max_tokens=12, seed=41, temperature=0.9, logprobs=True, top_logprobs=3),
                              chat(m, max_tokens=8, seed=42, logprobs=True, top_logprobs=2, stream=True),
                              completion(m, max_tokens=8, seed=43, logprobs=3)]),
        ("echo", "main", [completion(m, max_tokens=6, seed=51, echo=True),
                          completion(m, max_tokens=6, seed=52, echo=True, stream=True)]),
        ("stop strings", "main", [chat(m, max_tokens=48, temperature=0, stop=[",", "\n"], seed=61),
                                  completion(m, max_tokens=48, seed=62, temperature=0.5, stop=["."], stream=True)]),
        ("greedy without seed", "main", [chat(m, max_tokens=16, temperature=0),
                                         completion(m, max_tokens=16, temperature=0, stream=True)]),
        ("response_format json_schema", "main", [chat(
            m, max_tokens=48, seed=71, temperature=0.7,
            messages=[{"role": "user", "content": "Invent a person. Reply in JSON."}],
            response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON_SCHEMA}})]),
        ("errors", "main", [
            ("POST", CHAT, b'{"model": "' + m.encode() + b'", "messages": ['),
            chat(m, temperature=3.5, seed=1),
            chat("no-such-model", seed=1),
            completion(m, max_tokens=-1, seed=1),
            ("POST", CHAT, json.dumps({"model": m, "messages": "not a list"}).encode()),
            completion(m, max_tokens=6, seed=52, echo=True, logprobs=2),
        ]),
        ("models and tokenize", "main", [("GET", "/v1/models", None), ("GET", "/v1/models/" + m, None),
                                         ("GET", "/v1/models/no-such-model", None),
                                         ("POST", "/tokenize", json.dumps({"prompt": "Hello, rainbow!"}).encode())]),
        ("tools", "tools", [
            ("POST", CHAT, json.dumps({"model": q, "seed": 81, "temperature": 0, "max_tokens": 64, "tools": [
                WEATHER_TOOL], "messages": [{"role": "user", "content": "What is the weather in Paris?"}]}).encode()),
            ("POST", CHAT, json.dumps({"model": q, "seed": 82, "temperature": 0, "max_tokens": 64, "stream": True,
                                       "tools": [WEATHER_TOOL], "tool_choice": "required",
                                       "messages": [{"role": "user", "content": "Weather in Oslo, in celsius?"}]
                                       }).encode()),
            ("POST", CHAT, json.dumps({"model": q, "seed": 83, "temperature": 0, "max_tokens": 48, "tools": [
                WEATHER_TOOL], "messages": [
                    {"role": "user", "content": "What is the weather in Paris?"},
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 18, \"sky\": \"clear\"}"},
                ]}).encode()),
        ]),
    ]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, binary, model_args, threads, label):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix=f"identity-{label}-", suffix=".log", delete=False)
        self.command = [binary, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--threads", str(threads),
                        *model_args]
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self.log,
                                        stderr=subprocess.STDOUT)

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"{self.command} exited with {self.process.returncode}; log {self.log.name}")
            try:
                if self.request("GET", "/health", None)[0] == 200: return
            except OSError:
                pass
            time.sleep(0.2)
        sys.exit(f"{self.command} not ready after {READY_TIMEOUT_S} s; log {self.log.name}")

    def request(self, method, path, body):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read()
        finally:
            connection.close()

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def masked(body):
    for pattern, replacement in MASKS:
        body = pattern.sub(replacement, body)
    return body


def readable_lines(body):
    """For the diff only: JSON pretty-printed, SSE event by event."""
    text = body.decode("utf-8", errors="replace")
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False).splitlines()
    except ValueError:
        return text.splitlines()


def model_args(short_name, file_name, model_dir):
    path = pathlib.Path(model_dir) / file_name
    if not path.is_file(): sys.exit(f"model {path} is absent (scripts/pull_model.py {short_name})")
    return ["--model", str(path), "--served-model-name", short_name]


def compare_kind(servers, requests, dump=None):
    """(identical, bytes compared, diff lines) over the kind's requests, each sent to before, then after."""
    diff, compared = [], 0
    for number, (method, path, body) in enumerate(requests):
        answers = [server.request(method, path, body) for server in servers]
        (status_a, type_a, body_a), (status_b, type_b, body_b) = answers
        body_a, body_b = masked(body_a), masked(body_b)
        if dump: dump(number, body, status_b, body_b)
        compared += len(body_a)
        if (status_a, type_a, body_a) == (status_b, type_b, body_b): continue
        diff.append(f"request {number}: {method} {path} {body[:200]!r}")
        diff.append(f"  status {status_a} / {status_b}, content type {type_a!r} / {type_b!r}")
        diff += difflib.unified_diff(readable_lines(body_a), readable_lines(body_b), "before", "after", lineterm="")
    return not diff, compared, diff


def binary_origin(binary):
    """The commit of the checkout the binary sits in (its build folder), when it sits in one, and its sha256."""
    digest = hashlib.sha256(pathlib.Path(binary).read_bytes()).hexdigest()[:16]
    result = subprocess.run(["git", "-C", str(pathlib.Path(binary).resolve().parent), "describe", "--always",
                             "--dirty"], capture_output=True, text=True)
    commit = result.stdout.strip() if result.returncode == 0 else "not in a checkout"
    return f"commit {commit}, sha256 {digest}…"


def dumper(folder, kind):
    """Writes each request and the after side's masked answer under `folder` (--dump), to read what was compared."""
    if not folder: return None
    pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^a-z0-9]+", "_", kind)

    def dump(number, request, status, body):
        (pathlib.Path(folder) / f"{stem}_{number}.txt").write_bytes(
            (request or b"") + f"\n--- {status}\n".encode() + body)
    return dump


def run(args):
    models = {"main": model_args(*SMOLLM2, args.model_dir), "tools": model_args(*QWEN_CODER, args.model_dir)}
    kinds = kinds_for(SMOLLM2[0], QWEN_CODER[0])
    if args.kinds: kinds = [kind for kind in kinds if kind[0] in args.kinds.split(",")]
    results = []
    for model_key in ("main", "tools"):
        chosen = [kind for kind in kinds if kind[1] == model_key]
        if not chosen: continue
        servers = [Server(args.before, models[model_key], args.threads, "before"),
                   Server(args.after, models[model_key], args.threads, "after")]
        try:
            for server in servers: server.wait_ready()
            for name, _, requests in chosen:
                identical, compared, diff = compare_kind(servers, requests, dumper(args.dump, name))
                results.append((name, len(requests), compared, identical, diff))
                print(f"{name:30} {len(requests)} requests {compared:7} bytes  {'identical' if identical else 'DIFFER'}",
                      flush=True)
                for line in diff: print("    " + line)
        finally:
            for server in servers: server.stop()
    return results


def write_record(path, args, results, seconds):
    same = sum(1 for result in results if result[3])
    lines = [f"# Response identity, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"`bench/response_identity.py` (see its docstring): {same} of {len(results)} kinds identical "
             f"in {seconds:.0f} s on {platform.node()} ({os.cpu_count()} CPUs), `--threads {args.threads}`.", "",
             f"- before: `{args.before}` ({binary_origin(args.before)})",
             f"- after: `{args.after}` ({binary_origin(args.after)})",
             f"- models: {SMOLLM2[1]} (every kind but tools), {QWEN_CODER[1]} (tools), from `{args.model_dir}`",
             "", "| kind | requests | bytes compared (masked) | result |", "|---|---|---|---|"]
    for name, count, compared, identical, _ in results:
        lines.append(f"| {name} | {count} | {compared} | {'identical' if identical else 'differ'} |")
    for name, _, _, identical, diff in results:
        if not identical: lines += ["", f"## {name}", "", "```", *diff, "```"]
    if args.note: lines += ["", args.note]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")
    print(f"recorded {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the reference tempered binary")
    parser.add_argument("--after", required=True, help="the tempered binary under test")
    parser.add_argument("--model-dir", default=os.path.expanduser("~/.cache/tempered/models"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kinds", help="comma-separated kind names (default: all)")
    parser.add_argument("--record", nargs="?", const="", default=None,
                        help="write a report (default bench/results/response-identity-<UTC date>.md)")
    parser.add_argument("--dump", help="a folder for each request and its masked answer (the after side's)")
    parser.add_argument("--note", default="", help="a paragraph appended to the report")
    args = parser.parse_args()
    started = time.monotonic()
    results = run(args)
    same = sum(1 for result in results if result[3])
    if args.record is not None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        write_record(args.record or REPO / "bench" / "results" / f"response-identity-{stamp}.md", args, results,
                     time.monotonic() - started)
    if same != len(results):
        print(f"{len(results) - same} of {len(results)} kinds differ")
        return 1
    print(f"{same} kinds identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
