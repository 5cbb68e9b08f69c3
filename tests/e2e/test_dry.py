"""DRY as a sampling parameter, and chat_template_kwargs, on SmolLM2.

DRY's five request fields (llama-server's names) resolve like every other sampling value (request >
--preferred-sampling-params > default, then the policy) and are reported in "sampling" with their sources
once anything sets them; with nothing set the report keeps only the other parameters. At temperature 0
SmolLM2 answers "What is the capital of France?" with a loop ("la Femme, la Femme, ..."); with DRY on, the
greedy answer changes and its longest repeated run of words is shorter.
"""
import json

import pytest

from helpers import (MODEL_SHORT_NAME, assert_error, chat_body, completion_body, model_args, running_server,
                     stream_events)

DRY_PARAMS = ("dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers")
DRY_DEFAULTS = {"dry_multiplier": 0, "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": -1,
                "dry_sequence_breakers": ["\n", ":", "\"", "*"]}
LOOP_PROMPT = "What is the capital of France?"
LOOP_TOKENS = 160


@pytest.fixture(scope="module")
def plain_server():
    with running_server(model_args(), name="dry-plain") as server:
        yield server


@pytest.fixture(scope="module")
def preferred_server():
    args = model_args() + ["--preferred-sampling-params", json.dumps({"dry_multiplier": 0.8}),
                           "--sampling-policy", json.dumps({"dry_allowed_length": {"max": 3}})]
    with running_server(args, name="dry-preferred") as server:
        yield server


def longest_repeated_run(text):
    """The length, in words, of the longest run of words that occurs at least twice in `text`."""
    words = text.split()
    longest = 0
    for n in range(1, len(words)):
        seen = set()
        repeated = False
        for i in range(len(words) - n + 1):
            gram = tuple(words[i:i + n])
            if gram in seen:
                repeated = True
                break
            seen.add(gram)
        if not repeated:
            break
        longest = n
    return longest


