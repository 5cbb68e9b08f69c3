#!/usr/bin/env python3
"""Batch-1 decode speed with speculation on and off, per kind of answer, on one model in one run.

Sets of chat requests (greedy, streamed, one at a time):
  code_edit   a real function from this repository, to be rewritten with one small change (the answer copies it)
  tool_call   a tool whose arguments copy text given in the message
  json        a record described in prose, to be returned as JSON (response_format json_object)
  open_chat   open questions (little to copy: speculation must not slow these)
Each prompt goes to every server in turn (the order alternating from prompt to prompt, so drift hits all alike).
Per request: decode tokens per second = completion tokens / (time to the last token), the prompt already in the
prefix cache (a 1-token request computes it first), so the time is the answer's decode. Reports
per set and server the median over prompts and the ratio on/off; checks that the greedy answers are identical
with speculation on and off (the speculation must change nothing). Measures; asserts only the identity.

Servers: tempered with `--speculative off` and `--speculative ngram` (both always); with --draft-model M, tempered
with `--speculative draft --draft-model M` too; with --llama-server BIN, llama-server without and with
`--spec-type ngram-simple` too (llama.cpp's own prompt-lookup speculation).

Usage: bench/speculative_decode.py --model GGUF [--tempered build/tempered] [--llama-server BIN] [--draft-model M]
       [--prompts-per-set 8] [--max-tokens 256] [--sets code_edit,tool_call,json,open_chat] [--out FILE.json]
"""
import argparse
import ast
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_server import free_port, start_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

EDITS = ["Rename every local variable called {name} to {name}_value.",
         "Add a one-line docstring at the top saying what it returns.",
         "Add type hints to its parameters.",
         "Replace the first double-quoted string literal with a single-quoted one."]


