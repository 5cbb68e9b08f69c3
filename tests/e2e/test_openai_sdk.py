"""`tempered serve` through the official openai SDK, with every response checked strictly against the
SDK's own pydantic types (parsed from the raw JSON in strict mode, not the SDK's lenient construct()).

One server (the session's default_server) runs the model with default flags; max_tokens stay small.
"""
import concurrent.futures
import json
import math
import threading
import time
import uuid

import openai
import pytest
from openai.types import Completion, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from helpers import (CONTEXT_LENGTH, MODEL_SHORT_NAME, chat_body, completion_body, finish_reasons,
                     first_text_chunk, stream_events, stream_text)

STORY_PROMPT = "Once upon a time, in a small village by the sea, there lived"


@pytest.fixture(scope="module")
def sdk(default_server):
    client = default_server.openai()
    yield client
    client.close()


@pytest.fixture(scope="module")
def http(default_server):
    client = default_server.client()
    yield client
    client.close()


# ---- strict validation of raw JSON against the SDK's types

def strict_chat(raw):
    completion = ChatCompletion.model_validate(raw, strict=True)
    check_envelope(raw, "chat.completion")
    assert completion.usage is not None, "usage missing"
    check_usage(raw["usage"])
    return completion


def strict_completion(raw):
    completion = Completion.model_validate(raw, strict=True)
    check_envelope(raw, "text_completion")
    check_usage(raw["usage"])
    return completion


def strict_chat_chunks(events):
    assert events and events[-1] == "[DONE]", f"stream did not end with [DONE]: {events[-3:]}"
    assert events.count("[DONE]") == 1
    chunks = events[:-1]
    assert chunks, "no chunk before [DONE]"
    for chunk in chunks:
        assert "error" not in chunk, chunk
        ChatCompletionChunk.model_validate(chunk, strict=True)
        check_envelope(chunk, "chat.completion.chunk")
    same_envelope(chunks)
    return chunks


def strict_completion_chunks(events):
    """The SDK's CompletionChoice does not allow finish_reason null, which mid-stream chunks carry;
    validate those with a placeholder and check the nulls separately."""
    assert events and events[-1] == "[DONE]", f"stream did not end with [DONE]: {events[-3:]}"
    assert events.count("[DONE]") == 1
    chunks = events[:-1]
    assert chunks, "no chunk before [DONE]"
    for chunk in chunks:
        assert "error" not in chunk, chunk
        patched = json.loads(json.dumps(chunk))
        for choice in patched["choices"]:
            if choice.get("finish_reason", "missing") is None:
                choice["finish_reason"] = "stop"
        Completion.model_validate(patched, strict=True)
        check_envelope(chunk, "text_completion")
    same_envelope(chunks)
    return chunks


def check_envelope(raw, object_name):
    assert raw["object"] == object_name
    assert isinstance(raw["id"], str) and raw["id"]
    assert isinstance(raw["created"], int) and abs(raw["created"] - time.time()) < 3600, raw["created"]
    assert raw["model"] == MODEL_SHORT_NAME
    assert "system_fingerprint" in raw
    assert raw["system_fingerprint"] is None or isinstance(raw["system_fingerprint"], str)


def same_envelope(chunks):
    for key in ("id", "created", "model", "system_fingerprint"):
        values = {json.dumps(chunk.get(key)) for chunk in chunks}
        assert len(values) == 1, f"chunks disagree on {key}: {values}"


def check_usage(usage):
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"], usage
    assert usage["prompt_tokens"] > 0
    assert usage["completion_tokens"] >= 0
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert isinstance(cached, int) and 0 <= cached <= usage["prompt_tokens"], usage


def raw_chat(sdk, **kwargs):
    kwargs.setdefault("model", MODEL_SHORT_NAME)
    response = sdk.chat.completions.with_raw_response.create(**kwargs)
    raw = response.http_response.json()
    return strict_chat(raw), raw


