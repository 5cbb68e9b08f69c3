"""Errors of `tempered serve`: every 400 names its `param` in the OpenAI envelope; unknown models are 404
`model_not_found`; over-long prompts are `context_length_exceeded`; big bodies 413; a full queue 429 with
Retry-After; bad command-line values exit non-zero with a message naming the flag."""
import json
import subprocess
import threading

import openai
import pytest

from helpers import (CONTEXT_LENGTH, MODEL_SHORT_NAME, MODEL_STEM, VOCAB_SIZE, assert_error, chat_body,
                     completion_body, first_text_chunk, free_port, model_args, model_path, running_server,
                     tempered_bin, wait_for_metric)


@pytest.fixture(scope="module")
def http(default_server):
    client = default_server.client()
    yield client
    client.close()


def chat_with(**fields):
    return chat_body("Hi.", max_tokens=2, **fields)


# (overrides of a valid chat request, expected param)
CHAT_400 = [
    ({"temperature": 2.5}, "temperature"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"top_p": 1.5}, "top_p"),
    ({"top_k": -2}, "top_k"),
    ({"top_k": 1.5}, "top_k"),
    ({"min_p": 1.5}, "min_p"),
    ({"min_p": -0.5}, "min_p"),
    ({"presence_penalty": 2.5}, "presence_penalty"),
    ({"frequency_penalty": -2.5}, "frequency_penalty"),
    ({"repetition_penalty": 0}, "repetition_penalty"),
    ({"repetition_penalty": 2.5}, "repetition_penalty"),
    ({"n": 0}, "n"),
    ({"n": 17}, "n"),
    ({"max_tokens": -1}, "max_tokens"),
    ({"max_tokens": "many"}, "max_tokens"),
    ({"max_completion_tokens": -5}, "max_completion_tokens"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"stop": 7}, "stop"),
    ({"seed": "x"}, "seed"),
    ({"stream": "yes"}, "stream"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),  # without stream
    ({"logit_bias": {str(VOCAB_SIZE): 1}}, "logit_bias"),
    ({"logit_bias": {"-3": 1}}, "logit_bias"),
    ({"logit_bias": {"abc": 1}}, "logit_bias"),
    ({"logit_bias": {"100": 150}}, lambda p: isinstance(p, str) and p.startswith("logit_bias")),
    ({"logit_bias": {"100": -101}}, lambda p: isinstance(p, str) and p.startswith("logit_bias")),
    ({"messages": []}, "messages"),
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     lambda p: isinstance(p, str) and p.startswith("messages[0].content")),
    ({"model": 12}, "model"),
]


def case_id(case):
    overrides, param = case
    return "-".join(f"{k}={v}" for k, v in overrides.items())[:60]


@pytest.mark.parametrize("overrides,param", CHAT_400, ids=[case_id(c) for c in CHAT_400])
def test_chat_400_names_param(http, overrides, param):
    body = chat_with()
    body.update(overrides)
    error = assert_error(http.post("/v1/chat/completions", json=body), 400, param=param)
    assert error["type"] == "invalid_request_error", error


def test_missing_messages(http):
    body = chat_with()
    del body["messages"]
    assert_error(http.post("/v1/chat/completions", json=body), 400, param="messages")


COMPLETION_400 = [
    ({"prompt": None}, "prompt"),
    ({"prompt": 5}, "prompt"),
    ({"prompt": []}, "prompt"),
    ({"prompt": [1, VOCAB_SIZE]}, "prompt[1]"),
    ({"logprobs": 21}, "logprobs"),
    ({"logprobs": -1}, "logprobs"),
    ({"temperature": 3}, "temperature"),
    ({"n": 17}, "n"),
    ({"echo": "yes"}, "echo"),
    ({"echo": True, "logprobs": 1}, lambda p: p in ("echo", "logprobs")),
]


@pytest.mark.parametrize("overrides,param", COMPLETION_400, ids=[case_id(c) for c in COMPLETION_400])
def test_completion_400_names_param(http, overrides, param):
    body = completion_body(max_tokens=2)
    body.update(overrides)
    assert_error(http.post("/v1/completions", json=body), 400, param=param)


def test_sdk_sees_param_of_400(default_server):
    sdk = default_server.openai()
    with pytest.raises(openai.BadRequestError) as raised:
        sdk.chat.completions.create(model=MODEL_SHORT_NAME, messages=[{"role": "user", "content": "x"}],
                                    temperature=9)
    assert raised.value.param == "temperature"
    sdk.close()


