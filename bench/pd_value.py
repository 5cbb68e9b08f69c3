#!/usr/bin/env python3
"""What prefill/decode disaggregation buys on this machine (issue 14): the same workload, in the same run,
against a colocated server and against gateway + prefill + decode on the same cores.

The workload (fixed seed): `--streams` clients each keep one long decode running (chat, ignore_eos,
temperature 0, `--stream-tokens` tokens; sent again when it ends); once every one has its first token,
`--long-prompts` long prompts (`--long-min-words`..`--long-max-words` words, ~1.05 tokens a word;
max_tokens `--long-max-tokens`, streamed) arrive at Poisson times (mean gap `--interval` s), each a big
prefill landing in the middle of the decodes. The run (and the throughput window) ends when the last long
prompt has finished; the decode streams still running are then cut by the client.

Set-ups (`--setups`, in this order):
  colocated          one `tempered serve --threads 2`, the clients talk to it directly
  colocated-gateway  the same behind sgl-model-gateway in regular mode (so the gateway hop is in both)
  pd-shm             gateway (PD mode) + prefill `--threads 1` + decode `--threads 1`, KV over shared memory
  pd-tcp             the same with `--disaggregation-transfer tcp`
  colocated-small-steps (only when asked for) one `--threads 2` server, directly, with `--max-batch-tokens
                     --small-step-tokens`: the colocated way to bound a prefill's bite out of each decode step
With `--pin` (the default) PD's prefill server is pinned to core 0 and its decode server to core 1
(`taskset -a -cp` on the running process); the colocated server may use both cores. The gateway and this
client float on the same two cores in every set-up.

Per set-up: the decode streams' inter-token latency p50/p99/max from the client (SSE arrival times) and
from the decode server's `vllm:inter_token_latency_seconds` histogram, the long prompts' TTFT p50/p99
(client), output tokens/s over the run, and the KV transfer's bytes (shm vs tcp) and seconds p50/p99.

  python3 bench/pd_value.py --gateway-python /work/sgl-venv/bin/python        # ~5 minutes on 2 cores
  python3 bench/pd_value.py --quick                                            # < 60 s; checks the script
"""
import argparse
import datetime
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gateway_harness as harness  # noqa: E402

ALL_SETUPS = ("colocated", "colocated-gateway", "pd-shm", "pd-tcp")
OPTIONAL_SETUPS = ("colocated-small-steps",)
WORDS = ("river stone window garden engine letter market silver forest winter harbor candle ladder mirror "
         "thunder meadow copper lantern orchard valley cotton pepper signal canvas marble saddle feather "
         "tunnel basket violin anchor blanket cactus dragon falcon glacier hammer island jungle kettle lemon "
         "magnet needle ocean parrot quartz rocket shadow tiger umbrella velvet walnut yogurt zebra").split()
ITL_METRIC = "vllm:inter_token_latency_seconds"


# ---- The workload

def stream_bodies(model, count, max_tokens):
    topics = ["a lighthouse keeper", "a lost robot", "a mountain village", "a city under the sea",
              "a travelling circus", "an old library", "a desert caravan", "a space station"]
    return [{**harness.chat_body(model, "You are a storyteller.",
                                 f"Stream {i}: tell a very long story about {topics[i % len(topics)]}.",
                                 max_tokens, stream=True), "ignore_eos": True}
            for i in range(count)]


def long_bodies(model, count, min_words, max_words, max_tokens, rng):
    """Distinct long prompts: each starts with its own number, so no two share a cached prefix."""
    bodies = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(min_words, max_words)))
        bodies.append(harness.chat_body(model, "You summarize documents.",
                                        f"Document {i} ({rng.random():.6f}): {words}\nSummarize document {i}.",
                                        max_tokens, stream=True) | {"ignore_eos": True})
    return bodies


def make_workload(args):
    rng = random.Random(args.seed)
    longs = long_bodies(args.model_name, args.long_prompts, args.long_min_words, args.long_max_words,
                        args.long_max_tokens, rng)
    gaps = [rng.expovariate(1.0 / args.interval) for _ in longs]
    return {"streams": stream_bodies(args.model_name, args.streams, args.stream_tokens), "longs": longs,
            "gaps": gaps}