def raw_completion(sdk, **kwargs):
    kwargs.setdefault("model", MODEL_SHORT_NAME)
    response = sdk.completions.with_raw_response.create(**kwargs)
    raw = response.http_response.json()
    return strict_completion(raw), raw


def greedy_chat(sdk, content, max_tokens=24, **kwargs):
    completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": content}], temperature=0,
                             max_tokens=max_tokens, **kwargs)
    return completion.choices[0].message.content


def greedy_completion(sdk, prompt, max_tokens=24, **kwargs):
    completion, _ = raw_completion(sdk, prompt=prompt, temperature=0, max_tokens=max_tokens, **kwargs)
    return completion.choices[0].text


# ---- models and other endpoints

def test_models_list_and_retrieve(sdk, http):
    models = sdk.models.list()
    assert [m.id for m in models.data] == [MODEL_SHORT_NAME]
    raw = http.get("/v1/models").json()
    assert raw["object"] == "list"
    for item in raw["data"]:
        Model.model_validate(item, strict=True)
        assert item["object"] == "model"
    model = sdk.models.retrieve(MODEL_SHORT_NAME)
    assert model.id == MODEL_SHORT_NAME
    raw_one = http.get(f"/v1/models/{MODEL_SHORT_NAME}").json()
    Model.model_validate(raw_one, strict=True)
    assert "sampling_defaults" in raw_one, raw_one
    with pytest.raises(openai.NotFoundError):
        sdk.models.retrieve("no-such-model")


def test_tokenize_detokenize_round_trip(http):
    text = "Hello world, this is tempered."
    response = http.post("/tokenize", json={"prompt": text, "add_special_tokens": False})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == len(body["tokens"]) > 3
    assert all(isinstance(t, int) and 0 <= t < 49152 for t in body["tokens"])
    assert body["max_model_len"] == CONTEXT_LENGTH
    back = http.post("/detokenize", json={"tokens": body["tokens"]})
    assert back.status_code == 200, back.text
    assert back.json()["prompt"] == text


def test_tokenize_count_matches_usage(sdk, http):
    prompt = "Counting tokens the same way twice."
    tokens = http.post("/tokenize", json={"prompt": prompt, "add_special_tokens": True}).json()
    completion, _ = raw_completion(sdk, prompt=prompt, max_tokens=1, temperature=0)
    assert completion.usage.prompt_tokens == tokens["count"]


