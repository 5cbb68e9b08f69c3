"""Prefill/decode disaggregation behind the real sgl-model-gateway (sglang-router, tests/requirements.txt):
a prefill server and a decode server with our own KV transfer between them answer exactly as one server
does (greedy and seeded, chat and completions, whole and streamed, n > 1, logprobs, stop strings, the
sampling report), and every fault ends each request in an answer or a clear error with no KV left held:
a room nobody claims, a KV dtype mismatch, the prefill server killed mid-transfer, the decode server
killed mid-stream.

Processes start as the benches start them (bench/gateway_harness.py); fixtures kill them all.
"""
import contextlib
import copy
import http.client
import json
import pathlib
import struct
import sys
import threading
import time
import urllib.request

import pytest

from helpers import MODEL_SHORT_NAME, model_args, model_path, tempered_bin

pytest.importorskip("sglang_router", reason="sglang-router is not installed (pip install -r tests/requirements.txt)")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import gateway_harness as harness  # noqa: E402

QWEN_FILE, QWEN_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct"
GEMMA_FILE, GEMMA_NAME = "gemma-3-270m-Q4_K_M.gguf", "gemma3-270m"
LONG_SYSTEM = "You are the assistant of a public library and answer questions about opening hours. " * 12


def worker_flags():
    return model_args()[2:]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A single server and a gateway + prefill + decode, all on SmolLM2."""
    args = model_args()
    log_dir = tmp_path_factory.mktemp("pd")
    single = harness.Worker("single", tempered_bin(), args[1], 1, log_dir, worker_flags())
    try:
        single.wait_ready()
        with harness.PdCluster(tempered_bin(), model=args[1], threads=1, log_dir=log_dir,
                               prefill_flags=worker_flags(), decode_flags=worker_flags()) as cluster:
            yield single, cluster
    finally:
        single.kill()


def post(url, path, body, timeout=120):
    return harness.http_json("POST", url + path, body, timeout=timeout)


def streamed(url, path, body, timeout=120):
    """Every data event of a stream, parsed; raises on a non-200 answer."""
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    events = []
    with urllib.request.urlopen(request, timeout=timeout) as response:
        assert response.status == 200
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append(json.loads(line[len("data: "):]))
    return events


def masked_sampling(report):
    """The sampling report, with a seed the server drew itself (different on every request) blanked and
    every float at float32 precision: sgl-model-gateway re-serializes the request body through float32
    fields, so a client's temperature 0.9 reaches the workers as 0.8999999761581421 (and is reported so)."""
    report = copy.deepcopy(report)
    seed = report.get("seed")
    if isinstance(seed, dict) and seed.get("source") == "default":
        seed["value"] = "drawn"
    for entry in report.values():
        if isinstance(entry, dict) and isinstance(entry.get("value"), float):
            entry["value"] = struct.unpack("f", struct.pack("f", entry["value"]))[0]
    return report


def whole_answer(answer, kind):
    """Per choice: (text, finish_reason, logprob tokens, logprob values); and the sampling report."""
    choices = []
    for choice in sorted(answer["choices"], key=lambda c: c["index"]):
        text = choice["message"]["content"] if kind == "chat" else choice["text"]
        logprobs = choice.get("logprobs") or {}
        if kind == "chat":
            entries = logprobs.get("content") or []
            tokens, values = [e["token"] for e in entries], [e["logprob"] for e in entries]
        else:
            tokens, values = logprobs.get("tokens") or [], logprobs.get("token_logprobs") or []
        choices.append((text, choice["finish_reason"], tokens, values))
    return choices, masked_sampling(answer.get("sampling", {}))


def streamed_answer(events, kind):
    texts, finishes, sampling = {}, {}, {}
    for event in events:
        if event.get("sampling"):
            sampling = masked_sampling(event["sampling"])
        for choice in event.get("choices", []):
            index = choice["index"]
            piece = (choice.get("delta") or {}).get("content") if kind == "chat" else choice.get("text")
            texts[index] = texts.get(index, "") + (piece or "")
            if choice.get("finish_reason"):
                finishes[index] = choice["finish_reason"]
    return [(texts[i], finishes.get(i)) for i in sorted(texts)], sampling


