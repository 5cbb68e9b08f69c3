"""Gemma 3 270M (general.architecture = gemma3, a base model: no chat template, prompts start with BOS) end
to end: `tempered serve` completes through the openai SDK, streamed and not; a chat request gets a clear
OpenAI-format error instead of a crash; `tempered run` continues a prompt and refuses --chat plainly.
Without the model file the tests are skipped, or fail when TEMPERED_REQUIRE_MODELS=1 (scripts/test.sh
pulls it)."""
import subprocess

import openai
import pytest

from helpers import model_path, running_server, server_model_cache_dir, tempered_bin

GEMMA3_FILE = "gemma-3-270m-Q4_K_M.gguf"
GEMMA3_NAME = "gemma3-270m"
PROMPT = "The capital of France is"


def gemma3_args():
    """--model as the short name when the server finds the file by it, else the path."""
    path = model_path(GEMMA3_FILE, GEMMA3_NAME)
    if path.resolve() == (server_model_cache_dir() / GEMMA3_FILE).resolve():
        return ["--model", GEMMA3_NAME]
    return ["--model", str(path), "--served-model-name", GEMMA3_NAME]


@pytest.fixture(scope="module")
def gemma3_server():
    with running_server(gemma3_args(), name="gemma3") as server:
        yield server


def test_completion_continues_a_simple_prompt(gemma3_server):
    reply = gemma3_server.openai().completions.create(model=GEMMA3_NAME, temperature=0, max_tokens=12,
                                                       prompt=PROMPT)
    text = reply.choices[0].text
    # llama.cpp's greedy continuation of the same prompt begins " the capital of the country of France".
    assert text.startswith(" the capital of"), text
    assert "France" in text, text
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.prompt_tokens == 6  # BOS and five prompt tokens, as llama.cpp tokenizes it
    assert reply.usage.completion_tokens == 12


def test_streamed_completion_equals_the_whole_one(gemma3_server):
    client = gemma3_server.openai()
    whole = client.completions.create(model=GEMMA3_NAME, temperature=0, max_tokens=12, prompt=PROMPT)
    chunks = list(client.completions.create(model=GEMMA3_NAME, temperature=0, max_tokens=12, prompt=PROMPT,
                                            stream=True))
    assert "".join(chunk.choices[0].text for chunk in chunks) == whole.choices[0].text
    assert chunks[-1].choices[0].finish_reason == "length"


def test_chat_on_a_base_model_is_a_clear_error(gemma3_server):
    with pytest.raises(openai.BadRequestError) as raised:
        gemma3_server.openai().chat.completions.create(
            model=GEMMA3_NAME, max_tokens=8, messages=[{"role": "user", "content": "Hello"}])
    error = raised.value.body
    assert error["type"] == "invalid_request_error"
    assert "no chat template" in error["message"] and "/v1/completions" in error["message"]
    # The server is still serving afterwards.
    reply = gemma3_server.openai().completions.create(model=GEMMA3_NAME, temperature=0, max_tokens=2, prompt=PROMPT)
    assert reply.choices[0].text


def test_run_continues_a_prompt():
    args = gemma3_args()
    result = subprocess.run([str(tempered_bin()), "run", *args[:2], "--prompt", PROMPT, "--temperature", "0",
                             "--max-tokens", "12"], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(" the capital of"), result.stdout


def test_run_chat_says_the_model_has_no_template():
    args = gemma3_args()
    result = subprocess.run([str(tempered_bin()), "run", *args[:2], "--chat", "Hello", "--max-tokens", "4"],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode != 0
    assert "no chat template" in result.stderr and "--prompt" in result.stderr
