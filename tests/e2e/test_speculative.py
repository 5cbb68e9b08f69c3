"""Prompt-lookup speculation (`--speculative ngram`, issue 32) changes the speed of decoding, never its output:
the same requests to a server with it off and one with it on give identical answers, streamed or whole, greedy
or seeded, with logprobs, stop strings, a JSON schema and n > 1 (which does not speculate); the vLLM
spec-decode counters show drafts were verified and accepted."""
import json
import subprocess
import sys

import pytest

from helpers import REPO, model_path, running_server, tempered_bin
from test_reasoning import tiny_model

MODEL = "smollm2-135m-instruct"
CODE = ("def add(a, b):\n    return a + b\n\ndef subtract(a, b):\n    return a - b\n\n"
        "def multiply(a, b):\n    return a * b\n")
REQUESTS = [
    {"messages": [{"role": "user", "content": f"Copy this code exactly, then add a divide function:\n\n{CODE}"}],
     "max_tokens": 120, "temperature": 0},
    {"messages": [{"role": "user", "content": "Repeat after me three times: the quick brown fox jumps over the dog."}],
     "max_tokens": 80, "temperature": 0.8, "seed": 11, "logprobs": True, "top_logprobs": 3},
    {"messages": [{"role": "user", "content": f"Copy this code exactly:\n\n{CODE}"}],
     "max_tokens": 100, "temperature": 0, "stop": ["multiply"]},
    {"messages": [{"role": "user", "content": "Give a person with a name and an age as JSON."}],
     "max_tokens": 60, "temperature": 0,
     "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": {
         "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
         "required": ["name", "age"]}}}},
    {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 12, "temperature": 0.9, "seed": 3,
     "n": 2},
]


def answers(server, stream=False):
    out = []
    client = server.client()
    for body in REQUESTS:
        request = dict(body, model=MODEL)
        if not stream:
            response = client.post("/v1/chat/completions", json=request)
            assert response.status_code == 200, response.text
            out.append([(c["message"]["content"], c["finish_reason"], c.get("logprobs"))
                        for c in response.json()["choices"]])
            continue
        text = {}
        with client.stream("POST", "/v1/chat/completions", json=dict(request, stream=True)) as response:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    for choice in json.loads(line[6:])["choices"]:
                        text[choice["index"]] = text.get(choice["index"], "") + (choice["delta"].get("content") or "")
        out.append(sorted(text.items()))
    return out


@pytest.fixture(scope="module")
def servers():
    with running_server(["--model", MODEL, "--speculative", "off"], name="speculation-off") as off, \
            running_server(["--model", MODEL, "--speculative", "ngram", "--speculative-tokens", "4"],
                           name="speculation-on") as on:
        yield off, on


def test_speculation_changes_no_answer(servers):
    off, on = servers
    assert answers(on) == answers(off)


def test_speculation_changes_no_streamed_answer(servers):
    off, on = servers
    assert answers(on, stream=True) == answers(off, stream=True)


def test_spec_decode_counters(servers):
    _, on = servers
    answers(on)
    metrics = on.metrics()
    drafts = metrics.require("vllm:spec_decode_num_draft_tokens_total")
    accepted = metrics.require("vllm:spec_decode_num_accepted_tokens_total")
    assert metrics.require("vllm:spec_decode_num_drafts_total") > 0
    assert 0 < accepted <= drafts


def test_a_request_opts_out(servers):
    """`speculative_decoding: false` verifies no drafts for that request (the counters stand still) and gives
    the same answer; a non-boolean value is a 400 naming the field."""
    _, on = servers
    client = on.client()
    body = dict(REQUESTS[0], model=MODEL)
    before = on.metrics().require("vllm:spec_decode_num_draft_tokens_total")
    opted_out = client.post("/v1/chat/completions", json=dict(body, speculative_decoding=False))
    assert opted_out.status_code == 200, opted_out.text
    assert on.metrics().require("vllm:spec_decode_num_draft_tokens_total") == before
    speculated = client.post("/v1/chat/completions", json=body)
    assert on.metrics().require("vllm:spec_decode_num_draft_tokens_total") > before
    assert opted_out.json()["choices"][0]["message"] == speculated.json()["choices"][0]["message"]
    bad = client.post("/v1/chat/completions", json=dict(body, speculative_decoding="no"))
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "speculative_decoding"