def assert_same_choices(single, pd):
    assert len(single[0]) == len(pd[0])
    for ours, theirs in zip(single[0], pd[0]):
        assert ours[0] == theirs[0] and ours[1] == theirs[1], (ours, theirs)
        if len(ours) > 2:
            assert ours[2] == theirs[2]
            assert ours[3] == pytest.approx(theirs[3], abs=1e-5)
    assert single[1] == pd[1]


CHAT = {"messages": [{"role": "system", "content": LONG_SYSTEM},
                     {"role": "user", "content": "When does the library open on Sunday?"}], "max_tokens": 24}
CASES = [
    ("chat", "greedy", {"temperature": 0}),
    ("chat", "seeded", {"temperature": 0.9, "top_p": 0.95, "seed": 7}),
    ("chat", "seeded n=3", {"temperature": 1.0, "seed": 11, "n": 3}),
    ("chat", "logprobs and stop", {"temperature": 0, "logprobs": True, "top_logprobs": 2, "stop": ["."]}),
    ("chat", "json schema", {"temperature": 0.7, "seed": 3, "response_format": {
        "type": "json_schema", "json_schema": {"name": "hours", "schema": {
            "type": "object", "properties": {"day": {"type": "string"}, "opens": {"type": "integer"}},
            "required": ["day", "opens"], "additionalProperties": False}}}}),
    ("completions", "greedy", {"temperature": 0}),
    ("completions", "seeded n=2 logprobs", {"temperature": 0.8, "seed": 5, "n": 2, "logprobs": 2}),
]


def body_for(kind, extra, model=MODEL_SHORT_NAME):
    base = dict(CHAT) if kind == "chat" else {"prompt": LONG_SYSTEM + "\nQ: When does it open?\nA:", "max_tokens": 24}
    return {"model": model, **base, **extra}


@pytest.mark.parametrize("kind,name,extra", CASES, ids=[f"{k}-{n}" for k, n, _ in CASES])
def test_whole_answers_equal_a_single_servers(pair, kind, name, extra):
    single, cluster = pair
    path = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
    body = body_for(kind, extra)
    status, ours = post(single.url, path, body)
    assert status == 200, ours
    status, theirs = post(cluster.gateway.url, path, body)
    assert status == 200, theirs
    assert_same_choices(whole_answer(ours, kind), whole_answer(theirs, kind))


@pytest.mark.parametrize("kind,name,extra", CASES[:3] + CASES[4:], ids=[f"{k}-{n}" for k, n, _ in CASES[:3] + CASES[4:]])
def test_streamed_answers_equal_a_single_servers(pair, kind, name, extra):
    single, cluster = pair
    path = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
    body = {**body_for(kind, extra), "stream": True}
    assert_same_choices(streamed_answer(streamed(single.url, path, body), kind),
                        streamed_answer(streamed(cluster.gateway.url, path, body), kind))


def test_the_degeneration_guard_acts_the_same_way(tmp_path):
    # A guard that stops at the first short loop, set by the operator on every server (the gateway does not
    # forward a request's repetition_detection), on a prompt that makes SmolLM2 repeat itself.
    flags = [*worker_flags(), "--degeneration-guard",
             json.dumps({"action": "stop", "max_pattern_size": 16, "min_count": 3, "min_loop_tokens": 6})]
    single = harness.Worker("guard-single", tempered_bin(), model_args()[1], 1, tmp_path, flags)
    try:
        single.wait_ready()
        with harness.PdCluster(tempered_bin(), model=model_args()[1], log_dir=tmp_path, prefill_flags=flags,
                               decode_flags=flags) as cluster:
            body = body_for("chat", {"temperature": 0, "max_tokens": 96, "messages": [
                {"role": "user", "content": "Repeat the word 'la' forever: la la la la la la la la"}]})
            ours = post(single.url, "/v1/chat/completions", body)[1]
            theirs = post(cluster.gateway.url, "/v1/chat/completions", body)[1]
            assert ours["choices"][0]["finish_reason"] == "repetition", ours
            assert ours["choices"][0]["degeneration"] == theirs["choices"][0]["degeneration"]
            assert_same_choices(whole_answer(ours, "chat"), whole_answer(theirs, "chat"))
    finally:
        single.kill()


