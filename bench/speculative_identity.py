#!/usr/bin/env python3
"""Speculation changes nothing but speed: greedy answers token for token, the sampled distribution, seeded repeats.

Two servers on one model, `--speculative off` and `--speculative ngram` (or with --draft-model M, `--speculative
draft --draft-model M`; same flags otherwise), get the same requests, one at a time:
  identity      greedy requests of every kind (--per-kind each): copy-heavy chat (code edits), open chat,
                /v1/completions (token ids), tool calls (auto, and required: grammar-constrained), json_schema,
                n=2, answers that loop (the degeneration guard's report compared too); with
                --reasoning (a model with a <think> template, e.g. the tiny R1 fixture) chat with reasoning and a
                thinking budget that forces </think>; with --completions-only (a base model without a chat
                template) the chat requests as plain prompts, a tool's parameters as a json_schema. Compared:
                text, token ids or the logprobs' tokens and values (exactly), finish reasons, tool calls,
                reasoning, the guard's report.
  guard         with --guard-resample, a second pair under `--degeneration-guard resample` (seeded, so the
                fallback sampling repeats): the sampler switches in the middle of a verified run of drafts.
  distribution  --draws N seeded samples (temperature 1 with top_p and penalties) of tokens 2-4 after a
                copy-heavy prompt from each server, compared by a chi-square test of homogeneity (categories
                below 5 expected pooled); the speculating server's counters must show drafts verified and rejected
                during the draws (seeds 0..N-1 off, N..2N-1 on: independent samples). Then seeds 0..R-1
                (--repeats) twice on the speculating server: identical, and (reported) against the off server's.
Exits 1 when any answer differs, the p-value is at or below 0.01, or no draft was rejected; writes --out JSON.

Usage: bench/speculative_identity.py --model GGUF [--tempered build/tempered] [--per-kind 8] [--max-tokens 96]
       [--reasoning] [--guard-resample] [--draws 2000] [--repeats 200] [--server-args "..."] [--draft-model M]
       [--out FILE.json]
"""
import argparse
import http.client
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_server import start_server  # noqa: E402
from speculative_decode import (PEOPLE, QUESTIONS, TICKET_TOOL, TICKETS, code_edit_requests,  # noqa: E402
                                repository_functions)

PERSON_SCHEMA = {"name": "customer", "schema": {
    "type": "object", "additionalProperties": False,
    "properties": {"name": {"type": "string"}, "phone": {"type": "string"}, "email": {"type": "string"},
                   "joined": {"type": "string"}},
    "required": ["name", "phone", "email", "joined"]}}
LOOPING = ["What is the capital of France?", "List the days of the week, then list them again, and again.",
           "Write the word 'echo' fifty times.", "Count from 1 to 60, one number per line.",
           "Say 'la la la' over and over.", "What is 2 + 2? Repeat your answer many times.",
           "Name every month of the year, twice over.", "Write a line of 80 dashes, then another, then another."]
COPY_PROMPT = ("Copy this sentence exactly, three times: the small grey cat sat quietly on the old wooden fence "
               "and watched the birds.")


def post(port, path, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"{path}: HTTP {response.status}: {data[:300]!r}")
    return json.loads(data)


def metric(port, name):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")
               or line.startswith(name + "{"))


def chat(messages, **fields):
    return ("/v1/chat/completions", {"messages": messages, **fields})


def identity_requests(per_kind, max_tokens, reasoning):
    """(kind, path, body) of every greedy request."""
    greedy = {"temperature": 0, "max_tokens": max_tokens, "logprobs": True, "top_logprobs": 2}
    out = [("code_edit", *chat(r["messages"], **greedy)) for r in code_edit_requests(2 * per_kind)]
    out += [("open_chat", *chat([{"role": "user", "content": q}], **greedy)) for q in QUESTIONS[:per_kind]]
    for code, _ in repository_functions(2 * per_kind):
        head = "\n".join(code.splitlines()[:3])
        out.append(("completion", "/v1/completions", {"prompt": f"{code}\n\n\n{head}", "temperature": 0,
                                                       "max_tokens": max_tokens, "return_token_ids": True,
                                                       "logprobs": 2}))
    for i, (title, description) in enumerate(TICKETS[:per_kind]):
        content = f"File a high priority ticket titled \"{title}\" with this description, word for word: {description}"
        out.append(("tool_call", *chat([{"role": "user", "content": content}], tools=[TICKET_TOOL],
                                       tool_choice="required" if i % 2 else "auto", **greedy)))
    for person in PEOPLE[:per_kind]:
        content = f"Return this customer as JSON, copying the values exactly as written:\n\n{person}"
        out.append(("json_schema", *chat([{"role": "user", "content": content}], **greedy,
                                         response_format={"type": "json_schema", "json_schema": PERSON_SCHEMA})))
    for q in QUESTIONS[:per_kind]:
        out.append(("n2", *chat([{"role": "user", "content": q}], n=2, **greedy)))
    out += [("loop", *chat([{"role": "user", "content": q}], **{**greedy, "max_tokens": 2 * max_tokens}))
            for q in LOOPING[:per_kind]]
    if reasoning:
        for i, q in enumerate((QUESTIONS + LOOPING)[:2 * per_kind]):
            budget = {} if i % 2 == 0 else {"thinking_token_budget": 4 + i}
            out.append(("reasoning", *chat([{"role": "user", "content": q}], **greedy, **budget)))
    return out