def test_tokenize_messages_is_the_chat_prompt(http):
    """vLLM's /tokenize with messages: the chat template's ids, the chat endpoint's prompt exactly (its
    prompt_tokens); without the generation prompt, the assistant's header is left off the end."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}]
    tokens = http.post("/tokenize", json={"messages": messages}).json()
    chat = http.post("/v1/chat/completions", json=chat_body(max_tokens=1, temperature=0, messages=messages)).json()
    assert tokens["count"] == chat["usage"]["prompt_tokens"] == len(tokens["tokens"])
    bare = http.post("/tokenize", json={"messages": messages, "add_generation_prompt": False}).json()
    assert bare["tokens"] == tokens["tokens"][:bare["count"]] and bare["count"] < tokens["count"]
    tail = http.post("/detokenize", json={"tokens": tokens["tokens"][bare["count"]:]}).json()["prompt"]
    assert "assistant" in tail, tail
    bad = http.post("/tokenize", json={"messages": [{"role": "wizard", "content": "x"}]})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "messages[0].role"


REQUEST_ID_CASES = {
    "chat-200": ("POST", "/v1/chat/completions", chat_body(max_tokens=2), 200),
    "chat-stream-200": ("POST", "/v1/chat/completions", chat_body(max_tokens=2, stream=True), 200),
    "completion-200": ("POST", "/v1/completions", completion_body(max_tokens=2), 200),
    "chat-400": ("POST", "/v1/chat/completions", chat_body(max_tokens=2, temperature=7), 400),
    "chat-404": ("POST", "/v1/chat/completions", chat_body(model="nope"), 404),
    "models-200": ("GET", "/v1/models", None, 200),
}


@pytest.mark.parametrize("case", list(REQUEST_ID_CASES))
def test_request_id_is_echoed(http, case):
    method, path, body, status = REQUEST_ID_CASES[case]
    request_id = f"e2e-{case}-42"
    response = http.request(method, path, json=body, headers={"X-Request-Id": request_id})
    assert response.status_code == status, response.text
    assert response.headers.get("x-request-id") == request_id, dict(response.headers)


@pytest.mark.parametrize("path", ["/health", "/health_generate", "/get_load", "/server_info", "/model_info",
                                  "/get_server_info", "/get_model_info"])
def test_info_endpoints_answer(http, path):
    response = http.get(path)
    assert response.status_code == 200, response.text
    if path.startswith("/health"):
        assert response.json()["status"] == "ok"
    else:
        assert isinstance(response.json(), (dict, list))


# ---- chat

def test_chat_completion_strict(sdk):
    completion, raw = raw_chat(sdk, messages=[{"role": "system", "content": "You are terse."},
                                              {"role": "user", "content": "Name a colour."}],
                               max_tokens=16, temperature=0)
    assert len(completion.choices) == 1
    choice = completion.choices[0]
    assert choice.index == 0
    assert choice.message.role == "assistant"
    assert isinstance(choice.message.content, str) and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert 0 < completion.usage.completion_tokens <= 16
    if choice.finish_reason == "length":
        assert completion.usage.completion_tokens == 16
    assert raw["choices"][0]["logprobs"] is None
    assert "sampling" in raw


def test_chat_text_parts_equal_string_content(sdk):
    as_string = greedy_chat(sdk, "Name three fruits.", max_tokens=12)
    parts = [{"type": "text", "text": "Name three fruits."}]
    completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": parts}], temperature=0, max_tokens=12)
    assert completion.choices[0].message.content == as_string


def test_chat_stream_matches_non_stream(sdk, http):
    expected = greedy_chat(sdk, "Tell me a fact about the moon.", max_tokens=20)
    stream = sdk.chat.completions.create(model=MODEL_SHORT_NAME, temperature=0, max_tokens=20, stream=True,
                                         messages=[{"role": "user", "content": "Tell me a fact about the moon."}])
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] in (
        ["stop"], ["length"])

    status, _, events = stream_events(http, "/v1/chat/completions", chat_body(
        "Tell me a fact about the moon.", temperature=0, max_tokens=20, stream=True))
    assert status == 200, events
    chunks = strict_chat_chunks(events)
    assert chunks[0]["choices"][0]["delta"].get("role") == "assistant"
    roles = [c["choices"][0]["delta"].get("role") for c in chunks if c["choices"]]
    assert roles.count("assistant") == 1, "role must come in the first chunk of the choice only"
    assert "sampling" in chunks[0], chunks[0]
    assert stream_text(events) == expected
    assert set(finish_reasons(events).values()) <= {"stop", "length"} and len(finish_reasons(events)) == 1
    assert all(c.get("usage") is None for c in chunks), "usage sent without stream_options.include_usage"


def test_max_tokens_gives_finish_reason_length(sdk):
    completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": "Write a long essay about rivers."}],
                             max_tokens=5, extra_body={"ignore_eos": True})
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 5
    completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": "Write a long essay about rivers."}],
                             max_completion_tokens=3, extra_body={"ignore_eos": True})
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 3
    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=4, extra_body={"ignore_eos": True})
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 4


def pick_stop_word(text):
    """A word from the second half of text that first occurs after a few characters."""
    words = [w.strip(".,!?;:\"'()") for w in text.split()]
    for word in words[len(words) // 2:] + words:
        if len(word) >= 3 and word.isalpha() and text.find(word) > 3:
            return word
    pytest.fail(f"no usable stop word in greedy output {text!r}")


def test_stop_strings_chat(sdk, http):
    content = "Describe a sunny day at the beach in two sentences."
    baseline = greedy_chat(sdk, content, max_tokens=32, extra_body={"ignore_eos": True})
    word = pick_stop_word(baseline)
    expected = baseline[:baseline.index(word)]
    for stop in (word, ["qqqzzzxx", word]):
        completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": content}], temperature=0,
                                 max_tokens=32, stop=stop, extra_body={"ignore_eos": True})
        assert completion.choices[0].message.content == expected, (stop, baseline)
        assert completion.choices[0].finish_reason == "stop"
    status, _, events = stream_events(http, "/v1/chat/completions", chat_body(
        content, temperature=0, max_tokens=32, stop=[word], stream=True, ignore_eos=True))
    assert status == 200, events
    strict_chat_chunks(events)
    assert stream_text(events) == expected, baseline
    assert finish_reasons(events) == {0: "stop"}


def test_stop_strings_completion(sdk, http):
    baseline = greedy_completion(sdk, STORY_PROMPT, max_tokens=32, extra_body={"ignore_eos": True})
    word = pick_stop_word(baseline)
    expected = baseline[:baseline.index(word)]
    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, temperature=0, max_tokens=32, stop=[word],
                                   extra_body={"ignore_eos": True})
    assert completion.choices[0].text == expected, baseline
    assert completion.choices[0].finish_reason == "stop"
    status, _, events = stream_events(http, "/v1/completions", completion_body(
        STORY_PROMPT, temperature=0, max_tokens=32, stop=word, stream=True, ignore_eos=True))
    assert status == 200, events
    strict_completion_chunks(events)
    assert stream_text(events, chat=False) == expected
    assert finish_reasons(events) == {0: "stop"}


# ---- completions

def test_completion_strict_and_stream(sdk, http):
    completion, raw = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=12, temperature=0)
    choice = completion.choices[0]
    assert choice.index == 0 and choice.text
    assert choice.finish_reason in ("stop", "length")
    assert raw["choices"][0]["logprobs"] is None
    assert "sampling" in raw

    status, _, events = stream_events(http, "/v1/completions", completion_body(
        STORY_PROMPT, max_tokens=12, temperature=0, stream=True))
    assert status == 200, events
    chunks = strict_completion_chunks(events)
    assert "sampling" in chunks[0]
    assert stream_text(events, chat=False) == choice.text
    reasons = finish_reasons(events)
    assert reasons == {0: choice.finish_reason}
    last_with_choice = [c for c in chunks if c["choices"]][-1]
    assert last_with_choice["choices"][0]["finish_reason"] == choice.finish_reason

    streamed = "".join(c.choices[0].text for c in sdk.completions.create(
        model=MODEL_SHORT_NAME, prompt=STORY_PROMPT, max_tokens=12, temperature=0, stream=True) if c.choices)
    assert streamed == choice.text


def test_echo(sdk):
    plain = greedy_completion(sdk, STORY_PROMPT, max_tokens=6)
    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=6, temperature=0, echo=True)
    assert completion.choices[0].text == STORY_PROMPT + plain


# ---- n, seeds, determinism

def test_n_choices(sdk, http):
    completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": "Say something."}], n=2, max_tokens=6,
                             temperature=1, seed=3, extra_body={"ignore_eos": True})
    assert sorted(c.index for c in completion.choices) == [0, 1]
    assert all(c.finish_reason == "length" for c in completion.choices)
    assert completion.usage.completion_tokens == 12

    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, n=4, max_tokens=16, temperature=1, seed=5,
                                   extra_body={"ignore_eos": True})
    texts = [c.text for c in sorted(completion.choices, key=lambda c: c.index)]
    assert [c.index for c in sorted(completion.choices, key=lambda c: c.index)] == [0, 1, 2, 3]
    assert completion.usage.completion_tokens == 64
    assert len(set(texts)) >= 2, f"4 samples at temperature 1 were all identical: {texts}"

    status, _, events = stream_events(http, "/v1/chat/completions", chat_body(
        "Say something.", n=2, max_tokens=6, temperature=1, seed=3, stream=True, ignore_eos=True))
    assert status == 200, events
    chunks = strict_chat_chunks(events)
    for index in (0, 1):
        mine = [ch for c in chunks for ch in c["choices"] if ch["index"] == index]
        assert mine, f"no chunk for choice {index}"
        assert mine[0]["delta"].get("role") == "assistant", f"choice {index}'s first chunk has no role"
    assert finish_reasons(events) == {0: "length", 1: "length"}


def test_seed_reproducibility(sdk):
    def sample(seed):
        completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=24, temperature=1, seed=seed,
                                       extra_body={"ignore_eos": True})
        return completion.choices[0].text

    first = sample(1234)
    assert sample(1234) == first
    others = {sample(s) for s in (1, 2, 3)}
    assert len(others | {first}) >= 2, "different seeds gave the same sample every time"

    def chat_sample(seed):
        completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": "Invent a name for a cat."}],
                                 max_tokens=16, temperature=1, seed=seed)
        return completion.choices[0].message.content

    assert chat_sample(99) == chat_sample(99)


def test_greedy_is_deterministic_under_concurrent_load(default_server, sdk):
    content = "Explain what a compiler does."
    baseline = greedy_chat(sdk, content, max_tokens=32)
    started = threading.Barrier(9, timeout=60)
    errors = []

    def background(i):
        try:
            with default_server.client() as client:
                with client.stream("POST", "/v1/completions", json=completion_body(
                        f"Story number {i}: {STORY_PROMPT}", max_tokens=64, temperature=1, seed=i, stream=True,
                        ignore_eos=True)) as response:
                    assert response.status_code == 200
                    lines = response.iter_lines()
                    assert first_text_chunk(lines)
                    started.wait()
                    for _ in lines:
                        pass
        except Exception as error:  # reported below
            errors.append(repr(error))
            started.abort()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(background, i) for i in range(8)]
        started.wait()
        under_load = greedy_chat(sdk, content, max_tokens=32)
        stream = sdk.chat.completions.create(model=MODEL_SHORT_NAME, temperature=0, max_tokens=32, stream=True,
                                             messages=[{"role": "user", "content": content}])
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        for future in futures:
            future.result()
    assert not errors, errors
    assert under_load == baseline
    assert streamed == baseline


# ---- logprobs and logit_bias

def test_chat_logprobs(sdk):
    completion, raw = raw_chat(sdk, messages=[{"role": "user", "content": "What is two plus two?"}],
                               temperature=0, max_tokens=8, logprobs=True, top_logprobs=3,
                               extra_body={"ignore_eos": True})
    content = completion.choices[0].logprobs.content
    assert len(content) == completion.usage.completion_tokens == 8
    assert "".join(t.token for t in content) == completion.choices[0].message.content
    for token in content:
        assert len(token.top_logprobs) == 3
        logprobs = [t.logprob for t in token.top_logprobs]
        assert logprobs == sorted(logprobs, reverse=True)
        # Greedy: the chosen token is the most likely one, with the same raw log-prob.
        assert token.top_logprobs[0].token == token.token
        assert math.isclose(token.top_logprobs[0].logprob, token.logprob, abs_tol=1e-5)
        assert token.logprob <= 0
        # Raw model log-probs, not the greedy (temperature 0) distribution: alternatives stay finite.
        assert -50 < token.top_logprobs[2].logprob < 0
        assert sum(math.exp(l) for l in logprobs) <= 1.0 + 1e-4
        assert bytes(token.bytes).decode("utf-8") == token.token  # the answer is plain ASCII
    without = raw_chat(sdk, messages=[{"role": "user", "content": "What is two plus two?"}], temperature=0,
                       max_tokens=2, logprobs=False)[1]
    assert without["choices"][0]["logprobs"] is None


def test_logprobs_are_raw_model_logprobs(sdk):
    """The first position's alternatives come from the model alone: the same at any temperature."""
    def first_position(**sampling):
        completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": "Name a planet."}], max_tokens=1,
                                 logprobs=True, top_logprobs=5, **sampling)
        return [(t.token, t.logprob) for t in completion.choices[0].logprobs.content[0].top_logprobs]

    greedy = first_position(temperature=0)
    for sampling in ({"temperature": 1.7, "seed": 1}, {"temperature": 0.3, "seed": 2, "top_p": 0.5}):
        other = first_position(**sampling)
        assert [t for t, _ in other] == [t for t, _ in greedy], sampling
        for (_, a), (_, b) in zip(other, greedy):
            assert math.isclose(a, b, abs_tol=1e-4), (sampling, other, greedy)
    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=1, logprobs=3, temperature=0)
    hot, _ = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=1, logprobs=3, temperature=1.9, seed=4)
    cold_top, hot_top = completion.choices[0].logprobs.top_logprobs[0], hot.choices[0].logprobs.top_logprobs[0]
    common = set(cold_top) & set(hot_top)
    assert len(common) >= 3, (cold_top, hot_top)
    for token in common:
        assert math.isclose(cold_top[token], hot_top[token], abs_tol=1e-4), (cold_top, hot_top)


