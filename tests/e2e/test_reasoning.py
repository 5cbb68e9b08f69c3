"""Reasoning on the R1-template model: `tempered serve` on build/tiny-models/tiny-r1-qwen2.gguf (DeepSeek-R1-Distill-
Qwen's tokenizer and chat template, random weights; scripts/fixtures/make_tiny_models.py writes it). Its template ends
the prompt inside <think>, and its random weights never close </think>: the reasoning budget must.

Shown here: the split into message.reasoning_content (and .reasoning) and content, whole and streamed alike; a budget
of N gives exactly N drawn reasoning tokens, then the forced "\\n</think>\\n\\n", then content; a small max_tokens
still leaves content (forced_end "max_tokens"); the grammar starts after reasoning; --reasoning-parser none and the
original template (where the model must open <think> itself) give content only; the metrics move; the OpenAI SDK
reads all of it.
"""
import json
import os
import pathlib

import pytest

from helpers import REPO, running_server, stream_events

MODEL_NAME = "tiny-r1"
FORCED_END = ["\n", "</think>", "\n\n"]


def tiny_model(file_name):
    directory = pathlib.Path(os.environ.get("TEMPERED_TINY_MODEL_DIR", REPO / "build" / "tiny-models"))
    path = directory / file_name
    if not path.is_file():
        message = f"{path} is absent (scripts/fixtures/make_tiny_models.py --out build/tiny-models)"
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return ["--model", str(path), "--served-model-name", MODEL_NAME]


@pytest.fixture(scope="module")
def r1_server():
    with running_server(tiny_model("tiny-r1-qwen2.gguf"), name="tiny-r1") as server:
        yield server


def ask(**fields):
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "temperature": 1.0, "seed": 11}
    body.update(fields)
    return body


def post_ok(server, body):
    response = server.post("/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    return response.json()


def logprob_tokens(choice):
    return [entry["token"] for entry in choice["logprobs"]["content"]]


def test_whole_and_streamed_split_alike(r1_server):
    body = ask(max_tokens=24, thinking_token_budget=8)
    whole = post_ok(r1_server, body)
    choice = whole["choices"][0]
    message = choice["message"]
    assert message["reasoning_content"] and message["content"], message
    assert message["reasoning"] == message["reasoning_content"]
    assert choice["reasoning_budget"] == {"tokens": 8, "budget": 8, "forced_end": "budget"}
    # The eight drawn tokens, the forced newline and </think> are reasoning; the rest content.
    assert whole["usage"]["completion_tokens_details"] == {"reasoning_tokens": 10}
    assert whole["usage"]["completion_tokens"] == 24
    assert "</think>" not in message["reasoning_content"] + message["content"]

    status, _, events = stream_events(r1_server.client(), "/v1/chat/completions",
                                      dict(body, stream=True, stream_options={"include_usage": True}))
    assert status == 200
    chunks = [event for event in events if event != "[DONE]"]
    deltas = [choice["delta"] for event in chunks for choice in event["choices"]]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == message["reasoning_content"]
    assert "".join(d.get("reasoning") or "" for d in deltas) == message["reasoning_content"]
    assert "".join(d.get("content") or "" for d in deltas) == message["content"]
    finishing = [c for event in chunks for c in event["choices"] if c.get("finish_reason")]
    assert len(finishing) == 1 and finishing[0]["reasoning_budget"] == choice["reasoning_budget"]
    assert chunks[-1]["usage"]["completion_tokens_details"] == {"reasoning_tokens": 10}


def test_budget_gives_exactly_n_drawn_tokens_then_the_forced_end(r1_server):
    for budget in (0, 1, 5):
        choice = post_ok(r1_server, ask(max_tokens=budget + 8, thinking_token_budget=budget, logprobs=True))["choices"][0]
        tokens = logprob_tokens(choice)
        assert tokens[budget:budget + 3] == FORCED_END, tokens
        assert "</think>" not in tokens[:budget]
        assert choice["reasoning_budget"] == {"tokens": budget, "budget": budget, "forced_end": "budget"}
        assert len(tokens) > budget + 3, "at least one content token is drawn"
        assert choice["message"]["content"].startswith("\n\n") and len(choice["message"]["content"]) >= 2


def test_small_max_tokens_without_a_budget_still_answers(r1_server):
    choice = post_ok(r1_server, ask(max_tokens=6, logprobs=True))["choices"][0]
    tokens = logprob_tokens(choice)
    assert tokens[2:5] == FORCED_END, tokens
    assert len(tokens) == 6
    assert choice["finish_reason"] == "length"
    assert choice["reasoning_budget"] == {"tokens": 2, "budget": None, "forced_end": "max_tokens"}
    assert choice["message"]["content"]


def test_max_tokens_below_the_forced_end_cuts_it_and_content_may_be_empty(r1_server):
    before = r1_server.metrics().value("tempered:empty_content_total")
    choice = post_ok(r1_server, ask(max_tokens=2, logprobs=True))["choices"][0]
    assert logprob_tokens(choice) == FORCED_END[:2]
    assert choice["message"]["content"] == ""
    assert choice["message"]["reasoning_content"] == "\n"
    assert choice["reasoning_budget"] == {"tokens": 0, "budget": None, "forced_end": "max_tokens"}
    assert r1_server.metrics().value("tempered:empty_content_total") == before + 1


def test_the_grammar_starts_after_reasoning(r1_server):
    schema = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"enum": ["Paris", "Lyon"]}}}
    choice = post_ok(r1_server, ask(max_tokens=40, thinking_token_budget=6, response_format=schema))["choices"][0]
    assert choice["reasoning_budget"]["forced_end"] == "budget"
    assert choice["finish_reason"] == "stop"
    assert json.loads(choice["message"]["content"]) in ("Paris", "Lyon")


