#!/usr/bin/env python3
"""Cache-aware routing against round robin: 3 tempered workers behind the real sgl-model-gateway, one
workload of 8 shared system prompts (a few hundred tokens each) x many users (short distinct messages),
sent in the same order under each policy. Each policy gets fresh workers (empty caches, zeroed metrics).

Reported per policy: the workers' own prefix-cache hit rate (vllm:prefix_cache_hits_total /
vllm:prefix_cache_queries_total, in tokens), TTFT p50/p99 seen by the clients (streamed) and from the
workers' vllm:time_to_first_token_seconds histograms, and how the requests spread over the workers.

  python3 bench/cache_aware_routing.py --gateway-python /work/sgl-venv/bin/python
"""
import argparse
import datetime
import json
import pathlib
import random
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gateway_harness as harness  # noqa: E402

TOPICS = ["a public library", "a bicycle repair shop", "a mountain weather station", "a bakery",
          "a city train network", "a hospital pharmacy", "a software help desk", "a botanical garden"]
USER_MESSAGES = ["What are your opening hours?", "Who do I ask about a refund?", "Can you help me today?",
                 "Where is the nearest entrance?", "How long does it usually take?", "Is there a waiting list?",
                 "What should I bring with me?", "Do you have anything for children?",
                 "Can I book ahead?", "Is it open on holidays?", "How much does it cost?",
                 "Who is in charge here?", "What is new this month?", "Can I bring a friend?",
                 "Where can I park?", "Do you take cards?"]


def system_prompt(topic):
    """A few hundred tokens of instructions, different per topic from the first sentence on."""
    rules = " ".join(f"Rule {n}: when a visitor of {topic} asks about topic {n}, answer in one short, "
                     f"polite sentence and mention the front desk of {topic} if unsure." for n in range(1, 13))
    return f"You are the assistant of {topic}. {rules}"


def workload(users_per_prompt, seed):
    requests = [(topic, f"User {user}: {USER_MESSAGES[user % len(USER_MESSAGES)]}")
                for topic in TOPICS for user in range(users_per_prompt)]
    random.Random(seed).shuffle(requests)
    return requests


def measure_policy(args, policy, requests, log_dir):
    bodies = [harness.chat_body(args.model, system_prompt(topic), user, args.max_tokens, stream=True)
              for topic, user in requests]
    with harness.Cluster(args.tempered, workers=args.workers, policy=policy, model=args.model,
                         threads=args.threads, log_dir=log_dir, gateway_python=args.gateway_python) as cluster:
        before = [worker.metrics() for worker in cluster.workers]
        results = harness.run_requests(lambda body: harness.streamed_chat(cluster.gateway.url, body), bodies,
                                       args.concurrency)
        after = [worker.metrics() for worker in cluster.workers]
    return summarize(policy, results, before, after)


def summarize(policy, results, before, after):
    def delta(name):
        return [harness.metric_sum(a, name) - harness.metric_sum(b, name) for a, b in zip(after, before)]

    hits, queries = sum(delta("vllm:prefix_cache_hits_total")), sum(delta("vllm:prefix_cache_queries_total"))
    buckets = {}
    for a, b in zip(after, before):
        for le, count in harness.subtract_buckets(harness.histogram_buckets(a, "vllm:time_to_first_token_seconds"),
                                                  harness.histogram_buckets(b, "vllm:time_to_first_token_seconds")).items():
            buckets[le] = buckets.get(le, 0.0) + count
    ok = [r for r in results if r["status"] == 200 and r["error"] is None]
    ttft = [r["ttft_s"] for r in ok if r["ttft_s"] is not None]
    cached = sum(r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in ok)
    prompt = sum(r["usage"]["prompt_tokens"] for r in ok)
    return {
        "policy": policy,
        "requests": len(results), "succeeded": len(ok),
        "prefix_cache_hit_rate": hits / queries if queries else None,
        "prefix_cache_hits_tokens": hits, "prefix_cache_queries_tokens": queries,
        "client_cached_tokens": cached, "client_prompt_tokens": prompt,
        "requests_per_worker": delta("vllm:request_success_total"),
        "ttft_client_p50_s": harness.percentile(ttft, 0.5), "ttft_client_p99_s": harness.percentile(ttft, 0.99),
        "ttft_worker_p50_s": harness.histogram_quantile(0.5, buckets),
        "ttft_worker_p99_s": harness.histogram_quantile(0.99, buckets),
        "wall_s": max(r["started"] + r["total_s"] for r in results) - min(r["started"] for r in results),
    }


def markdown(report):
    lines = [f"# Cache-aware routing vs round robin ({report['date']})", "",
             f"- machine: {report['machine']} (shared with other jobs while this ran)",
             f"- versions: tempered {report['versions']['tempered_commit']}, "
             f"sglang-router {report['versions']['sglang_router']}",
             f"- command: `{report['command']}`",
             f"- workload: {report['workload']}", "",
             "| policy | prefix-cache hit rate (workers) | cached / prompt tokens (clients) | TTFT p50 / p99 client (s) "
             "| TTFT p50 / p99 workers (s) | requests per worker | wall (s) |",
             "|---|---|---|---|---|---|---|"]
    for row in report["policies"]:
        lines.append(f"| {row['policy']} | {row['prefix_cache_hit_rate']:.3f} "
                     f"| {row['client_cached_tokens']} / {row['client_prompt_tokens']} "
                     f"| {row['ttft_client_p50_s']:.3f} / {row['ttft_client_p99_s']:.3f} "
                     f"| {row['ttft_worker_p50_s']:.3f} / {row['ttft_worker_p99_s']:.3f} "
                     f"| {', '.join(str(int(n)) for n in row['requests_per_worker'])} | {row['wall_s']:.1f} |")
    lines += ["", "Worker TTFT percentiles are interpolated inside the histogram's buckets, as Prometheus's "
              "histogram_quantile does; client TTFT is the time to the first content chunk through the gateway."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tempered", default=str(harness.default_binary()))
    parser.add_argument("--model", default=harness.DEFAULT_MODEL)
    parser.add_argument("--gateway-python", default=sys.executable)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="compute threads per worker")
    parser.add_argument("--users-per-prompt", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--policies", nargs="+", default=["cache_aware", "round_robin"])
    parser.add_argument("--out", default=str(harness.REPO / "bench" / "results"))
    parser.add_argument("--log-dir", default=None, help="the processes' logs (default: a new folder in /tmp)")
    args = parser.parse_args()

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    requests = workload(args.users_per_prompt, args.seed)
    out = pathlib.Path(args.out)
    log_dir = pathlib.Path(args.log_dir or tempfile.mkdtemp(prefix="cache-aware-routing-"))
    rows = [measure_policy(args, policy, requests, log_dir / policy) for policy in args.policies]
    report = {"date": stamp, "machine": harness.machine_description(),
              "versions": harness.versions(args.gateway_python),
              "command": " ".join(["python3", "bench/cache_aware_routing.py", *sys.argv[1:]]),
              "workload": f"{len(TOPICS)} system prompts x {args.users_per_prompt} users = {len(requests)} "
                          f"streamed chat requests (max_tokens {args.max_tokens}, temperature 0), seed {args.seed}, "
                          f"{args.concurrency} concurrent clients, {args.workers} workers x {args.threads} thread(s)",
              "policies": rows}
    (out / f"cache_aware_routing-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"cache_aware_routing-{stamp}.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
