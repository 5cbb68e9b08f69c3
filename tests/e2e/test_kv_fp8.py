"""--kv-cache-dtype fp8 (FP8 E4M3 keys and values, one scale per stored head vector): chosen only by the
operator, announced with its measured quality cost, reported wherever the KV type is (/v1/models/{id},
/server_info, vllm:cache_config_info, tempered:kv_cache_dtype_info), about half of f16's bytes per token
(tempered:kv_cache_bytes_per_token), still answering; and a prefill/decode pair that both store fp8
moves fp8 blocks (scales inside them) and answers as one fp8 server does, while fp8 against f16 is refused."""
import json
import pathlib
import subprocess
import sys
import threading

import pytest

from helpers import MODEL_SHORT_NAME, chat_body, completion_body, model_args, running_server, tempered_bin

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import gateway_harness as harness  # noqa: E402


@pytest.fixture(scope="module")
def fp8_server():
    with running_server(model_args() + ["--kv-cache-dtype", "fp8"], name="fp8") as server:
        yield server


def bytes_per_token(server):
    return server.metrics().value("tempered:kv_cache_bytes_per_token", model_name=MODEL_SHORT_NAME)


def test_fp8_is_announced_with_its_measured_cost(fp8_server):
    log = fp8_server.log()
    warning = next(line for line in log.splitlines() if "--kv-cache-dtype fp8" in line)
    assert "warning" in warning and "perplexity" in warning and "%" in warning, warning
    assert "kv-fp8-quality-2026-12-02" in warning, warning


def test_fp8_is_reported_wherever_the_kv_type_is(fp8_server):
    card = fp8_server.get(f"/v1/models/{MODEL_SHORT_NAME}").json()
    assert card["kv_cache_dtype"] == "fp8", card
    info = fp8_server.get("/server_info").json()
    assert info["kv_cache_dtype"] == "fp8" and info["kv_cache_bytes_per_token"] == bytes_per_token(fp8_server)
    metrics = fp8_server.metrics()
    config = metrics.find("vllm:cache_config_info")
    assert len(config) == 1 and config[0][0]["cache_dtype"] == "fp8", config
    assert metrics.value("tempered:kv_cache_dtype_info", dtype="fp8") == 1


def test_fp8_halves_bytes_per_token_and_still_answers(fp8_server, default_server):
    # SmolLM2-135M: 30 layers x 3 KV heads x 64; f16 768 bytes per layer, fp8 2 x (192 codes + 3 scales x 4) = 408.
    f16, fp8 = bytes_per_token(default_server), bytes_per_token(fp8_server)
    assert f16 == 30 * 768 and fp8 == 30 * 408, (f16, fp8)
    answer = fp8_server.post("/v1/chat/completions", chat_body("What is the capital of France?", max_tokens=24,
                                                                temperature=0)).json()
    choice = answer["choices"][0]
    assert choice["finish_reason"] in ("stop", "length") and choice["message"]["content"].strip(), answer
    assert answer["usage"]["completion_tokens"] > 0


def test_f16_stays_the_default(default_server):
    assert default_server.get(f"/v1/models/{MODEL_SHORT_NAME}").json()["kv_cache_dtype"] == "f16"
    assert default_server.get("/server_info").json()["kv_cache_dtype"] == "f16"
    assert "--kv-cache-dtype fp8" not in default_server.log()


def both_at_once(prefill, decode, body):
    answers = {}

    def send(worker):
        answers[worker.name] = harness.http_json("POST", worker.url + "/v1/completions", body, timeout=60)

    threads = [threading.Thread(target=send, args=(w,)) for w in (prefill, decode)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers[prefill.name], answers[decode.name]


def pd_answer(tmp_path, prefill_dtype, decode_dtype, room):
    flags = model_args()[2:]
    cluster = harness.PdCluster(tempered_bin(), model=model_args()[1], log_dir=tmp_path,
                                prefill_flags=[*flags, "--kv-cache-dtype", prefill_dtype],
                                decode_flags=[*flags, "--kv-cache-dtype", decode_dtype])
    prefill, decode = cluster.start_prefill(0), cluster.start_decode(0)
    try:
        prefill.wait_ready()
        decode.wait_ready()
        body = {**completion_body("The three primary colors are", max_tokens=16, temperature=0),
                "bootstrap_host": "127.0.0.1", "bootstrap_port": prefill.bootstrap_port, "bootstrap_room": room}
        return both_at_once(prefill, decode, body)
    finally:
        prefill.kill()
        decode.kill()


def test_prefill_and_decode_both_fp8_answer_as_one_fp8_server(tmp_path, fp8_server):
    single = fp8_server.post("/v1/completions", completion_body("The three primary colors are", max_tokens=16,
                                                                temperature=0)).json()
    (_, _), (status, decoded) = pd_answer(tmp_path, "fp8", "fp8", 81)
    assert status == 200, decoded
    assert decoded["choices"][0]["text"] == single["choices"][0]["text"], (decoded, single)


def test_fp8_against_f16_is_refused_on_both_sides(tmp_path):
    (p_status, p_answer), (d_status, d_answer) = pd_answer(tmp_path, "fp8", "f16", 82)
    for status, answer in ((p_status, p_answer), (d_status, d_answer)):
        text = str(answer)
        assert status >= 500 and "dtype" in text and "fp8" in text and "f16" in text, answer


def test_run_perplexity_measures_with_the_chosen_kv_type(tmp_path):
    text = (pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "model" / "perplexity_text.txt").read_text()
    sample = tmp_path / "sample.txt"
    sample.write_text(text[:1500])
    reports = {}
    for dtype in ("f16", "fp8"):
        done = subprocess.run([str(tempered_bin()), "run", *model_args()[:2], "--perplexity", str(sample),
                               "--perplexity-window", "64", "--kv-cache-dtype", dtype, "--threads", "2"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        reports[dtype] = json.loads(done.stdout)
        assert ("--kv-cache-dtype fp8" in done.stderr) == (dtype == "fp8"), done.stderr
    for dtype, report in reports.items():
        assert report["kv_cache_dtype"] == dtype and report["windows"] >= 4
        assert report["tokens_scored"] == report["windows"] * 63
        assert 1 < report["perplexity"] < 1000
    # E4M3 keys and values move the perplexity, but only a little.
    assert reports["fp8"]["perplexity"] != reports["f16"]["perplexity"]
    assert abs(reports["fp8"]["perplexity"] / reports["f16"]["perplexity"] - 1) < 0.1