def test_bad_budget_fields_are_400(r1_server):
    for fields, param in (({"thinking_token_budget": -1}, "thinking_token_budget"),
                          ({"reasoning_effort": "extreme"}, "reasoning_effort")):
        response = r1_server.post("/v1/chat/completions", ask(max_tokens=4, **fields))
        assert response.status_code == 400, response.text
        assert response.json()["error"]["param"] == param


def test_metrics_move_per_reasoning_choice(r1_server):
    before = r1_server.metrics()
    post_ok(r1_server, ask(max_tokens=12, thinking_token_budget=3, n=2))
    after = r1_server.metrics()
    assert after.value("tempered:reasoning_tokens_count") == before.value("tempered:reasoning_tokens_count") + 2
    assert after.value("tempered:reasoning_tokens_sum") == before.value("tempered:reasoning_tokens_sum") + 6
    budget = 'tempered:reasoning_forced_end_total'
    assert after.value(budget, reason="budget") == before.value(budget, reason="budget") + 2
    assert after.value(budget, reason="max_tokens") == before.value(budget, reason="max_tokens")


def test_the_openai_sdk_reads_reasoning(r1_server):
    client = r1_server.openai()
    response = client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": "Hi"}],
                                              max_tokens=12, seed=3, extra_body={"thinking_token_budget": 4})
    message = response.choices[0].message
    assert message.model_extra["reasoning_content"] == message.model_extra["reasoning"]
    assert message.content
    assert response.usage.completion_tokens_details.reasoning_tokens == 6
    assert response.choices[0].model_extra["reasoning_budget"]["tokens"] == 4
    stream = client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=12, seed=3, stream=True, stream_options={"include_usage": True},
                                            extra_body={"thinking_token_budget": 4})
    reasoning, content, usage = "", "", None
    for chunk in stream:
        for choice in chunk.choices:
            reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
            content += choice.delta.content or ""
        usage = chunk.usage or usage
    assert (reasoning, content) == (message.model_extra["reasoning_content"], message.content)
    assert usage.completion_tokens_details.reasoning_tokens == 6


def test_server_budget_and_effort_budgets():
    args = tiny_model("tiny-r1-qwen2.gguf") + ["--reasoning-budget", "4", "--reasoning-effort-budgets", "low=2"]
    with running_server(args, name="tiny-r1-budget") as server:
        assert "split with the deepseek_r1 parser" in server.log()
        default = post_ok(server, ask(max_tokens=16))["choices"][0]["reasoning_budget"]
        assert default == {"tokens": 4, "budget": 4, "forced_end": "budget"}
        low = post_ok(server, ask(max_tokens=16, reasoning_effort="low"))["choices"][0]["reasoning_budget"]
        assert low == {"tokens": 2, "budget": 2, "forced_end": "budget"}
        both = post_ok(server, ask(max_tokens=16, reasoning_effort="low", thinking_token_budget=3))
        assert both["choices"][0]["reasoning_budget"]["tokens"] == 3