def as_completion(kind, path, body):
    """A chat request for a model without a chat template (a base model): the messages as a plain prompt, a
    tool's parameters as a json_schema response format (a call's arguments, constrained alike)."""
    if path != "/v1/chat/completions":
        return kind, path, body
    body = dict(body)
    prompt = "".join(f"{m['role'].capitalize()}: {m['content']}\n" for m in body.pop("messages")) + "Assistant:"
    tools = body.pop("tools", None)
    body.pop("tool_choice", None)
    if tools:
        function = tools[0]["function"]
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": function["name"], "schema": function["parameters"]}}
    body.pop("top_logprobs", None)
    return kind, "/v1/completions", {**body, "prompt": prompt, "logprobs": 2, "return_token_ids": True}


def answer_of(path, response):
    """What must not change: per choice, its text (or message), tokens, logprobs, finish reason, guard report."""
    choices = []
    for choice in sorted(response["choices"], key=lambda c: c["index"]):
        kept = {key: choice.get(key) for key in ("text", "token_ids", "logprobs", "finish_reason", "degeneration")}
        if "message" in choice:
            message = choice["message"]
            kept["message"] = {key: message.get(key) for key in ("content", "reasoning_content", "tool_calls")}
            for call in kept["message"]["tool_calls"] or []:
                call.pop("id", None)  # a random id per call
        choices.append(kept)
    return {"choices": choices, "completion_tokens": response["usage"]["completion_tokens"]}


def spec_counters(port):
    return {key: metric(port, f"vllm:spec_decode_num_{key}_total") for key in ("drafts", "draft_tokens",
                                                                               "accepted_tokens")}


def run_identity(servers, requests):
    """(rows, answers that differ, the speculating server's spec-decode counters over the run)."""
    before = spec_counters(servers["on"])
    rows, differing = [], 0
    for i, (kind, path, body) in enumerate(requests):
        answers = {name: answer_of(path, post(port, path, body)) for name, port in
                   (servers.items() if i % 2 == 0 else reversed(servers.items()))}
        same = answers["off"] == answers["on"]
        differing += not same
        rows.append({"kind": kind, "same": same, "tokens": answers["off"]["completion_tokens"],
                     **({} if same else {"request": body, "answers": answers})})
        print(f"{kind:12} {i:3d} {answers['off']['completion_tokens']:4d} tokens",
              "same" if same else "DIFFERENT", flush=True)
    after = spec_counters(servers["on"])
    counters = {key: after[key] - before[key] for key in after}
    print("speculation during these requests:", counters, flush=True)
    return rows, differing, counters


# ---- chi-square (the regularised upper incomplete gamma, by its series and continued fraction)

def chi_square_sf(statistic, dof):
    a, x = dof / 2.0, statistic / 2.0
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:  # series for the lower function
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-15:
            n += 1
            term *= x / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    b, c, d = x + 1 - a, 1e300, 1 / (x + 1 - a)  # Lentz's continued fraction for the upper function
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(log_front) * h


def homogeneity(counts_a, counts_b):
    """(statistic, degrees of freedom, p) of a 2 x K chi-square test; categories whose smaller expected
    count is below 5 are pooled into one."""
    n_a, n_b = sum(counts_a.values()), sum(counts_b.values())
    total = n_a + n_b
    kept, pooled = [], [0, 0]
    for key in set(counts_a) | set(counts_b):
        a, b = counts_a.get(key, 0), counts_b.get(key, 0)
        if min(n_a, n_b) * (a + b) / total < 5:
            pooled[0] += a
            pooled[1] += b
        else:
            kept.append((a, b))
    if sum(pooled):
        kept.append(tuple(pooled))
    statistic = 0.0
    for a, b in kept:
        for observed, n in ((a, n_a), (b, n_b)):
            expected = n * (a + b) / total
            statistic += (observed - expected) ** 2 / expected
    dof = len(kept) - 1
    return statistic, dof, chi_square_sf(statistic, dof) if dof > 0 else 1.0


def draw(port, seed):
    body = {"prompt": COPY_PROMPT + "\n\nthe small grey", "max_tokens": 5, "temperature": 1.0, "top_p": 0.95,
            "presence_penalty": 0.4, "frequency_penalty": 0.2, "seed": seed, "return_token_ids": True}
    return tuple(post(port, "/v1/completions", body)["choices"][0]["token_ids"][1:4])