def timed_stream(base_url, body, result, stop=None, timeout=600):
    """Fills `result` while one streamed chat runs: status, sent, token_times (monotonic, one per content
    chunk), usage, error, done, and `cut` when `stop` was set before the stream ended (the client then
    closes the connection). Never raises."""
    result.update(status=None, sent=time.monotonic(), token_times=[], usage=None, error=None, cut=False)
    request = urllib.request.Request(base_url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            result["status"] = response.status
            for raw in response:
                line = raw.decode(errors="replace").strip()
                if stop is not None and stop.is_set():
                    result["cut"] = True
                    break
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: "):])
                if any((c.get("delta") or {}).get("content") for c in event.get("choices", [])):
                    result["token_times"].append(time.monotonic())
                if "error" in event:
                    result["error"] = json.dumps(event["error"])[:300]
                if event.get("usage"):
                    result["usage"] = event["usage"]
    except urllib.error.HTTPError as error:
        result["status"], result["error"] = error.code, error.read().decode(errors="replace")[:300]
    except Exception as error:  # a reset or broken stream: recorded, not raised
        result["error"] = f"{type(error).__name__}: {error}"[:300]
    result["done"] = time.monotonic()


def decode_client(base_url, body, results, stop):
    """One of the decode streams: sends `body` again each time it ends, until `stop`; the last one is cut."""
    while not stop.is_set():
        result = {"token_times": [], "done": None}
        results.append(result)
        timed_stream(base_url, body, result, stop)


def start_threads(target, argument_lists):
    threads = [threading.Thread(target=target, args=arguments, daemon=True) for arguments in argument_lists]
    for thread in threads:
        thread.start()
    return threads


def run_workload(base_url, workload, first_token_timeout=300):
    """Keeps len(streams) decode streams running; once each has its first token, sends the long prompts at
    their arrival gaps; when the last long prompt has finished, cuts the decode streams. Returns (decode
    stream results, long-prompt results, start, end), end being the moment the last long prompt finished."""
    stop = threading.Event()
    started = time.monotonic()
    clients = [[] for _ in workload["streams"]]
    stream_threads = start_threads(decode_client, [(base_url, body, results, stop)
                                                   for body, results in zip(workload["streams"], clients)])
    deadline = started + first_token_timeout
    while time.monotonic() < deadline and not all(r and (r[0]["token_times"] or r[0]["done"]) for r in clients):
        time.sleep(0.02)
    longs, long_threads = [], []
    for gap, body in zip(workload["gaps"], workload["longs"]):
        time.sleep(gap)
        longs.append({"token_times": [], "done": None})
        long_threads += start_threads(timed_stream, [(base_url, body, longs[-1])])
    for thread in long_threads:
        thread.join()
    ended = time.monotonic()
    stop.set()
    for thread in stream_threads:
        thread.join()
    return [r for results in clients for r in results], longs, started, ended


# ---- Who else used the CPUs

def cpu_ticks():
    """(busy ticks of the whole machine, all ticks, ticks of this process and every descendant)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    parents, ticks = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                after_name = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        parents[int(entry)] = int(after_name[1])
        ticks[int(entry)] = int(after_name[11]) + int(after_name[12])  # utime + stime, all threads
    ours = 0
    for pid in ticks:
        walker = pid
        while walker > 1 and walker != os.getpid():
            walker = parents.get(walker, 0)
        if walker == os.getpid():
            ours += ticks[pid]
    return sum(fields) - idle, sum(fields), ours


def other_cpu_share(before, after):
    """Share of the machine's CPU time used by processes this bench did not start, between two readings."""
    busy, total, ours = (b - a for a, b in zip(before, after))
    return round(max(0.0, (busy - ours) / total), 3) if total else None


# ---- The set-ups

def pin(worker, cores):
    """Pins every thread of a running server (threads it starts later inherit the mask)."""
    subprocess.run(["taskset", "-a", "-cp", cores, str(worker.process.pid)], check=True, capture_output=True)


def server_command(worker):
    return " ".join(worker.command)


class Setup:
    """One set-up while it runs: where clients send, which server decodes, which move KV, the commands."""

    def __init__(self, name, url, decode, transfer_servers, commands):
        self.name, self.url, self.decode, self.transfer_servers = name, url, decode, transfer_servers
        self.commands = commands


def colocated(args, log_dir, behind_gateway, name="colocated", extra=()):
    """Yields the colocated set-up (one server, 2 threads), direct or behind the gateway."""
    if behind_gateway:
        with harness.Cluster(args.tempered, workers=1, policy="round_robin", model=args.model, threads=2,
                             log_dir=log_dir, gateway_python=args.gateway_python,
                             worker_flags=args.worker_flags) as cluster:
            worker = cluster.workers[0]
            yield Setup("colocated-gateway", cluster.gateway.url, worker, [],
                        [server_command(worker), server_command(cluster.gateway)])
        return
    worker = harness.Worker(name, args.tempered, args.model, 2, log_dir, [*args.worker_flags, *extra])
    try:
        worker.wait_ready()
        yield Setup(name, worker.url, worker, [], [server_command(worker)])
    finally:
        worker.kill()


def disaggregated(args, log_dir, transfer):
    """Yields the PD set-up: gateway + prefill + decode, one thread each, optionally pinned."""
    flags = [*args.worker_flags, "--disaggregation-transfer", transfer]
    with harness.PdCluster(args.tempered, model=args.model, threads=1, log_dir=log_dir,
                           gateway_python=args.gateway_python, prefill_flags=flags, decode_flags=flags) as cluster:
        prefill, decode = cluster.prefills[0], cluster.decodes[0]
        commands = [server_command(prefill), server_command(decode), server_command(cluster.gateway)]
        if args.pin:
            pin(prefill, "0")
            pin(decode, "1")
            commands += ["taskset -a -cp 0 <prefill pid>", "taskset -a -cp 1 <decode pid>"]
        yield Setup(f"pd-{transfer}", cluster.gateway.url, decode, [prefill, decode], commands)


def start_setup(name, args, log_dir):
    log_dir.mkdir(parents=True, exist_ok=True)
    if name == "colocated":
        return colocated(args, log_dir, behind_gateway=False)
    if name == "colocated-gateway":
        return colocated(args, log_dir, behind_gateway=True)
    if name == "colocated-small-steps":
        return colocated(args, log_dir, False, name, ["--max-batch-tokens", str(args.small_step_tokens)])
    return disaggregated(args, log_dir, transfer=name.split("-", 1)[1])


# ---- Measures

def rounded(value, digits=4):
    return None if value is None else round(value, digits)


def spread(values):
    """p50 / p99 / max and the count of a list of seconds."""
    return {"p50_s": rounded(harness.percentile(values, 0.5)), "p99_s": rounded(harness.percentile(values, 0.99)),
            "max_s": rounded(max(values, default=None)), "count": len(values)}


def labelled(samples, name, **wanted):
    return [(n, labels, v) for n, labels, v in samples
            if n.startswith(name) and all(labels.get(k) == w for k, w in wanted.items())]


def histogram_delta(before, after, name, **wanted):
    """{le: count} observed between the two scrapes, for the label set `wanted`; and the sum of seconds."""
    buckets = harness.subtract_buckets(harness.histogram_buckets(labelled(after, name, **wanted), name),
                                       harness.histogram_buckets(labelled(before, name, **wanted), name))
    total = (harness.metric_sum(labelled(after, name + "_sum", **wanted), name + "_sum")
             - harness.metric_sum(labelled(before, name + "_sum", **wanted), name + "_sum"))
    return buckets, total


def histogram_summary(buckets, total):
    count = max(buckets.values(), default=0.0)
    nonempty = [le for le, c in sorted(buckets.items()) if c > 0 and c >= count and le != float("inf")]
    return {"p50_s": rounded(harness.histogram_quantile(0.5, buckets)),
            "p99_s": rounded(harness.histogram_quantile(0.99, buckets)),
            "max_at_most_s": nonempty[0] if nonempty else None,
            "mean_s": rounded(total / count) if count else None, "count": int(count)}


def gaps_of(results):
    return [b - a for r in results for a, b in zip(r["token_times"], r["token_times"][1:])]


def gaps_during(results, windows, inside):
    """The decode gaps that overlap (inside=True) or miss (False) every [start, end) window."""
    chosen = []
    for r in results:
        for a, b in zip(r["token_times"], r["token_times"][1:]):
            if any(a < end and b > start for start, end in windows) == inside:
                chosen.append(b - a)
    return chosen


def failures(results, expected_tokens):
    """Requests that failed, or ended (not cut by the client) with another number of tokens than asked."""
    bad = []
    for i, r in enumerate(results):
        tokens = (r.get("usage") or {}).get("completion_tokens")
        if r.get("status") != 200 or r.get("error") or (not r.get("cut") and tokens != expected_tokens):
            bad.append({"index": i, "status": r.get("status"), "error": r.get("error"), "completion_tokens": tokens})
    return bad


def transfer_numbers(before, after):
    """Bytes by path and seconds per role from the servers that move KV ({} scrapes for colocated)."""
    numbers = {"bytes_shm": 0, "bytes_tcp": 0}
    for role in ("prefill", "decode"):
        samples_before, samples_after = before.get(role, []), after.get(role, [])
        for path in ("shm", "tcp"):
            moved = (harness.metric_sum(labelled(samples_after, "tempered:kv_transfer_bytes_total", role=role, path=path),
                                        "tempered:kv_transfer_bytes_total")
                     - harness.metric_sum(labelled(samples_before, "tempered:kv_transfer_bytes_total", role=role,
                                                   path=path), "tempered:kv_transfer_bytes_total"))
            if role == "decode":
                numbers[f"bytes_{path}"] = int(moved)
        seconds = histogram_summary(*histogram_delta(samples_before, samples_after, "tempered:kv_transfer_seconds",
                                                     role=role))
        numbers[f"{role}_seconds"] = {k: seconds[k] for k in ("p50_s", "p99_s", "mean_s", "count")}
        waited = histogram_summary(*histogram_delta(samples_before, samples_after, "tempered:kv_transfer_wait_seconds",
                                                    role=role))
        numbers[f"{role}_wait_seconds"] = {k: waited[k] for k in ("p50_s", "p99_s", "mean_s", "count")}
        numbers[f"{role}_failures"] = int(
            harness.metric_sum(labelled(samples_after, "tempered:kv_transfer_failures_total"),
                               "tempered:kv_transfer_failures_total")
            - harness.metric_sum(labelled(samples_before, "tempered:kv_transfer_failures_total"),
                                 "tempered:kv_transfer_failures_total"))
    return numbers


def scrape(setup):
    roles = {"server": setup.decode.metrics()}
    for worker in setup.transfer_servers:
        roles["prefill" if worker.name.startswith("prefill") else "decode"] = worker.metrics()
    return roles


def measure(setup, workload, args):
    """Runs the workload against one set-up; every number the report shows for it."""
    before, ticks_before, load_before = scrape(setup), cpu_ticks(), load_average()
    streams, longs, started, ended = run_workload(setup.url, workload)
    after, ticks_after, load_after = scrape(setup), cpu_ticks(), load_average()
    seconds = ended - started
    output_tokens = sum(1 for r in streams + longs for t in r["token_times"] if t <= ended)
    stream_tokens = sum(1 for r in streams for t in r["token_times"] if t <= ended)
    prefill_windows = [(r["sent"], r["token_times"][0]) for r in longs if r["token_times"]]
    prompt_tokens = [(r.get("usage") or {}).get("prompt_tokens") for r in longs if r.get("usage")]
    server_itl = histogram_summary(*histogram_delta(before["server"], after["server"], ITL_METRIC))
    return {
        "setup": setup.name, "commands": setup.commands, "seconds": round(seconds, 2),
        "load_average_before_after": [load_before, load_after],
        "other_processes_cpu_share": other_cpu_share(ticks_before, ticks_after),
        "decode_itl_client": spread(gaps_of(streams)),
        "decode_itl_client_while_a_long_prompt_waits": spread(gaps_during(streams, prefill_windows, True)),
        "decode_itl_client_otherwise": spread(gaps_during(streams, prefill_windows, False)),
        "decode_itl_server": server_itl,
        "long_ttft_client": spread([r["token_times"][0] - r["sent"] for r in longs if r["token_times"]]),
        "long_prompt_tokens": {"min": min(prompt_tokens, default=None), "max": max(prompt_tokens, default=None),
                               "count": len(prompt_tokens)},
        "long_prompts": [{"sent_s": rounded(r["sent"] - started, 3), "prompt_tokens": (r.get("usage") or {}).get(
            "prompt_tokens"), "ttft_s": rounded(r["token_times"][0] - r["sent"], 3) if r["token_times"] else None}
                         for r in longs],
        "output_tokens": output_tokens, "output_tokens_per_s": round(output_tokens / seconds, 2),
        "decode_streams_tokens_per_s": round(stream_tokens / seconds, 2),
        "decode_requests": len(streams), "decode_requests_cut_at_the_end": sum(1 for r in streams if r.get("cut")),
        "transfer": transfer_numbers({k: v for k, v in before.items() if k != "server"},
                                     {k: v for k, v in after.items() if k != "server"}),
        "failures": failures(streams, args.stream_tokens) + failures(longs, args.long_max_tokens),
    }


# ---- The report

ROWS = [
    ("decode ITL p50 (client)", lambda r: ms(r["decode_itl_client"]["p50_s"])),
    ("decode ITL p99 (client)", lambda r: ms(r["decode_itl_client"]["p99_s"])),
    ("decode ITL max (client)", lambda r: ms(r["decode_itl_client"]["max_s"])),
    ("decode ITL p99 while a long prompt waits / otherwise (client)",
     lambda r: f"{ms(r['decode_itl_client_while_a_long_prompt_waits']['p99_s'])} / "
               f"{ms(r['decode_itl_client_otherwise']['p99_s'])}"),
    ("decode ITL p50 / p99 (server histogram)",
     lambda r: f"{ms(r['decode_itl_server']['p50_s'])} / {ms(r['decode_itl_server']['p99_s'])}"),
    ("decode ITL mean, max ≤ (server)",
     lambda r: f"{ms(r['decode_itl_server']['mean_s'])}, {ms(r['decode_itl_server']['max_at_most_s'])}"),
    ("long-prompt TTFT p50 (client)", lambda r: ms(r["long_ttft_client"]["p50_s"])),
    ("long-prompt TTFT p99 (client)", lambda r: ms(r["long_ttft_client"]["p99_s"])),
    ("output tokens/s (all requests)", lambda r: r["output_tokens_per_s"]),
    ("decode streams' tokens/s", lambda r: r["decode_streams_tokens_per_s"]),
    ("run seconds", lambda r: r["seconds"]),
    ("KV moved: shm / tcp (MiB)", lambda r: f"{mib(r['transfer']['bytes_shm'])} / {mib(r['transfer']['bytes_tcp'])}"),
    ("wait for the prefill's KV p50 / p99 (decode side)",
     lambda r: f"{ms(r['transfer']['decode_wait_seconds']['p50_s'])} / {ms(r['transfer']['decode_wait_seconds']['p99_s'])}"),
    ("transfer seconds p50 / p99 (decode side)",
     lambda r: f"{ms(r['transfer']['decode_seconds']['p50_s'])} / {ms(r['transfer']['decode_seconds']['p99_s'])}"),
    ("transfer seconds p50 / p99 (prefill side)",
     lambda r: f"{ms(r['transfer']['prefill_seconds']['p50_s'])} / {ms(r['transfer']['prefill_seconds']['p99_s'])}"),
    ("failed requests", lambda r: len(r["failures"])),
    ("decode requests (sent again when one ended) / cut at the end",
     lambda r: f"{r['decode_requests']} / {r['decode_requests_cut_at_the_end']}"),
    ("CPU used by processes this bench did not start (share of the machine)",
     lambda r: f"{r['other_processes_cpu_share'] * 100:.0f}%" if r["other_processes_cpu_share"] is not None else "–"),
]


def ms(seconds):
    return "–" if seconds is None else f"{seconds * 1000:.1f} ms"


def mib(count):
    return f"{count / 2**20:.1f}"


def change(ours, baseline, lower_is_better=True):
    """'-35%' style change of `ours` against `baseline`, and whether it is better."""
    if not ours or not baseline:
        return None, False
    delta = (ours - baseline) / baseline
    return f"{delta * 100:+.0f}%", (delta < 0) == lower_is_better


VERDICT_MEASURES = (("decode ITL p99", "decode_itl_client", "p99_s", True),
                    ("decode ITL max", "decode_itl_client", "max_s", True),
                    ("decode ITL p50", "decode_itl_client", "p50_s", True),
                    ("long-prompt TTFT p50", "long_ttft_client", "p50_s", True),
                    ("long-prompt TTFT p99", "long_ttft_client", "p99_s", True),
                    ("throughput", None, "output_tokens_per_s", False))


def verdict(results):
    """Plain sentences: PD (shm, else tcp) against colocated behind the gateway (else direct); a change
    within 10% counts as the same."""
    by_name = {r["setup"]: r for r in results}
    pd = by_name.get("pd-shm") or by_name.get("pd-tcp")
    base = by_name.get("colocated-gateway") or by_name.get("colocated")
    if not pd or not base:
        return ["(needs one colocated and one PD set-up to compare)"]
    lines, buys, costs = [f"{pd['setup']} against {base['setup']}:", ""], [], []
    for label, key, field, lower in VERDICT_MEASURES:
        ours, theirs = (pd[key][field], base[key][field]) if key else (pd[field], base[field])
        text, better = change(ours, theirs, lower)
        shown = (lambda v: ms(v)) if key else (lambda v: f"{v} tokens/s")
        lines.append(f"- {label}: {shown(ours)} vs {shown(theirs)} ({text})")
        if text and abs(float(text.rstrip("%"))) >= 10:
            (buys if better else costs).append(f"{label} {text}")
    lines += ["", f"**It buys: {', '.join(buys) or 'nothing measurable'}. It costs: {', '.join(costs) or 'nothing measurable'}.**"]
    if pd["failures"] and not base["failures"]:
        lines.append(f"**And {len(pd['failures'])} of its requests failed where {base['setup']} lost none (see Notes).**")
    return lines


def markdown(report):
    results = report["results"]
    lines = [f"# What PD disaggregation buys here ({report['date']})", "",
             f"- machine: {report['machine']}; load average at start {report['load_average_at_start']}"
             + (" (HIGH: other work was running; read the numbers with care)" if report["load_high"] else ""),
             f"- versions: tempered {report['versions']['tempered_commit']}, "
             f"sglang-router {report['versions']['sglang_router']}; binary {report['binary']}",
             f"- command: `{report['command']}`",
             f"- workload: {report['workload']}",
             f"- pinning: {report['pinning']}", "",
             "| | " + " | ".join(r["setup"] for r in results) + " |",
             "|---|" + "---|" * len(results)]
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(str(cell(r)) for r in results) + " |")
    lines += ["", "## Verdict (computed from the table)", "", *verdict(results), ""]
    notes = [*report.get("notes", []), *failure_notes(results)]
    if notes:
        lines += ["## Notes", "", *notes, ""]
    lines += ["## Commands", ""]
    for r in results:
        lines += [f"{r['setup']}:", "", "```", *r["commands"], "```", ""]
    return "\n".join(lines)


