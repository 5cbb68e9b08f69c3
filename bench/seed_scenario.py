#!/usr/bin/env python3
"""The seed scenario, extended: how often answers loop at temperature 0 under each degeneration-guard action,
and how a temperature sweep changes that, on two real models.

For each model and configuration, the script starts `tempered serve` and sends the 62 chat prompts of
seed_prompts.py (facts, explanations, lists, short code, tables) 16 at a time, max_tokens 512, a fixed seed
per prompt, logprobs on (for the token strings). Configurations:
  t0-off, t0-flag, t0-stop, t0-resample   temperature 0, `--degeneration-guard off|flag|stop|resample`
  t0.3-off, t0.6-off, t1.0-off            the temperature sweep, guard off (with t0-off)
Everything is measured by this script, never by the server's detector (text_measures.py): the share of
answers looping (a suffix of one block of tokens repeated >= 3 times covering >= 20% of the answer), the
tokens inside those loops, distinct-2 (word bigrams), the share ending at max_tokens, ended by the guard
(finish_reason "repetition") and flagged (the choice's "degeneration" object), and for resample the repeated
4-gram share of the tokens after the switch beside the same measure on the ordinary (non-looping,
unflagged) answers.

A binary without --degeneration-guard (before the guard existed) runs the "off" configurations with no flag,
which was its behaviour, and skips the others, saying so in the report.

Usage: bench/seed_scenario.py [--bin build/tempered] [--models smollm2,qwen-coder] [--configs guard|sweep|all|
       t0-off,...] [--prompts N] [--max-tokens 512] [--concurrency 16] [--out-prefix bench/results/seed_scenario]
Writes <out-prefix>-<UTC stamp>.{md,json}. Needs only the standard library and the models
(scripts/pull_model.py).
"""
import argparse
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

from local_server import start_server
from seed_prompts import seed_prompts
from seed_report import answer_summary, config_summary, environment, model_facts, write_report

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MODELS = {"smollm2": "smollm2-135m-instruct", "qwen-coder": "qwen2.5-coder-0.5b-instruct"}
REQUEST_TIMEOUT_S = 3600  # a loaded 2-core machine decodes 16 answers of 512 tokens slowly; never a speed test


@dataclass(frozen=True)
class Config:
    temperature: float
    guard: str  # the --degeneration-guard action: off, flag, stop, resample


CONFIGS = {"t0-off": Config(0.0, "off"), "t0-flag": Config(0.0, "flag"), "t0-stop": Config(0.0, "stop"),
           "t0-resample": Config(0.0, "resample"), "t0.3-off": Config(0.3, "off"),
           "t0.6-off": Config(0.6, "off"), "t1.0-off": Config(1.0, "off")}
GROUPS = {"guard": ["t0-off", "t0-flag", "t0-stop", "t0-resample"],
          "sweep": ["t0-off", "t0.3-off", "t0.6-off", "t1.0-off"], "all": list(CONFIGS)}


def chosen(names, table, what):
    out = []
    for name in names.split(","):
        for item in GROUPS.get(name, [name]) if table is CONFIGS else [name]:
            if item not in table:
                sys.exit(f"unknown {what} {item!r}; known: {', '.join(table)}"
                         + (f" or {', '.join(GROUPS)}" if table is CONFIGS else ""))
            if item not in out:
                out.append(item)
    return out


def binary_has_guard(binary):
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
    return "--degeneration-guard" in help_text


def guard_flags(guard, has_guard, resample_guard=None):
    """The serve flags for one guard action; None when this binary cannot run it. `resample_guard`: a JSON
    --degeneration-guard value for the resample configuration (to compare fallbacks)."""
    if has_guard:
        return ["--degeneration-guard", resample_guard if guard == "resample" and resample_guard else guard]
    return [] if guard == "off" else None


def ask(port, model, index, prompt, temperature, max_tokens):
    """One chat completion; its choice and usage, or the error it met."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": temperature, "seed": index, "logprobs": True}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            reply = json.load(response)
    except OSError as error:
        return {"error": str(error)}
    return {"choice": reply["choices"][0], "usage": reply.get("usage", {}), "sampling": reply.get("sampling")}


def run_config(port, model, prompts, config, args):
    def one(numbered):
        index, (kind, prompt) = numbered
        reply = ask(port, model, index, prompt, config.temperature, args.max_tokens)
        return {"index": index, "kind": kind, "prompt": prompt, **reply}
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        replies = list(pool.map(one, enumerate(prompts)))
    answers = [answer_summary(reply) for reply in replies]
    summary = config_summary(answers)
    summary.update({"temperature": config.temperature, "guard": config.guard,
                    "seconds": round(time.time() - started, 1),
                    "sampling_reported": next((r["sampling"] for r in replies if r.get("sampling")), None)})
    return {"summary": summary, "answers": answers}


def run_model(args, short, model, config_names, prompts, has_guard):
    """Every chosen configuration on one model: one server per guard action, its configurations in turn."""
    results = {}
    for guard in dict.fromkeys(CONFIGS[name].guard for name in config_names):
        flags = guard_flags(guard, has_guard, args.resample_guard)
        names = [name for name in config_names if CONFIGS[name].guard == guard]
        if flags is None:
            for name in names:
                results[name] = {"skipped": "the binary has no --degeneration-guard"}
            continue
        process, port = start_server(args.bin, model, flags, timeout=300)
        try:
            for name in names:
                results[name] = run_config(port, model, prompts, CONFIGS[name], args)
                print(short, name, json.dumps(results[name]["summary"]), flush=True)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
    return {name: results[name] for name in config_names}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.environ.get("TEMPERED_BIN", os.path.join(REPO, "build", "tempered")))
    parser.add_argument("--models", default="smollm2,qwen-coder", help=f"comma-separated: {', '.join(MODELS)}")
    parser.add_argument("--configs", default="all", help="comma-separated configurations or groups: guard, sweep, all")
    parser.add_argument("--prompts", type=int, default=None, help="the first N prompts only")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--resample-guard", default=None,
                        help="a JSON --degeneration-guard for t0-resample, e.g. "
                             "'{\"action\":\"resample\",\"fallback\":{\"temperature\":1.0}}'")
    parser.add_argument("--out-prefix", default=os.path.join(REPO, "bench", "results", "seed_scenario"))
    args = parser.parse_args()
    prompts = seed_prompts()[:args.prompts]
    config_names = chosen(args.configs, CONFIGS, "configuration")
    has_guard = binary_has_guard(args.bin)
    report = {"environment": environment(args.bin, REPO), "prompts": len(prompts), "max_tokens": args.max_tokens,
              "resample_guard": args.resample_guard,
              "concurrency": args.concurrency, "binary_has_degeneration_guard": has_guard, "models": {}}
    for short in chosen(args.models, MODELS, "model"):
        report["models"][short] = {"model": model_facts(MODELS[short]),
                                   "configs": run_model(args, short, MODELS[short], config_names, prompts, has_guard)}
    for path in write_report(report, args.out_prefix):
        print("written", path)


if __name__ == "__main__":
    main()
