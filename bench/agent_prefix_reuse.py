"""How much of each agent turn's prompt the prefix cache serves, with the assistant's reasoning sent back in the
history and without it (what tempered did before it read `reasoning_content` on assistant messages).

A tool conversation of --turns assistant turns after one user question: each turn the server reasons (a budget
ends it), then calls a tool (tool_choice required, so the answer is a call under the grammar); the client sends
the call's result back and asks again, as an agent loop does. With the reasoning kept, a template that shows the
current agent turn's reasoning (Qwen3's does; bench/templates/reasoning_in_history.jinja does the same) renders
the history as the model wrote it, so the next prompt starts with the cached tokens of the last one; without it,
the prompt departs where the first assistant turn's reasoning was. Prints a Markdown table of prompt tokens,
cached tokens and their share per turn, both ways.

    python3 bench/agent_prefix_reuse.py --model build/tiny-models/tiny-r1-qwen2.gguf \
        --template bench/templates/reasoning_in_history.jinja
"""
import argparse
import json
import pathlib
import sys
import tempfile
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from local_server import start_server  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the project.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string", "enum": ["README.md", "main.c",
                                                                                         "Makefile", "notes.txt"]}},
                   "required": ["path"], "additionalProperties": False}}}]
QUESTION = "Find out what this project builds and how. Read the files one at a time."


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def conversation(port, turns, keep_reasoning, budget, seed):
    """Per turn: (prompt_tokens, cached_tokens)."""
    messages = [{"role": "system", "content": "You are a careful coding agent."},
                {"role": "user", "content": QUESTION}]
    rows = []
    for turn in range(turns):
        reply = post(port, "/v1/chat/completions", {
            "messages": messages, "tools": TOOLS, "tool_choice": "required", "max_tokens": budget + 40,
            "thinking_token_budget": budget, "temperature": 0.8, "seed": seed + turn})
        usage = reply["usage"]
        rows.append((usage["prompt_tokens"], usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)))
        message = reply["choices"][0]["message"]
        assistant = {"role": "assistant", "content": message.get("content") or "",
                     "tool_calls": message.get("tool_calls") or []}
        if keep_reasoning and message.get("reasoning_content"):
            assistant["reasoning_content"] = message["reasoning_content"]
        messages.append(assistant)
        for call in assistant["tool_calls"]:
            path = json.loads(call["function"]["arguments"]).get("path", "?")
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": f"(contents of {path}: {turn + 1} lines of text)"})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default="build/tempered")
    parser.add_argument("--model", required=True)
    parser.add_argument("--template", default="bench/templates/reasoning_in_history.jinja")
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--budget", type=int, default=48, help="reasoning tokens per turn")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    results = {}
    departures = {}
    for keep in (False, True):
        # A fresh server each way, so neither run finds the other's blocks in the cache; its debug lines say
        # where each prompt left the cache.
        with tempfile.TemporaryFile(mode="w+") as log:
            process, port = start_server(args.binary, args.model,
                                         ["--chat-template", args.template, "--log-level", "debug"], stderr=log)
            try:
                results[keep] = conversation(port, args.turns, keep, args.budget, args.seed)
            finally:
                process.terminate()
                process.wait()
            log.seek(0)
            departures[keep] = [line.split("prefix cache: ", 1)[1].strip() for line in log
                                if " debug " in line and "prefix cache: " in line]
    print(f"model {args.model}, template {args.template}, {args.turns} turns, reasoning budget {args.budget}\n")
    print("| turn | prompt tokens (dropped) | cached | share | prompt tokens (kept) | cached | share |")
    print("|---|---|---|---|---|---|---|")
    for turn, (dropped, kept) in enumerate(zip(results[False], results[True]), start=1):
        cells = []
        for prompt, cached in (dropped, kept):
            cells += [str(prompt), str(cached), f"{cached / prompt:.0%}"]
        print(f"| {turn} | " + " | ".join(cells) + " |")
    for keep, name in ((False, "dropped"), (True, "kept")):
        later = results[keep][1:]
        total = sum(prompt for prompt, _ in later)
        cached = sum(cached for _, cached in later)
        print(f"\nturns 2..{args.turns}, reasoning {name}: {cached} of {total} prompt tokens from the cache "
              f"({cached / total:.0%}), {total - cached} prefilled")
    for keep, name in ((False, "dropped"), (True, "kept")):
        print(f"\nWhere each prompt left the cache, reasoning {name} (--log-level debug):\n")
        for turn, line in enumerate(departures[keep], start=1):
            print(f"- turn {turn}: {line}")


if __name__ == "__main__":
    main()
