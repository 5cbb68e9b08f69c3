"""Upstream mode (`tempered serve --upstream URL`), rendered: the front renders the chat template, tokenizes, and
drives another engine's /v1/completions with the prompt as token ids and every sampling value explicit; the ids
that come back go through the front's own output stages (detokenizer, stop strings, tool calls, loop guard).

The upstream here is a second tempered started with --sampling-defaults openai (an engine that ignores the model's
defaults, so only what the front sends decides). The front's answers must equal a local tempered's token for
token, greedy and seeded, chat and completions, streamed and whole, n=2; a request that omits temperature reaches
the upstream with the front's value (the upstream's own counter says source `request`); what the front cannot do
over another engine's stream is a 400 naming the field; an unreachable upstream is a 503."""
import http.server
import os
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from helpers import (MODEL_SHORT_NAME, assert_error, chat_body, completion_body, finish_reasons, first_text_chunk,
                     model_args, model_path, running_server, stream_events, stream_text, wait_for_metric)

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


@pytest.mark.parametrize("fields", [{"temperature": 0}, {"temperature": 0.9, "seed": 11, "n": 2}],
                         ids=["greedy", "seeded-n2"])
def test_logprobs_equal_locals(front, default_server, fields):
    """The upstream's logprobs, named by id (return_tokens_as_token_ids), rendered by the front."""
    chat = chat_body(PROMPTS[1], max_tokens=24, logprobs=True, top_logprobs=3, **fields)
    completion = completion_body(PROMPTS[2], max_tokens=24, logprobs=2, echo=False, **fields)
    for path, body in (("/v1/chat/completions", chat), ("/v1/completions", completion)):
        through, local = front.post(path, body), default_server.post(path, body)
        assert through.status_code == 200, through.text
        assert [c["logprobs"] for c in through.json()["choices"]] == [c["logprobs"] for c in local.json()["choices"]]
    with front.client() as client:
        status, _, events = stream_events(client, "/v1/completions", dict(completion, stream=True))
    assert status == 200
    streamed = [value for event in events if event != "[DONE]" for choice in event["choices"] if choice["index"] == 0
                for value in (choice.get("logprobs") or {}).get("token_logprobs", [])]
    assert streamed == local.json()["choices"][0]["logprobs"]["token_logprobs"]


def streamed_chat(server, body):
    """A streamed chat answer: its text and its finish reasons."""
    with server.client() as client:
        status, _, events = stream_events(client, "/v1/chat/completions", body)
    assert status == 200
    return stream_text(events), finish_reasons(events)


def test_streamed_chat_equals_local(front, default_server):
    body = chat_body(PROMPTS[0], max_tokens=40, temperature=0.8, seed=3, stream=True)
    assert streamed_chat(front, body) == streamed_chat(default_server, body)


def test_an_omitted_temperature_reaches_the_upstream_as_a_request_value(front, upstream):
    before = upstream.metrics().value("tempered:sampling_param_source_total", param="temperature", source="request")
    response = front.post("/v1/chat/completions", chat_body(max_tokens=4))
    assert response.status_code == 200, response.text
    assert response.json()["sampling"]["temperature"]["source"] != "request"  # the front filled it in
    after = upstream.metrics().value("tempered:sampling_param_source_total", param="temperature", source="request")
    assert after == (before or 0) + 1


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
          "required": ["city", "population"]}
