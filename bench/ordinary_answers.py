#!/usr/bin/env python3
"""Writes the ordinary-answers corpus the loop guard is held to: answers of both real models at temperature 0.6
that the token-level loop measure (text_measures.py, numbers counted as one unit, as seed_report.py measures
"looping") calls not looping. The guard must flag none of them (tests/unit/engine_ordinary_answers_test.cpp
replays their token ids through it).

Chosen once, before the shape detection was tuned, and committed: regenerating it is a new corpus.

Two sets per model:
  chat        the 62 seed-scenario prompts (seed_prompts.py), --seeds seeds each, max_tokens 512;
  structured  Qwen2.5-Coder only: every schema of tests/fixtures/grammar/schemas.json under response_format
              json_schema (recursive ones included), 2 seeds each, max_tokens 512: ordinary JSON answers, arrays of
              records and small trees, which a detector of nesting loops must leave alone.
Each answer is generated through /v1/completions with the chat template's rendering as the prompt (/tokenize with
messages), so that its token ids come back (return_token_ids); logprobs give each token's text for the measure.

A first cut kept every answer whose *end* does not loop (the measure as seed_report.py applies it); it kept
answers that loop in the middle and then break off ("1. to be" ... "64. to be", then a closing line). --refilter
applies the same measure to every prefix of each answer of the corpus and keeps only those with no loop
anywhere (text_measures.loop_anywhere), the token texts coming from each model's /detokenize; it also leaves out
a structured answer nested deeper than text_measures.NESTING_LOOP_DEPTH (one seed nested a new "children" level
per item until max_tokens: the nesting loop the guard is meant to see, which a measure over tokens cannot).

--looping writes the other side, tests/fixtures/guard/looping_answers.jsonl: the answers of the seed prompts at
temperature 0 that the seed scenario's measure calls looping, and Qwen2.5-Coder's "small tree of names" under a
recursive schema nesting until max_tokens; the guard must flag at least 90 % of them.

Usage: bench/ordinary_answers.py [--bin build/tempered] [--seeds 4] [--out tests/fixtures/guard/ordinary_answers.jsonl]
       bench/ordinary_answers.py --refilter [--out ...]
       bench/ordinary_answers.py --looping [--looping-out ...]
"""
import argparse
import concurrent.futures
import json
import os
import signal
import urllib.request

from local_server import start_server
from seed_prompts import seed_prompts
from seed_report import token_loop
from text_measures import NESTING_LOOP_DEPTH, json_nesting_depth, loop_anywhere, numbers_as_one_unit

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MODELS = {"smollm2": "smollm2-135m-instruct", "qwen-coder": "qwen2.5-coder-0.5b-instruct"}
TEMPERATURE = 0.6
MAX_TOKENS = 512


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3600) as response:
        return json.load(response)


def answer(port, model, messages, seed, response_format=None, temperature=TEMPERATURE):
    """One answer to `messages`: its token ids, their texts, the answer's text and finish reason."""
    prompt = post(port, "/tokenize", {"model": model, "messages": messages})["tokens"]
    body = {"model": model, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": temperature, "seed": seed,
            "logprobs": 0, "return_token_ids": True}
    if response_format:
        body["response_format"] = response_format
    choice = post(port, "/v1/completions", body)["choices"][0]
    return {"token_ids": choice["token_ids"], "token_texts": choice["logprobs"]["tokens"], "text": choice["text"],
            "finish_reason": choice["finish_reason"]}


def jobs_for(short, seeds):
    jobs = []
    for index, (kind, prompt) in enumerate(seed_prompts()):
        for seed in range(seeds):
            jobs.append({"set": "chat", "kind": kind, "prompt_index": index, "seed": 1000 * (seed + 1) + index,
                         "messages": [{"role": "user", "content": prompt}]})
    if short == "qwen-coder":
        with open(os.path.join(REPO, "tests", "fixtures", "grammar", "schemas.json")) as f:
            schemas = json.load(f)
        for index, entry in enumerate(schemas):
            for seed in range(2):
                jobs.append({"set": "structured", "kind": entry["name"], "prompt_index": index,
                             "seed": 1000 * (seed + 1) + index,
                             "messages": [{"role": "user", "content": "Give an example answer as JSON: "
                                           + json.dumps(entry["schema"])}],
                             "response_format": {"type": "json_schema",
                                                 "json_schema": {"name": "answer", "schema": entry["schema"]}}})
    return jobs


def run_model(args, short):
    model = MODELS[short]
    process, port = start_server(args.bin, model, ["--degeneration-guard", "off"], timeout=300)
    try:
        def one(job):
            try:
                got = answer(port, model, job["messages"], job["seed"], job.get("response_format"))
            except OSError as error:
                return {**job, "error": str(error)}
            return {**job, **got}
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            return list(pool.map(one, jobs_for(short, args.seeds)))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)


