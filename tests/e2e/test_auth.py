"""API keys and client labels against the real server: without the right key a protected endpoint answers
401 in OpenAI's shape and nothing runs (the counters do not move); the right key works with the OpenAI SDK;
keys never reach the log; the probes stay open unless --protect-all; a named key's name, or a header's value
(bounded by --max-client-labels), is the client in the request log and the per-client counters.
"""
import contextlib
import json
import os
import subprocess
import tempfile
import time

import openai
import pytest

from helpers import (MODEL_SHORT_NAME, REQUEST_TIMEOUT_S, Metrics, Server, assert_error, chat_body,
                     completion_body, httpx, model_args, running_server, tempered_bin)

ALICE_KEY = "sk-alice-0123456789abcdef"
BOB_KEY = "sk-bob-fedcba9876543210"
FLAG_KEY = "sk-flag-5555"
ENV_KEY = "sk-env-7777"
SECRETS = [ALICE_KEY, BOB_KEY, FLAG_KEY, ENV_KEY]
PROBES = ["/health", "/metrics", "/get_load", "/server_info", "/model_info", "/get_server_info", "/get_model_info"]
# What a request that ran would move.
WORK_COUNTERS = ["vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                 "tempered:sampling_param_source_total", "tempered:greedy_requests_total"]


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


@contextlib.contextmanager
def environment(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


@pytest.fixture(scope="module")
def keyed():
    """Four keys: two named in a file, one by flag (key1), one from TEMPERED_API_KEY (key4); JSON logs."""
    with tempfile.NamedTemporaryFile("w", suffix=".keys", delete=False) as key_file:
        key_file.write(f"# who may call\n\nalice {ALICE_KEY}\n  bob\t{BOB_KEY}  \n")
    # Only this server's process sees the variable.
    with environment("TEMPERED_API_KEY", ENV_KEY):
        server = Server(model_args() + ["--api-key", FLAG_KEY, "--api-key-file", key_file.name,
                                        "--log-format", "json"], name="auth-keyed")
    try:
        server.wait_ready()
    except BaseException:
        server.kill()
        raise
    finally:
        os.unlink(key_file.name)
    yield server
    server.stop()


def work_done(server):
    metrics = server.metrics()
    return {name: metrics.value(name) for name in WORK_COUNTERS}


def log_entry(server, request_id, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        for line in server.log().splitlines():
            if request_id in line and line.startswith("{"):
                entry = json.loads(line)
                if entry.get("id") == request_id:
                    return entry
        assert time.monotonic() < deadline, f"no request-log line for {request_id}\n{server.log_tail()}"
        time.sleep(0.1)


def test_missing_or_wrong_key_is_401_and_nothing_runs(keyed):
    before = work_done(keyed)
    requests = [("POST", "/v1/chat/completions", chat_body(max_tokens=3)),
                ("POST", "/v1/completions", completion_body(max_tokens=3, stream=True)),
                ("GET", "/v1/models", None), ("POST", "/flush_cache", None), ("POST", "/tokenize", {"prompt": "x"})]
    for method, path, body in requests:
        for headers in ({}, bearer("sk-wrong"), bearer(ALICE_KEY[:-1]), {"Authorization": ALICE_KEY}):
            response = httpx.request(method, keyed.base_url + path, json=body, headers=headers,
                                     timeout=REQUEST_TIMEOUT_S)
            error = assert_error(response, 401, code="invalid_api_key")
            assert error["type"] == "invalid_request_error" and error["param"] is None, error
            assert response.headers["WWW-Authenticate"] == "Bearer"
            assert not any(secret[:8] in response.text for secret in SECRETS), response.text
    assert work_done(keyed) == before


def test_a_refused_request_s_body_is_never_read(keyed):
    # A keyless client declares a 30 MB body and sends only its headers: the 401 comes at once (not after
    # the body or --body-timeout) and the connection closes, since the unread body cannot be skipped.
    import socket
    with socket.create_connection(("127.0.0.1", keyed.port), timeout=10) as client:
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: 30000000\r\n\r\n" + b"{" * 1000)
        started = time.monotonic()
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
        elapsed = time.monotonic() - started
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401"), answer[:300]
    assert b"connection: close" in head.lower()
    assert json.loads(body)["error"]["code"] == "invalid_api_key"
    assert elapsed < 2.0, elapsed


def test_right_keys_work_with_the_openai_sdk(keyed):
    for key in SECRETS:
        client = openai.OpenAI(base_url=keyed.base_url + "/v1", api_key=key, max_retries=0, timeout=REQUEST_TIMEOUT_S)
        answer = client.completions.create(model=MODEL_SHORT_NAME, prompt="The sky is", max_tokens=2)
        assert answer.usage.completion_tokens == 2
    wrong = openai.OpenAI(base_url=keyed.base_url + "/v1", api_key="sk-wrong", max_retries=0,
                          timeout=REQUEST_TIMEOUT_S)
    with pytest.raises(openai.AuthenticationError) as raised:
        wrong.models.list()
    assert raised.value.code == "invalid_api_key"


def test_probes_stay_open_without_a_key(keyed):
    for path in PROBES:
        assert keyed.get(path).status_code == 200, path


def test_keys_never_reach_the_log(keyed):
    keyed.post("/v1/completions", completion_body(max_tokens=1), headers=bearer("sk-wrong-attempt"))
    keyed.post("/v1/completions", completion_body(max_tokens=1), headers=bearer(BOB_KEY))
    log = keyed.log()
    assert "4 API keys loaded (names: key1, alice, bob, key4)" in log, log[-3000:]
    for secret in SECRETS + ["sk-wrong-attempt"]:
        assert secret not in log


def test_named_key_is_the_client_in_log_and_counters(keyed):
    before = keyed.metrics()
    greedy = keyed.post("/v1/chat/completions", chat_body(max_tokens=2, temperature=0),
                        headers={**bearer(BOB_KEY), "X-Request-Id": "auth-bob-greedy"})
    assert greedy.status_code == 200, greedy.text
    warm = keyed.post("/v1/chat/completions", chat_body(max_tokens=2, temperature=0.7),
                      headers={**bearer(ALICE_KEY), "X-Request-Id": "auth-alice-warm"})
    assert warm.status_code == 200, warm.text
    after = keyed.metrics()

    def moved(name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    assert moved("tempered:greedy_requests_total", client="bob") == 1
    assert moved("tempered:greedy_requests_total", client="alice") == 0
    assert moved("tempered:sampling_param_source_total", param="temperature", source="request", client="bob") == 1
    assert moved("tempered:sampling_param_source_total", param="temperature", source="request", client="alice") == 1
    assert log_entry(keyed, "auth-bob-greedy")["client"] == "bob"
    assert log_entry(keyed, "auth-alice-warm")["client"] == "alice"


@pytest.fixture(scope="module")
def protect_all():
    server = Server(model_args() + ["--api-key", FLAG_KEY, "--protect-all"], name="auth-protect-all")
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.process.poll() is None, server.log_tail()
            with contextlib.suppress(httpx.TransportError):
                if server.get("/health", headers=bearer(FLAG_KEY), timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.1)
    except BaseException:
        server.kill()
        raise
    yield server
    server.stop()


def test_protect_all_closes_the_probes(protect_all):
    for path in PROBES:
        assert_error(protect_all.get(path), 401, code="invalid_api_key")
        assert protect_all.get(path, headers=bearer(FLAG_KEY)).status_code == 200, path
    metrics = Metrics(protect_all.get("/metrics", headers=bearer(FLAG_KEY)).text)
    assert metrics.has("vllm:num_requests_running")


def test_client_label_header_is_bounded():
    """33 distinct X-Client-Name values: the first 32 keep their label, the 33rd counts as other."""
    with running_server(model_args() + ["--client-label-header", "X-Client-Name", "--max-client-labels", "32",
                                        "--log-format", "json"], name="auth-labels") as server:
        with server.client() as client:
            for i in range(33):
                response = client.post("/v1/completions", json=completion_body(max_tokens=1, temperature=0),
                                       headers={"X-Client-Name": f"team-{i}", "X-Request-Id": f"labels-{i}"})
                assert response.status_code == 200, response.text
            response = client.post("/v1/completions", json=completion_body(max_tokens=1),
                                   headers={"X-Request-Id": "labels-none"})
            assert response.status_code == 200, response.text
        metrics = server.metrics()
        for i in range(32):
            assert metrics.value("tempered:greedy_requests_total", client=f"team-{i}") == 1, i
        assert metrics.value("tempered:greedy_requests_total", client="team-32") == 0
        assert metrics.value("tempered:greedy_requests_total", client="other") == 1
        assert metrics.value("tempered:sampling_param_source_total", param="temperature", client="other") == 1
        assert log_entry(server, "labels-31")["client"] == "team-31"
        assert log_entry(server, "labels-32")["client"] == "other"
        assert log_entry(server, "labels-none")["client"] == "unknown"


@pytest.mark.parametrize("contents, flags, message", [
    ("alice sk-one extra-word\n", [], "line 1"),
    ("# only a comment\n", [], "holds no key"),
    (None, ["--protect-all"], "--protect-all needs an API key"),
])
def test_bad_key_settings_stop_the_server_with_a_clear_message(tmp_path, contents, flags, message):
    args = model_args() + flags
    if contents is not None:
        key_file = tmp_path / "keys"
        key_file.write_text(contents)
        args += ["--api-key-file", str(key_file)]
    result = subprocess.run([str(tempered_bin()), "serve", "--port", "0", *args], capture_output=True, text=True,
                            timeout=60, env={k: v for k, v in os.environ.items() if k != "TEMPERED_API_KEY"})
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "sk-one" not in result.stderr + result.stdout
