"""`tempered inspect` against the GGUF fixtures and the real model.

Every malformed file (tests/fixtures/gguf_malformed/, from scripts/fixtures/make_malformed_gguf.py) must
make inspect exit with status exactly 1 and a `tempered inspect: ` message: no crash, no signal, no
hang. Run it against the ASan build too: TEMPERED_BIN=build-asan/tempered pytest tests/e2e/test_gguf_inspect.py
"""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MALFORMED = sorted((REPO / "tests" / "fixtures" / "gguf_malformed").glob("*.gguf"))
VALID = sorted((REPO / "tests" / "fixtures" / "gguf").glob("*.gguf"))
TIMEOUT_S = 30  # generous for sanitizer builds; a healthy run takes milliseconds
REAL_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def tempered_bin():
    path = pathlib.Path(os.environ.get("TEMPERED_BIN", "build/tempered"))
    return path if path.is_absolute() else REPO / path


def inspect(path):
    return subprocess.run([str(tempered_bin()), "inspect", str(path)], capture_output=True, text=True,
                          errors="replace", timeout=TIMEOUT_S)


@pytest.fixture(scope="module", autouse=True)
def binary_exists():
    if not tempered_bin().is_file():
        pytest.fail(f"tempered binary not found at {tempered_bin()} (set TEMPERED_BIN)")


def test_corpus_is_present():
    assert len(MALFORMED) >= 30, "run scripts/fixtures/make_malformed_gguf.py"
    assert len(VALID) >= 2


@pytest.mark.parametrize("path", MALFORMED, ids=[p.stem for p in MALFORMED])
def test_malformed_file_is_rejected(path):
    result = inspect(path)
    assert result.returncode == 1, f"exit status {result.returncode}\nstderr:\n{result.stderr}"
    lines = result.stderr.splitlines()
    assert any(line.startswith("tempered inspect: gguf: ") for line in lines), result.stderr
    assert "ERROR: AddressSanitizer" not in result.stderr
    assert "runtime error:" not in result.stderr  # UBSan
    assert result.stdout == ""


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_valid_fixture_is_listed(path):
    result = inspect(path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    version = "2" if path.stem.endswith("v2") else "3"
    assert f"version: {version}" in result.stdout
    assert "alignment: 32" in result.stdout
    assert 'general.architecture (string) = "llama"' in result.stdout
    assert 'tokenizer.ggml.tokens (array<string>[4]) = ["<s>", "</s>", "a", "b"]' in result.stdout
    assert "test.nested (array<array>[2]) = [[1, 2], [3]]" in result.stdout
    assert "tensors (3):" in result.stdout
    for name, type_name in (("token_embd.weight", "Q4_1"), ("output_norm.weight", "F32"),
                            ("blk.0.attn_q.weight", "Q8_0")):
        assert any(line.split()[:2] == [name, type_name] for line in result.stdout.splitlines()), name


def test_missing_file_is_an_error():
    result = inspect(REPO / "tests" / "fixtures" / "no_such_file.gguf")
    assert result.returncode == 1
    assert result.stderr.startswith("tempered inspect: ")
    assert "no_such_file.gguf" in result.stderr


def real_model_path():
    model_dir = os.environ.get("TEMPERED_MODEL_DIR") or os.path.expanduser("~/.cache/tempered/models")
    path = pathlib.Path(model_dir) / REAL_MODEL
    if not path.is_file():
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(f"model missing and TEMPERED_REQUIRE_MODELS=1: {path}")
        pytest.skip(f"model not present: {path}")
    return path


def test_real_model_is_listed():
    result = inspect(real_model_path())
    assert result.returncode == 0, result.stderr
    assert "version: 3" in result.stdout
    assert "llama.block_count (uint32) = 30" in result.stdout
    assert "tokenizer.ggml.tokens (array<string>[49152])" in result.stdout
    assert "... 49144 more]" in result.stdout  # long arrays are abbreviated
    assert "tensors (272):" in result.stdout
    embedding = [line.split() for line in result.stdout.splitlines() if line.split()[:1] == ["token_embd.weight"]]
    assert embedding and embedding[0][1] == "Q8_0", embedding
