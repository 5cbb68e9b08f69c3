"""A tiny deepseek2 (multi-head latent attention + mixture of experts + YaRN, ds2-moe-q8_0 from
scripts/fixtures/make_deepseek2_models.py; random weights, so behaviour is checked, not text quality) served
end to end: completions and chat answer with the greedy text `tempered run` gives for the same prompt, the
KV gauge shows the latent cache ((kv_lora_rank + rope_dim) elements per position and layer, no separate
values) in f16 and in fp8 (one E4M3 code per element plus one float scale per position and layer), the KV
dtype is reported, and 8 concurrent streams all complete. Without the file (build/tiny-models) the tests are
skipped, or fail when TEMPERED_REQUIRE_MODELS=1."""
import os
import pathlib
import subprocess
import threading

import pytest

from helpers import running_server, stream_events, stream_text, finish_reasons, tempered_bin

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = pathlib.Path(os.environ.get("TEMPERED_TINY_MODEL_DIR", REPO / "build" / "tiny-models")) / "ds2-moe-q8_0.gguf"
KV_LORA_RANK, ROPE_DIM, LAYERS = 64, 16, 3  # the fixture's sizes (tests/fixtures/model/deepseek2/README.md)
PROMPT, QUESTION, MAX_TOKENS = "The capital of France is", "Name three colours.", 12


def require_model():
    if not MODEL.exists():
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(f"missing {MODEL} (scripts/fixtures/make_deepseek2_models.py)")
        pytest.skip(f"{MODEL} not found: scripts/fixtures/make_deepseek2_models.py writes it")


def serve(kv_dtype):
    require_model()
    return running_server(["--model", str(MODEL), "--served-model-name", "ds2", "--kv-cache-tokens", "1024",
                           "--kv-cache-dtype", kv_dtype], name=f"deepseek2-{kv_dtype}")


@pytest.fixture(scope="module")
def ds2_server():
    with serve("f16") as server:
        yield server


@pytest.fixture(scope="module")
def ds2_fp8_server():
    with serve("fp8") as server:
        yield server


def run_greedy(kind, text, kv_dtype="f16"):
    """`tempered run`'s greedy output for the same prompt (stdout ends with one newline of its own)."""
    result = subprocess.run([str(tempered_bin()), "run", "--model", str(MODEL), kind, text, "--temperature", "0",
                             "--max-tokens", str(MAX_TOKENS), "--threads", "2", "--kv-cache-dtype", kv_dtype],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\n"), result.stdout
    return result.stdout[:-1]


def test_completion_runs(ds2_server):
    reply = ds2_server.openai().completions.create(model="ds2", prompt=PROMPT, max_tokens=8, temperature=0)
    assert reply.usage.completion_tokens == 8
    assert reply.choices[0].finish_reason == "length"


@pytest.mark.parametrize("kv_dtype", ["f16", "fp8"])
def test_greedy_completion_equals_run(kv_dtype, ds2_server, ds2_fp8_server):
    server = ds2_server if kv_dtype == "f16" else ds2_fp8_server
    reply = server.openai().completions.create(model="ds2", prompt=PROMPT, max_tokens=MAX_TOKENS, temperature=0)
    expected = run_greedy("--prompt", PROMPT, kv_dtype)
    assert expected and reply.choices[0].text == expected


def test_greedy_chat_equals_run(ds2_server):
    reply = ds2_server.openai().chat.completions.create(model="ds2", temperature=0, max_tokens=MAX_TOKENS,
                                                         messages=[{"role": "user", "content": QUESTION}])
    expected = run_greedy("--chat", QUESTION)
    assert expected and reply.choices[0].message.content == expected


def test_kv_gauge_counts_the_latent_row_only(ds2_server):
    per_token = ds2_server.metrics().require("tempered:kv_cache_bytes_per_token", model_name="ds2")
    assert per_token == (KV_LORA_RANK + ROPE_DIM) * 2 * LAYERS  # f16 by default


def test_fp8_latent_row_is_codes_plus_one_scale(ds2_fp8_server):
    per_token = ds2_fp8_server.metrics().require("tempered:kv_cache_bytes_per_token", model_name="ds2")
    assert per_token == (KV_LORA_RANK + ROPE_DIM + 4) * LAYERS  # 252 bytes against f16's 480


@pytest.mark.parametrize("kv_dtype", ["f16", "fp8"])
def test_kv_dtype_is_reported(kv_dtype, ds2_server, ds2_fp8_server):
    server = ds2_server if kv_dtype == "f16" else ds2_fp8_server
    assert server.get("/v1/models/ds2").json()["kv_cache_dtype"] == kv_dtype
    info = server.get("/server_info").json()
    assert info["kv_cache_dtype"] == kv_dtype
    # f16: two bytes per element; fp8: one byte per element plus one float scale per position and layer.
    expected = (KV_LORA_RANK + ROPE_DIM) * 2 * LAYERS if kv_dtype == "f16" else (KV_LORA_RANK + ROPE_DIM + 4) * LAYERS
    assert info["kv_cache_bytes_per_token"] == expected


def test_eight_concurrent_streams_complete(ds2_fp8_server):
    results = [None] * 8

    def one(i):
        body = {"model": "ds2", "prompt": f"{PROMPT} number {i}", "max_tokens": 16, "temperature": 0.7,
                "seed": i, "stream": True}
        status, _, events = stream_events(ds2_fp8_server.client(), "/v1/completions", body)
        assert status == 200, events
        results[i] = (finish_reasons(events), stream_text(events, chat=False), events[-1])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for i, result in enumerate(results):
        assert result is not None, f"stream {i} did not complete"
        reasons, text, last = result
        assert reasons in ({0: "length"}, {0: "stop"}) and last == "[DONE]", (i, reasons, last)
        assert text or reasons == {0: "stop"}, i