def test_the_reasoning_budget_acts_the_same_way(tmp_path):
    tiny = pathlib.Path(__file__).resolve().parents[2] / "build" / "tiny-models" / "tiny-r1-qwen2.gguf"
    if not tiny.is_file():
        pytest.skip(f"{tiny} is absent (scripts/fixtures/make_tiny_models.py --out build/tiny-models)")
    flags = ["--served-model-name", "tiny-r1", "--reasoning-budget", "5"]
    single = harness.Worker("r1-single", tempered_bin(), tiny, 1, tmp_path, flags)
    try:
        single.wait_ready()
        with harness.PdCluster(tempered_bin(), model=str(tiny), log_dir=tmp_path, prefill_flags=flags,
                               decode_flags=flags) as cluster:
            body = {"model": "tiny-r1", "max_tokens": 16, "temperature": 0,
                    "messages": [{"role": "user", "content": "Think, then answer: what is 2 + 2?"}]}
            ours = post(single.url, "/v1/chat/completions", body)[1]
            theirs = post(cluster.gateway.url, "/v1/chat/completions", body)[1]
            mine, other = ours["choices"][0], theirs["choices"][0]
            assert mine["reasoning_budget"] == {"tokens": 5, "budget": 5, "forced_end": "budget"}, mine
            assert other["reasoning_budget"] == mine["reasoning_budget"]
            assert other["message"]["reasoning_content"] == mine["message"]["reasoning_content"]
            assert other["message"]["content"] == mine["message"]["content"]
    finally:
        single.kill()


def test_the_prefill_sends_only_the_blocks_the_decode_lacks(pair):
    _, cluster = pair
    decode = cluster.decodes[0]
    body = body_for("completions", {"temperature": 0, "max_tokens": 2,
                                    "prompt": LONG_SYSTEM * 2 + "\nQ: Is there a cafe?\nA:"})
    transferred = []
    for _ in range(2):
        before = harness.metric_sum(decode.metrics(), "tempered:kv_transfer_bytes_total")
        status, answer = post(cluster.gateway.url, "/v1/completions", body)
        assert status == 200, answer
        transferred.append(harness.metric_sum(decode.metrics(), "tempered:kv_transfer_bytes_total") - before)
    # The second time the decode server's prefix cache holds every full block but the one with the last
    # prompt position: at most that block moves (per layer group).
    assert transferred[0] > 0 and transferred[1] < transferred[0] / 4, transferred


def test_the_decode_server_fetched_the_prompt_and_nothing_is_left_waiting(pair):
    _, cluster = pair
    decode, prefill = cluster.decodes[0].metrics(), cluster.prefills[0].metrics()
    assert harness.metric_sum(decode, "tempered:kv_transfer_bytes_total") > 0
    assert harness.metric_sum(prefill, "tempered:kv_transfer_bytes_total") > 0
    for samples in (decode, prefill):
        assert harness.metric_sum(samples, "tempered:kv_transfer_rooms_waiting") == 0
        assert harness.metric_sum(samples, "tempered:kv_transfer_failures_total") == 0
    # The prefill server ran each prompt for one token only; the decode server drew the answers.
    prefill_tokens = harness.metric_sum(prefill, "vllm:generation_tokens_total")
    assert prefill_tokens == harness.metric_sum(prefill, "vllm:request_success_total")


# Gemma 3's window layers (512 positions) hand blocks back: a prompt past the window moves only what the
# decode side's last position can still see in those layers.
OTHER_FAMILIES = [(QWEN_FILE, QWEN_NAME, 40), (GEMMA_FILE, GEMMA_NAME, 350)]


@pytest.mark.parametrize("file_name,short_name,words", OTHER_FAMILIES, ids=["qwen2", "gemma3-past-window"])
def test_other_model_families_through_pd_equal_a_single_server(tmp_path, file_name, short_name, words):
    path = model_path(file_name, short_name)
    single = harness.Worker("single", tempered_bin(), path, 1, tmp_path)
    try:
        single.wait_ready()
        with harness.PdCluster(tempered_bin(), model=str(path), threads=1, log_dir=tmp_path) as cluster:
            prompt = " ".join(f"item{i}" for i in range(words)) + "\nThe list above has"
            for kind in ("completions",) if file_name == GEMMA_FILE else ("chat", "completions"):  # base: no template
                path_ = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
                extra = {"temperature": 0, "max_tokens": 12, "prompt": prompt,
                         "messages": [{"role": "user", "content": prompt}]}
                body = body_for(kind, extra, model=pathlib.Path(path).stem)
                body.pop("prompt" if kind == "chat" else "messages")
                ours, theirs = post(single.url, path_, body, 300), post(cluster.gateway.url, path_, body, 300)
                assert ours[0] == 200 and theirs[0] == 200, (ours, theirs)
                if file_name == GEMMA_FILE:
                    assert ours[1]["usage"]["prompt_tokens"] > 512
                assert_same_choices(whole_answer(ours[1], kind), whole_answer(theirs[1], kind))
    finally:
        single.kill()