def failure_notes(results):
    notes = []
    for r in results:
        if r["failures"]:
            first = r["failures"][0]
            notes.append(f"- {r['setup']}: {len(r['failures'])} requests failed; the first: status "
                         f"{first['status']}, {first['error']}")
    return notes


# ---- Main

def load_average():
    return tuple(round(x, 2) for x in os.getloadavg())


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tempered", default=str(harness.default_binary()))
    parser.add_argument("--model", default=harness.DEFAULT_MODEL, help="a known model name or a .gguf path")
    parser.add_argument("--served-model-name", default=None, help="the model id requests send (with a path)")
    parser.add_argument("--gateway-python", default=sys.executable)
    parser.add_argument("--setups", default=",".join(ALL_SETUPS),
                        help=f"comma-separated: {', '.join(ALL_SETUPS + OPTIONAL_SETUPS)}")
    parser.add_argument("--small-step-tokens", type=int, default=128,
                        help="--max-batch-tokens of colocated-small-steps (the server's default is 512)")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin PD's servers to cores 0 / 1")
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--stream-tokens", type=int, default=1536,
                        help="per decode stream: enough to outlast the long prompts' arrivals on 2 cores")
    parser.add_argument("--long-prompts", type=int, default=9)
    parser.add_argument("--long-min-words", type=int, default=1450, help="~1500 prompt tokens")
    parser.add_argument("--long-max-words", type=int, default=2400, help="~2500 prompt tokens")
    parser.add_argument("--long-max-tokens", type=int, default=8)
    parser.add_argument("--interval", type=float, default=8.0,
                        help="mean seconds between long prompts (Poisson); one prefill thread does ~350 prompt "
                             "tokens/s here, so much below ~7 s PD's prefill server falls behind")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--quick", action="store_true", help="a handful of small requests (< 60 s): checks the script")
    parser.add_argument("--out", default=None, help="where the .json/.md go (default: bench/results; --quick: /tmp)")
    parser.add_argument("--log-dir", default=None, help="the processes' logs (default: a new folder in /tmp)")
    args = parser.parse_args()
    if args.quick:
        args.streams, args.stream_tokens, args.long_prompts = 4, 24, 3
        args.long_min_words, args.long_max_words, args.long_max_tokens, args.interval = 150, 250, 4, 0.3
    args.model_name = args.served_model_name or args.model
    args.worker_flags = ["--served-model-name", args.served_model_name] if args.served_model_name else []
    args.out = args.out or (tempfile.mkdtemp(prefix="pd_value-") if args.quick else
                            str(harness.REPO / "bench" / "results"))
    return args


