"""Per-request limits of `tempered serve`: numbers no double holds are 400s naming their field (not 500s);
--max-tokens-limit, --max-prompt-tokens and --max-request-tokens are 400s naming the field that broke them;
--request-timeout cancels a request that runs too long, queued or decoding, streamed or whole, with a 408
(or an SSE error event), frees its KV and counts it. One server runs every test here."""
import json
import threading
import time

import pytest

from helpers import assert_error, chat_body, completion_body, read_sse, wait_for_metric

TIMEOUT_S = 1
MAX_TOKENS_LIMIT = 4000
MAX_PROMPT_TOKENS = 200
MAX_REQUEST_TOKENS = 6000


@pytest.fixture(scope="module")
def server_args():
    return ["--max-tokens-limit", str(MAX_TOKENS_LIMIT), "--max-prompt-tokens", str(MAX_PROMPT_TOKENS),
            "--max-request-tokens", str(MAX_REQUEST_TOKENS), "--request-timeout", str(TIMEOUT_S),
            "--max-running", "1"]


def post_raw(server, path, text):
    return server.post(path, content=text, headers={"Content-Type": "application/json"})


CHAT = '{"messages":[{"role":"user","content":"Hi."}],"max_tokens":2,'
COMPLETION = '{"prompt":"Hi.","max_tokens":2,'
# (the rest of a body, the param its 400 must name)
OVERFLOWS = [
    ('"temperature":1e309}', "temperature"),
    ('"top_p":-1e309}', "top_p"),
    ('"seed":1e400}', "seed"),
    ('"frequency_penalty":1E+999}', "frequency_penalty"),
    ('"logit_bias":{"42":1e309}}', "logit_bias.42"),
    ('"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"number",'
     '"maximum":1e309}}}}', "response_format.json_schema.schema.maximum"),
    ('"seed":18446744073709551616}', "seed"),  # 2^64: an integer, past int64
    ('"n":1e19}', "n"),
]


@pytest.mark.parametrize("rest,param", OVERFLOWS)
def test_numbers_too_large_are_400_naming_the_field(server, rest, param):
    for path, start in (("/v1/chat/completions", CHAT), ("/v1/completions", COMPLETION)):
        assert_error(post_raw(server, path, start + rest), 400, param=param, code="invalid_value")


def test_numbers_too_large_elsewhere(server):
    tools = ('"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",'
             '"properties":{"x":{"type":"integer","minimum":-1e400}}}}}]}')
    assert_error(post_raw(server, "/v1/chat/completions", CHAT + tools), 400,
                 param="tools[0].function.parameters.properties.x.minimum")
    assert_error(post_raw(server, "/v1/completions", '{"prompt":[[1,2],[3,1e309]]}'), 400, param="prompt[1][1]")
    assert_error(post_raw(server, "/tokenize", '{"prompt":"x","add_special_tokens":1e309}'), 400,
                 param="add_special_tokens")
    assert_error(post_raw(server, "/detokenize", '{"tokens":[1,-1e309]}'), 400, param="tokens[1]")
    # Negative zero is a number like any other.
    ok = post_raw(server, "/v1/chat/completions", CHAT + '"temperature":-0.0}')
    assert ok.status_code == 200, ok.text


def test_max_tokens_limit(server):
    assert_error(server.post("/v1/chat/completions", chat_body(max_tokens=MAX_TOKENS_LIMIT + 1)), 400,
                 param="max_tokens", code="invalid_value", message_contains="--max-tokens-limit")
    assert_error(server.post("/v1/chat/completions", chat_body(max_completion_tokens=MAX_TOKENS_LIMIT + 1)), 400,
                 param="max_completion_tokens")
    assert_error(server.post("/v1/completions", completion_body(max_tokens=MAX_TOKENS_LIMIT + 1)), 400,
                 param="max_tokens")


def test_max_prompt_tokens(server):
    long_text = "one two three four five six seven eight nine ten " * 30  # ~300 tokens
    assert_error(server.post("/v1/chat/completions", chat_body(long_text, max_tokens=2)), 400, param="messages",
                 code="context_length_exceeded", message_contains="--max-prompt-tokens")
    assert_error(server.post("/v1/completions", completion_body(["Hi.", long_text], max_tokens=2)), 400,
                 param="prompt[1]", code="context_length_exceeded")


def test_choices_times_max_tokens_is_bounded(server):
    assert_error(server.post("/v1/chat/completions", chat_body(n=2, max_tokens=MAX_REQUEST_TOKENS // 2 + 1)), 400,
                 param="n", message_contains="--max-request-tokens")
    assert_error(server.post("/v1/completions", completion_body(["a", "b"], max_tokens=MAX_REQUEST_TOKENS // 2 + 1)),
                 400, param="prompt")
    within = server.post("/v1/chat/completions", chat_body("Hi.", n=2, max_tokens=3))
    assert within.status_code == 200, within.text


def long_request(server, stream, results, name):
    """A request that would decode for far longer than the timeout; records (seconds, outcome)."""
    body = chat_body("Tell a very long story.", max_tokens=MAX_TOKENS_LIMIT, ignore_eos=True, stream=stream)
    path = "/v1/chat/completions"
    if name == "completions":
        body = completion_body("Once upon a time", max_tokens=MAX_TOKENS_LIMIT, ignore_eos=True, stream=stream)
        path = "/v1/completions"
    start = time.monotonic()
    with server.client() as client:
        with client.stream("POST", path, json=body) as response:
            if stream:
                assert response.status_code == 200
                events = read_sse(response)
                results[name] = (time.monotonic() - start, response.status_code, events)
            else:
                response.read()
                results[name] = (time.monotonic() - start, response.status_code, response.json())
                results[name + " retry"] = response.headers.get("x-should-retry")


def test_request_timeout_cancels_and_frees(server):
    before = server.metrics().value("tempered:request_timeouts_total")
    results = {}
    # --max-running 1: whichever the engine takes second waits in the queue until it times out.
    threads = [threading.Thread(target=long_request, args=(server, True, results, "chat")),
               threading.Thread(target=long_request, args=(server, False, results, "completions"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert {"chat", "completions"} <= set(results), results

    seconds, status, events = results["chat"]
    assert TIMEOUT_S - 0.1 < seconds < TIMEOUT_S + 1, seconds
    assert events[-1] == "[DONE]", events[-3:]
    error = events[-2]["error"]
    assert error["code"] == "request_timeout" and error["type"] == "timeout_error", error

    seconds, status, body = results["completions"]
    assert TIMEOUT_S - 0.1 < seconds < TIMEOUT_S + 1, seconds
    assert status == 408, body
    assert body["error"]["code"] == "request_timeout" and "--request-timeout" in body["error"]["message"], body
    # The SDKs would otherwise retry a 408, running the whole timeout twice more.
    assert results["completions retry"] == "false"

    assert wait_for_metric(server, "tempered:request_timeouts_total", lambda v: v >= before + 2) == before + 2
    for gauge in ("vllm:num_requests_running", "vllm:num_requests_waiting", "tempered:kv_blocks_in_use"):
        assert wait_for_metric(server, gauge, lambda v: v == 0) == 0, gauge
    log = server.log()
    assert log.count("outcome=timeout") >= 2, log[-3000:]

    after = server.post("/v1/chat/completions", chat_body("Hi.", max_tokens=3))
    assert after.status_code == 200, after.text
    assert after.json()["choices"][0]["message"]["content"] is not None