def test_min_tokens_delays_the_end(sdk):
    messages = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]
    short, _ = raw_chat(sdk, messages=messages, temperature=0, max_tokens=32)
    assert short.choices[0].finish_reason == "stop", "the model did not stop early; pick another prompt"
    natural = short.usage.completion_tokens
    assert natural <= 16, short.choices[0].message.content
    longer, _ = raw_chat(sdk, messages=messages, temperature=0, max_tokens=32,
                         extra_body={"min_tokens": natural + 4})
    assert longer.usage.completion_tokens >= natural + 4, (natural, longer.usage)


def test_completion_logprobs(sdk):
    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, temperature=0, max_tokens=6, logprobs=2,
                                   extra_body={"ignore_eos": True})
    choice = completion.choices[0]
    logprobs = choice.logprobs
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.top_logprobs) == 6
    assert "".join(logprobs.tokens) == choice.text
    for token, logprob, top in zip(logprobs.tokens, logprobs.token_logprobs, logprobs.top_logprobs):
        assert len(top) == 2, top
        assert max(top, key=top.get) == token
        assert math.isclose(top[token], logprob, abs_tol=1e-5)
        assert all(-50 < v <= 0 for v in top.values())
    offsets = logprobs.text_offset
    assert len(offsets) == 6
    for i in range(5):
        assert offsets[i + 1] - offsets[i] == len(logprobs.tokens[i]), offsets