def token_texts(port, model, ids):
    """Each id's text, one /detokenize per id."""
    return {i: post(port, "/detokenize", {"model": model, "tokens": [i]})["prompt"] for i in sorted(ids)}


def refilter(args):
    with open(args.out) as f:
        rows = [json.loads(line) for line in f]
    kept = []
    for short, model in MODELS.items():
        mine = [r for r in rows if r["model"] == model]
        process, port = start_server(args.bin, model, ["--degeneration-guard", "off"], timeout=300)
        try:
            texts = token_texts(port, model, {i for r in mine for i in r["token_ids"]})
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
        for r in mine:
            units, _ = numbers_as_one_unit([texts[i] for i in r["token_ids"]])
            found = loop_anywhere(units)
            depth = json_nesting_depth(r["text"]) if r["set"] == "structured" else 0
            if depth > NESTING_LOOP_DEPTH:
                print(short, r["set"], r["prompt_index"], r["seed"], "left out: JSON nested", depth, "deep")
            elif found is None:
                kept.append(r)
            else:
                print(short, r["set"], r["prompt_index"], r["seed"], "left out: loops up to unit", found[0],
                      "period", found[1].period)
        print(short, len(mine), "answers,", sum(r["model"] == model for r in kept), "kept", flush=True)
    with open(args.out, "w") as out:
        for r in kept:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("kept", len(kept), "of", len(rows))


TREE_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                               "children": {"type": "array", "items": {"$ref": "#"}}},
               "required": ["name", "children"]}


def looping(args):
    """The recall side: the seed prompts at temperature 0 (the seed scenario's t0-off), and the issue's "small
    tree of names" under a recursive schema on Qwen2.5-Coder; kept when they loop (the seed scenario's measure:
    the end loops; for the tree, nested deeper than NESTING_LOOP_DEPTH)."""
    kept = []
    for short, model in MODELS.items():
        process, port = start_server(args.bin, model, ["--degeneration-guard", "off"], timeout=300)
        try:
            jobs = [{"set": "chat", "kind": kind, "prompt_index": index, "seed": index,
                     "messages": [{"role": "user", "content": prompt}]}
                    for index, (kind, prompt) in enumerate(seed_prompts())]
            if short == "qwen-coder":
                jobs.append({"set": "structured", "kind": "tree", "prompt_index": 0, "seed": 0,
                             "messages": [{"role": "user", "content": "Give me a small tree of names as JSON."}],
                             "response_format": {"type": "json_schema",
                                                 "json_schema": {"name": "tree", "schema": TREE_SCHEMA}}})
            def one(job):
                return {**job, **answer(port, model, job["messages"], job["seed"], job.get("response_format"), 0.0)}
            with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
                answers = list(pool.map(one, jobs))
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
        for a in answers:
            loop = token_loop(a.pop("token_texts"))
            nested = a["set"] == "structured" and json_nesting_depth(a["text"]) > NESTING_LOOP_DEPTH
            a.pop("messages")
            a.pop("response_format", None)
            if loop or nested:
                kept.append({"model": model, "loop": loop, **a})
        print(short, len(answers), "answers,", sum(k["model"] == model for k in kept), "looping", flush=True)
    with open(args.looping_out, "w") as out:
        for a in kept:
            out.write(json.dumps(a, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(REPO, "build", "tempered"))
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "guard", "ordinary_answers.jsonl"))
    parser.add_argument("--refilter", action="store_true", help="drop answers of --out that loop anywhere")
    parser.add_argument("--looping", action="store_true", help="write the looping answers instead (--looping-out)")
    parser.add_argument("--looping-out",
                        default=os.path.join(REPO, "tests", "fixtures", "guard", "looping_answers.jsonl"))
    args = parser.parse_args()
    if args.looping:
        looping(args)
        return
    if args.refilter:
        refilter(args)
        return
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    kept = 0
    with open(args.out, "w") as out:
        for short in MODELS:
            answers = run_model(args, short)
            for a in answers:
                if "error" in a:
                    print(short, "error", a["error"])
                    continue
                loop = token_loop(a.pop("token_texts"))
                if loop is not None:
                    print(short, a["set"], a["prompt_index"], a["seed"], "left out: looping", loop)
                    continue
                a.pop("messages")
                a.pop("response_format", None)
                out.write(json.dumps({"model": MODELS[short], **a}, ensure_ascii=False) + "\n")
                kept += 1
            print(short, len(answers), "answers", flush=True)
    print("kept", kept, "ordinary answers in", args.out)


if __name__ == "__main__":
    main()
