"""The soak's samples, checks and report (bench/soak.py): process and /metrics samples, the verdict, and
the markdown and JSON written to bench/results/."""
import json
import os
import re

from soak_client import CLASSES, KINDS, LOST

MIB = 1024 * 1024
RSS_GROWTH = 1.05          # flat: the last third's max RSS <= the first third's max x this + RSS_SLACK
RSS_SLACK = 8 * MIB
FD_SLACK = 4               # idle fds at the end == at the start +- this; threads flat within this
# Under load the descriptor count moves with the connections open at the moment of the sample (up to two per
# stream: a kept-alive one and a raw one), so the fd curve gets this much more slack per stream; the idle
# comparison at the end is the exact leak check.
FD_SLACK_PER_STREAM = 0.25
MIN_FLAT_SAMPLES = 3       # after warm-up; fewer and the flatness checks are skipped (the CI smoke)

GAUGES = {
    "kv_blocks_in_use": "tempered:kv_blocks_in_use",
    "running": "vllm:num_requests_running",
    "waiting": "vllm:num_requests_waiting",
    "kv_usage": "vllm:kv_cache_usage_perc",
    "aborted": "tempered:requests_aborted_total",
    "failed": "tempered:requests_failed_total",
    "rejected": "tempered:requests_rejected_total",
    "heap_in_use": "tempered:malloc_in_use_bytes",
    "heap_free": "tempered:malloc_free_bytes",
}
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


def parse_metrics(text):
    """{name: total over every label set} plus request_success_total per finished_reason."""
    totals, finished = {}, {}
    for line in text.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        name, labels, value = match.group(1), match.group(2) or "", float(match.group(3))
        totals[name] = totals.get(name, 0.0) + value
        if name == "vllm:request_success_total":
            reason = re.search(r'finished_reason="([^"]*)"', labels)
            finished[reason.group(1) if reason else ""] = value
    sample = {key: totals.get(name) for key, name in GAUGES.items()}
    sample["finished"] = finished
    return sample


def process_sample(pid):
    """VmRSS (bytes), open descriptors and threads of the server process; -1 each once it has gone."""
    status = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                status[key] = value.strip()
        if "VmRSS" not in status:  # a zombie: exited, not yet reaped
            raise ProcessLookupError(pid)
    except OSError:
        return {"rss_bytes": -1, "fds": -1, "threads": -1}
    return {"rss_bytes": int(status["VmRSS"].split()[0]) * 1024, "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": int(status["Threads"])} | rss_by_mapping(pid)


def rss_by_mapping(pid):
    """The resident bytes by kind of mapping (/proc/PID/smaps): "stacks" (the anonymous 8 MiB mappings of thread
    stacks), "heap" ([heap] and the other anonymous mappings: malloc's arenas, its mmapped blocks, the KV pool)
    and "files" (the model's weights, libraries). Which one creeps says where to look."""
    kinds = {"rss_stacks": 0, "rss_heap": 0, "rss_files": 0}
    try:
        with open(f"/proc/{pid}/smaps") as f:
            kind = None
            for line in f:
                fields = line.split()
                if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header line
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    path = fields[5] if len(fields) > 5 else ""
                    anonymous = path == "" or path == "[heap]"
                    kind = ("rss_stacks" if anonymous and end - start == 8 << 20 and path == ""
                            else "rss_heap" if anonymous else "rss_files")
                elif fields[0] == "Rss:" and kind:
                    kinds[kind] += int(fields[1]) * 1024
    except OSError:
        return {}
    return kinds


# ---- checks