def test_reasoning_parser_none_gives_no_split():
    with running_server(tiny_model("tiny-r1-qwen2.gguf") + ["--reasoning-parser", "none"], name="tiny-r1-none") as server:
        assert "reasoning: not split" in server.log()
        body = post_ok(server, ask(max_tokens=8, thinking_token_budget=0, logprobs=True))
        choice = body["choices"][0]
        assert "reasoning_content" not in choice["message"] and "reasoning_budget" not in choice
        assert "completion_tokens_details" not in body["usage"]
        assert len(logprob_tokens(choice)) == 8 and "</think>" not in logprob_tokens(choice)


def test_original_template_leaves_think_to_the_model():
    with running_server(tiny_model("tiny-r1-qwen2-original-template.gguf"), name="tiny-r1-original") as server:
        body = post_ok(server, ask(max_tokens=8, thinking_token_budget=2, logprobs=True))
        choice = body["choices"][0]
        # Random weights never open <think>: everything is content, nothing was forced.
        assert "<think>" not in logprob_tokens(choice)
        assert "reasoning_content" not in choice["message"] and "reasoning_budget" not in choice
        assert choice["message"]["content"]
        assert len(logprob_tokens(choice)) == 8
        assert body["usage"]["completion_tokens_details"] == {"reasoning_tokens": 0}


# ---- Through an upstream (tempered serve --upstream): the front ends reasoning by force and a continuation
# request (the prompt, the reasoning so far and the forced end) draws the content.

@pytest.fixture(scope="module")
def r1_pair():
    model = tiny_model("tiny-r1-qwen2.gguf")
    with running_server(model + ["--sampling-defaults", "openai"], name="tiny-r1-upstream") as upstream:
        with running_server(model + ["--upstream", upstream.base_url], name="tiny-r1-front") as front:
            yield front, upstream


@pytest.fixture(scope="module")
def r1_front(r1_pair):
    return r1_pair[0]


def messages(body):
    return [(choice["message"].get("reasoning_content"), choice["message"]["content"], choice["finish_reason"],
             choice["reasoning_budget"]) for choice in body["choices"]]


@pytest.mark.parametrize("fields", [{"temperature": 0}, {"n": 2}], ids=["greedy", "seeded-n2"])
def test_a_budget_through_an_upstream_forces_the_end_and_content_comes(r1_front, r1_server, fields):
    body = ask(max_tokens=24, thinking_token_budget=5, **fields)
    through, local = post_ok(r1_front, body), post_ok(r1_server, body)
    for reasoning, content, _, report in messages(through):
        assert report == {"tokens": 5, "budget": 5, "forced_end": "budget"}
        assert content, "the continuation drew the content"
    # The reasoning is the upstream's first draw, the same as ours; the content is a continuation's own draw.
    assert [m[0] for m in messages(through)] == [m[0] for m in messages(local)]
    assert through["usage"]["completion_tokens"] == local["usage"]["completion_tokens"]


def test_small_max_tokens_through_an_upstream_still_answers(r1_front):
    choice = post_ok(r1_front, ask(max_tokens=6))["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["reasoning_budget"] == {"tokens": 2, "budget": None, "forced_end": "max_tokens"}
    assert choice["message"]["content"]


def test_logprobs_through_an_upstream_are_refused_for_a_reasoning_model(r1_front):
    response = r1_front.post("/v1/chat/completions", ask(max_tokens=8, logprobs=True))
    assert response.status_code == 400 and response.json()["error"]["param"] == "logprobs", response.text


def test_a_grammar_through_an_upstream_applies_to_the_answer_not_the_reasoning(r1_pair, r1_server):
    """The first leg carries no grammar (it would bind the thinking); the front cuts it where the reasoning ends
    and the answer is a continuation that carries the grammar: one grammar request upstream, and the greedy
    answer is local tempered's."""
    front, upstream = r1_pair
    body = ask(max_tokens=40, thinking_token_budget=4, temperature=0, response_format={"type": "json_object"})
    before = upstream.metrics().value("tempered:structured_requests_total", kind="grammar") or 0
    through, local = post_ok(front, body), post_ok(r1_server, body)
    assert upstream.metrics().value("tempered:structured_requests_total", kind="grammar") == before + 1
    assert messages(through) == messages(local)
