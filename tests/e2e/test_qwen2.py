"""Qwen2.5-Coder-0.5B-Instruct (general.architecture = qwen2) end to end: `tempered serve` answers a chat
through the openai SDK with the GGUF's own chat template, and `tempered run --chat` works. Kept to a few
short requests: the model is ~4x SmolLM2's size. Without the model file the tests are skipped, or fail
when TEMPERED_REQUIRE_MODELS=1 (scripts/test.sh pulls it)."""
import subprocess

import pytest

from helpers import model_path, running_server, server_model_cache_dir, tempered_bin

QWEN2_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN2_NAME = "qwen2.5-coder-0.5b-instruct"
QUESTION = "Write a Python function is_even(n) that returns True when n is even. Reply with only the code."


def qwen2_args():
    """--model as the short name when the server finds the file by it, else the path."""
    path = model_path(QWEN2_FILE, QWEN2_NAME)
    if path.resolve() == (server_model_cache_dir() / QWEN2_FILE).resolve():
        return ["--model", QWEN2_NAME]
    return ["--model", str(path), "--served-model-name", QWEN2_NAME]


@pytest.fixture(scope="module")
def qwen2_server():
    with running_server(qwen2_args(), name="qwen2") as server:
        yield server


def test_chat_answers_a_coding_question_and_stops(qwen2_server):
    reply = qwen2_server.openai().chat.completions.create(
        model=QWEN2_NAME, temperature=0, max_tokens=96, messages=[{"role": "user", "content": QUESTION}])
    choice = reply.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    answer = choice.message.content
    assert "def is_even(n)" in answer
    assert "% 2" in answer
    # The template's end-of-turn token ends the answer; it is not part of the text.
    assert "<|im_end|>" not in answer and "<|im_start|>" not in answer


def test_completion_continues_code(qwen2_server):
    reply = qwen2_server.openai().completions.create(
        model=QWEN2_NAME, temperature=0, max_tokens=24, prompt="def add(a, b):\n    return")
    assert reply.choices[0].text.lstrip().startswith("a + b")


def test_run_chat_works():
    args = qwen2_args()
    result = subprocess.run([str(tempered_bin()), "run", *args[:2], "--chat", QUESTION, "--temperature", "0",
                             "--max-tokens", "96"], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "def is_even(n)" in result.stdout
