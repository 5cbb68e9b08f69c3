"""Slow, idle, too many and non-reading clients against the real server (the HTTP layer's deadlines):

- slowloris connections trickling their headers are cut at --header-timeout, and a normal client queued
  behind them (more of them than --http-threads) is served within about one header timeout;
- an idle keep-alive connection is closed after --keep-alive-timeout;
- --max-connections-per-client refuses the connection past the limit with 429 and serves again once one closes;
- a client that opens a stream and reads nothing is cut after --stream-stall-timeout, its request cancelled
  and its KV freed.

Short timeouts keep the file quick; the deadlines measured are the server's, the margins the 2-core machine's.
"""
import json
import socket
import threading
import time

import pytest

from helpers import MODEL_SHORT_NAME, assert_error, chat_body, httpx, model_args, running_server, wait_for_metric

HEADER_TIMEOUT_S = 3
KEEP_ALIVE_TIMEOUT_S = 2
STALL_TIMEOUT_S = 2
SLOWLORIS = 200
HTTP_THREADS = 64  # fewer than the slowloris, so the normal client really waits behind them


@pytest.fixture(scope="module")
def server_args():
    return ["--header-timeout", str(HEADER_TIMEOUT_S), "--keep-alive-timeout", str(KEEP_ALIVE_TIMEOUT_S),
            "--stream-stall-timeout", str(STALL_TIMEOUT_S), "--http-threads", str(HTTP_THREADS)]


def connect(server, receive_buffer=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", server.port))
    return sock


def closed_by_server(sock):
    """Non-blocking: True once the server has closed (whatever it said first)."""
    try:
        while True:
            data = sock.recv(65536, socket.MSG_DONTWAIT)
            if not data:
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_slowloris_is_cut_at_the_header_timeout_and_a_normal_client_is_served(server):
    slow = [connect(server) for _ in range(SLOWLORIS)]
    started = time.monotonic()
    for sock in slow:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    closed_at = {}
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        normal_started = time.monotonic()
        # One byte every 2 s from each slowloris while the normal request waits and runs (on this thread,
        # in between: the request is sent, then the trickle goes on until its answer is read).
        request = client.build_request("POST", "/v1/chat/completions", json=chat_body(max_tokens=4))
        result = {}

        def normal():
            result["response"] = client.send(request)
            result["latency"] = time.monotonic() - normal_started

        worker = threading.Thread(target=normal)
        worker.start()
        next_byte = started
        while time.monotonic() - started < HEADER_TIMEOUT_S + 5 and len(closed_at) < SLOWLORIS:
            now = time.monotonic()
            for index, sock in enumerate(slow):
                if index not in closed_at and closed_by_server(sock):
                    closed_at[index] = now - started
            if now >= next_byte:
                for index, sock in enumerate(slow):
                    if index not in closed_at:
                        try:
                            sock.send(b"a")
                        except OSError:
                            closed_at[index] = now - started
                next_byte = now + 2.0
            time.sleep(0.05)
        worker.join(timeout=30)
    for sock in slow:
        sock.close()
    assert result["response"].status_code == 200, result["response"].text
    # Queued behind SLOWLORIS connections holding all HTTP_THREADS threads: served once they are cut, within
    # about one header timeout, not after the slowloris give up (they never would).
    assert result["latency"] < HEADER_TIMEOUT_S + 2.5, result["latency"]
    assert len(closed_at) == SLOWLORIS, f"{SLOWLORIS - len(closed_at)} slowloris connections still open"
    assert min(closed_at.values()) >= HEADER_TIMEOUT_S - 0.5, sorted(closed_at.values())[:5]
    assert max(closed_at.values()) < HEADER_TIMEOUT_S + 2.5, sorted(closed_at.values())[-5:]


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(server):
    sock = connect(server)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(10)
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    idle_since = time.monotonic()
    while True:  # the rest of the answer, then the close
        data = sock.recv(4096)
        if not data:
            break
    idle = time.monotonic() - idle_since
    sock.close()
    assert KEEP_ALIVE_TIMEOUT_S - 0.5 <= idle < KEEP_ALIVE_TIMEOUT_S + 2, idle


def test_connections_past_max_connections_per_client_get_429():
    with running_server(model_args() + ["--max-connections-per-client", "2"], name="per_client") as limited:
        held = [connect(limited) for _ in range(2)]
        time.sleep(0.3)  # both taken by the server's threads
        refused = httpx.get(limited.base_url + "/v1/models", timeout=10)
        assert_error(refused, 429, message_contains="--max-connections-per-client")
        assert refused.headers.get("connection") == "close"
        held.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the server notices the close at once; allow the 2-core machine a moment
            answer = httpx.get(limited.base_url + "/v1/models", timeout=10)
            if answer.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert answer.status_code == 200, answer.text
        assert answer.json()["data"][0]["id"] == MODEL_SHORT_NAME
        for sock in held:
            sock.close()


def test_a_stream_nobody_reads_is_cut_and_its_kv_freed(server):
    metrics = server.metrics()
    aborted_before = metrics.value("tempered:requests_aborted_total")
    generated_before = metrics.value("vllm:generation_tokens_total")
    max_tokens = 6000
    body = json.dumps(chat_body(content="Tell me a very long story.", max_tokens=max_tokens, ignore_eos=True,
                                stream=True)).encode()
    sock = connect(server, receive_buffer=4096)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    started = time.monotonic()
    # It runs, and holds KV, while the socket buffers fill ...
    assert wait_for_metric(server, "vllm:num_requests_running", lambda v: v == 1, timeout=20) == 1
    assert server.metrics().value("tempered:kv_blocks_in_use") > 0
    # ... then the writer stalls for STALL_TIMEOUT_S, fails, and the request is cancelled.
    running = wait_for_metric(server, "vllm:num_requests_running", lambda v: v == 0, timeout=STALL_TIMEOUT_S + 20)
    cut_after = time.monotonic() - started
    print(f"cut after {cut_after:.1f} s")
    assert running == 0, "the unread stream is still generating"
    # The client's 4 KB buffer is full after a few dozen tokens; the stall timeout runs from then.
    assert cut_after < STALL_TIMEOUT_S + 8, cut_after
    assert wait_for_metric(server, "tempered:kv_blocks_in_use", lambda v: v == 0, timeout=5) == 0
    metrics = server.metrics()
    assert metrics.value("vllm:kv_cache_usage_perc") == 0
    assert metrics.value("tempered:requests_aborted_total") == aborted_before + 1
    generated = metrics.value("vllm:generation_tokens_total") - generated_before
    assert generated < max_tokens / 2, f"{generated} tokens generated before the cut ({cut_after:.1f} s)"
    sock.close()