# ---- Faults: every request ends in an answer or a clear error; no KV stays held; survivors serve.

def kv_blocks_in_use(worker):
    return harness.metric_sum(worker.metrics(), "vllm:kv_cache_usage_perc")


def rooms_waiting(worker):
    return harness.metric_sum(worker.metrics(), "tempered:kv_transfer_rooms_waiting")


def wait_for(condition, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def still_serves(worker):
    status, answer = post(worker.url, "/v1/completions", {"model": MODEL_SHORT_NAME, "prompt": "Hi", "max_tokens": 2})
    return status == 200 and answer["choices"][0]["text"] is not None


def pd_body(prefill, room, **extra):
    return {**body_for("completions", {"temperature": 0, **extra}), "bootstrap_host": "127.0.0.1",
            "bootstrap_port": prefill.bootstrap_port, "bootstrap_room": room}


def both_at_once(prefill, decode, body):
    """Sends `body` to the prefill and the decode server at once, as the gateway does: both answers."""
    answers = {}

    def send(worker):
        answers[worker.name] = post(worker.url, "/v1/completions", body, timeout=60)

    threads = [threading.Thread(target=send, args=(w,)) for w in (prefill, decode)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers[prefill.name], answers[decode.name]


def test_a_room_nobody_claims_ends_the_prefill_request_with_a_clear_error(tmp_path):
    cluster = harness.PdCluster(tempered_bin(), model=model_args()[1], log_dir=tmp_path, decode=0,
                                prefill_flags=[*worker_flags(), "--disaggregation-timeout", "1.5"])
    prefill = cluster.start_prefill(0)
    try:
        prefill.wait_ready()
        started = time.monotonic()
        status, answer = post(prefill.url, "/v1/completions", pd_body(prefill, 4242))
        assert status >= 500 and "room 4242" in json.dumps(answer) and "claimed" in json.dumps(answer), answer
        assert time.monotonic() - started < 10
        assert rooms_waiting(prefill) == 0 and kv_blocks_in_use(prefill) == 0
        assert still_serves(prefill)
    finally:
        prefill.kill()


def test_a_kv_dtype_mismatch_is_a_clear_error_on_both_sides(tmp_path):
    cluster = harness.PdCluster(tempered_bin(), model=model_args()[1], log_dir=tmp_path,
                                prefill_flags=worker_flags(), decode_flags=[*worker_flags(), "--kv-cache-dtype", "f32"])
    prefill, decode = cluster.start_prefill(0), cluster.start_decode(0)
    try:
        prefill.wait_ready()
        decode.wait_ready()
        (p_status, p_answer), (d_status, d_answer) = both_at_once(prefill, decode, pd_body(prefill, 77))
        for status, answer in ((p_status, p_answer), (d_status, d_answer)):
            text = json.dumps(answer)
            assert status >= 500 and "dtype" in text and "f16" in text and "f32" in text, answer
        for worker in (prefill, decode):
            assert rooms_waiting(worker) == 0 and kv_blocks_in_use(worker) == 0
            assert still_serves(worker)
    finally:
        prefill.kill()
        decode.kill()


@contextlib.contextmanager
def paused_transfer(tmp_path, pause_seconds, room):
    """A prefill and a decode server whose transfer pauses `pause_seconds` after its first block, and room
    `room` sent to both at once: yields (prefill, decode, answers, join) once both ends hold the room and
    the prompt's KV is in the transfer; join() waits for both answers. A side killed meanwhile leaves none."""
    cluster = harness.PdCluster(tempered_bin(), model=model_args()[1], log_dir=tmp_path,
                                prefill_flags=[*worker_flags(), "--disaggregation-transfer", "tcp",
                                               "--disaggregation-fault", f"pause_after_blocks:1:{pause_seconds}"],
                                decode_flags=[*worker_flags(), "--disaggregation-transfer", "tcp"])
    prefill, decode = cluster.start_prefill(0), cluster.start_decode(0)
    answers, threads = {}, []

    def send(worker):
        with contextlib.suppress(OSError, http.client.HTTPException):  # its connection dies with it
            answers[worker.name] = post(worker.url, "/v1/completions", pd_body(prefill, room), timeout=60)

    try:
        prefill.wait_ready()
        decode.wait_ready()
        threads = [threading.Thread(target=send, args=(worker,)) for worker in (prefill, decode)]
        for thread in threads:
            thread.start()
        # Both ends hold the room; the prompt (a fraction of a second) is computed and its KV handed to the
        # transfer, which then pauses after one block: a kill now lands mid-transfer.
        assert wait_for(lambda: rooms_waiting(decode) == 1 and rooms_waiting(prefill) == 1)
        time.sleep(1.5)
        assert rooms_waiting(decode) == 1
        yield prefill, decode, answers, lambda: [thread.join(timeout=60) for thread in threads]
    finally:
        prefill.kill()
        decode.kill()


def assert_survivor_answered_clearly_and_is_clean(survivor, answers):
    status, answer = answers[survivor.name]
    assert status >= 500 and "KV transfer failed" in json.dumps(answer), answer
    assert rooms_waiting(survivor) == 0 and kv_blocks_in_use(survivor) == 0
    assert still_serves(survivor)


def test_the_prefill_server_killed_mid_transfer(tmp_path):
    with paused_transfer(tmp_path, 30, room=9) as (prefill, decode, answers, join):
        prefill.kill()
        join()
        assert_survivor_answered_clearly_and_is_clean(decode, answers)


def test_the_decode_server_killed_mid_transfer(tmp_path):
    # The prefill side notices when its 4 s pause ends and it writes to the closed connection.
    with paused_transfer(tmp_path, 4, room=10) as (prefill, decode, answers, join):
        decode.kill()
        join()
        assert_survivor_answered_clearly_and_is_clean(prefill, answers)


def test_the_decode_server_killed_mid_stream_through_the_gateway(tmp_path):
    args = model_args()
    with harness.PdCluster(tempered_bin(), model=args[1], threads=1, log_dir=tmp_path, prefill_flags=worker_flags(),
                           decode_flags=worker_flags()) as cluster:
        body = {**body_for("chat", {"temperature": 0, "max_tokens": 400, "ignore_eos": True}), "stream": True}
        request = urllib.request.Request(cluster.gateway.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         method="POST", headers={"Content-Type": "application/json"})
        chunks, started = 0, time.monotonic()
        with contextlib.suppress(OSError, http.client.HTTPException):  # the gateway may cut the connection
            with urllib.request.urlopen(request, timeout=60) as response:
                for raw in response:
                    if raw.startswith(b"data: "):
                        chunks += 1
                    if chunks == 5:
                        cluster.decodes[0].kill()
        # The stream ended (closed or cut, within the read timeout, not at its 400 tokens): no hang.
        assert 5 <= chunks < 400 and time.monotonic() - started < 60, chunks
        prefill = cluster.prefills[0]
        assert wait_for(lambda: rooms_waiting(prefill) == 0 and kv_blocks_in_use(prefill) == 0)
        assert still_serves(prefill)


def test_a_decode_server_refuses_a_prefill_it_does_not_allow_before_connecting(pair):
    """The bootstrap target is the request's: only --disaggregation-allowed-prefill (loopback by default) is
    fetched from; anything else is a 403 naming bootstrap_host, at once, with no connection or lookup."""
    _, cluster = pair
    decode = cluster.decodes[0]
    for host in ("10.9.8.7", "example.com", "2001:db8::1"):
        body = {**pd_body(cluster.prefills[0], 424242), "bootstrap_host": host}
        started = time.monotonic()
        status, answer = post(decode.url, "/v1/completions", body, timeout=30)
        assert status == 403, (host, status, answer)
        assert answer["error"]["param"] == "bootstrap_host" and host in answer["error"]["message"]
        assert time.monotonic() - started < 2
    info = harness.http_json("GET", decode.url + "/server_info", None)[1]
    assert info["disaggregation"]["disaggregation_allowed_prefill"] == ["127.0.0.0/8", "::1", "localhost"]
    assert still_serves(decode)