def test_logit_bias_forces_a_token(sdk, http):
    tokens = http.post("/tokenize", json={"prompt": " banana", "add_special_tokens": False}).json()["tokens"]
    token = tokens[0]
    text = http.post("/detokenize", json={"tokens": [token]}).json()["prompt"]
    assert text
    plain = greedy_completion(sdk, STORY_PROMPT, max_tokens=3)
    assert not plain.startswith(text), "pick another token: the model says it anyway"
    biased = greedy_completion(sdk, STORY_PROMPT, max_tokens=3, logit_bias={str(token): 100})
    assert biased.startswith(text), biased
    completion, _ = raw_chat(sdk, messages=[{"role": "user", "content": "Say hi."}], temperature=0, max_tokens=3,
                             logit_bias={str(token): 100})
    assert completion.choices[0].message.content.lstrip().startswith(text.strip()), completion.choices[0]


# ---- usage

def test_stream_include_usage(sdk, http):
    body = chat_body("Count to ten.", temperature=0, max_tokens=6, ignore_eos=True)
    plain, _ = raw_chat(sdk, messages=body["messages"], temperature=0, max_tokens=6, extra_body={"ignore_eos": True})
    status, _, events = stream_events(http, "/v1/chat/completions",
                                      dict(body, stream=True, stream_options={"include_usage": True}))
    assert status == 200, events
    chunks = strict_chat_chunks(events)
    last = chunks[-1]
    assert last["choices"] == [], last
    assert last["usage"]["completion_tokens"] == 6
    assert last["usage"]["prompt_tokens"] == plain.usage.prompt_tokens
    check_usage(last["usage"])
    for chunk in chunks[:-1]:
        assert "usage" in chunk and chunk["usage"] is None, chunk

    stream = sdk.completions.create(model=MODEL_SHORT_NAME, prompt=STORY_PROMPT, max_tokens=5, temperature=0,
                                    stream=True, stream_options={"include_usage": True},
                                    extra_body={"ignore_eos": True})
    chunks = list(stream)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    assert all(c.usage is None for c in chunks[:-1])