@pytest.mark.parametrize("body", [b"{not json", b"", b'{"model": "x",}', b"[1, 2]", b'"a string"'],
                         ids=["garbage", "empty", "trailing-comma", "array", "string"])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_invalid_json_body(http, path, body):
    response = http.post(path, content=body, headers={"content-type": "application/json"})
    assert_error(response, 400)


@pytest.mark.parametrize("path,body", [("/v1/chat/completions", chat_with(model="gpt-17")),
                                       ("/v1/completions", completion_body(model="gpt-17", max_tokens=2))])
def test_unknown_model_is_404(http, path, body):
    error = assert_error(http.post(path, json=body), 404, code="model_not_found")
    assert "gpt-17" in error["message"]


def test_unknown_model_via_models_endpoint(http):
    assert_error(http.get("/v1/models/gpt-17"), 404, code="model_not_found")


def test_sdk_raises_not_found(default_server):
    sdk = default_server.openai()
    with pytest.raises(openai.NotFoundError) as raised:
        sdk.completions.create(model="gpt-17", prompt="x", max_tokens=1)
    assert raised.value.code == "model_not_found"
    sdk.close()


CONTEXT_MESSAGE = f"maximum context length is {CONTEXT_LENGTH} tokens"


def test_context_length_exceeded_chat(http):
    body = chat_body("hello " * 9000, max_tokens=4)
    assert_error(http.post("/v1/chat/completions", json=body), 400, code="context_length_exceeded",
                 message_contains=CONTEXT_MESSAGE)
    # The same in a stream: rejected before the stream starts.
    response = http.post("/v1/chat/completions", json=dict(body, stream=True))
    assert_error(response, 400, code="context_length_exceeded", message_contains=CONTEXT_MESSAGE)


def test_context_length_exceeded_completion_counts_max_tokens(http):
    # 8181 prompt tokens + 12 new ones is one over the context.
    prompt = [1000 + (i % 5000) for i in range(CONTEXT_LENGTH - 11)]
    assert_error(http.post("/v1/completions", json=completion_body(prompt, max_tokens=12)), 400,
                 code="context_length_exceeded", message_contains=CONTEXT_MESSAGE)
    # A short prompt with a max_tokens beyond the context.
    assert_error(http.post("/v1/completions", json=completion_body("Hi", max_tokens=CONTEXT_LENGTH + 10)), 400,
                 code="context_length_exceeded", message_contains=CONTEXT_MESSAGE)
    # The largest max_tokens int64 holds: prompt length + max_tokens must not wrap around past the check.
    assert_error(http.post("/v1/completions", json=completion_body("Hi", max_tokens=2**63 - 1)), 400,
                 code="context_length_exceeded", message_contains=CONTEXT_MESSAGE)
    # A prompt alone over the context, with no max_tokens.
    assert_error(http.post("/v1/completions", json=completion_body([1000] * (CONTEXT_LENGTH + 1))), 400,
                 code="context_length_exceeded", message_contains=CONTEXT_MESSAGE)


def test_server_still_serves_after_errors(http):
    response = http.post("/v1/chat/completions", json=chat_with())
    assert response.status_code == 200, response.text


# ---- 413: --max-body-bytes

@pytest.fixture(scope="module")
def small_body_server():
    with running_server(model_args() + ["--max-body-bytes", "4096"], name="small-body") as server:
        yield server


def test_body_over_limit_is_413(small_body_server):
    with small_body_server.client() as client:
        ok = client.post("/v1/completions", json=completion_body("Hi", max_tokens=1))
        assert ok.status_code == 200, ok.text
        big = completion_body("word " * 2000, max_tokens=1)  # about 10 KB
        assert_error(client.post("/v1/completions", json=big), 413)
        again = client.post("/v1/completions", json=completion_body("Hi", max_tokens=1))
        assert again.status_code == 200, again.text


# ---- 429: --max-running 1 --max-queued 1

@pytest.fixture(scope="module")
def tiny_queue_server():
    with running_server(model_args() + ["--max-running", "1", "--max-queued", "1"], name="tiny-queue") as server:
        yield server


