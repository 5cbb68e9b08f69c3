"""The request log (one line per finished request, here as --log-format json) says the same for both
generation endpoints, streamed or whole, and tells the truth about requests the client abandons."""
import json
import time

import pytest

from helpers import chat_body, completion_body

LOG_WAIT_S = 10
# Every generation request's line has these, whatever the endpoint.
LOG_FIELDS = {"id", "endpoint", "outcome", "prompt_tokens", "cached_tokens", "completion_tokens", "ttft_s",
              "total_s", "sampling", "time"}
ENDPOINTS = {"chat": ("/v1/chat/completions", chat_body), "completions": ("/v1/completions", completion_body)}


@pytest.fixture(scope="module")
def server_args():
    return ["--log-format", "json"]


def log_entry(server, request_id):
    """The request-log line with this id, waiting for it to be written."""
    deadline = time.monotonic() + LOG_WAIT_S
    while True:
        for line in server.log().splitlines():
            if request_id in line:
                entry = json.loads(line)
                if entry.get("id") == request_id:
                    return entry
        assert time.monotonic() < deadline, f"no request-log line for {request_id}\n{server.log_tail()}"
        time.sleep(0.1)


def prompt_token_count(server, endpoint, body):
    if endpoint == "completions":
        return server.post("/tokenize", {"prompt": body["prompt"]}).json()["count"]
    return None  # the chat prompt is the rendered template: more tokens than the message alone


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_abandoned_stream_logs_its_prompt_and_streamed_tokens(server, endpoint):
    path, make_body = ENDPOINTS[endpoint]
    body = make_body("Tell a very long story about a dragon.", max_tokens=400, ignore_eos=True, stream=True)
    request_id = f"abandoned-{endpoint}"
    received = 0
    with server.client() as client, client.stream("POST", path, json=body,
                                                  headers={"X-Request-Id": request_id}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():  # leaving the block mid-stream closes the connection
            if not line.startswith("data: "):
                continue
            choice = json.loads(line[len("data: "):])["choices"][0]
            if choice.get("delta", {}).get("content") or choice.get("text"):
                received += 1
                if received == 4:
                    break
    entry = log_entry(server, request_id)
    assert entry["endpoint"] == endpoint and entry["outcome"] == "aborted", entry
    expected_prompt = prompt_token_count(server, endpoint, body)
    assert entry["prompt_tokens"] > 0, entry
    if expected_prompt is not None:
        assert entry["prompt_tokens"] == expected_prompt, entry
    assert entry["completion_tokens"] >= received, entry
    assert entry["ttft_s"] > 0, entry
    assert set(entry) == LOG_FIELDS, entry


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_finished_requests_log_the_same_fields_with_ttft(server, endpoint, stream):
    path, make_body = ENDPOINTS[endpoint]
    request_id = f"finished-{endpoint}-{'stream' if stream else 'whole'}"
    body = make_body("Count to three.", max_tokens=5, ignore_eos=True, stream=stream, temperature=0)
    response = server.post(path, body, headers={"X-Request-Id": request_id})
    assert response.status_code == 200, response.text
    entry = log_entry(server, request_id)
    assert set(entry) == LOG_FIELDS, entry
    assert entry["endpoint"] == endpoint and entry["outcome"] == "length", entry
    assert entry["completion_tokens"] == 5, entry
    assert 0 < entry["ttft_s"] <= entry["total_s"], entry
    expected_prompt = prompt_token_count(server, endpoint, body)
    if expected_prompt is not None:
        assert entry["prompt_tokens"] == expected_prompt, entry