def test_cached_tokens_reported_for_a_repeated_system_prompt(sdk):
    nonce = uuid.uuid4().hex
    system = f"[{nonce}] You are a meticulous librarian. " + " ".join(
        f"Rule {i}: always answer politely, cite the shelf number, and never invent books." for i in range(20))
    first, _ = raw_chat(sdk, messages=[{"role": "system", "content": system},
                                       {"role": "user", "content": "Where are the atlases?"}], max_tokens=2)
    assert first.usage.prompt_tokens > 200
    first_cached = first.usage.prompt_tokens_details.cached_tokens
    second, _ = raw_chat(sdk, messages=[{"role": "system", "content": system},
                                        {"role": "user", "content": "Where are the dictionaries?"}], max_tokens=2)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached > first_cached
    assert second.usage.prompt_tokens // 2 < cached < second.usage.prompt_tokens, second.usage


# ---- metrics after requests

def test_metrics_count_tokens_and_successes(default_server, sdk):
    before = default_server.metrics()
    completion, _ = raw_completion(sdk, prompt=STORY_PROMPT, max_tokens=7, temperature=0,
                                   extra_body={"ignore_eos": True})
    after = default_server.metrics()
    assert after.value("vllm:prompt_tokens_total") - before.value("vllm:prompt_tokens_total") == \
        completion.usage.prompt_tokens
    assert after.value("vllm:generation_tokens_total") - before.value("vllm:generation_tokens_total") == 7
    assert after.value("vllm:request_success_total", finished_reason="length") - \
        before.value("vllm:request_success_total", finished_reason="length") == 1
    for name in ("vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
                 "vllm:request_queue_time_seconds", "vllm:inter_token_latency_seconds"):
        assert after.types.get(name) == "histogram", f"{name}: {after.types.get(name)}"
        assert after.value(name + "_count") > before.value(name + "_count"), name
    assert after.value("vllm:num_requests_running") == 0
    assert after.value("vllm:num_requests_waiting") == 0


