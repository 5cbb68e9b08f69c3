#!/usr/bin/env python3
"""Soak: `tempered serve` under 64 concurrent streams of mixed, partly hostile requests for a long time
(issue 15). Proves nothing is lost and nothing leaks: every request ends in an answer, a clear error or an
intended client abort; KV blocks held by requests return to 0 when idle; the server's RSS, descriptors and
threads stay flat after warm-up.

    bench/soak.py                                   # 30 min, 64 streams, report in bench/results/
    bench/soak.py --minutes 3 --label soak-trial
    bench/soak.py --api-key KEY -- --request-timeout 60   # flags after `--` (or --server-arg=...) go to serve

Starts the server itself (--bin or TEMPERED_BIN, default build/tempered) on --model (default the SmolLM2
in ~/.cache/tempered/models). Its own default serve flags (a 1 MiB --max-body-bytes) are used only when
the binary knows them and the caller did not give them; flags the caller gives are passed as they are.
Writes <out>/<label>-<UTC stamp>.{md,json}; exits 1 when a check fails. The request kinds and outcome
classes are in soak_client.py, the checks and report in soak_report.py.
"""
import argparse
import json
import os
import pathlib
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import soak_client  # noqa: E402
import soak_report  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_SERVER_FLAGS = [("--max-body-bytes", str(1 << 20))]
IDLE_TIMEOUT_S = 120      # after the load: how long the server may take to finish and free everything
FD_SETTLE_S = 15          # after idle: closed client connections leaving the server's descriptor table


def parse_args(argv):
    passthrough = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("TEMPERED_BIN", str(REPO / "build" / "tempered")))
    parser.add_argument("--model", default="smollm2-135m-instruct", help="a known model name or a .gguf path")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seconds", type=float, help="the duration in seconds (overrides --minutes)")
    parser.add_argument("--streams", type=int, default=64, help="concurrent clients")
    parser.add_argument("--sample-seconds", type=float, default=60.0)
    parser.add_argument("--warmup-minutes", type=float, help="default: a tenth of the run, at most 3")
    parser.add_argument("--rss-slope-limit", type=float,
                        help="MiB/min: also check the RSS slope after warm-up (least squares) is at most this "
                             "(issue 30: 0.02 over 2 hours, --warmup-minutes 10)")
    parser.add_argument("--timeout", type=float, default=120.0, help="client timeout per request, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--api-key", default=os.environ.get("TEMPERED_SOAK_API_KEY"),
                        help="sent as `Authorization: Bearer`; also given to serve as --api-key when it knows "
                             "that flag and the serve flags do not already set one")
    parser.add_argument("--server-arg", action="append", default=[], help="one serve flag, e.g. --server-arg=--x=1")
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    parser.add_argument("--label", default="soak", help="the report's file name prefix")
    args = parser.parse_args(argv)
    args.server_args = args.server_arg + passthrough
    args.duration_s = args.seconds if args.seconds is not None else args.minutes * 60
    warmup_min = args.warmup_minutes if args.warmup_minutes is not None else min(3.0, args.duration_s / 600)
    args.warmup_s = warmup_min * 60
    return args


# ---- the server

def serve_help(binary):
    """`serve --help`: which flags this binary knows (the soak's defaults are added only when it does)."""
    return subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout


def server_command(args, port):
    help_text = serve_help(args.bin)
    given = " ".join(args.server_args)
    command = [args.bin, "serve", "--host", "127.0.0.1", "--port", str(port), "--model", args.model]
    for flag, value in DEFAULT_SERVER_FLAGS:
        if flag in help_text and flag not in given:
            command += [flag, value]
    if args.api_key and "--api-key" in help_text and "--api-key" not in given:
        command += ["--api-key", args.api_key]
    return command + args.server_args


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(command, port, log_file, headers):
    """Starts serve and waits for /health (with the key: `--protect-all` closes /health too)."""
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log_tail = pathlib.Path(log_file.name).read_text(errors="replace")[-2000:]
            sys.exit(f"tempered serve exited with {process.returncode}; log {log_file.name}:\n{log_tail}")
        try:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/health", headers=headers)
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    sys.exit(f"tempered serve not ready after 120 s; log: {log_file.name}")


def get(target, path):
    request = urllib.request.Request(f"http://{target.host}:{target.port}{path}", headers=target.headers())
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def served_model(target):
    """The served model's name and context length, from /v1/models."""
    card = json.loads(get(target, "/v1/models"))["data"][0]
    return card["id"], int(card.get("max_model_len", 8192))


# ---- load and samples

