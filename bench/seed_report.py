"""seed_scenario.py's measures per answer and per configuration, the run's environment, and the markdown +
JSON it writes. Every quality number comes from text_measures.py, on the answer's tokens."""
import hashlib
import json
import os
import platform
import subprocess
import time

from text_measures import distinct_2, loop_suffix, numbers_as_one_unit, repeated_ngram_share

MODEL_FILES = {"smollm2-135m-instruct": "SmolLM2-135M-Instruct.Q4_1.gguf",
               "qwen2.5-coder-0.5b-instruct": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"}
EXCERPT_CHARS = 160
REPETITIVE_SHARE = 0.5  # an answer half made of 4-grams it already said: a loop that varies (paraphrase, counting)


def answer_units(choice):
    """The answer's tokens (their bytes, from logprobs) and "tokens"; its words and "words" without logprobs."""
    content = (choice.get("logprobs") or {}).get("content")
    if content:
        tokens = [tuple(e["bytes"]) if e.get("bytes") is not None else e["token"] for e in content]
        return tokens, "tokens"
    return (choice["message"].get("content") or "").split(), "words"


def after_switch_share(units, degeneration):
    """Repeated 4-gram share of the tokens the resample produced: those after detected_at_token (the token
    that completed the loop's last counted copy; the fallback sampling starts with the next one)."""
    if not degeneration or degeneration.get("action") != "resample":
        return None
    return repeated_ngram_share(units[degeneration["detected_at_token"] + 1:])


def token_loop(units):
    """The looping suffix over units whose numbers count as one (text_measures.numbers_as_one_unit), with
    its start and length converted back to tokens."""
    collapsed, weights = numbers_as_one_unit(units)
    loop = loop_suffix(collapsed)
    if loop is None:
        return None
    start = sum(weights[:loop.start])
    return {"period": loop.period, "tokens": len(units) - start, "start": start}


def answer_summary(reply):
    if "error" in reply:
        return {"index": reply["index"], "kind": reply["kind"], "error": reply["error"]}
    choice = reply["choice"]
    units, unit = answer_units(choice)
    degeneration = choice.get("degeneration")
    return {"index": reply["index"], "kind": reply["kind"], "finish_reason": choice.get("finish_reason"),
            "completion_tokens": reply["usage"].get("completion_tokens", len(units)), "units": unit,
            "loop": token_loop(units),
            "degeneration": degeneration, "repeated_4gram_share": repeated_ngram_share(units),
            "after_switch_repeated_4gram_share": after_switch_share(units, degeneration),
            "text": choice["message"].get("content") or ""}


def share(count, total):
    return count / total if total else None


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def config_summary(answers):
    ok = [a for a in answers if "error" not in a]
    looping = [a for a in ok if a["loop"]]
    ordinary = [a for a in ok if not a["loop"] and not a["degeneration"]]
    switched = [a for a in ok if a["after_switch_repeated_4gram_share"] is not None]
    loop_tokens = sum(a["loop"]["tokens"] for a in looping)
    output_tokens = sum(a["completion_tokens"] for a in ok)
    kinds = sorted({a["kind"] for a in ok})
    return {
        "answers": len(ok), "errors": len(answers) - len(ok), "units": sorted({a["units"] for a in ok}),
        "looping_share": share(len(looping), len(ok)), "loop_tokens": loop_tokens,
        "completion_tokens": output_tokens, "loop_token_share": share(loop_tokens, output_tokens),
        "distinct_2": distinct_2([a["text"] for a in ok]),
        "hit_max_tokens_share": share(sum(a["finish_reason"] == "length" for a in ok), len(ok)),
        "ended_by_guard_share": share(sum(a["finish_reason"] == "repetition" for a in ok), len(ok)),
        "flagged_share": share(sum(bool(a["degeneration"]) for a in ok), len(ok)),
        "repetitive_share": share(sum((a["repeated_4gram_share"] or 0) >= REPETITIVE_SHARE for a in ok), len(ok)),
        "ordinary_answers": len(ordinary),
        "ordinary_repeated_4gram_share": mean(a["repeated_4gram_share"] for a in ordinary),
        "switched_answers": len(switched),
        "after_switch_repeated_4gram_share": mean(a["after_switch_repeated_4gram_share"] for a in switched),
        "looping_share_by_kind": {k: share(sum(1 for a in looping if a["kind"] == k),
                                           sum(1 for a in ok if a["kind"] == k)) for k in kinds},
        "looping_prompts": [a["index"] for a in looping],
    }


def git(repo_dir, *args):
    result = subprocess.run(["git", "-C", repo_dir, *args], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        return platform.processor() or platform.machine()


def environment(binary, repo):
    """Where and with what the run happened: the binary's commit is its checkout's HEAD (and whether src/
    differed from it)."""
    binary_dir = os.path.dirname(os.path.abspath(binary))
    commit = git(binary_dir, "rev-parse", "HEAD")
    dirty = git(binary_dir, "status", "--porcelain", "--untracked-files=no", "--", "src") if commit else None
    return {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"host": platform.node(), "cpu": cpu_name(), "cores": os.cpu_count(),
                        "load_average_at_start": [round(x, 2) for x in os.getloadavg()], "os": platform.platform()},
            "binary": {"path": os.path.abspath(binary), "commit": commit, "src_modified": bool(dirty)},
            "script_commit": git(repo, "rev-parse", "HEAD")}


def model_facts(name):
    home = os.environ.get("TEMPERED_HOME")
    models = os.path.join(home, "models") if home else os.path.expanduser("~/.cache/tempered/models")
    path = os.path.join(models, MODEL_FILES[name])
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"name": name, "file": MODEL_FILES[name], "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}


def excerpt(text):
    if len(text) <= 2 * EXCERPT_CHARS:
        return text
    return text[:EXCERPT_CHARS] + " … " + text[-EXCERPT_CHARS:]


def percent(value):
    return "–" if value is None else f"{100 * value:.0f}%"


def fraction(value):
    return "–" if value is None else f"{value:.3f}"


COLUMNS = ["config", "temp", "guard", "answers", "looping", "loop tokens (of output)", "repetitive", "distinct-2",
           "hit max_tokens", "ended by guard", "flagged", "rep-4 after switch / ordinary", "seconds"]


def table_row(name, result):
    if "skipped" in result:
        return [name, "", "", "", f"skipped: {result['skipped']}"] + [""] * (len(COLUMNS) - 5)
    s = result["summary"]
    switch = (f"{fraction(s['after_switch_repeated_4gram_share'])} (n={s['switched_answers']}) / "
              if s["switched_answers"] else "– / ")
    answers = f"{s['answers']}" + (f" (+{s['errors']} errors)" if s["errors"] else "")
    return [name, f"{s['temperature']:g}", s["guard"], answers,
            percent(s["looping_share"]), f"{s['loop_tokens']} ({percent(s['loop_token_share'])})",
            percent(s["repetitive_share"]),
            fraction(s["distinct_2"]), percent(s["hit_max_tokens_share"]), percent(s["ended_by_guard_share"]),
            percent(s["flagged_share"]),
            switch + f"{fraction(s['ordinary_repeated_4gram_share'])} (n={s['ordinary_answers']})",
            f"{s['seconds']:.0f}"]


def markdown(report):
    env = report["environment"]
    guard = "present" if report["binary_has_degeneration_guard"] else "absent (off = no flag)"
    lines = [f"# Seed scenario, {env['date_utc']}", "",
             f"{report['prompts']} chat prompts, max_tokens {report['max_tokens']}, {report['concurrency']} at a time, "
             f"seed = prompt index, logprobs on. Binary {env['binary']['commit']}"
             + (" (src/ modified)" if env["binary"]["src_modified"] else "")
             + f", --degeneration-guard {guard}. "
             f"Machine: {env['machine']['cpu']}, {env['machine']['cores']} cores, load average at start "
             f"{env['machine']['load_average_at_start']}. Columns: bench/README.md.", ""]
    for short, model in report["models"].items():
        facts = model["model"]
        lines += [f"## {facts['name']}", "",
                  f"`{facts['file']}`, {facts['bytes']} bytes, sha256 `{facts['sha256']}`", "",
                  "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(table_row(name, result)) + " |" for name, result in model["configs"].items()]
        lines += [""] + kind_table(model["configs"]) + [""]
    return "\n".join(lines)


def kind_table(configs):
    ran = {name: r["summary"] for name, r in configs.items() if "summary" in r}
    kinds = sorted({kind for s in ran.values() for kind in s["looping_share_by_kind"]})
    if not ran:
        return []
    lines = ["Looping share by kind of prompt:", "",
             "| config | " + " | ".join(kinds) + " |", "|" + "---|" * (len(kinds) + 1)]
    for name, s in ran.items():
        lines.append(f"| {name} | " + " | ".join(percent(s["looping_share_by_kind"].get(k)) for k in kinds) + " |")
    return lines


def write_report(report, out_prefix):
    """<out_prefix>-<UTC stamp>.{json,md}; answer texts shortened to their two ends in the JSON."""
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    for model in report["models"].values():
        for result in model["configs"].values():
            for answer in result.get("answers", []):
                answer["text"] = excerpt(answer.get("text", ""))
    os.makedirs(os.path.dirname(os.path.abspath(out_prefix)), exist_ok=True)
    paths = [f"{out_prefix}-{stamp}.json", f"{out_prefix}-{stamp}.md"]
    with open(paths[0], "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    with open(paths[1], "w") as f:
        f.write(markdown(report) + "\n")
    return paths
