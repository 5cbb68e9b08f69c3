#!/usr/bin/env python3
"""Failover: 3 tempered workers behind the real sgl-model-gateway under steady load (concurrent clients,
a few hundred short chat requests); one worker is killed with SIGKILL a third of the way in. Reports the
success rate and, for every failed request, what failed and why (HTTP status and body, or the
connection error), with when it was sent relative to the kill.

The gateway runs with gateway_harness.FAILOVER_FLAGS: health checks every 2 s (two failures remove a
worker), up to 3 retries with backoff, and a circuit breaker that opens after 2 failures.

  python3 bench/failover.py --gateway-python /work/sgl-venv/bin/python
"""
import argparse
import datetime
import json
import pathlib
import re
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gateway_harness as harness  # noqa: E402


def bodies(model, count, max_tokens, stream):
    return [harness.chat_body(model, "You are terse.", f"Request {i}: name a colour.", max_tokens, stream=stream)
            for i in range(count)]


def run(args, log_dir):
    send = harness.streamed_chat if args.stream else harness.whole_chat
    with harness.Cluster(args.tempered, workers=args.workers, policy=args.policy, model=args.model,
                         threads=args.threads, log_dir=log_dir, gateway_python=args.gateway_python,
                         gateway_flags=harness.FAILOVER_FLAGS) as cluster:
        victim = cluster.workers[args.kill_worker]
        kill_after = args.requests // 3
        killed_at = []
        kill_lock = threading.Lock()

        def maybe_kill(done):
            with kill_lock:
                if done >= kill_after and not killed_at:
                    victim.kill(signal.SIGKILL)
                    killed_at.append(time.monotonic())

        results = harness.run_requests(lambda body: send(cluster.gateway.url, body),
                                       bodies(args.model, args.requests, args.max_tokens, args.stream),
                                       args.concurrency, maybe_kill)
        survivors = [harness.metric_sum(w.metrics(), "vllm:request_success_total")
                     for w in cluster.workers if w is not victim]
        gateway_log = cluster.gateway.log()
    return summarize(results, killed_at[0] if killed_at else None, kill_after, survivors, gateway_log)


def summarize(results, killed_at, kill_after, survivors, gateway_log):
    ok = [r for r in results if r["status"] == 200 and r["error"] is None]
    failures = [{"index": r["index"], "sent_s_after_kill": round(r["started"] - killed_at, 3) if killed_at else None,
                 "status": r["status"], "error": r["error"], "took_s": round(r["total_s"], 3)}
                for r in results if not (r["status"] == 200 and r["error"] is None)]
    after_kill = [r for r in results if killed_at and r["started"] >= killed_at]
    return {"requests": len(results), "succeeded": len(ok), "success_rate": len(ok) / len(results),
            "killed_after_completions": kill_after,
            "requests_sent_after_kill": len(after_kill),
            "succeeded_after_kill": sum(1 for r in after_kill if r["status"] == 200 and r["error"] is None),
            "latency_p50_s": harness.percentile([r["total_s"] for r in ok], 0.5),
            "latency_p99_s": harness.percentile([r["total_s"] for r in ok], 0.99),
            "slowest_success_after_kill_s": max((r["total_s"] for r in after_kill if r in ok), default=None),
            "survivor_requests_served": survivors,
            "gateway_log_lines_about_the_dead_worker": [
                line for line in gateway_log.splitlines()
                if any(word in line for word in ("health check failed", "Failed to send", "Circuit breaker", "unhealthy",
                                                 "etry"))][:20],
            "failures": failures}


def markdown(report):
    r = report["result"]
    lines = [f"# Failover: one of {report['workers']} workers killed under load ({report['date']})", "",
             f"- machine: {report['machine']} (shared with other jobs while this ran)",
             f"- versions: tempered {report['versions']['tempered_commit']}, "
             f"sglang-router {report['versions']['sglang_router']}",
             f"- command: `{report['command']}`",
             f"- load: {report['load']}",
             f"- gateway flags: `{' '.join(report['gateway_flags'])}`", "",
             f"**Success rate: {r['succeeded']}/{r['requests']} = {r['success_rate']:.4f}** "
             f"(after the kill: {r['succeeded_after_kill']}/{r['requests_sent_after_kill']}). Latency of the "
             f"successes p50 {r['latency_p50_s']:.3f} s, p99 {r['latency_p99_s']:.3f} s; the slowest success "
             f"sent after the kill took {r['slowest_success_after_kill_s'] or 0:.3f} s. The survivors served "
             f"{', '.join(str(int(n)) for n in r['survivor_requests_served'])} requests.", ""]
    if r["failures"]:
        lines += ["| request | sent (s after kill) | status | error | took (s) |", "|---|---|---|---|---|"]
        for f in r["failures"]:
            error = (f["error"] or "").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {f['index']} | {f['sent_s_after_kill']} | {f['status']} | {error} | {f['took_s']} |")
    else:
        lines.append("No request failed.")
    lines += ["", "What the gateway logged about the dead worker (first lines):", "", "```"]
    lines += [strip_ansi(line) for line in r["gateway_log_lines_about_the_dead_worker"]] or ["(nothing)"]
    lines += ["```"]
    return "\n".join(lines) + "\n"


def strip_ansi(line):
    return re.sub(r"\x1b\[[0-9;]*m", "", line)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tempered", default=str(harness.default_binary()))
    parser.add_argument("--model", default=harness.DEFAULT_MODEL)
    parser.add_argument("--gateway-python", default=sys.executable)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="compute threads per worker")
    parser.add_argument("--policy", default="round_robin")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--stream", action="store_true", help="streamed requests (a stream cut mid-way cannot be retried)")
    parser.add_argument("--kill-worker", type=int, default=1)
    parser.add_argument("--out", default=str(harness.REPO / "bench" / "results"))
    parser.add_argument("--log-dir", default=None, help="the processes' logs (default: a new folder in /tmp)")
    args = parser.parse_args()

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    log_dir = pathlib.Path(args.log_dir or tempfile.mkdtemp(prefix="failover-"))
    result = run(args, log_dir)
    report = {"date": stamp, "machine": harness.machine_description(),
              "versions": harness.versions(args.gateway_python),
              "command": " ".join(["python3", "bench/failover.py", *sys.argv[1:]]),
              "workers": args.workers,
              "load": f"{args.requests} {'streamed' if args.stream else 'whole'} chat requests (max_tokens "
                      f"{args.max_tokens}) from {args.concurrency} concurrent clients, policy {args.policy}, "
                      f"{args.workers} workers x {args.threads} thread(s); worker {args.kill_worker} killed "
                      f"(SIGKILL) after {args.requests // 3} completions",
              "gateway_flags": harness.FAILOVER_FLAGS, "log_dir": str(log_dir), "result": result}
    out = pathlib.Path(args.out)
    (out / f"failover-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"failover-{stamp}.md").write_text(markdown(report))
    print(markdown(report))
    return 0 if result["success_rate"] >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
