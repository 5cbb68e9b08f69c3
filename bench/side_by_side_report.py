#!/usr/bin/env python3
"""The Python half of bench/side_by_side.sh (stdlib only): machine details, free ports, waiting for a
server's /health, and the final report: one JSON file with every tool's raw output and one Markdown
table comparing tempered with llama.cpp.

  side_by_side_report.py machine --repo DIR [--llama-bin DIR]      machine details as JSON on stdout
  side_by_side_report.py free-port                                  a free loopback TCP port
  side_by_side_report.py wait-health URL --pid PID [--timeout S]    exit 0 once GET URL answers 200
  side_by_side_report.py llama-timings URL --prompt P --gen G --reps R
      llama.cpp's pp/tg speed from llama-server's own timings, for when llama-bench cannot run (below)
  side_by_side_report.py summarise --dir WORKDIR --json OUT --md OUT

`summarise` reads from WORKDIR (a missing file is a skipped step, shown as such, never as zero):
  run.json           the script's settings and notes (sizes, flags used, steps skipped and why)
  machine.json       from `machine`
  membench.json      tempered membench --json
  model_bench.json   tempered model-bench --json
  llama_bench.json   llama-bench -o json (a list of tests)
  llama_server_timings.json   llama-timings, used when llama_bench.json holds no results
  http_tempered.json, http_llama.json   tempered bench --json against each server
"""
import argparse
import datetime
import json
import os
import platform
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CPU_FLAGS = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16"]


# ---- machine details

