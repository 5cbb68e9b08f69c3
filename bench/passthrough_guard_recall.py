#!/usr/bin/env python3
"""The loop guard over text pieces (passthrough: `serve --upstream URL --upstream-chat`, where the front sees an
engine's chat text and no token ids; src/output/text_pieces.h) against the same guard over token ids, on the seed
scenario's 62 prompts (seed_prompts.py).

For each model, one tempered upstream (guard `flag`, which never changes the answer) and one passthrough front
over it (guard `flag`, its default). Each prompt is asked of both, at each temperature (a fixed seed per prompt):
the upstream's answer carries the token-level guard's verdict, the front's the text-level one. The answers must
be the same text (the same engine drew both); the report counts answers flagged by each, by both, recall (both /
token-flagged) and text-only flags (each listed, with the loop's tail, to judge whether it is one).

Usage: bench/passthrough_guard_recall.py [--bin build/tempered] [--models smollm2,qwen-coder]
       [--temperatures 0,0.6] [--max-tokens 512] [--concurrency 16] [--prompts N] [--out-prefix ...]
Writes <out-prefix>-<UTC stamp>.md.
"""
import argparse
import concurrent.futures
import json
import os
import time
import urllib.request

from local_server import start_server
from seed_prompts import seed_prompts

MODELS = {"smollm2": "smollm2-135m-instruct", "qwen-coder": "qwen2.5-coder-0.5b-instruct"}
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def ask(port, prompt, temperature, seed, max_tokens):
    body = {"messages": [{"role": "user", "content": prompt}], "temperature": temperature, "seed": seed,
            "max_tokens": max_tokens}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        choice = json.loads(response.read())["choices"][0]
    return choice["message"]["content"] or "", choice.get("degeneration")


def run_model(args, model, prompts):
    upstream, up_port = start_server(args.bin, model, ["--sampling-defaults", "openai"])
    front, front_port = start_server(args.bin, model, ["--upstream", f"http://127.0.0.1:{up_port}", "--upstream-chat"])
    rows = {}
    try:
        for temperature in args.temperatures:
            def one(item):
                index, (_, prompt) = item
                token = ask(up_port, prompt, temperature, 1000 + index, args.max_tokens)
                text = ask(front_port, prompt, temperature, 1000 + index, args.max_tokens)
                return prompt, token, text
            with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                rows[temperature] = list(pool.map(one, enumerate(prompts)))
    finally:
        for process in (front, upstream):
            process.terminate()
            process.wait(timeout=30)
    return rows


def summary(rows):
    same = sum(token[0] == text[0] for _, token, text in rows)
    token_flagged = [i for i, (_, token, _) in enumerate(rows) if token[1]]
    text_flagged = [i for i, (_, _, text) in enumerate(rows) if text[1]]
    both = sorted(set(token_flagged) & set(text_flagged))
    return same, token_flagged, text_flagged, both


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(REPO, "build", "tempered"))
    parser.add_argument("--models", default="smollm2,qwen-coder")
    parser.add_argument("--temperatures", default="0,0.6")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--prompts", type=int, default=0)
    parser.add_argument("--out-prefix", default=os.path.join(REPO, "bench", "results", "passthrough_guard_recall"))
    args = parser.parse_args()
    args.temperatures = [float(t) for t in args.temperatures.split(",")]
    prompts = seed_prompts()[:args.prompts or None]
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    lines = [f"# Passthrough loop guard: text pieces against token ids ({stamp})", "",
             f"`{' '.join(['bench/passthrough_guard_recall.py', '--models', args.models, '--temperatures', ','.join(map(str, args.temperatures)), '--max-tokens', str(args.max_tokens)])}`, "
             f"{len(prompts)} seed prompts, guard `flag` on both sides (default thresholds).", "",
             "| model | temperature | same text | token-flagged | text-flagged | both | recall | text-only |",
             "|---|---|---|---|---|---|---|---|"]
    details = []
    for short in args.models.split(","):
        started = time.time()
        rows = run_model(args, MODELS[short], prompts)
        for temperature, answers in rows.items():
            same, token_flagged, text_flagged, both = summary(answers)
            recall = f"{len(both) / len(token_flagged):.3f}" if token_flagged else "-"
            text_only = sorted(set(text_flagged) - set(token_flagged))
            lines.append(f"| {short} | {temperature} | {same}/{len(answers)} | {len(token_flagged)} | "
                         f"{len(text_flagged)} | {len(both)} | {recall} | {len(text_only)} |")
            for i in sorted(set(token_flagged) ^ set(text_flagged)):
                prompt, token, text = answers[i]
                side = "token only" if i in token_flagged else "text only"
                report = token[1] or text[1]
                details.append(f"- {short} t={temperature}, {side}: {prompt!r}: {json.dumps(report)}; "
                               f"tail {text[0][-160:]!r}")
        details.append(f"- {short}: {time.time() - started:.0f} s")
    lines += ["", "Answers flagged by one side only:", ""] + details
    path = f"{args.out_prefix}-{stamp}.md"
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(path)


if __name__ == "__main__":
    main()
