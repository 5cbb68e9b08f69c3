"""Bounded load and robustness checks of `tempered serve`, loopback only: many concurrent streams, clients
that disconnect mid-stream, KV-cache pressure with preemption, draining on SIGTERM, and keep-alive."""
import concurrent.futures
import random
import threading
import time

import pytest

from helpers import (Server, chat_body, completion_body, finish_reasons, first_text_chunk, httpx, model_args,
                     parse_sse_lines, read_sse, running_server, wait_for_metric)


def usage_of(events):
    usages = [e["usage"] for e in events if e != "[DONE]" and e.get("usage")]
    assert len(usages) == 1, f"expected one usage chunk, got {len(usages)}"
    return usages[0]


def check_stream(events, max_tokens, chat):
    assert events and events[-1] == "[DONE]", events[-3:]
    assert not any(e != "[DONE]" and "error" in e for e in events), [e for e in events if "error" in e]
    if chat:
        first = next(e for e in events if e != "[DONE]" and e["choices"])
        assert first["choices"][0]["delta"].get("role") == "assistant"
    assert finish_reasons(events) == {0: "length"}
    assert usage_of(events)["completion_tokens"] == max_tokens


def test_256_concurrent_streams_complete(default_server):
    # The server must hold 256 streaming connections at once (64 decode, the rest wait in its queue).
    max_tokens = 2

    def one(i, client):
        chat = i % 2 == 0
        path = "/v1/chat/completions" if chat else "/v1/completions"
        body = (chat_body(f"Client {i} says hello.") if chat else completion_body(f"Client {i}: once upon a time"))
        body.update(max_tokens=max_tokens, stream=True, ignore_eos=True, stream_options={"include_usage": True})
        with client.stream("POST", path, json=body) as response:
            assert response.status_code == 200, response.read()
            events = read_sse(response)
        check_stream(events, max_tokens, chat)
        return True

    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    with default_server.client(limits=limits) as client, concurrent.futures.ThreadPoolExecutor(256) as pool:
        results = list(pool.map(lambda i: one(i, client), range(256)))
    assert results == [True] * 256
    metrics = default_server.metrics()
    assert metrics.value("vllm:num_requests_running") == 0
    assert metrics.value("tempered:kv_blocks_in_use") == 0


def test_disconnected_clients_release_kv_blocks(default_server):
    before = default_server.metrics()
    generating = threading.Barrier(33, timeout=120)
    release = threading.Event()

    def disconnect_after_first_token(i):
        body = completion_body(f"Disconnect test {i}: the history of", max_tokens=512, ignore_eos=True, stream=True)
        with default_server.client() as client, client.stream("POST", "/v1/completions", json=body) as response:
            assert response.status_code == 200
            lines = response.iter_lines()  # held: dropping a half-read iterator closes the connection
            assert first_text_chunk(lines), "the stream ended without text"
            generating.wait()
            assert release.wait(60)
        # Leaving both blocks closes the connection mid-stream.

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        futures = [pool.submit(disconnect_after_first_token, i) for i in range(32)]
        try:
            generating.wait()
            running = wait_for_metric(default_server, "vllm:num_requests_running", lambda v: v == 32, timeout=10)
            in_use = default_server.metrics().value("tempered:kv_blocks_in_use")
        finally:
            release.set()
        for future in futures:
            future.result()
    assert running == 32, f"32 streams were generating but vllm:num_requests_running was {running}"
    assert in_use >= 32, f"32 streams were running but tempered:kv_blocks_in_use was {in_use}"
    blocks = wait_for_metric(default_server, "tempered:kv_blocks_in_use", lambda v: v == 0, timeout=10)
    assert blocks == 0, f"tempered:kv_blocks_in_use is {blocks} 10 s after all 32 clients disconnected"
    assert wait_for_metric(default_server, "vllm:num_requests_running", lambda v: v == 0, timeout=5) == 0
    aborted_before = before.value("tempered:requests_aborted_total")
    aborted = wait_for_metric(default_server, "tempered:requests_aborted_total",
                              lambda v: v - aborted_before >= 32, timeout=5)
    assert aborted - aborted_before == 32
    # Not one of them ran to its 512 tokens.
    generated = default_server.metrics().value("vllm:generation_tokens_total") - \
        before.value("vllm:generation_tokens_total")
    assert generated < 32 * 512 / 2, f"{generated} tokens generated for 32 disconnected clients"


@pytest.fixture(scope="module")
def small_kv_server():
    # 64 requests of 160-token prompts in a 1024-token pool; with --max-batch-tokens 128 they prefill in chunks.
    # The stall bound off: with it, prompts go in small chunks beside the decodes, requests finish before the pool
    # fills and nothing is preempted, while this server is here to exercise preemption and recompute.
    args = model_args() + ["--kv-cache-tokens", "1024", "--kv-cache-dtype", "bf16", "--max-batch-tokens", "128",
                           "--max-decode-stall-ms", "0"]
    with running_server(args, name="small-kv") as server:
        yield server


