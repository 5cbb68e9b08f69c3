"""`--max-decode-stall-ms` (issue 32): the step time bound while requests decode. Its effect on latency is a
benchmark (bench/ab_serve_flags.sh, bench/results/decode-stall-2026-12-07.md); here: every accepted value serves
and answers what the bound off answers (the bound moves work between steps, never changes a token), and a bad
value stops the server with a message naming the flag."""
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import model_args, running_server, tempered_bin

MODEL = "smollm2-135m-instruct"
PROMPTS = ["Write a haiku about rivers.", "List three prime numbers and explain why they are prime. " * 12,
           "What is the capital of France? Answer in one sentence.", "Describe a cat in " + "great " * 60 + "detail."]


def answers_at_once(server):
    """The prompts sent together, so prompt chunks are computed while other requests decode."""
    def one(prompt):
        response = server.client().post("/v1/chat/completions", json={
            "model": MODEL, "messages": [{"role": "user", "content": prompt}], "max_tokens": 48, "temperature": 0})
        assert response.status_code == 200, response.text
        return response.json()["choices"][0]["message"]["content"]
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        return list(pool.map(one, PROMPTS))


def test_the_bound_changes_no_answer():
    with running_server(["--model", MODEL, "--max-decode-stall-ms", "0"], name="stall-off") as off:
        expected = answers_at_once(off)
    for value in ("auto", "1"):  # 1 ms: below any step, so every prompt goes 16 tokens at a time beside decodes
        with running_server(["--model", MODEL, "--max-decode-stall-ms", value], name=f"stall-{value}") as bounded:
            assert answers_at_once(bounded) == expected


@pytest.mark.parametrize("value", ["soon", "-5", "60001", ""])
def test_a_bad_value_is_refused_by_name(value):
    result = subprocess.run([str(tempered_bin()), "serve", "--port", "0", *model_args(), "--max-decode-stall-ms", value],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "--max-decode-stall-ms" in result.stderr
