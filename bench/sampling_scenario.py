#!/usr/bin/env python3
"""The seed scenario, measured: greedy clients vs a server-side default temperature.

Runs the same chat prompts twice against tempered on the default model:
  A) every request sends temperature 0 (what the clients in the original deployment did);
  B) requests send no temperature, and the server runs with
     --preferred-sampling-params '{"temperature":0.6}'.
For each run it reports the share of answers caught in a repetition loop, distinct-2 (unique bigrams /
bigrams, over all answers), and the share that hit max_tokens. It also checks that run B's responses
report temperature 0.6 with source "preferred".

Usage: bench/sampling_scenario.py [--bin build/tempered] [--max-tokens 160] [--out bench/results/...]
Needs the `openai` package (tests/requirements.txt) and the model (scripts/pull_model.py).
"""
import argparse
import concurrent.futures
import json
import os
import platform
import signal
import time

from openai import OpenAI

from local_server import start_server
from text_measures import distinct_2, looped

TOPICS = ["the water cycle", "how a bicycle works", "why the sky is blue", "photosynthesis", "the moon's phases",
          "how to boil an egg", "what a compiler does", "the French revolution", "how vaccines work",
          "recycling plastic", "the rules of chess", "how bees make honey", "a healthy breakfast", "volcanoes",
          "how the internet works", "the planet Mars", "why we sleep", "how rainbows form", "the Roman empire",
          "how a refrigerator works"]
FORMS = ["Explain {} in a few sentences.", "Write a short paragraph about {}.", "Give three facts about {}."]


def prompts():
    out = []
    for i, topic in enumerate(TOPICS):
        for form in FORMS:
            out.append(form.format(topic))
    return out[:60]


def run(client, model, prompt_list, max_tokens, temperature):
    def one(prompt):
        kwargs = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens}
        if temperature is not None:
            kwargs["temperature"] = temperature
        response = client.chat.completions.create(**kwargs)
        raw = response.model_dump()
        return response.choices[0].message.content or "", response.choices[0].finish_reason, raw.get("sampling")
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(one, prompt_list))
    texts = [r[0] for r in results]
    return {
        "answers": len(results),
        "loop_share": sum(looped(t) for t in texts) / len(texts),
        "distinct_2": distinct_2(texts),
        "hit_max_tokens_share": sum(r[1] == "length" for r in results) / len(results),
        "empty_share": sum(not t.strip() for t in texts) / len(texts),
        "temperature_reported": sorted({json.dumps(r[2]["temperature"]) for r in results if r[2]}),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("TEMPERED_BIN", "build/tempered"))
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--out", default="bench/results/sampling_scenario.json")
    args = parser.parse_args()
    prompt_list = prompts()
    report = {"model": "smollm2-135m-instruct", "prompts": len(prompt_list), "max_tokens": args.max_tokens,
              "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
              "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    for name, flags, temperature in (("A_greedy_clients", [], 0.0),
                                     ("B_server_default_0.6", ["--preferred-sampling-params",
                                                               '{"temperature":0.6}'], None)):
        process, port = start_server(args.bin, "smollm2-135m-instruct", flags, timeout=60)
        try:
            client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=600)
            started = time.time()
            report[name] = run(client, "smollm2-135m-instruct", prompt_list, args.max_tokens, temperature)
            report[name]["seconds"] = round(time.time() - started, 1)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        print(name, json.dumps(report[name]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print("written", args.out)


if __name__ == "__main__":
    main()
