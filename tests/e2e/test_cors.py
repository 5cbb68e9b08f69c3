"""CORS against the real server: off by default (no Access-Control-* header anywhere, OPTIONS is a plain 405);
with --allowed-origins an allowed origin gets its preflight (204, methods, headers, max-age, no API key
needed) and its origin echoed on answers, 401s and streams included; any other origin gets no CORS header.
"""
import pytest

from helpers import chat_body, completion_body, model_args, read_sse, running_server

ALLOWED = "https://app.example"
OTHER_ALLOWED = "http://localhost:3000"
DISALLOWED = "https://evil.example"
KEY = "sk-cors-test-key"


def cors_headers(response):
    return {name.lower(): value for name, value in response.headers.items()
            if name.lower().startswith("access-control-")}


def preflight(server, path, origin, method="POST", headers="authorization, content-type"):
    with server.client() as client:
        return client.request("OPTIONS", path, headers={
            "Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers})


@pytest.fixture(scope="module")
def cors_server():
    with running_server(model_args() + ["--allowed-origins", f"{ALLOWED},{OTHER_ALLOWED}", "--api-key", KEY],
                        name="cors") as server:
        yield server


def test_off_by_default_preflight_is_a_plain_405(default_server):
    response = preflight(default_server, "/v1/chat/completions", ALLOWED)
    assert response.status_code == 405, response.text
    assert "POST" in response.headers["Allow"]
    assert response.json()["error"]["message"], response.text
    assert cors_headers(response) == {}
    answer = default_server.post("/v1/completions", completion_body(max_tokens=1), headers={"Origin": ALLOWED})
    assert answer.status_code == 200 and cors_headers(answer) == {}


@pytest.mark.parametrize("origin", [ALLOWED, OTHER_ALLOWED])
def test_preflight_of_an_allowed_origin_needs_no_key(cors_server, origin):
    response = preflight(cors_server, "/v1/chat/completions", origin,
                         headers="authorization, content-type, x-stainless-lang")
    assert response.status_code == 204, response.text
    headers = cors_headers(response)
    assert headers["access-control-allow-origin"] == origin
    assert "Origin" in response.headers["Vary"]
    assert "POST" in headers["access-control-allow-methods"].split(", ")
    allowed = [name.strip().lower() for name in headers["access-control-allow-headers"].split(",")]
    assert {"authorization", "content-type", "x-stainless-lang"} <= set(allowed), allowed
    assert int(headers["access-control-max-age"]) > 0
    probe = preflight(cors_server, "/health", origin, method="GET")
    assert probe.status_code == 204
    assert "GET" in cors_headers(probe)["access-control-allow-methods"]


def test_disallowed_origin_gets_no_cors_headers(cors_server):
    response = preflight(cors_server, "/v1/chat/completions", DISALLOWED)
    assert "access-control-allow-origin" not in cors_headers(response)
    answer = cors_server.post("/v1/completions", completion_body(max_tokens=1),
                              headers={"Origin": DISALLOWED, "Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 200, answer.text
    assert cors_headers(answer) == {}


def test_allowed_origin_on_answers_and_401s(cors_server):
    answer = cors_server.post("/v1/completions", completion_body(max_tokens=1),
                              headers={"Origin": ALLOWED, "Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 200, answer.text
    assert cors_headers(answer)["access-control-allow-origin"] == ALLOWED
    refused = cors_server.post("/v1/completions", completion_body(max_tokens=1), headers={"Origin": ALLOWED})
    assert refused.status_code == 401
    assert cors_headers(refused)["access-control-allow-origin"] == ALLOWED  # the page can read why


def test_streamed_answer_carries_cors_headers(cors_server):
    with cors_server.client() as client, client.stream(
            "POST", "/v1/chat/completions", json=chat_body(max_tokens=3, stream=True),
            headers={"Origin": ALLOWED, "Authorization": f"Bearer {KEY}"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert cors_headers(response)["access-control-allow-origin"] == ALLOWED
        assert read_sse(response)[-1] == "[DONE]"
