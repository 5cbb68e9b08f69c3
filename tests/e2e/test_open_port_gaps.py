"""The open-port gaps of issue 30, each against the real server (each test failed before its fix):

- the probes answer without a key and name no filesystem path (the model file's name is enough);
- a request with more headers than --max-request-headers (default 100) gets 431 and the connection closes;
- errors the HTTP layer makes itself (404, 405, 413, 431) carry CORS headers for an allowed origin;
- `Expect: 100-continue` is answered with the 401 when the key is wrong, never with 100 Continue first.

The per-client IPv6 prefix and the decode server's prefill allowlist are tested in
tests/unit/http_read_deadline_test.cpp, tests/unit/disagg_prefill_allowlist_test.cpp and test_disaggregation.py.
"""
import socket

import pytest

from helpers import chat_body, model_args, model_path, running_server

ALLOWED = "https://app.example"
KEY = "sk-gaps-key"
PROBES = ["/health", "/metrics", "/get_load", "/server_info", "/get_server_info", "/model_info", "/get_model_info",
          "/v1/models"]


@pytest.fixture(scope="module")
def keyed():
    with running_server(model_args() + ["--api-key", KEY, "--allowed-origins", ALLOWED, "--max-body-bytes", "65536"],
                        name="gaps") as server:
        yield server


def test_no_probe_names_a_path(keyed):
    directory = str(model_path().resolve().parent)
    for path in PROBES:
        headers = {"Authorization": f"Bearer {KEY}"} if path == "/v1/models" else {}
        response = keyed.get(path, headers=headers)
        assert response.status_code == 200, (path, response.text[:200])
        assert directory not in response.text, (path, response.text[:400])
    info = keyed.get("/server_info").json()
    assert info["model_file"] == model_path().name


def raw_request(server, lines, body=b"", read_first_only=False):
    """Sends an HTTP/1.1 request line by line; the status line of the first answer, and the rest as read."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        if not read_first_only:
            try:
                while chunk := sock.recv(65536):
                    received += chunk
            except (socket.timeout, ConnectionResetError):
                pass
        return received.decode(errors="replace")


def test_too_many_headers_are_a_431(keyed):
    many = [f"X-Filler-{i}: {i}" for i in range(10000)]
    answer = raw_request(keyed, ["GET /health HTTP/1.1", "Host: x", "Origin: " + ALLOWED, *many])
    assert answer.startswith("HTTP/1.1 431"), answer[:300]
    assert "--max-request-headers" in answer
    assert "Access-Control-Allow-Origin: " + ALLOWED in answer
    ordinary = keyed.get("/health", headers={f"X-Filler-{i}": str(i) for i in range(50)})
    assert ordinary.status_code == 200


@pytest.mark.parametrize("method, path, status", [("GET", "/no/such/path", 404), ("DELETE", "/health", 405)])
def test_the_http_layers_own_errors_carry_cors_headers(keyed, method, path, status):
    with keyed.client() as client:
        response = client.request(method, path, headers={"Origin": ALLOWED})
    assert response.status_code == status, response.text
    assert response.headers.get("access-control-allow-origin") == ALLOWED
    assert response.json()["error"]["message"]


def test_a_too_large_body_carries_cors_headers(keyed):
    response = keyed.post("/v1/chat/completions", content=b"x" * 70000,
                          headers={"Origin": ALLOWED, "Authorization": f"Bearer {KEY}",
                                   "Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.headers.get("access-control-allow-origin") == ALLOWED


def test_expect_100_continue_checks_the_key_first(keyed):
    import json
    body = json.dumps(chat_body(max_tokens=1)).encode()
    head = ["POST /v1/chat/completions HTTP/1.1", "Host: x", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Expect: 100-continue"]
    refused = raw_request(keyed, head, read_first_only=True)
    assert refused.startswith("HTTP/1.1 401"), refused[:200]
    allowed = raw_request(keyed, head + [f"Authorization: Bearer {KEY}"], read_first_only=True)
    assert allowed.startswith("HTTP/1.1 100 Continue"), allowed[:200]