def main():
    args = parse_args()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    load = load_average()
    log_dir = pathlib.Path(args.log_dir or tempfile.mkdtemp(prefix="pd_value-logs-"))
    workload = make_workload(args)
    results = []
    for name in args.setups.split(","):
        for setup in start_setup(name, args, log_dir / name):
            results.append(measure(setup, workload, args))
            print(f"{name}: {json.dumps({k: results[-1][k] for k in ('decode_itl_client', 'long_ttft_client', 'output_tokens_per_s')})}",
                  flush=True)
    report = {"date": stamp, "machine": harness.machine_description(), "load_average_at_start": load,
              "load_high": load[0] > 0.5 * (os.cpu_count() or 1), "versions": harness.versions(args.gateway_python),
              "binary": args.tempered, "command": " ".join(["python3", "bench/pd_value.py", *sys.argv[1:]]),
              "workload": describe(args), "pinning": "PD prefill on core 0, decode on core 1 (taskset -a -cp); "
              "colocated, gateway and client unpinned" if args.pin else "none", "log_dir": str(log_dir),
              "quick": args.quick, "results": results}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"pd_value-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"pd_value-{stamp}.md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {out / f'pd_value-{stamp}'}.{{json,md}}")
    return 0 if all(not r["failures"] for r in results) else 1


def describe(args):
    return (f"{args.streams} decode streams (chat, max_tokens {args.stream_tokens}, ignore_eos, temperature 0; each "
            f"client sends its request again when it ends, and the last ones are cut when the last long prompt "
            f"has finished) started first; once each has its first token, {args.long_prompts} long prompts "
            f"({args.long_min_words}-{args.long_max_words} words, max_tokens {args.long_max_tokens}, ignore_eos, "
            f"streamed) at Poisson gaps of mean {args.interval} s; seed {args.seed}; model {args.model_name}")


if __name__ == "__main__":
    sys.exit(main())