class Soak:
    """The workers, the sampler, and what they record."""

    def __init__(self, args, target, process):
        self.args, self.target, self.process = args, target, process
        self.requests, self.samples = [], []
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.stop = threading.Event()

    def elapsed(self):
        return time.monotonic() - self.started

    def worker(self, index):
        rng = soak_client.seeded(self.args.seed, index)
        client = soak_client.new_client(self.target)
        with client:
            while time.monotonic() < self.target.deadline and self.process.poll() is None:
                kind = soak_client.pick_kind(rng)
                began = self.elapsed()
                outcome = soak_client.run_kind(kind, rng, client, self.target)
                with self.lock:
                    self.requests.append({"t_s": round(began, 2), "kind": kind.name, "outcome": outcome.outcome,
                                          "detail": outcome.detail, "seconds": round(self.elapsed() - began, 2)})

    def sample(self, phase):
        sample = {"phase": phase, "t_s": round(self.elapsed(), 1)} | soak_report.process_sample(self.process.pid)
        try:
            sample |= soak_report.parse_metrics(get(self.target, "/metrics"))
        except OSError as error:
            sample["metrics_error"] = str(error)
        with self.lock:
            sample["requests_done"] = len(self.requests)
        return sample

    def sampler(self):
        next_at = self.args.sample_seconds
        while not self.stop.wait(max(0.0, next_at - self.elapsed())):
            if self.process.poll() is not None:
                return
            self.samples.append(self.sample("load"))
            next_at += self.args.sample_seconds

    def run(self):
        self.samples.append(self.sample("start"))
        workers = [threading.Thread(target=self.worker, args=(i,), daemon=True) for i in range(self.args.streams)]
        sampler = threading.Thread(target=self.sampler, daemon=True)
        for thread in workers + [sampler]:
            thread.start()
        for thread in workers:
            thread.join()
        self.stop.set()
        sampler.join()


def wait_idle(soak):
    """Polls /metrics until nothing runs, waits or holds KV (or IDLE_TIMEOUT_S passes); then lets the
    descriptor count settle; the last sample."""
    deadline = time.monotonic() + IDLE_TIMEOUT_S
    sample = soak.sample("final")
    while time.monotonic() < deadline and not (sample.get("running") == sample.get("waiting") ==
                                               sample.get("kv_blocks_in_use") == 0):
        time.sleep(1)
        sample = soak.sample("final")
    start_fds = soak.samples[0]["fds"]
    deadline = time.monotonic() + FD_SETTLE_S
    while time.monotonic() < deadline and abs(sample["fds"] - start_fds) > soak_report.FD_SLACK:
        time.sleep(1)
        sample = soak.sample("final")
    return sample


def flush_cache(target):
    request = urllib.request.Request(f"http://{target.host}:{target.port}/flush_cache", method="POST",
                                     headers=target.headers())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return f"{response.status} {response.read().decode().strip()}"
    except urllib.error.HTTPError as error:
        return f"{error.code} {error.read().decode().strip()}"
    except OSError as error:
        return f"failed: {error}"


def stop_server(process):
    if process.poll() is not None:
        return process.returncode
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return "killed: still running 60 s after SIGTERM"


def commit():
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main(argv):
    args = parse_args(argv)
    load_at_start = os.getloadavg()[0]
    port = free_port()
    command = server_command(args, port)
    log_file = tempfile.NamedTemporaryFile(prefix="tempered-soak-", suffix=".log", delete=False)
    target = soak_client.Target("127.0.0.1", port, "", args.api_key, args.timeout,
                                max_body_bytes=1 << 20, context_length=8192)
    process = start_server(command, port, log_file, target.headers())
    target.model, target.context_length = served_model(target)
    target.max_body_bytes = body_limit(command)
    soak = Soak(args, target, process)
    target.deadline = soak.started + args.duration_s
    print(f"soak: {args.streams} streams for {args.duration_s:.0f} s against {' '.join(command)} "
          f"(log {log_file.name})", flush=True)
    try:
        soak.run()
        final = wait_idle(soak) if process.poll() is None else soak.sample("final")
        flush = flush_cache(target) if process.poll() is None else "server gone"
        after_flush = soak.sample("after flush") if process.poll() is None else None
    finally:
        exit_status = stop_server(process)
    run = {"stamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%SZ"), "server_command": command,
           "server_log": log_file.name, "commit": commit(),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average {load_at_start:.1f} at the start, "
                      f"{os.getloadavg()[0]:.1f} at the end",
           "config": {"streams": args.streams, "duration_s": args.duration_s, "sample_s": args.sample_seconds,
                      "warmup_s": args.warmup_s, "timeout_s": args.timeout, "seed": args.seed,
                      "rss_slope_limit": args.rss_slope_limit,
                      "api_key": bool(args.api_key)},
           "samples": soak.samples, "final": final, "flush": flush, "after_flush": after_flush,
           "server_exit": exit_status, "requests": soak.requests}
    if exit_status != 0:
        run["server_log_tail"] = pathlib.Path(log_file.name).read_text(errors="replace")[-4000:]
    verdict = soak_report.checks(run)
    md_path, json_path = soak_report.write(run, verdict, args.out, args.label)
    passed = all(check["ok"] for check in verdict)
    print(f"soak: {'PASS' if passed else 'FAIL'}; {md_path}", flush=True)
    for check in verdict:
        mark = "skipped" if check.get("skipped") else ("ok" if check["ok"] else "FAILED")
        print(f"  {mark}: {check['name']} ({check['detail']})", flush=True)
    return 0 if passed else 1


def body_limit(command):
    """The --max-body-bytes the server runs with (the last one given), or its default of 32 MiB."""
    limit = 32 << 20
    for index, word in enumerate(command):
        if word == "--max-body-bytes" and index + 1 < len(command):
            limit = int(command[index + 1])
        elif word.startswith("--max-body-bytes="):
            limit = int(word.split("=", 1)[1])
    return limit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