def test_metrics_names_and_labels(default_server):
    metrics = default_server.metrics()
    expected = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                "vllm:gpu_cache_usage_perc", "vllm:cache_config_info", "vllm:prompt_tokens_total",
                "vllm:generation_tokens_total", "vllm:num_preemptions_total", "vllm:prefix_cache_queries_total",
                "vllm:prefix_cache_hits_total", "vllm:time_to_first_token_seconds_count",
                "vllm:e2e_request_latency_seconds_count", "vllm:request_success_total",
                "tempered:requests_rejected_total", "tempered:requests_aborted_total",
                "tempered:sampling_param_source_total", "tempered:kv_cache_dtype_info",
                "tempered:kv_blocks_in_use")
    missing = [name for name in expected if not metrics.has(name)]
    assert not missing, f"/metrics has no sample of {missing}"
    for name, labels, _ in metrics.samples:
        if name.startswith("vllm:"):
            assert labels.get("model_name") == MODEL_SHORT_NAME, (name, labels)
    for name, kind in metrics.types.items():
        if kind == "counter":
            assert name.endswith("_total"), f"counter {name} does not end in _total"
    info = metrics.find("vllm:cache_config_info")
    assert len(info) == 1
    block_size = int(info[0][0]["block_size"])
    assert int(info[0][0]["num_gpu_blocks"]) == 32768 // block_size
    assert metrics.value("vllm:prefix_cache_hits_total") <= metrics.value("vllm:prefix_cache_queries_total")
    assert 0 <= metrics.value("vllm:kv_cache_usage_perc") <= 1