def repository_functions(count):
    """`count` top-level Python functions of 8-30 lines from bench/ and scripts/, in a fixed order."""
    found = []
    for path in sorted(list((REPO / "bench").glob("*.py")) + list((REPO / "scripts").rglob("*.py"))):
        source = path.read_text()
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and 8 <= node.end_lineno - node.lineno + 1 <= 30:
                names = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
                found.append((ast.get_source_segment(source, node), names[0] if names else "result"))
    step = max(1, len(found) // count)
    return found[::step][:count]


def code_edit_requests(count):
    out = []
    for i, (code, name) in enumerate(repository_functions(count)):
        edit = EDITS[i % len(EDITS)].format(name=name)
        out.append({"messages": [{"role": "user", "content": f"{edit} Answer with the whole function only, in a "
                                  f"python code block.\n\n```python\n{code}\n```"}]})
    return out


TICKETS = [
    ("Checkout page times out", "When a customer with more than 20 items in the cart presses Pay, the checkout page "
     "spins for 30 seconds and then shows 'Gateway Timeout'. It started after the release on Monday; smaller carts "
     "are fine."),
    ("Password reset email never arrives", "Users on the corporate plan request a password reset and the email never "
     "arrives. The mail log shows the message rejected by the recipient server with 'SPF check failed'."),
    ("Dark mode makes charts unreadable", "In dark mode the line charts on the analytics dashboard draw black lines "
     "on a dark grey background, so the data cannot be read. Light mode is fine."),
    ("Export to CSV drops the last row", "Exporting any report to CSV leaves out its last row: a report with 10 rows "
     "gives a file with 9. The PDF export of the same report has all 10."),
    ("Search ignores accented letters", "Searching for 'Jose' does not find customers named 'José', and searching for "
     "'Muller' does not find 'Müller'. Customers expect both to match."),
    ("Invoice totals off by one cent", "Invoices with three or more discounted lines show a total one cent higher "
     "than the sum of the lines, because each line is rounded before summing."),
    ("Mobile app crashes on rotate", "The Android app crashes when the phone is rotated while the camera screen is "
     "open. The crash report points at the preview surface being released twice."),
    ("Timezone wrong in reminders", "Reminder emails show meeting times in UTC instead of the user's own timezone, "
     "so a 9:00 meeting in Berlin appears as 8:00 in winter and 7:00 in summer."),
]

TICKET_TOOL = {"type": "function", "function": {
    "name": "create_ticket", "description": "File a bug ticket in the tracker.",
    "parameters": {"type": "object", "properties": {
        "title": {"type": "string"}, "description": {"type": "string"},
        "priority": {"type": "string", "enum": ["low", "medium", "high"]}},
        "required": ["title", "description", "priority"]}}}


def tool_call_requests(count):
    return [{"messages": [{"role": "user", "content": f"File a high priority ticket titled \"{title}\" with this "
                           f"description, word for word: {description}"}],
             "tools": [TICKET_TOOL]} for title, description in TICKETS[:count]]


PEOPLE = [
    "Maria Gonzalez lives at 14 Harbour Street, Portsmouth PO1 3AX. Her phone number is +44 23 9283 1145 and her "
    "email is maria.gonzalez@example.org. She joined on 3 March 2021 and prefers to be contacted by email.",
    "Kenji Watanabe, 2-11-3 Meguro, Tokyo 153-0063, phone +81 3 5721 0098, email kenji.w@example.jp, joined "
    "17 August 2019, prefers phone calls in the morning.",
    "Amara Okafor lives at 7 Unity Close, Lagos. Phone +234 803 555 0172, email amara.okafor@example.ng. Member since "
    "28 January 2022; prefers text messages.",
    "Lukas Becker, Schillerstrasse 45, 10627 Berlin, phone +49 30 3198 7724, email lukas.becker@example.de, joined "
    "9 November 2020, contact by post only.",
    "Sofia Rossi lives at Via Garibaldi 12, 16124 Genova. Phone +39 010 246 8135, email sofia.rossi@example.it; she "
    "joined on 21 June 2018 and prefers email.",
    "Daniel Cohen, 88 Rothschild Boulevard, Tel Aviv 6688112, phone +972 3 555 0199, email dcohen@example.co.il, "
    "joined 5 May 2023, prefers WhatsApp.",
    "Priya Raman lives at 22 Lake View Road, Chennai 600034. Phone +91 44 2817 3366, email priya.raman@example.in. "
    "She joined on 12 December 2017 and prefers email in the evening.",
    "Olivia Brown, 310 Maple Avenue, Toronto ON M4W 2K1, phone +1 416 555 0143, email olivia.brown@example.ca, "
    "joined 30 September 2021, prefers phone calls.",
]


def json_requests(count):
    return [{"messages": [{"role": "user", "content": "Return this customer record as a JSON object with the keys "
                           "name, address, phone, email, joined and contact_preference, copying the values exactly "
                           f"as written:\n\n{person}"}],
             "response_format": {"type": "json_object"}} for person in PEOPLE[:count]]


QUESTIONS = ["Why is the sky blue? Explain it to a curious ten-year-old.",
             "What are three good habits for writing maintainable code?",
             "Write a short poem about a lighthouse in winter.",
             "What is the difference between a process and a thread?",
             "Give me a recipe idea for a quick vegetarian dinner.",
             "How does a hash table handle collisions?",
             "Tell a short story about a robot who learns to paint.",
             "What should I consider when choosing a database for a small web app?"]


def open_chat_requests(count):
    return [{"messages": [{"role": "user", "content": q}]} for q in QUESTIONS[:count]]


SETS = {"code_edit": code_edit_requests, "tool_call": tool_call_requests, "json": json_requests,
        "open_chat": open_chat_requests}


def post(port, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    return connection, connection.getresponse()


def stream_chat(port, body):
    """(answer text and tool calls (name, arguments) as one string, completion tokens, decode tokens/s) of one
    streamed request. The prompt is computed first by a 1-token request, so the prefix cache holds it and the
    timed request is all decode: tempered holds a tool call back until it is whole (to validate it), so the
    time between a call's first and last token cannot be seen from outside, but the time to the last event can."""
    warm = {key: value for key, value in body.items() if key != "stream_options"}
    connection, response = post(port, {**warm, "max_tokens": 1, "stream": False})
    response.read()
    connection.close()
    start = time.perf_counter()
    connection, response = post(port, body)
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
    last = None
    pieces, usage = [], None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if event.get("usage"):
            usage = event["usage"]
        for choice in event.get("choices", []):
            delta = choice.get("delta", {})
            calls = [(c.get("function") or {}) for c in delta.get("tool_calls") or []]
            text = (delta.get("content") or "") + "".join(f"{c.get('name') or ''}{c.get('arguments') or ''}" for c in calls)
            if text:
                last = time.perf_counter()
                pieces.append(text)
    connection.close()
    tokens = usage["completion_tokens"] if usage else 0
    speed = tokens / (last - start) if last and tokens > 0 else float("nan")
    return "".join(pieces), tokens, speed


def served_model(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/v1/models")
    return json.loads(connection.getresponse().read())["data"][0]["id"]


def request_body(base, model, max_tokens):
    return {**base, "model": model, "temperature": 0, "max_tokens": max_tokens, "stream": True,
            "stream_options": {"include_usage": True}}


def spec_counters(port):
    """The vLLM spec-decode counters of a tempered server (0 where none was verified)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    return {key: sum(float(line.split()[-1]) for line in text.splitlines()
                     if line.startswith((f"vllm:spec_decode_num_{key}_total ", f"vllm:spec_decode_num_{key}_total{{")))
            for key in ("draft_tokens", "accepted_tokens")}


def start_llama_server(binary, model, extra, log):
    port = free_port()
    env = {**os.environ, "LD_LIBRARY_PATH": str(Path(binary).parent)}
    process = subprocess.Popen([binary, "-m", model, "--port", str(port), "-t", "2", "-tb", "2", "-np", "1", "-c",
                                "4096", "--jinja", "--no-repack", *extra], stdout=log, stderr=log, env=env)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return process, port
        except OSError:
            pass
        time.sleep(0.2)
    process.kill()
    sys.exit("llama-server did not start")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--tempered", default=str(REPO / "build" / "tempered"))
    parser.add_argument("--llama-server", help="llama-server binary (its speculation too)")
    parser.add_argument("--prompts-per-set", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--tempered-args", default="", help="more flags for every tempered server")
    parser.add_argument("--draft-model", help="a tempered server drafting with this model too")
    parser.add_argument("--out")
    args = parser.parse_args()

    log = open(os.devnull, "w")
    servers = {}
    extra = args.tempered_args.split()
    servers["tempered_off"] = start_server(args.tempered, args.model, ["--threads", "2", "--speculative", "off", *extra])
    servers["tempered_ngram"] = start_server(args.tempered, args.model, ["--threads", "2", "--speculative", "ngram", *extra])
    if args.draft_model:
        servers["tempered_draft"] = start_server(args.tempered, args.model, ["--threads", "2", "--speculative", "draft",
                                                                             "--draft-model", args.draft_model, *extra])
    speculating = [name for name in servers if name.startswith("tempered_") and name != "tempered_off"]
    if args.llama_server:
        servers["llama_off"] = start_llama_server(args.llama_server, args.model, [], log)
        servers["llama_ngram"] = start_llama_server(args.llama_server, args.model, ["--spec-type", "ngram-simple"], log)
    names = list(servers)
    results = {"model": args.model, "draft_model": args.draft_model, "max_tokens": args.max_tokens, "sets": {}}
    try:
        for set_name in args.sets.split(","):
            rows = []
            for i, base in enumerate(SETS[set_name](args.prompts_per_set)):
                order = names if i % 2 == 0 else names[::-1]
                row = {"prompt": base}
                for name in order:
                    port = servers[name][1]
                    text, tokens, speed = stream_chat(port, request_body(base, served_model(port), args.max_tokens))
                    row[name] = {"text": text, "tokens": tokens, "decode_tok_s": speed}
                rows.append(row)
                same = all(row["tempered_off"]["text"] == row[n]["text"] for n in speculating)
                print(set_name, i, " ".join(f"{n} {row[n]['decode_tok_s']:.1f} ({row[n]['tokens']})" for n in names),
                      "same" if same else "DIFFERENT", flush=True)
            summary = {n: statistics.median(r[n]["decode_tok_s"] for r in rows) for n in names}
            identical = sum(all(r["tempered_off"]["text"] == r[n]["text"] for n in speculating) for r in rows)
            results["sets"][set_name] = {"rows": rows, "median_decode_tok_s": summary, "identical": identical}
        results["spec_counters"] = {name: spec_counters(servers[name][1]) for name in speculating}
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait()
    drafting = "tempered_draft" in servers
    print("\n| set | tempered off | tempered ngram | ratio |" + (" tempered draft | ratio |" if drafting else "") +
          (" llama off | llama ngram | ratio |" if args.llama_server else ""))
    print("|---|---:|---:|---:|" + ("---:|---:|" if drafting else "") + ("---:|---:|---:|" if args.llama_server else ""))
    for set_name, r in results["sets"].items():
        m = r["median_decode_tok_s"]
        line = f"| {set_name} ({r['identical']}/{len(r['rows'])} identical) | {m['tempered_off']:.1f} | {m['tempered_ngram']:.1f} | {m['tempered_ngram'] / m['tempered_off']:.2f} |"
        if drafting:
            line += f" {m['tempered_draft']:.1f} | {m['tempered_draft'] / m['tempered_off']:.2f} |"
        if args.llama_server:
            line += f" {m['llama_off']:.1f} | {m['llama_ngram']:.1f} | {m['llama_ngram'] / m['llama_off']:.2f} |"
        print(line)
    for name, counters in results.get("spec_counters", {}).items():
        print(f"{name}: {counters['accepted_tokens']:.0f} of {counters['draft_tokens']:.0f} drafts accepted")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