FORMATS = [{"type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMA}}, {"type": "json_object"}]


@pytest.mark.parametrize("response_format", FORMATS, ids=["json_schema", "json_object"])
def test_response_format_goes_upstream_as_a_grammar_and_equals_local(front, upstream, default_server,
                                                                     response_format):
    """The front writes its grammar as GBNF into structured_outputs; the upstream applies it (its own count of
    grammar requests rises) and the answer is local tempered's, token for token, greedy and seeded n=2."""
    for fields in ({"temperature": 0}, {"temperature": 0.9, "seed": 4, "n": 2}):
        body = chat_body("Describe Paris as JSON.", max_tokens=48, response_format=response_format, **fields)
        before = upstream.metrics().value("tempered:structured_requests_total", kind="grammar") or 0
        through_front = answer(front, "/v1/chat/completions", body)
        assert upstream.metrics().value("tempered:structured_requests_total", kind="grammar") == before + 1
        assert through_front == answer(default_server, "/v1/chat/completions", body)
        stream = dict(body, stream=True, n=1)
        text, reasons = streamed_chat(front, stream)
        assert [(text, reasons[0])] == answer(default_server, "/v1/chat/completions", stream | {"stream": False})[0]


def test_an_upstream_without_grammars_refuses_response_format_naming_it(upstream):
    with running_server(model_args() + ["--upstream", upstream.base_url, "--upstream-kind", "openai"],
                        name="front-openai") as front:
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


def upstream_outcomes(front):
    metrics = front.metrics()
    return {outcome: metrics.require("tempered:upstream_requests_total", outcome=outcome)
            for outcome in ("completed", "ended_on_front", "cancelled", "unreachable")}


def test_a_client_that_leaves_ends_the_upstream_request_within_a_second(front, upstream):
    before = upstream_outcomes(front)
    body = completion_body(max_tokens=2000, ignore_eos=True, stream=True)
    with front.client() as client:
        with client.stream("POST", "/v1/completions", json=body) as response:
            assert response.status_code == 200
            lines = response.iter_lines()  # kept: a dropped half-read iterator closes the stream (helpers.py)
            assert first_text_chunk(lines)
            # The upstream publishes its gauges after each step, just after the token went out.
            assert wait_for_metric(upstream, "vllm:num_requests_running", lambda running: running == 1, timeout=2) == 1
    left = time.monotonic()
    while upstream_running(upstream) != 0:
        assert time.monotonic() - left < 1.0, "the upstream still generates for a client that left"
        time.sleep(0.02)
    assert front.metrics().value("vllm:num_requests_running") == 0
    after = upstream_outcomes(front)
    assert after["cancelled"] == before["cancelled"] + 1
    assert front.metrics().require("tempered:upstream_requests_running") == 0


def test_a_stop_string_on_the_front_ends_the_upstream_request(front, upstream):
    before = upstream_outcomes(front)
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
    assert upstream_outcomes(front)["ended_on_front"] == before["ended_on_front"] + 1


def test_upstream_requests_are_counted_by_outcome_and_timed(front):
    before = front.metrics()
    assert front.post("/v1/completions", completion_body(max_tokens=3)).status_code == 200
    after = front.metrics()
    moved = {name: after.value(name, **labels) - before.value(name, **labels) for name, labels in (
        ("tempered:upstream_requests_total", {"outcome": "completed"}),
        ("tempered:upstream_request_seconds_count", {}), ("tempered:upstream_first_token_seconds_count", {}))}
    assert moved == {"tempered:upstream_requests_total": 1, "tempered:upstream_request_seconds_count": 1,
                     "tempered:upstream_first_token_seconds_count": 1}
    assert after.require("tempered:upstream_requests_running") == 0


def mapped_kib(pid, path):
    """Resident KiB of the process's mappings of `path` (/proc/PID/smaps)."""
    total, inside = 0, False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
                inside = len(fields) >= 6 and os.path.realpath(fields[5]) == path
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_the_front_reads_the_tokenizer_and_template_not_the_weights(front, upstream):
    gguf = os.path.realpath(model_path())
    file_kib = os.path.getsize(gguf) / 1024
    assert front.post("/v1/completions", completion_body(max_tokens=2)).status_code == 200
    front_kib, upstream_kib = mapped_kib(front.process.pid, gguf), mapped_kib(upstream.process.pid, gguf)
    # The header (metadata, vocabulary, merges) is a few percent of the file; the weights are the rest.
    assert front_kib < 0.1 * file_kib, (front_kib, file_kib)
    assert upstream_kib > 0.5 * file_kib, (upstream_kib, file_kib)
    assert "loading the tokenizer and chat template of" in front.log()


def test_ready_says_whether_the_upstream_answers(front):
    assert front.get("/ready").json() == {"status": "ready"}
    with running_server(model_args() + ["--upstream", "http://127.0.0.1:9", "--upstream-model", "m"],
                        name="front-dead-ready") as dead:
        assert dead.get("/health").status_code == 200  # liveness: the front itself is up
        response = dead.get("/ready")
        assert response.status_code == 503
        assert response.json()["status"] == "unavailable" and "127.0.0.1:9" in response.json()["reason"]
        assert_error(dead.post("/v1/completions", completion_body(max_tokens=2)), 503)
        metrics = dead.metrics()
        assert metrics.require("tempered:upstream_requests_total", outcome="unreachable") == 1
        assert metrics.require("tempered:upstream_requests_running") == 0


def test_disaggregation_is_the_upstreams_not_the_fronts(upstream):
    from helpers import Server
    server = Server(model_args() + ["--upstream", upstream.base_url, "--disaggregation-mode", "prefill"],
                    name="front-disagg")
    assert server.wait_exit() == 1
    assert "--disaggregation-mode needs our own engine" in server.log()


KEYS = {"alice": "sk-upstream-alice-1", "bob": "sk-upstream-bob-2"}


def test_named_keys_and_a_greedy_client_are_told_apart_at_the_front(upstream, tmp_path):
    key_file = tmp_path / "keys"
    key_file.write_text("".join(f"{name} {key}\n" for name, key in KEYS.items()))
    args = model_args() + ["--upstream", upstream.base_url, "--api-key-file", str(key_file)]
    with running_server(args, name="front-keys") as keyed:
        for name, temperature in (("bob", 0), ("alice", 0.7), ("alice", 0.7)):
            response = keyed.post("/v1/chat/completions", chat_body(max_tokens=2, temperature=temperature),
                                  headers={"Authorization": f"Bearer {KEYS[name]}"})
            assert response.status_code == 200, response.text
        assert_error(keyed.post("/v1/chat/completions", chat_body(max_tokens=2)), 401)
        metrics = keyed.metrics()
        assert metrics.value("tempered:greedy_requests_total", client="bob") == 1
        assert metrics.value("tempered:greedy_requests_total", client="alice") == 0
        assert metrics.value("tempered:sampling_param_source_total", param="temperature", source="request",
                             client="alice") == 2
        assert metrics.require("tempered:upstream_requests_total", outcome="completed") == 3
        assert KEYS["alice"] not in keyed.log() and KEYS["bob"] not in keyed.log()


# ---- The loop guard over the upstream's draw: SmolLM2 greedy on "What is the capital of France?" loops
# ("la Femme, la Femme, ..."; tests/e2e/test_degeneration_guard.py shows it locally).
LOOP_QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def loop_answer(server, **extra):
    body = {"messages": LOOP_QUESTION, "temperature": 0, "max_tokens": 200, **extra}
    response = server.post("/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_guard_flags_and_stops_the_upstreams_loop(front, upstream, default_server):
    flagged = loop_answer(front)
    assert flagged["choices"][0]["degeneration"] == loop_answer(default_server)["choices"][0]["degeneration"]
    assert flagged["choices"][0]["finish_reason"] == "length"
    stopped = loop_answer(front, repetition_detection={"max_pattern_size": 8, "min_count": 4})
    choice = stopped["choices"][0]
    assert choice["finish_reason"] == "repetition" and choice["degeneration"]["action"] == "stop"
    assert stopped["usage"]["completion_tokens"] < 64
    left = time.monotonic()
    while upstream_running(upstream) != 0:  # the upstream's slot is free again
        assert time.monotonic() - left < 1.0
        time.sleep(0.02)


def test_resample_continues_upstream_with_the_fallback_sampling(upstream):
    args = model_args() + ["--upstream", upstream.base_url, "--degeneration-guard", "resample"]
    with running_server(args, name="front-resample") as front:
        before = upstream.metrics()
        body = loop_answer(front, seed=11)
        choice = body["choices"][0]
        degeneration = choice["degeneration"]
        assert degeneration["action"] == "resample"
        assert degeneration["sampling"]["temperature"] == {"value": 0.7, "source": "guard",
                                                           "replaced": {"value": 0.0, "source": "request"}}
        assert body["sampling"]["temperature"]["source"] == "guard"
        # The first request went up to the loop and was cut there (an abort upstream); a continuation drew the
        # rest with the fallback sampling, up to max_tokens.
        after = upstream.metrics()
        ended = {reason: after.value("vllm:request_success_total", finished_reason=reason) -
                 before.value("vllm:request_success_total", finished_reason=reason) for reason in ("abort", "length")}
        assert ended == {"abort": 1, "length": 1}
        assert body["usage"]["completion_tokens"] >= degeneration["detected_at_token"] + 40
        tail = choice["message"]["content"][-300:]
        assert "la Femme, la Femme, la Femme" not in tail, tail


# ---- The upstream's kind: what it takes (src/upstream/upstream_kind.h's table)

def test_auto_detects_a_tempered_upstream(front):
    assert ", kind tempered (detected)" in front.log()


def test_a_value_the_upstream_does_not_take_is_reported_unapplied(upstream, default_server):
    args = model_args() + ["--upstream", upstream.base_url, "--upstream-kind", "openai"]
    with running_server(args, name="front-openai-kind") as front:
        before = upstream.metrics().value("tempered:sampling_param_source_total", param="top_k", source="request")
        body = chat_body(PROMPTS[0], max_tokens=16, temperature=0, top_k=5)
        response = front.post("/v1/chat/completions", body)
        assert response.status_code == 200, response.text
        sampling = response.json()["sampling"]
        assert sampling["top_k"] == {"value": 5, "source": "request", "applied": False}
        assert "applied" not in sampling["temperature"]
        assert front.metrics().value("tempered:sampling_unapplied_total", param="top_k") == 1
        after = upstream.metrics().value("tempered:sampling_param_source_total", param="top_k", source="request")
        assert after == before, "top_k was not sent"
        # No ids from this kind: the front tokenizes the text again, and a greedy answer still reads the same.
        local = default_server.post("/v1/chat/completions", body).json()
        assert response.json()["choices"][0]["message"]["content"] == local["choices"][0]["message"]["content"]
        assert_error(front.post("/v1/completions", completion_body(max_tokens=4, logprobs=2)), 400, param="logprobs")


def test_a_bad_kind_stops_the_server(upstream):
    from helpers import Server
    server = Server(model_args() + ["--upstream", upstream.base_url, "--upstream-kind", "triton"], name="front-bad")
    assert server.wait_exit() == 1
    assert "--upstream-kind must be auto, tempered, vllm, sglang, llamacpp or openai" in server.log()


# ---- Passthrough (--upstream-chat): the upstream renders the conversation; the front governs sampling, checks
# tool calls and guards loops over the streamed text (server/chat_passthrough.h, output/text_pieces.h).

@pytest.fixture(scope="module")
def passthrough(upstream):
    with running_server(model_args() + ["--upstream", upstream.base_url, "--upstream-chat"],
                        name="front-passthrough") as server:
        yield server


def test_passthrough_is_said_at_start_and_answers_as_local(passthrough, upstream, default_server):
    assert "chat: passthrough to the upstream's /v1/chat/completions" in passthrough.log()
    for fields in ({"temperature": 0}, {"temperature": 0.9, "seed": 11, "n": 2}):
        body = chat_body(PROMPTS[1], max_tokens=40, **fields)
        before = upstream.metrics().value("tempered:sampling_param_source_total", param="temperature",
                                          source="request")
        through = answer(passthrough, "/v1/chat/completions", body)
        assert upstream.metrics().value("tempered:sampling_param_source_total", param="temperature",
                                        source="request") == before + 1
        assert through == answer(default_server, "/v1/chat/completions", body)
    stream = chat_body(PROMPTS[0], max_tokens=30, temperature=0.8, seed=3, stream=True)
    assert streamed_chat(passthrough, stream) == streamed_chat(default_server, stream)


def test_passthrough_usage_is_the_upstreams(passthrough, default_server):
    body = chat_body(PROMPTS[2], max_tokens=20, temperature=0)
    through = passthrough.post("/v1/chat/completions", body).json()["usage"]
    local = default_server.post("/v1/chat/completions", body).json()["usage"]
    assert (through["prompt_tokens"], through["completion_tokens"]) == (local["prompt_tokens"],
                                                                        local["completion_tokens"])


def test_passthrough_guards_loops_over_the_text(passthrough, upstream):
    flagged = loop_answer(passthrough)["choices"][0]
    assert flagged["degeneration"]["action"] == "flag" and flagged["finish_reason"] == "length"
    assert flagged["degeneration"]["period"] == 3  # ",", " la", " Femme": text pieces, not tokens
    stopped = loop_answer(passthrough, repetition_detection={"max_pattern_size": 8, "min_count": 4})["choices"][0]
    assert stopped["finish_reason"] == "repetition"
    assert len(stopped["message"]["content"]) < len(flagged["message"]["content"])
    left = time.monotonic()
    while upstream_running(upstream):  # the front closed the upstream request
        assert time.monotonic() - left < 1.0
        time.sleep(0.05)


@pytest.mark.parametrize("fields,param", [({"thinking_token_budget": 4}, "thinking_token_budget"),
                                          ({"logprobs": True}, "logprobs")])
def test_passthrough_refuses_what_needs_the_rendered_prompt_naming_the_field(passthrough, fields, param):
    assert_error(passthrough.post("/v1/chat/completions", chat_body(max_tokens=4, **fields)), 400, param=param)


@pytest.mark.parametrize("args,message", [
    (["--upstream-chat", "--degeneration-guard", "resample"], "--degeneration-guard resample needs the rendered"),
    (["--upstream-chat"], "--upstream-chat needs --upstream")])
def test_passthrough_flags_that_cannot_work_stop_the_server(upstream, args, message):
    from helpers import Server
    extra = ["--upstream", upstream.base_url] if "resample" in args else []
    server = Server(model_args() + extra + args, name="front-passthrough-bad")
    assert server.wait_exit() == 1
    assert message in server.log()


def test_a_front_without_model_passes_chat_through_and_refuses_what_needs_one(upstream, default_server):
    """No --model: no tokenizer or template of the model's own (the default model's would render another model's
    prompts wrongly), so chat passes through; completions and /tokenize, which need the model's tokenizer, are a
    400 saying so; the front serves under the upstream's name."""
    with running_server(["--upstream", upstream.base_url], name="front-no-model") as front:
        assert "no --model: chat requests pass through to the upstream" in front.log()
        assert front.get("/v1/models").json()["data"][0]["id"] == MODEL_SHORT_NAME
        body = chat_body(PROMPTS[3], max_tokens=30, temperature=0)
        assert answer(front, "/v1/chat/completions", body) == answer(default_server, "/v1/chat/completions", body)
        for path, request in (("/v1/completions", completion_body(max_tokens=4)), ("/tokenize", {"prompt": "x"}),
                              ("/detokenize", {"tokens": [1]})):
            assert_error(front.post(path, request), 400, message_contains="--model")
    from helpers import Server
    server = Server(["--upstream", upstream.base_url, "--chat-template", "t.jinja"], name="front-no-model-template")
    assert server.wait_exit() == 1
    assert "--chat-template needs --model" in server.log()
# ---- An https upstream: a TLS proxy with its own CA in front of the tempered upstream.

class TlsProxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    target = ""

    def log_message(self, *args):
        pass

    def forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))) if self.command == "POST" else None
        headers = {name: self.headers[name] for name in ("Content-Type", "Accept", "Authorization")
                   if self.headers.get(name)}
        request = urllib.request.Request(TlsProxy.target + self.path, data=body, headers=headers,
                                         method=self.command)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, kind, data = response.status, response.headers.get("Content-Type", ""), response.read()
        except urllib.error.HTTPError as error:
            status, kind, data = error.code, error.headers.get("Content-Type", ""), error.read()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = forward
    do_POST = forward