def flat_check(samples, key, warmup_s, limit, unit=1, unit_name=""):
    """Compares the first and last thirds of the samples taken after warm-up."""
    after = [s[key] for s in samples if s["phase"] == "load" and s["t_s"] >= warmup_s]
    if len(after) < MIN_FLAT_SAMPLES:
        return {"name": f"{key} flat after warm-up", "ok": True, "skipped": True,
                "detail": f"only {len(after)} samples after warm-up (need {MIN_FLAT_SAMPLES})"}
    third = max(1, len(after) // 3)
    first, last = max(after[:third]), max(after[-third:])
    bound = limit(first)
    return {"name": f"{key} flat after warm-up", "ok": last <= bound,
            "detail": f"last third max {last / unit:.1f}{unit_name} <= bound {bound / unit:.1f}{unit_name} "
                      f"(first third max {first / unit:.1f}{unit_name})"}


def checks(run):
    counts = outcome_counts(run["requests"])
    samples, final, start = run["samples"], run["final"], run["samples"][0]
    warmup = run["config"]["warmup_s"]
    fd_slack = max(FD_SLACK, round(FD_SLACK_PER_STREAM * run["config"]["streams"]))
    result = [
        {"name": "0 lost requests", "ok": counts[LOST] == 0, "detail": f"{counts[LOST]} lost"},
        {"name": "some requests completed", "ok": counts["completed"] > 0, "detail": f"{counts['completed']}"},
        {"name": "kv_blocks_in_use back to 0 when idle", "ok": final.get("kv_blocks_in_use") == 0,
         "detail": f"{number(final.get('kv_blocks_in_use'))} (running {number(final.get('running'))}, "
                   f"waiting {number(final.get('waiting'))})"},
        flat_check(samples, "rss_bytes", warmup, lambda first: first * RSS_GROWTH + RSS_SLACK, MIB, " MiB"),
        flat_check(samples, "fds", warmup, lambda first: first + fd_slack),
        rss_slope_check(samples, warmup, run["config"].get("rss_slope_limit")),
        flat_check(samples, "threads", warmup, lambda first: first + FD_SLACK),
        {"name": "fds when idle at the end == at the start +- slack",
         "ok": abs(final["fds"] - start["fds"]) <= FD_SLACK, "detail": f"{start['fds']} -> {final['fds']}"},
        {"name": "server alive to the end, exits 0 on SIGTERM", "ok": run["server_exit"] == 0,
         "detail": f"exit status {run['server_exit']}"},
    ]
    return result


def rss_slope(samples, warmup_s, key="rss_bytes"):
    """MiB per minute: the least-squares slope of `key` over the load samples after warm-up; None under 3."""
    points = [(s["t_s"] / 60, s[key] / MIB) for s in samples
              if s["phase"] == "load" and s["t_s"] >= warmup_s and s.get(key) is not None]
    if len(points) < 3:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else None


def rss_slope_check(samples, warmup_s, limit):
    slope = rss_slope(samples, warmup_s)
    parts = {key: rss_slope(samples, warmup_s, key) for key in ("rss_stacks", "rss_heap", "rss_files")}
    by_kind = ", ".join(f"{key[len('rss_'):]} " + ("-" if value is None else f"{value:.4f}")
                        for key, value in parts.items())
    detail = "not enough samples" if slope is None else f"{slope:.4f} MiB/min after {warmup_s / 60:.0f} min ({by_kind})"
    if limit is None or slope is None:
        return {"name": "rss slope after warm-up (reported)", "ok": True, "detail": detail}
    return {"name": f"rss slope after warm-up <= {limit} MiB/min", "ok": slope <= limit, "detail": detail}


def number(value, spec="{:.0f}"):
    return "-" if value is None else spec.format(value)


def outcome_counts(requests):
    counts = {outcome: 0 for outcome in CLASSES}
    for request in requests:
        counts[request["outcome"]] += 1
    return counts


def by_kind(requests):
    table = {kind.name: {outcome: 0 for outcome in CLASSES} | {"unexpected": 0, "max_s": 0.0} for kind in KINDS}
    expected = {kind.name: kind.expected for kind in KINDS}
    for request in requests:
        row = table[request["kind"]]
        row[request["outcome"]] += 1
        row["max_s"] = max(row["max_s"], request["seconds"])
        if request["outcome"] != LOST and request["outcome"] not in expected[request["kind"]]:
            row["unexpected"] += 1
    return table


# ---- writing

def mib(value):
    return "-" if value is None else f"{value / MIB:.1f}"


def sample_row(sample):
    finished = sample.get("finished", {})
    return (f"| {sample['phase']} | {sample['t_s'] / 60:.1f} | {sample['rss_bytes'] / MIB:.1f} | "
            f"{mib(sample.get('rss_stacks'))} / {mib(sample.get('rss_heap'))} / {mib(sample.get('rss_files'))} | "
            f"{mib(sample.get('heap_in_use'))} / {mib(sample.get('heap_free'))} | {sample['fds']} | "
            f"{sample['threads']} | {number(sample.get('kv_blocks_in_use'))} | "
            f"{number(sample.get('kv_usage'), '{:.3f}')} | {number(sample.get('running'))} | "
            f"{number(sample.get('waiting'))} | {number(finished.get('stop'))}/{number(finished.get('length'))}/"
            f"{number(finished.get('abort'))}/{number(finished.get('error'))} | {number(sample.get('aborted'))} | "
            f"{number(sample.get('failed'))} | {sample.get('requests_done', '-')} |")


def markdown(run, verdict):
    config = run["config"]
    lines = [f"# Soak {run['stamp']}", "",
             f"`{' '.join(run['server_command'])}`", "",
             f"{config['streams']} streams for {config['duration_s'] / 60:.1f} min (seed {config['seed']}), "
             f"samples every {config['sample_s']:.0f} s, warm-up {config['warmup_s'] / 60:.1f} min, client timeout "
             f"{config['timeout_s']:.0f} s. Machine: {run['machine']}. Commit: {run['commit']}.", "",
             "## Verdict", "", f"**{'PASS' if all(c['ok'] for c in verdict) else 'FAIL'}**", ""]
    for check in verdict:
        mark = "skipped" if check.get("skipped") else ("ok" if check["ok"] else "FAILED")
        lines.append(f"- {check['name']}: {mark} ({check['detail']})")
    lines += ["", "`tempered:kv_blocks_in_use` counts blocks held by at least one request; cached prefix blocks "
              "nobody holds are not in it (they stay cached for reuse until /flush_cache). "
              f"/flush_cache after idle: {run['flush'].rstrip('.')}.", ""]
    lines += outcome_tables(run)
    lines += ["## Samples", "",
              "| phase | min | RSS MiB | stacks / heap / files MiB | malloc in use / free MiB | fds | threads | "
              "KV blocks in use | KV usage | running | waiting | finished stop/length/abort/error | aborted | failed | "
              "client requests done |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [sample_row(sample) for sample in run["samples"]]
    lines += [sample_row(run["final"])] + ([sample_row(run["after_flush"])] if run.get("after_flush") else []) + [""]
    lines += lost_details(run["requests"])
    if run["server_exit"] != 0 and run.get("server_log_tail"):
        lines += ["## Server log (tail)", "", "```", run["server_log_tail"], "```", ""]
    return "\n".join(lines) + "\n"


def outcome_tables(run):
    counts = outcome_counts(run["requests"])
    lines = ["## Outcomes", "", "| " + " | ".join(CLASSES) + " | total |", "|" + "---|" * (len(CLASSES) + 1),
             "| " + " | ".join(str(counts[c]) for c in CLASSES) + f" | {len(run['requests'])} |", "",
             "| kind | weight | " + " | ".join(CLASSES) + " | unexpected class | longest (s) |",
             "|---|---|" + "---|" * (len(CLASSES) + 2)]
    table = by_kind(run["requests"])
    for kind in KINDS:
        row = table[kind.name]
        lines.append(f"| {kind.name} | {kind.weight} | " + " | ".join(str(row[c]) for c in CLASSES) +
                     f" | {row['unexpected']} | {row['max_s']:.1f} |")
    lines += ["", "Unexpected class: not lost, but not what the kind expects (e.g. an oversized prompt answered "
              "200, or a 429 for a normal request); reported, not a failure.", ""]
    return lines


def lost_details(requests):
    lost = [r for r in requests if r["outcome"] == LOST]
    unexpected = {}
    for r in requests:
        if r["outcome"] != LOST and r["outcome"] not in next(k.expected for k in KINDS if k.name == r["kind"]):
            unexpected.setdefault((r["kind"], r["outcome"], r["detail"]), 0)
            unexpected[(r["kind"], r["outcome"], r["detail"])] += 1
    lines = ["## Lost requests", ""] + [f"- {r['t_s']:.1f} s {r['kind']}: {r['detail']}" for r in lost[:50]]
    if not lost:
        lines.append("None.")
    lines += ["", "## Unexpected classes", ""]
    lines += [f"- {kind} -> {outcome} ({detail}): {n}" for (kind, outcome, detail), n in sorted(unexpected.items())]
    if not unexpected:
        lines.append("None.")
    return lines + [""]


def write(run, verdict, out_dir, label):
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, f"{label}-{run['stamp']}")
    with open(base + ".md", "w") as f:
        f.write(markdown(run, verdict))
    data = dict(run, verdict=verdict, outcomes=outcome_counts(run["requests"]), by_kind=by_kind(run["requests"]))
    data["lost_requests"] = [r for r in run["requests"] if r["outcome"] == LOST]
    del data["requests"]  # tens of thousands of rows: the counts and the lost ones are what a reader needs
    with open(base + ".json", "w") as f:
        json.dump(data, f, indent=1)
    return base + ".md", base + ".json"
