"""`tempered model-bench` and `tempered membench` end to end on the real model, at tiny sizes.

Only the shape of the report is checked: fields present, counts right, times positive. Speed never is.
"""
import json
import subprocess

from helpers import model_path, tempered_bin

BIN = str(tempered_bin())


def run_json(*args):
    result = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_model_bench_reports_each_test():
    model = model_path()
    report = run_json("model-bench", "--model", str(model), "-p", "16", "-n", "4", "-r", "2",
                      "--batch-decode", "3", "--batch-prompt-tokens", "8", "--threads", "2", "--json")
    assert report["model"] == str(model)
    assert report["model_file_bytes"] == model.stat().st_size
    assert report["model_parameters"] > 100_000_000
    assert report["threads"] == 2
    assert report["cpu_isa"] in ("scalar", "avx2", "avx512")
    assert report["kv_cache_dtype"] == "f16"
    tests = {test["name"]: test for test in report["tests"]}
    assert list(tests) == ["pp16", "tg4", "tg4_batch3"]
    assert tests["pp16"]["timed_tokens"] == 16
    assert tests["tg4"]["timed_tokens"] == 4
    assert tests["tg4_batch3"]["timed_tokens"] == 12
    for test in tests.values():
        assert len(test["samples_seconds"]) == 2
        assert len(test["samples_tokens_per_s"]) == 2
        assert all(seconds > 0 for seconds in test["samples_seconds"])
        assert test["mean_tokens_per_s"] > 0
        assert test["stddev_tokens_per_s"] >= 0


def test_model_bench_table_names_the_tests():
    model = model_path()
    result = subprocess.run([BIN, "model-bench", "--model", str(model), "-p", "8", "-n", "2", "-r", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| SmolLM2")]
    assert [row.split("|")[6].strip() for row in rows] == ["pp8", "tg2"]
    assert all("±" in row for row in rows)


def test_membench_reports_bandwidth_and_decode_bound():
    model = model_path()
    report = run_json("membench", "--model", str(model), "--mib", "8", "-r", "2", "--threads", "2", "--json")
    triad = report["triad"]
    assert triad["elements_per_array"] == 8 * 2**20 // 8
    assert triad["bytes_counted_per_element"] == 24
    assert triad["best_gb_per_s"] > 0 and triad["mean_gb_per_s"] > 0
    assert len(triad["samples_seconds"]) == 2
    model = report["model"]
    # SmolLM2 ties its embeddings: every tensor, the whole token table included, is read per token.
    assert model["tied_embeddings"] is True
    assert model["weight_bytes_per_token"] == model["tensor_bytes"]
    assert 0 < model["embedding_table_bytes"] < model["tensor_bytes"]
    assert model["decode_bound_tokens_per_s"] > 0
    assert model["working_set_triad"]["best_gb_per_s"] > 0


def test_bad_flags_exit_non_zero_with_a_message():
    for args in (["model-bench", "-p", "0", "-n", "0"], ["model-bench", "--kv-cache-dtype", "q4"],
                 ["model-bench", "--model", "/nonexistent.gguf"], ["membench", "--mib", "0"],
                 ["membench", "--model", "/nonexistent.gguf", "--mib", "1"]):
        result = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)
        assert result.returncode != 0, args
        assert result.stderr.strip(), args