def run_text(command, cwd=None):
    """stdout + stderr of `command`, or None when it cannot run."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout + done.stderr).strip()


def lscpu_fields():
    text = run_text(["lscpu"]) or ""
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def machine(repo, llama_bin):
    cpu = lscpu_fields()
    flags = set(cpu.get("Flags", "").split())
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    mem_kib = re.search(r"MemTotal:\s+(\d+) kB", meminfo)
    commit = run_text(["git", "-C", repo, "rev-parse", "HEAD"])
    # --no-optional-locks: reading the state must not write the index of a tree others share.
    dirty = run_text(["git", "--no-optional-locks", "-C", repo, "status", "--porcelain", "--untracked-files=no"])
    details = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": platform.node(),
        "cpu_model": cpu.get("Model name"),
        "cpus": int(cpu["CPU(s)"]) if cpu.get("CPU(s)", "").isdigit() else os.cpu_count(),
        "cores_per_socket": cpu.get("Core(s) per socket"),
        "sockets": cpu.get("Socket(s)"),
        "threads_per_core": cpu.get("Thread(s) per core"),
        "l3_cache": cpu.get("L3 cache"),
        "hypervisor": cpu.get("Hypervisor vendor"),
        "cpu_flags": {flag: flag in flags for flag in CPU_FLAGS},
        "memory_gib": round(int(mem_kib.group(1)) / 2**20, 1) if mem_kib else None,
        "kernel": platform.release(),
        "load_average_at_start": list(os.getloadavg()),
        "tempered_commit": commit,
        "tempered_tree_modified": bool(dirty) if dirty is not None else None,
        "llama_cpp": None,
    }
    if llama_bin:
        server = Path(llama_bin) / "llama-server"
        version = run_text([str(server), "--version"]) if server.exists() else None
        details["llama_cpp"] = {"bin": str(llama_bin), "version": version}
    return details


# ---- process helpers

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by the script) counts as dead.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_health(url, pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            print(f"server (pid {pid}) exited before {url} answered 200", file=sys.stderr)
            return 1
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return 0
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    print(f"{url} did not answer 200 within {timeout} s", file=sys.stderr)
    return 1


# ---- llama.cpp's forward-pass speed without llama-bench

def post_json(url, body, timeout=600):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def mean_and_stddev(samples):
    mean = sum(samples) / len(samples)
    if len(samples) < 2:
        return mean, 0.0
    return mean, (sum((x - mean) ** 2 for x in samples) / (len(samples) - 1)) ** 0.5


def llama_timings(url, prompt, gen, reps, seed=1234):
    """llama-bench's pp and tg tests, timed by llama-server itself (a server with one slot).

    The prompt test sends `prompt` random token ids with n_predict 1 and reads timings.prompt_per_second;
    the gen test sends one token and n_predict `gen` and reads timings.predicted_per_second, which also
    covers sampling each token (llama-bench does not sample). cache_prompt is off, so every request
    starts from an empty slot as llama-bench's runs do. One untimed request of each kind first.
    Output: llama-bench's JSON shape (n_prompt, n_gen, avg_ts, stddev_ts, samples_ts) plus "source".
    """
    import random
    models = json.loads(urllib.request.urlopen(url + "/v1/models", timeout=30).read())
    vocab = None
    for entry in models.get("data", []):
        vocab = (entry.get("meta") or {}).get("n_vocab") or vocab
    generator = random.Random(seed)
    vocab = vocab or 32000

    def completion(tokens, n_predict):
        body = {"prompt": tokens, "n_predict": n_predict, "ignore_eos": True, "cache_prompt": False,
                "temperature": 0}
        return post_json(url + "/completion", body)["timings"]

    tests = []
    if prompt > 0:
        samples = []
        for rep in range(reps + 1):
            timings = completion([generator.randrange(vocab) for _ in range(prompt)], 1)
            if rep > 0:
                samples.append(timings["prompt_per_second"])
        tests.append((prompt, 0, samples))
    if gen > 0:
        samples = []
        for rep in range(reps + 1):
            timings = completion([generator.randrange(vocab)], gen)
            if rep > 0:
                samples.append(timings["predicted_per_second"])
        tests.append((0, gen, samples))
    out = []
    for n_prompt, n_gen, samples in tests:
        mean, stddev = mean_and_stddev(samples)
        out.append({"n_prompt": n_prompt, "n_gen": n_gen, "avg_ts": mean, "stddev_ts": stddev, "samples_ts": samples,
                    "source": "llama-server timings (prompt_per_second / predicted_per_second), one slot"})
    return out


# ---- the report

def load(directory, name):
    path = Path(directory) / name
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        return {"unparsed": path.read_text()[-4000:], "error": str(error)}


def tempered_test(model_bench, kind):
    """The pp ('prompt') or tg ('gen') test of tempered model-bench."""
    for test in (model_bench or {}).get("tests", []):
        if test.get("sequences", 1) != 1:
            continue
        if kind == "prompt" and test["prompt_tokens"] > 0 and test["gen_tokens"] == 0:
            return test["name"], test["mean_tokens_per_s"], test["stddev_tokens_per_s"]
        if kind == "gen" and test["gen_tokens"] > 0 and test["prompt_tokens"] == 0:
            return test["name"], test["mean_tokens_per_s"], test["stddev_tokens_per_s"]
    return None


def llama_test(llama_bench, kind):
    if not isinstance(llama_bench, list):
        return None
    for test in llama_bench:
        if test.get("avg_ts") is None:
            continue
        prompt, gen = test.get("n_prompt", 0), test.get("n_gen", 0)
        if kind == "prompt" and prompt > 0 and gen == 0:
            return f"pp{prompt}", test["avg_ts"], test["stddev_ts"]
        if kind == "gen" and gen > 0 and prompt == 0:
            return f"tg{gen}", test["avg_ts"], test["stddev_ts"]
    return None


def http_value(report, *keys):
    value = report
    for key in keys:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return value


def fmt(value, digits=1):
    return "—" if value is None else f"{value:,.{digits}f}"


def ratio(ours, theirs):
    return "—" if ours is None or theirs in (None, 0) else f"{ours / theirs:.2f}"


def summarise(directory):
    names = ["run", "machine", "membench", "model_bench", "llama_bench", "llama_server_timings", "http_tempered",
             "http_llama"]
    raw = {name: load(directory, name + ".json") for name in names}
    run = raw["run"] or {}
    notes = list(run.get("notes", []))
    llama_forward = raw["llama_bench"]
    if not isinstance(llama_forward, list) or not llama_forward:
        llama_forward = raw["llama_server_timings"]
        if isinstance(llama_forward, list) and llama_forward:
            notes.append("llama.cpp's pp/tg figures come from llama-server's own timings (one slot, cache_prompt "
                         "off), not llama-bench; its tg figure includes sampling each token")

    rows = []  # (metric, tempered, llama.cpp, ratio text)
    for kind, label in (("gen", "decode"), ("prompt", "prompt processing")):
        ours, theirs = tempered_test(raw["model_bench"], kind), llama_test(llama_forward, kind)
        test_name = (ours or theirs or ("?",))[0]
        rows.append((f"{test_name} ({label}), tok/s",
                     f"{fmt(ours[1])} ± {fmt(ours[2])}" if ours else "—",
                     f"{fmt(theirs[1])} ± {fmt(theirs[2])}" if theirs else "—",
                     ratio(ours and ours[1], theirs and theirs[1])))
    streams = run.get("http_concurrency", "?")
    for key, label, digits in (("output_token_throughput", f"HTTP {streams} streams: output tok/s", 1),
                               ("request_throughput", f"HTTP {streams} streams: requests/s", 2)):
        ours, theirs = http_value(raw["http_tempered"], key), http_value(raw["http_llama"], key)
        rows.append((label, fmt(ours, digits), fmt(theirs, digits), ratio(ours, theirs)))
    # Both servers get the same synthetic prompts, sized by each server's own /tokenize where it has one.
    ours, theirs = (http_value(raw["http_tempered"], "prompt_tokens", "mean"),
                    http_value(raw["http_llama"], "prompt_tokens", "mean"))
    rows.append((f"HTTP {streams} streams: mean prompt tokens (server's usage)", fmt(ours), fmt(theirs), ratio(ours, theirs)))
    for key, stat, label in (("ttft_ms", "p50", "TTFT p50, ms"), ("ttft_ms", "p99", "TTFT p99, ms"),
                             ("itl_ms", "p50", "ITL p50, ms"), ("itl_ms", "p99", "ITL p99, ms"),
                             ("e2e_latency_ms", "p50", "end-to-end p50, ms")):
        ours, theirs = http_value(raw["http_tempered"], key, stat), http_value(raw["http_llama"], key, stat)
        rows.append((f"HTTP {streams} streams: {label} (lower is better)", fmt(ours), fmt(theirs),
                     ratio(ours, theirs)))
    for name in ("http_tempered", "http_llama"):
        failed = http_value(raw[name], "failed")
        if failed:
            notes.append(f"{name}: {failed} requests failed: {http_value(raw[name], 'errors')}")

    membench = raw["membench"] or {}
    bandwidth = http_value(membench, "triad", "best_gb_per_s")
    working_set = http_value(membench, "model", "working_set_triad", "best_gb_per_s")
    bound = http_value(membench, "model", "decode_bound_tokens_per_s")
    bound_cached = http_value(membench, "model", "decode_bound_at_working_set_tokens_per_s")
    bytes_per_token = http_value(membench, "model", "weight_bytes_per_token")
    ours_tg, theirs_tg = tempered_test(raw["model_bench"], "gen"), llama_test(llama_forward, "gen")

    def fraction(test, limit):
        return "—" if test is None or not limit else f"{100 * test[1] / limit:.0f}%"

    machine_info = raw["machine"] or {}
    version_lines = ((machine_info.get("llama_cpp") or {}).get("version") or "").splitlines()
    llama_version = next((line for line in version_lines if line.startswith("version:")), "not run")
    if isinstance(raw["llama_bench"], list) and raw["llama_bench"]:
        build = raw["llama_bench"][0]
        llama_version += f" (llama-bench: build {build.get('build_number')}, commit {build.get('build_commit')})"
    lines = [f"# tempered vs llama.cpp, side by side ({machine_info.get('date_utc', '?')})", ""]
    lines += [f"- model: `{run.get('model', '?')}`" + (" (smoke sizes: speeds mean nothing)" if run.get("smoke") else ""),
              f"- threads: {run.get('threads', '?')}; CPU: {machine_info.get('cpu_model')} "
              f"({machine_info.get('cpus')} CPUs, {machine_info.get('memory_gib')} GiB, kernel {machine_info.get('kernel')}); "
              f"load average at start: {machine_info.get('load_average_at_start')}",
              f"- flags: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in (machine_info.get("cpu_flags") or {}).items()),
              f"- tempered {machine_info.get('tempered_commit')}"
              + (" (working tree modified)" if machine_info.get("tempered_tree_modified") else "")
              + f", CPU kernels: {(raw['model_bench'] or {}).get('cpu_isa', '?')}",
              f"- llama.cpp: {llama_version}"
              + (f"; llama-bench `{run['llama_bench_flags']}`" if run.get("llama_bench_flags") else "")
              + (f"; llama-server `{run['llama_server_flags']}`" if run.get("llama_server_flags") else ""),
              f"- HTTP load: `{run.get('http_command', '?')}`", ""]
    lines += ["| | tempered | llama.cpp | tempered / llama.cpp |", "|---|---:|---:|---:|"]
    lines += [f"| {metric} | {a} | {b} | {r} |" for metric, a, b, r in rows]
    lines += ["", "## Memory bandwidth and the batch-1 decode bound", ""]
    lines += ["| | value |", "|---|---:|",
              f"| triad (STREAM, 3 arrays of {fmt((http_value(membench, 'triad', 'array_bytes') or 0) / 2**20, 0)} MiB, "
              f"{http_value(membench, 'threads') or '?'} threads), best GB/s | {fmt(bandwidth, 2)} |",
              f"| triad on a working set the size of one token's weights, GB/s | {fmt(working_set, 2)} |",
              f"| weights read per decode token, MB | {fmt(bytes_per_token and bytes_per_token / 1e6)} |",
              f"| decode bound at triad bandwidth, tok/s | {fmt(bound)} |",
              f"| decode bound at working-set bandwidth, tok/s | {fmt(bound_cached)} |",
              f"| tempered decode, share of bound (triad / working set) | {fraction(ours_tg, bound)} / {fraction(ours_tg, bound_cached)} |",
              f"| llama.cpp decode, share of bound (triad / working set) | {fraction(theirs_tg, bound)} / {fraction(theirs_tg, bound_cached)} |",
              ""]
    lines += ["Triad bytes are counted as STREAM counts them (24 per element of doubles, write-allocate not "
              "counted; GB = 1e9 bytes). A share above 100% means the weights are served partly from cache.", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {note}" for note in notes] + [""]
    report = {"summary_rows": [dict(zip(("metric", "tempered", "llama_cpp", "ratio"), row)) for row in rows], **raw}
    return report, "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    machine_parser = commands.add_parser("machine")
    machine_parser.add_argument("--repo", required=True)
    machine_parser.add_argument("--llama-bin", default="")
    commands.add_parser("free-port")
    timings_parser = commands.add_parser("llama-timings")
    timings_parser.add_argument("url")
    timings_parser.add_argument("--prompt", type=int, required=True)
    timings_parser.add_argument("--gen", type=int, required=True)
    timings_parser.add_argument("--reps", type=int, required=True)
    wait_parser = commands.add_parser("wait-health")
    wait_parser.add_argument("url")
    wait_parser.add_argument("--pid", type=int, required=True)
    wait_parser.add_argument("--timeout", type=float, default=180)
    summary_parser = commands.add_parser("summarise")
    summary_parser.add_argument("--dir", required=True)
    summary_parser.add_argument("--json", required=True)
    summary_parser.add_argument("--md", required=True)
    args = parser.parse_args()

    if args.command == "machine":
        print(json.dumps(machine(args.repo, args.llama_bin), indent=2))
    elif args.command == "free-port":
        print(free_port())
    elif args.command == "llama-timings":
        print(json.dumps(llama_timings(args.url, args.prompt, args.gen, args.reps), indent=2))
    elif args.command == "wait-health":
        return wait_health(args.url, args.pid, args.timeout)
    elif args.command == "summarise":
        report, markdown = summarise(args.dir)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        Path(args.md).write_text(markdown)
        print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