def test_the_identity_bench_bounded():
    """bench/speculative_identity.py, a bounded part (the recorded runs: bench/results/speculative-identity-*): one
    request of each kind on SmolLM2 with the resampling guard pair, 300 sampled draws with their chi-square, and
    on the tiny R1 model the reasoning kind with a thinking budget. Exit 0: every answer the same, p > 0.01,
    drafts rejected during the draws, seeded draws repeated."""
    script = REPO / "bench" / "speculative_identity.py"
    tiny_r1 = tiny_model("tiny-r1-qwen2.gguf")[1]
    runs = [["--model", str(model_path()), "--per-kind", "1", "--max-tokens", "32", "--guard-resample",
             "--draws", "300", "--repeats", "20"],
            ["--model", tiny_r1, "--per-kind", "2", "--max-tokens", "32", "--reasoning"]]
    for args in runs:
        result = subprocess.run([sys.executable, str(script), "--tempered", str(tempered_bin()), *args],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "speculation changed nothing" in result.stdout


def test_a_draft_model_changes_no_answer(servers):
    """`--speculative draft` with a draft model of SmolLM2's vocabulary (the tiny random-weight Llama 3 fixture,
    bfloat16): its greedy drafts are mostly wrong, and every answer, streamed or whole, greedy or seeded, with
    logprobs, stop strings and a JSON schema, is the off server's; the counters show drafts verified and
    rejected."""
    off, _ = servers
    draft = tiny_model("tiny-llama3-bf16.gguf")[1]
    flags = ["--model", MODEL, "--speculative", "draft", "--draft-model", draft]
    with running_server(flags, name="speculation-draft") as on:
        assert answers(on) == answers(off)
        assert answers(on, stream=True) == answers(off, stream=True)
        metrics = on.metrics()
        drafts = metrics.require("vllm:spec_decode_num_draft_tokens_total")
        assert drafts > 0
        assert metrics.require("vllm:spec_decode_num_accepted_tokens_total") < drafts


def test_the_model_as_its_own_draft_has_every_greedy_draft_accepted(servers):
    """SmolLM2 drafting for itself: its greedy drafts are the target's argmax at every position, so all are
    accepted; a draft cache that lost track of a position after a step would show as a rejection. (Requests that
    end at their token limit, with no grammar, stop string or ignore_eos: the draft model's argmax is over every
    token, the target's over those its grammar allows (ignore_eos bans the end of text), and drafts after the end
    of an answer count as not accepted.)"""
    off, _ = servers
    greedy = [{"prompt": "def fibonacci(n):", "max_tokens": 64, "temperature": 0},
              {"prompt": "The capital of France is", "max_tokens": 64, "temperature": 0},
              {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 40, "temperature": 0}]
    flags = ["--model", MODEL, "--speculative", "draft", "--draft-model", MODEL]
    with running_server(flags, name="speculation-self-draft") as on:
        for body in greedy:
            request = dict(body, model=MODEL)
            path = "/v1/completions" if "prompt" in body else "/v1/chat/completions"
            got = on.client().post(path, json=request)
            want = off.client().post(path, json=request)
            assert got.json()["choices"] == want.json()["choices"]
        metrics = on.metrics()
        drafts = metrics.require("vllm:spec_decode_num_draft_tokens_total")
        assert drafts > 20
        assert metrics.require("vllm:spec_decode_num_accepted_tokens_total") == drafts


@pytest.mark.parametrize("flags, message", [
    (["--speculative", "draft"], "--speculative draft needs --draft-model"),
    (["--draft-model", "smollm2-135m-instruct"], "--draft-model needs --speculative draft"),
    (["--speculative", "draft", "--draft-model", "tiny-qwen3.gguf"], "drafts must be the target's token ids"),
])
def test_draft_model_flags_are_checked(flags, message):
    if "tiny-qwen3.gguf" in flags:
        flags = [tiny_model("tiny-qwen3.gguf")[1] if flag == "tiny-qwen3.gguf" else flag for flag in flags]
    result = subprocess.run([str(tempered_bin()), "serve", "--port", "0", "--model", MODEL, *flags],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert message in result.stderr
