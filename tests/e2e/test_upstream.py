"""Upstream mode (`tempered serve --upstream URL`), rendered: the front renders the chat template, tokenizes, and
drives another engine's /v1/completions with the prompt as token ids and every sampling value explicit; the ids
that come back go through the front's own output stages (detokenizer, stop strings, tool calls, loop guard).

The upstream here is a second tempered started with --sampling-defaults openai (an engine that ignores the model's
defaults, so only what the front sends decides). The front's answers must equal a local tempered's token for
token, greedy and seeded, chat and completions, streamed and whole, n=2; a request that omits temperature reaches
the upstream with the front's value (the upstream's own counter says source `request`); what the front cannot do
over another engine's stream is a 400 naming the field; an unreachable upstream is a 503."""
import pytest

import time

from helpers import (assert_error, chat_body, completion_body, finish_reasons, first_text_chunk, model_args,
                     running_server, stream_events, stream_text)

PROMPTS = ["What is the capital of France?", "Write a haiku about the sea.", "List three primes.",
           "Explain recursion in one sentence.", "Say hello in Spanish.", "What is 12 times 12?",
           "Name a famous painter.", "Give me a word that rhymes with cat."]


@pytest.fixture(scope="module")
def upstream():
    with running_server(model_args() + ["--sampling-defaults", "openai"], name="upstream") as server:
        yield server


@pytest.fixture(scope="module")
def front(upstream):
    with running_server(model_args() + ["--upstream", upstream.base_url], name="front") as server:
        yield server


def answer(server, path, body):
    response = server.post(path, body)
    assert response.status_code == 200, response.text
    data = response.json()
    choices = [(c.get("message", {}).get("content") if "message" in c else c["text"], c["finish_reason"])
               for c in data["choices"]]
    return choices, data["usage"]["completion_tokens"]


def upstream_requests(upstream):
    return upstream.metrics().value("vllm:request_success_total")


@pytest.mark.parametrize("prompt", PROMPTS)
def test_chat_equals_local_greedy_and_seeded(front, upstream, default_server, prompt):
    for fields in ({"temperature": 0}, {"temperature": 0.9, "seed": 11, "n": 2}):
        body = chat_body(prompt, max_tokens=40, **fields)
        before = upstream_requests(upstream)
        through_front = answer(front, "/v1/chat/completions", body)
        assert upstream_requests(upstream) == before + 1, "the upstream drew the front's answer"
        assert through_front == answer(default_server, "/v1/chat/completions", body)


@pytest.mark.parametrize("prompt", PROMPTS[:4])
def test_completions_equal_local_whole_and_streamed(front, default_server, prompt):
    body = completion_body(prompt, max_tokens=32, temperature=0.7, seed=5, stop=["\n\n"])
    local = answer(default_server, "/v1/completions", body)
    assert answer(front, "/v1/completions", body) == local
    with front.client() as client:
        status, _, events = stream_events(client, "/v1/completions", dict(body, stream=True))
    assert status == 200
    assert [(stream_text(events, chat=False), finish_reasons(events)[0])] == local[0]


def test_streamed_chat_equals_local(front, default_server):
    body = chat_body(PROMPTS[0], max_tokens=40, temperature=0.8, seed=3, stream=True)
    texts = []
    for server in (front, default_server):
        with server.client() as client:
            status, _, events = stream_events(client, "/v1/chat/completions", body)
        assert status == 200
        texts.append((stream_text(events), finish_reasons(events)))
    assert texts[0] == texts[1]


def test_an_omitted_temperature_reaches_the_upstream_as_a_request_value(front, upstream):
    before = upstream.metrics().value("tempered:sampling_param_source_total", param="temperature", source="request")
    response = front.post("/v1/chat/completions", chat_body(max_tokens=4))
    assert response.status_code == 200, response.text
    assert response.json()["sampling"]["temperature"]["source"] != "request"  # the front filled it in
    after = upstream.metrics().value("tempered:sampling_param_source_total", param="temperature", source="request")
    assert after == (before or 0) + 1


def test_what_needs_the_draw_is_refused_naming_the_field(front):
    assert_error(front.post("/v1/completions", completion_body(max_tokens=4, logprobs=2)), 400, param="logprobs")
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    assert_error(front.post("/v1/chat/completions", chat_body(max_tokens=4, response_format=schema)), 400,
                 param="response_format")


def test_an_unreachable_upstream_is_a_503_naming_it():
    with running_server(model_args() + ["--upstream", "http://127.0.0.1:9", "--upstream-model", "m"],
                        name="front-dead") as front:
        response = front.post("/v1/chat/completions", chat_body(max_tokens=4))
        assert_error(response, 503, message_contains="127.0.0.1:9")


def upstream_running(upstream):
    return upstream.metrics().value("vllm:num_requests_running")


def test_a_client_that_leaves_ends_the_upstream_request_within_a_second(front, upstream):
    body = completion_body(max_tokens=2000, ignore_eos=True, stream=True)
    with front.client() as client:
        with client.stream("POST", "/v1/completions", json=body) as response:
            assert response.status_code == 200
            assert first_text_chunk(response.iter_lines())
            assert upstream_running(upstream) == 1
    left = time.monotonic()
    while upstream_running(upstream) != 0:
        assert time.monotonic() - left < 1.0, "the upstream still generates for a client that left"
        time.sleep(0.02)
    assert front.metrics().value("vllm:num_requests_running") == 0


def test_a_stop_string_on_the_front_ends_the_upstream_request(front, upstream):
    # SmolLM2 greedy on this prompt writes " Paris" early; nothing may follow the stop string.
    body = completion_body("The capital of France is", max_tokens=2000, ignore_eos=True, temperature=0, stop=["Paris"])
    response = front.post("/v1/completions", body)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "stop" and "Paris" not in choice["text"]
    assert response.json()["usage"]["completion_tokens"] < 50
    left = time.monotonic()
    while upstream_running(upstream) != 0:
        assert time.monotonic() - left < 1.0
        time.sleep(0.02)