@pytest.fixture(scope="module")
def https_upstream(upstream, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    TlsProxy.target = upstream.base_url
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TlsProxy)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}", cert
    server.shutdown()


def test_an_https_upstream_is_checked_against_its_ca_and_answers_as_local(https_upstream, default_server):
    url, cert = https_upstream
    from helpers import Server
    untrusted = Server(model_args() + ["--upstream", url], name="front-https-untrusted")
    assert untrusted.wait_exit() == 1
    assert "unreachable" in untrusted.log() and "SSL" in untrusted.log(), untrusted.log()[-500:]
    with running_server(model_args() + ["--upstream", url, "--upstream-ca-file", str(cert)],
                        name="front-https") as front:
        for path, body in (("/v1/chat/completions", chat_body(PROMPTS[4], max_tokens=24, temperature=0)),
                           ("/v1/completions", completion_body(PROMPTS[5], max_tokens=16, temperature=0))):
            assert answer(front, path, body) == answer(default_server, path, body)


# ---- The agent APIs in front of another engine: Responses and Messages translate onto the chat path, so they
# go upstream as chat does (rendered, or passed through) and answer what local serving answers.

@pytest.mark.parametrize("mode", ["rendered", "passthrough"])
def test_responses_and_messages_through_an_upstream_equal_local(front, passthrough, default_server, mode):
    server = front if mode == "rendered" else passthrough
    question = "Say hello in Spanish."
    responses_body = {"input": question, "max_output_tokens": 16, "temperature": 0}
    messages_body = {"max_tokens": 16, "temperature": 0, "messages": [{"role": "user", "content": question}]}
    local_text = default_server.post("/v1/responses", responses_body).json()["output"][0]["content"][0]["text"]
    through = server.post("/v1/responses", responses_body)
    assert through.status_code == 200, through.text
    assert through.json()["output"][0]["content"][0]["text"] == local_text
    message = server.post("/v1/messages", messages_body)
    assert message.status_code == 200, message.text
    assert message.json()["content"][0]["text"] == local_text