def test_full_queue_is_429_with_retry_after(tiny_queue_server):
    server = tiny_queue_server
    long_body = completion_body("Once upon a time", max_tokens=1024, ignore_eos=True, stream=True)
    statuses = {}
    release = threading.Event()

    def long_stream(key, started):
        with server.client() as client, client.stream("POST", "/v1/completions", json=long_body) as response:
            statuses[key] = response.status_code
            lines = response.iter_lines()  # held until release: dropping it would close the connection
            if key == "running" and response.status_code == 200:
                assert first_text_chunk(lines)
            started.set()
            release.wait(120)
        # Leaving the blocks disconnects: the server aborts the request.

    running_started, queued_started = threading.Event(), threading.Event()
    running = threading.Thread(target=long_stream, args=("running", running_started))
    queued = threading.Thread(target=long_stream, args=("queued", queued_started))
    try:
        running.start()
        assert running_started.wait(60), "the first request did not start"
        assert statuses["running"] == 200
        assert wait_for_metric(server, "vllm:num_requests_running", lambda v: v == 1) == 1
        queued.start()
        assert wait_for_metric(server, "vllm:num_requests_waiting", lambda v: v == 1) == 1, \
            "the second request should wait while max-running is 1"

        rejected_before = server.metrics().value("tempered:requests_rejected_total")
        with server.client() as client:
            for path, body in (("/v1/completions", completion_body("Hi", max_tokens=2)),
                               ("/v1/chat/completions", chat_with()),
                               ("/v1/chat/completions", chat_with(stream=True))):
                response = client.post(path, json=body)
                assert_error(response, 429)
                retry_after = response.headers.get("retry-after")
                assert retry_after is not None and retry_after.strip().isdigit(), response.headers
        assert server.metrics().value("tempered:requests_rejected_total") - rejected_before == 3
    finally:
        release.set()
        running.join(120)
        queued.join(120)
    assert statuses.get("queued") == 200, statuses
    assert wait_for_metric(server, "vllm:num_requests_running", lambda v: v == 0, timeout=10) == 0
    assert wait_for_metric(server, "vllm:num_requests_waiting", lambda v: v == 0, timeout=10) == 0
    with server.client() as client:
        response = client.post("/v1/completions", json=completion_body("Hi", max_tokens=2))
        assert response.status_code == 200, "the server did not recover after the queue drained"


# ---- the served model's name

def test_default_served_name_is_the_file_stem():
    with running_server(["--model", str(model_path())], name="stem-name") as server, server.client() as client:
        models = client.get("/v1/models").json()
        assert [m["id"] for m in models["data"]] == [MODEL_STEM]
        ok = client.post("/v1/completions", json=completion_body("Hi", model=MODEL_STEM, max_tokens=1))
        assert ok.status_code == 200, ok.text
        assert ok.json()["model"] == MODEL_STEM
        assert_error(client.post("/v1/completions", json=completion_body("Hi", model="other", max_tokens=1)), 404,
                     code="model_not_found")


# ---- bad flag values

BAD_FLAGS = [
    ["--kv-cache-dtype", "f8"],
    ["--sampling-defaults", "sometimes"],
    ["--log-format", "xml"],
    ["--max-running", "abc"],
    ["--kv-cache-tokens", "-5"],
    ["--port", "99999"],
    ["--preferred-sampling-params", "{not json"],
    ["--preferred-sampling-params", '{"temperature": 5}'],
    ["--sampling-policy", '{"temperature": {"greedy": "sometimes"}}'],
    ["--generation-config", "/nonexistent/generation_config.json"],
    ["--config", "/nonexistent/tempered.json"],
]


@pytest.mark.parametrize("flag", BAD_FLAGS, ids=[" ".join(f) for f in BAD_FLAGS])
def test_bad_flag_value_exits_nonzero(flag):
    args = [str(tempered_bin()), "serve", "--model", str(model_path()), "--host", "127.0.0.1"]
    if flag[0] != "--port":
        args += ["--port", str(free_port())]
    process = subprocess.Popen(args + flag, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"{flag} was accepted: the server kept running")
    assert process.returncode > 0, f"exit status {process.returncode}\n{stderr}"
    name = flag[0].lstrip("-")  # "--sampling-policy" may be named as is or as "sampling policy"
    assert name in stderr or name.replace("-", " ") in stderr.lower() or flag[1] in stderr, (
        f"the message does not name {flag}:\n{stderr}")


# ---- --served-model-name and --log-format json

def test_served_model_name_and_json_log():
    args = ["--model", str(model_path()), "--served-model-name", "custom-name", "--log-format", "json"]
    with running_server(args, name="json-log") as server, server.client() as client:
        assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["custom-name"]
        ok = client.post("/v1/completions", json=completion_body("Hi", model="custom-name", max_tokens=1),
                         headers={"X-Request-Id": "json-log-req"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["model"] == "custom-name"
        assert_error(client.post("/v1/completions", json=completion_body("Hi", max_tokens=1)), 404,
                     code="model_not_found")
    lines = [line for line in server.log().splitlines() if line.strip()]
    assert lines, "no log lines"
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            pytest.fail(f"--log-format json wrote a line that is not JSON: {line!r}")
        assert isinstance(entry, dict), line
