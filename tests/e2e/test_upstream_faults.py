"""Upstream mode's faults: what the front answers when the upstream misbehaves. A real engine does not send
malformed events or stall on purpose, so the upstream here is a small HTTP server written for the test, whose
/v1/completions answers as FAULT says; the front is the real tempered binary over the real SmolLM2 tokenizer.

Each fault ends in a clear answer (502, or the upstream's own 4xx; in a stream an error event and [DONE]), is
counted by outcome, and leaves nothing running on the front."""
import http.server
import json
import threading
import time

import pytest

from helpers import assert_error, chat_body, completion_body, model_args, parse_sse_lines, running_server

# One chunk as an OpenAI-compatible engine streams it, without token ids: the front tokenizes the text.
GOOD_CHUNK = {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": " Paris",
                                                                         "finish_reason": None}]}
STALL_S = 4
# A chat engine's streamed calls (passthrough): one to a tool the request did not declare, one declared and valid.
CHAT_CALL_CHUNKS = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "send_email", "arguments": ""}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"to\": "}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"bob\"}"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 1, "id": "call_b", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}},
]  # longer than the front's --upstream-timeout below


class FakeUpstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fault = "malformed"
    token_ids = []  # "ignores_grammar": the ids it answers with, whatever grammar it was sent
    bodies = []
    authorizations = []

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    def event(self, payload):
        self.wfile.write(b"data: " + payload + b"\n\n")
        self.wfile.flush()

    def do_POST(self):
        FakeUpstream.bodies.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))))
        FakeUpstream.authorizations.append(self.headers.get("Authorization"))
        fault = FakeUpstream.fault
        if fault == "rate_limited":
            return self.reply(429, {"error": {"message": "slow down", "type": "rate_limit_error"}},
                              [("Retry-After", "7")])
        if fault == "server_error":
            return self.reply(500, {"error": {"message": "CUDA out of memory", "type": "internal_error"}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        if fault == "chat_tool_calls":
            for chunk in CHAT_CALL_CHUNKS:
                self.event(json.dumps(chunk).encode())
            self.event(b"[DONE]")
            return
        if fault == "ignores_grammar":
            chunk = {"choices": [{"index": 0, "text": " Paris", "token_ids": FakeUpstream.token_ids,
                                  "finish_reason": "stop"}]}
            self.event(json.dumps(chunk).encode())
            self.event(b"[DONE]")
            return
        self.event(json.dumps(GOOD_CHUNK).encode())
        if fault == "malformed":
            self.event(b'{"choices": [{"index": 0, "text": "unterminated')
        elif fault == "foreign_token":  # an id past SmolLM2's 49,152 tokens: another model's, or nonsense
            self.event(b'{"choices": [{"index": 0, "text": "x", "token_ids": [4000000]}]}')
        elif fault == "stall":
            time.sleep(STALL_S)
        # "truncated": the connection closes with no finish_reason and no [DONE]
        self.close_connection = True


@pytest.fixture(scope="module")
def fake_upstream():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeUpstream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def front(fake_upstream):
    with running_server(model_args() + ["--upstream", fake_upstream, "--upstream-timeout", "1",
                                        "--upstream-kind", "openai"],
                        name="front-faults") as server:
        yield server


FAULTS = [("malformed", "malformed", "not JSON"), ("foreign_token", "malformed", "outside the model's vocabulary"),
          ("truncated", "broken", "ended its stream"),
          ("stall", "broken", "stopped answering"), ("server_error", "failed", "CUDA out of memory")]


@pytest.mark.parametrize("fault,outcome,message", FAULTS)
def test_a_broken_upstream_is_a_502_counted_by_outcome(front, fault, outcome, message):
    FakeUpstream.fault = fault
    before = front.metrics().value("tempered:upstream_requests_total", outcome=outcome)
    response = front.post("/v1/chat/completions", chat_body(max_tokens=8))
    assert_error(response, 502, message_contains=message)
    metrics = front.metrics()
    assert metrics.value("tempered:upstream_requests_total", outcome=outcome) == before + 1
    assert metrics.require("tempered:upstream_requests_running") == 0
    assert metrics.require("vllm:num_requests_running") == 0


@pytest.mark.parametrize("fault,message", [("malformed", "not JSON"), ("stall", "stopped answering")])
def test_a_broken_stream_ends_in_an_error_event_then_done(front, fault, message):
    FakeUpstream.fault = fault
    with front.client() as client:
        with client.stream("POST", "/v1/completions", json=completion_body(max_tokens=8, stream=True)) as response:
            assert response.status_code == 200
            events = parse_sse_lines(response.iter_lines())
    assert events[-1] == "[DONE]"
    errors = [event for event in events[:-1] if isinstance(event, dict) and "error" in event]
    assert len(errors) == 1 and message in errors[0]["error"]["message"], events
    texts = [c["text"] for event in events[:-1] if isinstance(event, dict) for c in event.get("choices", [])]
    assert "".join(texts) == " Paris"  # what arrived before the fault still reached the client
    assert front.metrics().require("tempered:upstream_requests_running") == 0


def test_an_upstream_429_keeps_its_retry_after(front):
    FakeUpstream.fault = "rate_limited"
    response = front.post("/v1/completions", completion_body(max_tokens=4))
    assert_error(response, 429, message_contains="slow down")
    assert response.headers["Retry-After"] == "7"
    assert front.metrics().require("tempered:upstream_requests_total", outcome="rejected") >= 1


def test_an_upstream_that_ignores_the_grammar_is_caught_on_the_front(fake_upstream):
    """The front sends its grammar (here to a 'tempered' kind: structured_outputs.grammar) and checks every token
    that comes back against its own copy: prose where JSON was required is a 502, never an answer."""
    with running_server(model_args() + ["--upstream", fake_upstream, "--upstream-kind", "tempered"],
                        name="front-grammar") as front:
        FakeUpstream.fault = "ignores_grammar"
        FakeUpstream.token_ids = front.post("/tokenize", {"prompt": " Paris", "add_special_tokens": False}).json()["tokens"]
        FakeUpstream.bodies.clear()
        response = front.post("/v1/chat/completions", chat_body(max_tokens=8, response_format={"type": "json_object"}))
        assert_error(response, 502, message_contains="outside the grammar")
        assert "root ::=" in FakeUpstream.bodies[-1]["structured_outputs"]["grammar"]
        assert front.metrics().value("tempered:upstream_requests_total", outcome="malformed") == 1
        assert front.metrics().require("tempered:upstream_requests_running") == 0


def test_passthrough_checks_the_upstreams_tool_calls_as_under_flag(fake_upstream, tmp_path):
    """Passthrough: the upstream parses the calls; the front still returns only declared, valid ones and reports
    the rest, with the upstream's usage."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    key_file = tmp_path / "upstream.key"
    key_file.write_text("sk-upstream-secret\n")
    with running_server(model_args() + ["--upstream", fake_upstream, "--upstream-kind", "openai", "--upstream-chat",
                                        "--upstream-api-key-file", str(key_file)],
                        name="front-passthrough-calls") as front:
        FakeUpstream.fault = "chat_tool_calls"
        FakeUpstream.bodies.clear()
        response = front.post("/v1/chat/completions", chat_body("Weather in Oslo, and mail Bob.", tools=tools))
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in choice["message"]["tool_calls"]] == [("get_weather", {"city": "Oslo"})]
        assert [v["name"] for v in choice["tool_call_violations"]] == ["send_email"]
        assert choice["finish_reason"] == "tool_calls"
        assert response.json()["usage"]["prompt_tokens"] == 42
        sent = FakeUpstream.bodies[-1]
        assert sent["tools"] == tools and sent["messages"][0]["content"] == "Weather in Oslo, and mail Bob."
        assert sent["temperature"] == response.json()["sampling"]["temperature"]["value"]
        assert "max_tokens" not in sent  # the request set none: the upstream's own default, not a guess here
        assert FakeUpstream.authorizations[-1] == "Bearer sk-upstream-secret"  # --upstream-api-key-file
        assert "sk-upstream-secret" not in front.log()
