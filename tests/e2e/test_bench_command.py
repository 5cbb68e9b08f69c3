"""`tempered bench` end to end: the load generator against the real `tempered serve` on the real model.

The server's own /metrics are the independent witness: the output tokens bench reports must be exactly
what the server counted as generated, and the distinct synthetic prompts must not hit its prefix cache.
"""
import json
import subprocess
import time

from helpers import free_port, tempered_bin, wait_for_metric

BENCH_TIMEOUT_S = 300  # the whole bench process; a healthy run here takes a few seconds


def run_bench(*args):
    return subprocess.run([str(tempered_bin()), "bench", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=BENCH_TIMEOUT_S)


def run_bench_json(server, *args):
    result = run_bench("--url", server.base_url + "/v1", "--json", *args)
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, f"--json prints one line of JSON, got: {result.stdout!r}"
    # stderr is a pipe here, not a terminal: no progress bar (no carriage returns) in logs.
    assert "\r" not in result.stderr, result.stderr
    return json.loads(lines[0])


def assert_ordered(distribution):
    assert distribution is not None
    assert distribution["min"] <= distribution["p50"] <= distribution["p90"] <= distribution["p99"] <= \
        distribution["max"], distribution


def test_streamed_run_matches_the_servers_metrics(server):
    before = server.metrics()
    counters = ["vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:request_success_total",
                "vllm:prefix_cache_hits_total"]
    start = {name: before.value(name) for name in counters}

    summary = run_bench_json(server, "--concurrency", "4", "--requests", "8", "--prompt-tokens", "32",
                             "--max-tokens", "16", "--stream")

    assert summary["completed"] == 8 and summary["failed"] == 0, summary
    assert summary["errors"] == []
    assert summary["model"] == "smollm2-135m-instruct"  # from GET /v1/models: no --model was given
    # ignore_eos: every request ran to max_tokens, no earlier.
    assert summary["output_tokens"] == {"total": 128, "mean": 16.0, "min": 16, "max": 16}, summary["output_tokens"]
    # /tokenize sized every prompt exactly, as the server counted it.
    assert summary["prompt_tokens"] == {"total": 256, "mean": 32.0, "min": 32, "max": 32}, summary["prompt_tokens"]
    assert summary["prompt_tokens_target"] == 32 and isinstance(summary["seed"], int)
    for name in ["ttft_ms", "itl_ms", "tpot_ms", "e2e_latency_ms"]:
        assert_ordered(summary[name])
    assert summary["ttft_ms"]["count"] == 8 and summary["e2e_latency_ms"]["count"] == 8
    assert summary["ttft_ms"]["p99"] <= summary["e2e_latency_ms"]["max"]
    assert summary["duration_s"] > 0
    assert abs(summary["output_token_throughput"] - 128 / summary["duration_s"]) < 1e-6 * summary["output_token_throughput"]
    assert abs(summary["total_token_throughput"] - 384 / summary["duration_s"]) < 1e-6 * summary["total_token_throughput"]

    expected = {"vllm:generation_tokens_total": 128, "vllm:prompt_tokens_total": 256, "vllm:request_success_total": 8}
    for name, delta in expected.items():
        value = wait_for_metric(server, name, lambda v, name=name, delta=delta: v - start[name] >= delta)
        assert value - start[name] == delta, (name, value - start[name])
    # Distinct prompts: nothing of one request's prompt is in the cache from another.
    assert server.metrics().value("vllm:prefix_cache_hits_total") == start["vllm:prefix_cache_hits_total"]


def test_non_streamed_run_reports_no_first_token_time(server):
    summary = run_bench_json(server, "--concurrency", "2", "--requests", "4", "--prompt-tokens", "20",
                             "--max-tokens", "16", "--model", "smollm2-135m-instruct")
    assert summary["completed"] == 4 and summary["failed"] == 0, summary
    assert summary["stream"] is False
    assert summary["output_tokens"]["min"] == summary["output_tokens"]["max"] == 16
    assert summary["prompt_tokens"]["mean"] == 20.0
    # A response that arrives whole has no measurable first token: absent, not the e2e latency.
    assert summary["ttft_ms"] is None and summary["itl_ms"] is None and summary["tpot_ms"] is None
    assert_ordered(summary["e2e_latency_ms"])


def test_chat_table_with_warmup(server):
    start = server.metrics().value("vllm:request_success_total")
    result = run_bench("--url", server.base_url, "--endpoint", "chat", "--stream", "--concurrency", "2",
                       "--requests", "3", "--warmup", "2", "--prompt-tokens", "48", "--max-tokens", "4")
    assert result.returncode == 0, result.stderr
    table = result.stdout
    assert "/v1/chat/completions (streamed)" in table
    assert "Requests completed / failed:       3 / 0" in table, table
    # The chat template's tokens are measured once and the message sized to the rest.
    assert "Mean prompt tokens:                48.00" in table, table
    assert "Total output tokens:               12" in table, table  # warm-up requests left out
    # 2 warm-up + 3 measured + 1 probe that measured the chat template.
    wait_for_metric(server, "vllm:request_success_total", lambda v: v - start >= 6)
    assert server.metrics().value("vllm:request_success_total") - start == 6


def test_unreachable_server_fails_fast():
    started = time.monotonic()
    result = run_bench("--url", f"http://127.0.0.1:{free_port()}", "--requests", "2", "--json")
    assert result.returncode == 1
    assert "cannot reach the server" in result.stderr, result.stderr
    assert result.stdout == ""
    assert time.monotonic() - started < 10


def test_every_request_failing_still_prints_the_summary(server):
    result = run_bench("--url", server.base_url, "--model", "no-such-model", "--requests", "2",
                       "--prompt-tokens", "8", "--max-tokens", "4", "--json")
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert summary["completed"] == 0 and summary["failed"] == 2
    assert summary["errors"][0]["count"] == 2
    assert summary["errors"][0]["message"].startswith("HTTP 404"), summary["errors"]


def test_bad_flags_and_files_exit_1(tmp_path):
    bad_file = tmp_path / "prompts.jsonl"
    bad_file.write_text('{"prompt": "fine"}\n["not", "an", "object"]\n')
    nobody = f"http://127.0.0.1:{free_port()}"  # a local mistake is reported before the server is asked
    cases = [
        (["--concurrency", "0"], "--concurrency"),
        (["--endpoint", "embeddings"], "--endpoint"),
        (["--prompt-tokens", "8", "--prompts-file", str(bad_file)], "excludes"),
        (["--url", "ftp://127.0.0.1:1"], "http or https"),
        (["--url", nobody, "--prompts-file", str(tmp_path / "missing.jsonl")], "missing.jsonl"),
        (["--url", nobody, "--prompts-file", str(bad_file)], f"{bad_file}:2: expected an object"),
    ]
    for args, message in cases:
        result = run_bench(*args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert result.stdout == "", args
