"""A tiny deepseek2 (multi-head latent attention, scripts/fixtures/make_deepseek2_models.py) served end to end:
completions come back, and the KV gauge shows the latent cache: (kv_lora_rank + rope_dim) elements per
position and layer, no separate values. Without the file (build/tiny-models) the tests are skipped, or fail
when TEMPERED_REQUIRE_MODELS=1."""
import os
import pathlib

import pytest

from helpers import running_server

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = pathlib.Path(os.environ.get("TEMPERED_TINY_MODEL_DIR", REPO / "build" / "tiny-models")) / "ds2-qlora-q8_0.gguf"
KV_LORA_RANK, ROPE_DIM, LAYERS = 64, 16, 3  # the fixture's sizes (tests/fixtures/model/deepseek2/README.md)


@pytest.fixture(scope="module")
def ds2_server():
    if not MODEL.exists():
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(f"missing {MODEL} (scripts/fixtures/make_deepseek2_models.py)")
        pytest.skip(f"{MODEL} not found: scripts/fixtures/make_deepseek2_models.py writes it")
    with running_server(["--model", str(MODEL), "--served-model-name", "ds2", "--kv-cache-tokens", "1024"],
                        name="deepseek2") as server:
        yield server


def test_completion_runs(ds2_server):
    reply = ds2_server.openai().completions.create(model="ds2", prompt="The capital of France is", max_tokens=8,
                                                   temperature=0)
    assert reply.usage.completion_tokens == 8
    assert reply.choices[0].finish_reason == "length"


def test_kv_gauge_counts_the_latent_row_only(ds2_server):
    per_token = ds2_server.metrics().require("tempered:kv_cache_bytes_per_token", model_name="ds2")
    assert per_token == (KV_LORA_RANK + ROPE_DIM) * 2 * LAYERS  # f16 by default