def run_distribution(servers, draws, repeats):
    before = {key: metric(servers["on"], f"vllm:spec_decode_num_{key}_tokens_total")
              for key in ("draft", "accepted")}
    # Seeds 0..N-1 off and N..2N-1 on: independent samples, so the test compares the distributions.
    samples = {name: [draw(port, offset + seed) for seed in range(draws)]
               for offset, (name, port) in zip((0, draws), servers.items())}
    drafted = metric(servers["on"], "vllm:spec_decode_num_draft_tokens_total") - before["draft"]
    accepted = metric(servers["on"], "vllm:spec_decode_num_accepted_tokens_total") - before["accepted"]
    statistic, dof, p = homogeneity(Counter(samples["off"]), Counter(samples["on"]))
    seeded = [draw(servers["on"], seed) for seed in range(repeats)]
    again = [draw(servers["on"], seed) for seed in range(repeats)]
    result = {"draws": draws, "categories": len(set(samples["off"]) | set(samples["on"])),
              "statistic": statistic, "dof": dof, "p": p, "draft_tokens": drafted, "accepted_tokens": accepted,
              "seeded_repeats": repeats, "repeats_identical": sum(a == b for a, b in zip(again, seeded)),
              "same_seed_same_draw_as_off": sum(a == b for a, b in zip(seeded, samples["off"]))}
    print(json.dumps(result), flush=True)
    return result


def start_pair(binary, model, extra, speculation):
    """`speculation`: the speculating server's flags (prompt lookup, or a draft model)."""
    servers = {}
    for name, flags in (("off", ["--speculative", "off"]), ("on", speculation)):
        process, port = start_server(binary, model, ["--threads", "2", *flags, *extra])
        servers[name] = (process, port)
    return servers


def stop(pair):
    for process, _ in pair.values():
        process.terminate()
        process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--tempered", default=str(Path(__file__).resolve().parents[1] / "build" / "tempered"))
    parser.add_argument("--per-kind", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--reasoning", action="store_true", help="the model has a <think> template")
    parser.add_argument("--guard-resample", action="store_true")
    parser.add_argument("--completions-only", action="store_true",
                        help="a model without a chat template: chat requests go to /v1/completions as plain prompts")
    parser.add_argument("--draws", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--server-args", default="")
    parser.add_argument("--draft-model", help="speculate with this draft model (--speculative draft) instead of "
                        "prompt lookup")
    parser.add_argument("--out")
    args = parser.parse_args()
    assert abs(chi_square_sf(3.841459, 1) - 0.05) < 1e-6 and abs(chi_square_sf(18.307038, 10) - 0.05) < 1e-6

    extra = args.server_args.split()
    result = {"model": os.path.basename(args.model), "max_tokens": args.max_tokens, "server_args": extra}
    failures = []
    speculation = (["--speculative", "draft", "--draft-model", args.draft_model] if args.draft_model
                   else ["--speculative", "ngram"])
    result["speculation"] = speculation
    pair = start_pair(args.tempered, args.model, extra, speculation)
    try:
        ports = {name: port for name, (_, port) in pair.items()}
        started = time.time()
        requests = identity_requests(args.per_kind, args.max_tokens, args.reasoning)
        if args.completions_only:
            requests = [as_completion(*request) for request in requests]
        rows, differing, counters = run_identity(ports, requests)
        result["identity"] = {"requests": len(rows), "differing": differing, "seconds": time.time() - started,
                              "by_kind": dict(Counter(r["kind"] for r in rows)), "speculation": counters,
                              "rows": rows}
        failures += [f"{differing} of {len(rows)} greedy answers differ"] if differing else []
        if args.draws:
            result["distribution"] = run_distribution(ports, args.draws, args.repeats)
            d = result["distribution"]
            failures += [f"chi-square p = {d['p']:.4g}"] if d["p"] <= 0.01 else []
            failures += ["no draft was rejected during the draws"] if d["accepted_tokens"] >= d["draft_tokens"] else []
            failures += ["a seeded draw did not repeat"] if d["repeats_identical"] != args.repeats else []
    finally:
        stop(pair)
    if args.guard_resample:
        pair = start_pair(args.tempered, args.model, [*extra, "--degeneration-guard", "resample"], speculation)
        try:
            ports = {name: port for name, (_, port) in pair.items()}
            seeded = [(kind, path, {**body, "seed": 7}) for kind, path, body in
                      identity_requests(args.per_kind, args.max_tokens, False) if kind in ("loop", "open_chat")]
            if args.completions_only:
                seeded = [as_completion(*request) for request in seeded]
            rows, differing, counters = run_identity(ports, seeded)
            result["guard_resample"] = {"requests": len(rows), "differing": differing, "speculation": counters,
                                        "rows": rows}
            failures += [f"{differing} of {len(rows)} answers under the resampling guard differ"] if differing else []
        finally:
            stop(pair)
    result["failures"] = failures
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    print("\n".join(failures) if failures else "speculation changed nothing")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