def test_kv_pressure_preempts_and_completes(small_kv_server):
    server = small_kv_server
    metrics = server.metrics()
    info = metrics.find("vllm:cache_config_info")
    assert len(info) == 1
    assert int(info[0][0]["num_gpu_blocks"]) * int(info[0][0]["block_size"]) == 1024, info
    assert metrics.value("tempered:kv_cache_dtype_info", dtype="bf16") == 1
    assert metrics.value("tempered:kv_cache_dtype_info", dtype="f16") == 0

    rng = random.Random(7)
    prompts = [[rng.randrange(1000, 40000) for _ in range(160)] for _ in range(64)]

    def run(prompt, client):
        response = client.post("/v1/completions", json=completion_body(prompt, max_tokens=48, temperature=0,
                                                                        ignore_eos=True))
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["usage"]["prompt_tokens"] == 160
        assert body["usage"]["completion_tokens"] == 48
        assert body["choices"][0]["finish_reason"] == "length"
        return body["choices"][0]["text"]

    with server.client() as client:
        reference = run(prompts[0], client)
    limits = httpx.Limits(max_connections=64)
    # The last of 64 requests waits for most of the others: a generous read timeout.
    with server.client(limits=limits, timeout=600) as client, concurrent.futures.ThreadPoolExecutor(64) as pool:
        texts = list(pool.map(lambda p: run(p, client), prompts))
    assert texts[0] == reference, "greedy output changed under KV pressure (preemption/recompute)"
    after = server.metrics()
    assert after.value("vllm:num_preemptions_total") > 0, "64 x 208 tokens in a 1024-token pool never preempted"
    assert after.value("tempered:kv_blocks_in_use") == 0
    assert after.value("vllm:request_success_total", finished_reason="length") >= 65


def test_sigterm_drains_running_streams():
    server = Server(model_args() + ["--drain-timeout", "60"], name="drain")
    try:
        server.wait_ready()
        max_tokens = 64
        first_chunk = threading.Barrier(17, timeout=120)
        results = [None] * 16

        def stream(i):
            body = completion_body(f"Drain {i}: a long tale of", max_tokens=max_tokens, ignore_eos=True, stream=True,
                                   stream_options={"include_usage": True})
            events = []
            with server.client() as client, client.stream("POST", "/v1/completions", json=body) as response:
                assert response.status_code == 200
                lines = response.iter_lines()
                for line in lines:
                    if line.startswith("data: "):
                        events += parse_sse_lines([line])
                        break
                first_chunk.wait()
                events += parse_sse_lines(lines)
            results[i] = events

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(stream, i) for i in range(16)]
            first_chunk.wait()
            server.terminate()
            time.sleep(0.3)
            still_running = sum(r is None for r in results)
            if still_running:
                # Draining: not ready, and no new work.
                try:
                    health = server.get("/health", timeout=5).status_code
                except httpx.TransportError:
                    health = None
                assert health != 200, "/health answered 200 while draining"
                try:
                    late = server.post("/v1/completions", completion_body("late", max_tokens=2), timeout=10)
                    assert late.status_code == 503, f"a request during drain got {late.status_code}"
                except httpx.TransportError:
                    pass  # the listener is closed: refused is fine
            for future in futures:
                future.result()
        assert still_running > 0, "the streams finished before SIGTERM was delivered: nothing was drained"
        for events in results:
            check_stream(events, max_tokens, chat=False)
        code = server.wait_exit(timeout=60)
        assert code == 0, f"exit status {code} after draining\n{server.log_tail()}"
    finally:
        server.kill()


def test_keep_alive_with_one_pooled_client(default_server):
    ports = set()
    with default_server.client(limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)) as client:
        for i in range(200):
            streamed = i % 2 == 0
            if i % 4 < 2:
                path, body = "/v1/completions", completion_body("Ping", max_tokens=2, temperature=0)
            else:
                path, body = "/v1/chat/completions", chat_body("Ping", max_tokens=2, temperature=0)
            if streamed:
                with client.stream("POST", path, json=dict(body, stream=True)) as response:
                    assert response.status_code == 200, (i, response.read())
                    events = read_sse(response)
                    ports.add(response.extensions["network_stream"].get_extra_info("client_addr")[1])
                assert events[-1] == "[DONE]", (i, events[-2:])
                assert list(finish_reasons(events)) == [0], (i, events)
            else:
                response = client.post(path, json=body)
                assert response.status_code == 200, (i, response.text)
                ports.add(response.extensions["network_stream"].get_extra_info("client_addr")[1])
                assert response.json()["usage"]["completion_tokens"] <= 2
    assert len(ports) <= 3, f"200 keep-alive requests used {len(ports)} connections"