def greedy_answer(server, **fields):
    body = chat_body(LOOP_PROMPT, temperature=0, max_tokens=LOOP_TOKENS, **fields)
    response = server.post("/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    return response.json()


def test_nothing_set_reports_no_dry(plain_server):
    body = plain_server.post("/v1/completions", completion_body(max_tokens=2)).json()
    assert not set(DRY_PARAMS) & set(body["sampling"]), body["sampling"]
    table = plain_server.get(f"/v1/models/{MODEL_SHORT_NAME}").json()["sampling_defaults"]
    assert not set(DRY_PARAMS) & set(table), table


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_request_values_are_reported_with_source_request(plain_server, endpoint):
    fields = {"dry_multiplier": 0.5, "dry_sequence_breakers": ["\n", "."], "max_tokens": 4}
    if endpoint == "chat":
        path, body = "/v1/chat/completions", chat_body(**fields)
    else:
        path, body = "/v1/completions", completion_body(**fields)
    sampling = plain_server.post(path, body).json()["sampling"]
    assert sampling["dry_multiplier"] == {"value": 0.5, "source": "request"}
    assert sampling["dry_sequence_breakers"] == {"value": ["\n", "."], "source": "request"}
    for param in ("dry_base", "dry_allowed_length", "dry_penalty_last_n"):
        assert sampling[param] == {"value": DRY_DEFAULTS[param], "source": "default"}, sampling
    with plain_server.client() as client:
        status, _, events = stream_events(client, path, dict(body, stream=True))
    assert status == 200, events
    assert events[0]["sampling"]["dry_multiplier"] == {"value": 0.5, "source": "request"}


def test_source_counter_moves_by_one(plain_server):
    name = "tempered:sampling_param_source_total"
    before = plain_server.metrics().value(name, param="dry_multiplier", source="request")
    response = plain_server.post("/v1/completions", completion_body(max_tokens=2, dry_multiplier=0.8))
    assert response.status_code == 200, response.text
    after = plain_server.metrics().value(name, param="dry_multiplier", source="request")
    assert after - before == 1


def test_dry_breaks_the_greedy_loop(plain_server):
    looping = greedy_answer(plain_server)["choices"][0]["message"]["content"]
    loop_run = longest_repeated_run(looping)
    assert loop_run >= 8, f"the greedy answer was expected to loop: {looping!r}"
    with_dry = greedy_answer(plain_server, dry_multiplier=0.8)
    assert with_dry["sampling"]["dry_multiplier"] == {"value": 0.8, "source": "request"}
    text = with_dry["choices"][0]["message"]["content"]
    assert text != looping
    assert longest_repeated_run(text) < loop_run, (
        f"DRY left a repeat as long: {longest_repeated_run(text)} >= {loop_run} words\n{text!r}")


def test_the_requests_breakers_reach_the_sampler(plain_server):
    """With "," as the only breaker DRY cannot see a loop whose period spans a comma ("la Femme, la Femme"),
    its known blind spot: the answer loops again, unlike with the default breakers."""
    default_breakers = greedy_answer(plain_server, dry_multiplier=0.8)["choices"][0]["message"]["content"]
    comma = greedy_answer(plain_server, dry_multiplier=0.8, dry_sequence_breakers=[","])
    assert comma["sampling"]["dry_sequence_breakers"] == {"value": [","], "source": "request"}
    text = comma["choices"][0]["message"]["content"]
    assert text != default_breakers
    assert longest_repeated_run(text) > longest_repeated_run(default_breakers), text


def test_preferred_and_policy_sources(preferred_server):
    body = preferred_server.post("/v1/completions", completion_body(max_tokens=2, dry_allowed_length=5)).json()
    sampling = body["sampling"]
    assert sampling["dry_multiplier"] == {"value": 0.8, "source": "preferred"}
    assert sampling["dry_allowed_length"] == {"value": 3, "source": "policy",
                                              "replaced": {"value": 5, "source": "request"}}
    assert sampling["dry_base"] == {"value": 1.75, "source": "default"}
    table = preferred_server.get(f"/v1/models/{MODEL_SHORT_NAME}").json()["sampling_defaults"]
    assert table["dry_multiplier"] == {"value": 0.8, "source": "preferred"}


def test_preferred_dry_draws_what_the_same_request_values_draw(plain_server, preferred_server):
    """The operator's DRY is the request's DRY: same values, same greedy text."""
    implicit = greedy_answer(preferred_server)
    explicit = greedy_answer(plain_server, dry_multiplier=0.8, dry_allowed_length=2)
    assert implicit["choices"][0]["message"]["content"] == explicit["choices"][0]["message"]["content"]


@pytest.mark.parametrize("fields, param", [
    ({"dry_multiplier": -0.5}, "dry_multiplier"),
    ({"dry_multiplier": "high"}, "dry_multiplier"),
    ({"dry_base": 0.5}, "dry_base"),
    ({"dry_allowed_length": 1.5}, "dry_allowed_length"),
    ({"dry_penalty_last_n": -2}, "dry_penalty_last_n"),
    ({"dry_sequence_breakers": "\n"}, "dry_sequence_breakers"),
    ({"dry_sequence_breakers": []}, "dry_sequence_breakers"),
    ({"dry_sequence_breakers": ["\n", 7]}, "dry_sequence_breakers[1]"),
])
def test_bad_values_are_400_naming_the_field(plain_server, fields, param):
    response = plain_server.post("/v1/chat/completions", chat_body(**fields))
    assert_error(response, 400, param=param)
    response = plain_server.post("/v1/completions", completion_body(**fields))
    assert_error(response, 400, param=param)


def prompt_tokens(server, **fields):
    response = server.post("/v1/chat/completions", chat_body("Hi", max_tokens=1, **fields))
    assert response.status_code == 200, response.text
    return response.json()["usage"]["prompt_tokens"]


def test_chat_template_kwargs_reach_the_template(plain_server):
    """SmolLM2's template reads add_generation_prompt; as in vLLM a kwarg overrides the server's value, so
    the prompt loses "<|im_start|>assistant\\n" (4 tokens in SmolLM2's vocabulary). A kwarg the template does
    not read changes nothing."""
    plain = prompt_tokens(plain_server)
    assert prompt_tokens(plain_server, chat_template_kwargs={"add_generation_prompt": False}) == plain - 4
    assert prompt_tokens(plain_server, chat_template_kwargs={"add_generation_prompt": True}) == plain
    assert prompt_tokens(plain_server, chat_template_kwargs={"enable_thinking": False}) == plain


@pytest.mark.parametrize("kwargs, param", [
    ([1], "chat_template_kwargs"),
    ({"messages": []}, "chat_template_kwargs.messages"),
    ({"chat_template": "{{ 1 }}"}, "chat_template_kwargs.chat_template"),
])
def test_chat_template_kwargs_errors(plain_server, kwargs, param):
    response = plain_server.post("/v1/chat/completions", chat_body(chat_template_kwargs=kwargs))
    assert_error(response, 400, param=param)
