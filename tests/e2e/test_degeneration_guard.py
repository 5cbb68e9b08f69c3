"""The degeneration guard on SmolLM2 (issue 13's first must-show).

At temperature 0, "What is the capital of France?" makes SmolLM2 answer "L'Étoile, la Cité, …, la Femme,
la Femme, la Femme, …" until max_tokens. With no flags the server notices and says so in the choice's
"degeneration" object (and the metrics count it once); the request's `repetition_detection`, or
`--degeneration-guard stop`, ends the answer with finish_reason "repetition" well before max_tokens;
`resample` switches the rest of the answer to the guard's fallback sampling, says which values changed,
and what follows is no loop; `off` notices nothing. A bad flag or config value stops the server at start.
"""
import json
import subprocess

import pytest

from helpers import REQUEST_TIMEOUT_S, httpx, model_args, read_sse, running_server, tempered_bin

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
MAX_TOKENS = 200
DETECTED = "tempered:degeneration_detected_total"
PERIODS = "tempered:degeneration_loop_period_count"
SUCCESS = "vllm:request_success_total"


def ask(server, **extra):
    body = {"messages": QUESTION, "temperature": 0, "max_tokens": MAX_TOKENS, **extra}
    response = server.post("/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
    assert response.status_code == 200, response.text
    return response.json()


def counts(server):
    metrics = server.metrics()
    return {
        "flag": metrics.value(DETECTED, action="flag", phase="content"),
        "stop": metrics.value(DETECTED, action="stop", phase="content"),
        "resample": metrics.value(DETECTED, action="resample", phase="content"),
        "periods": metrics.value(PERIODS),
        "repetition": metrics.value(SUCCESS, finished_reason="repetition"),
        "length": metrics.value(SUCCESS, finished_reason="length"),
    }


def moved(before, after):
    return {key: after[key] - before[key] for key in before if after[key] != before[key]}


def repeated_ngram_share(tokens, n=4):
    """The share of the text's token n-grams that already occurred in it: near 1 for a loop, low for prose
    (the bench measures answers the same way)."""
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def check_loop_report(degeneration, action, completion_tokens):
    assert degeneration["action"] == action
    assert degeneration["phase"] == "content"
    assert 1 <= degeneration["period"] <= 128
    assert degeneration["repeats"] >= 3
    # The default guard wants at least 24 tokens of loop; the answer's list starts well before it.
    assert 24 <= degeneration["detected_at_token"] < completion_tokens


# ---- the default server: flag

def test_flag_by_default_reports_the_loop_and_counts_it_once(default_server):
    before = counts(default_server)
    body = ask(default_server)
    choice = body["choices"][0]
    assert "la Femme, la Femme, la Femme" in choice["message"]["content"]
    assert choice["finish_reason"] == "length"  # flag changes nothing
    assert body["usage"]["completion_tokens"] == MAX_TOKENS
    degeneration = choice["degeneration"]
    check_loop_report(degeneration, "flag", MAX_TOKENS)
    # ", la Femme" is the block; the finishing delta reports how far the loop went (to max_tokens).
    assert degeneration["period"] == len(default_server.post(
        "/tokenize", {"prompt": ", la Femme", "add_special_tokens": False}).json()["tokens"])
    assert degeneration["repeats"] * degeneration["period"] > MAX_TOKENS // 2
    assert "sampling" not in degeneration
    assert moved(before, counts(default_server)) == {"flag": 1, "periods": 1, "length": 1}


def test_an_ordinary_answer_has_no_degeneration_object(default_server):
    body = ask(default_server, messages=[{"role": "user", "content": "Say hello."}], max_tokens=24)
    assert "degeneration" not in body["choices"][0]


def test_the_stream_carries_the_object_on_the_detecting_chunk_and_at_the_end(default_server):
    body = {"messages": QUESTION, "temperature": 0, "max_tokens": MAX_TOKENS, "stream": True}
    with httpx.stream("POST", default_server.base_url + "/v1/chat/completions", json=body,
                      timeout=REQUEST_TIMEOUT_S) as response:
        assert response.status_code == 200
        events = read_sse(response)
    assert events[-1] == "[DONE]"
    chunks = [event for event in events[:-1] if event["choices"]]
    reports = [(i, chunk["choices"][0]["degeneration"]) for i, chunk in enumerate(chunks)
               if "degeneration" in chunk["choices"][0]]
    assert len(reports) == 2, reports  # where it is detected, and on the finishing chunk
    (first_at, first), (last_at, last) = reports
    assert last_at == len(chunks) - 1 and chunks[last_at]["choices"][0]["finish_reason"] == "length"
    assert first_at < last_at and chunks[first_at]["choices"][0]["finish_reason"] is None
    check_loop_report(first, "flag", MAX_TOKENS)
    assert last["detected_at_token"] == first["detected_at_token"]
    assert last["repeats"] > first["repeats"]
    whole = ask(default_server)["choices"][0]["degeneration"]
    assert whole == last


def test_request_repetition_detection_stops_that_request(default_server):
    before = counts(default_server)
    body = ask(default_server, repetition_detection={"max_pattern_size": 8, "min_count": 4})
    choice = body["choices"][0]
    assert choice["finish_reason"] == "repetition"
    completion_tokens = body["usage"]["completion_tokens"]
    assert completion_tokens < MAX_TOKENS // 2
    degeneration = choice["degeneration"]
    assert degeneration["action"] == "stop"
    assert degeneration["repeats"] == 4  # vLLM's thresholds exactly: no minimum length
    assert degeneration["detected_at_token"] == completion_tokens - 1  # the last token generated
    assert choice["message"]["content"].endswith("la Femme, la Femme, la Femme, la Femme")
    assert moved(before, counts(default_server)) == {"stop": 1, "periods": 1, "repetition": 1}


def test_request_repetition_detection_streams_the_repetition_finish(default_server):
    body = {"messages": QUESTION, "temperature": 0, "max_tokens": MAX_TOKENS, "stream": True,
            "repetition_detection": {"max_pattern_size": 8, "min_count": 4}}
    with httpx.stream("POST", default_server.base_url + "/v1/chat/completions", json=body,
                      timeout=REQUEST_TIMEOUT_S) as response:
        events = read_sse(response)
    last = [event for event in events[:-1] if event["choices"]][-1]["choices"][0]
    assert last["finish_reason"] == "repetition"
    assert last["degeneration"]["action"] == "stop"


def test_completions_carry_the_object_and_the_repetition_finish(default_server):
    body = {"prompt": "la Femme, la Femme, la Femme, la Femme,", "temperature": 0, "max_tokens": 64,
            "repetition_detection": {"max_pattern_size": 8, "min_count": 3}}
    response = default_server.post("/v1/completions", body, timeout=REQUEST_TIMEOUT_S)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "repetition"
    assert choice["degeneration"]["action"] == "stop"
    assert response.json()["usage"]["completion_tokens"] < 64


def test_server_info_shows_the_guard(default_server):
    guard = default_server.get("/server_info").json()["degeneration_guard"]
    assert guard["action"] == "flag"
    assert guard["max_pattern_size"] == 128 and guard["min_count"] == 3 and guard["min_loop_tokens"] == 24
    assert guard["min_loop_share"] == 0.2 and guard["shapes"] is True
    assert guard["fallback"]["temperature"] == 0.7 and guard["fallback"]["dry_multiplier"] == 0.8
    assert "degeneration guard:" in default_server.log()


# ---- other actions

def test_stop_ends_the_answer_with_repetition():
    args = ["--degeneration-guard", "stop", "--log-format", "json"]
    with running_server(model_args() + args, name="guard-stop") as server:
        before = counts(server)
        body = ask(server)
        choice = body["choices"][0]
        assert choice["finish_reason"] == "repetition"
        assert body["usage"]["completion_tokens"] < MAX_TOKENS // 2
        check_loop_report(choice["degeneration"], "stop", MAX_TOKENS)
        assert choice["degeneration"]["detected_at_token"] == body["usage"]["completion_tokens"] - 1
        assert choice["message"]["content"].endswith("la Femme, la Femme, la Femme")
        assert moved(before, counts(server)) == {"stop": 1, "periods": 1, "repetition": 1}
    # The request log line says how it ended and shows the loop.
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{") and '"outcome"' in line]
    assert lines[-1]["outcome"] == "repetition"
    assert lines[-1]["degeneration"] == choice["degeneration"]


def test_resample_switches_sampling_says_what_changed_and_breaks_the_loop():
    with running_server(model_args() + ["--degeneration-guard", "resample"], name="guard-resample") as server:
        before = counts(server)
        # A fixed seed, so the test is repeatable. Should the text loop again after the switch, the guard
        # flags that loop as "after_resample", which the count check below allows for.
        body = ask(server, seed=11, logprobs=True)
        choice = body["choices"][0]
        degeneration = choice["degeneration"]
        check_loop_report(degeneration, "resample", body["usage"]["completion_tokens"])
        switched = {"temperature": {"value": 0.7, "source": "guard", "replaced": {"value": 0.0, "source": "request"}},
                    "dry_multiplier": {"value": 0.8, "source": "guard",
                                       "replaced": {"value": 0.0, "source": "default"}}}
        assert degeneration["sampling"] == switched
        for name, value in switched.items():
            assert body["sampling"][name] == value
        assert body["sampling"]["top_p"]["source"] != "guard"  # what the guard left alone is as resolved

        tokens = [entry["token"] for entry in choice["logprobs"]["content"]]
        looped = tokens[:degeneration["detected_at_token"] + 1]
        after = tokens[degeneration["detected_at_token"] + 1:]
        assert len(after) >= 40, "the answer ended right after the switch: nothing to judge"
        # The measure sees the loop it was given (about 0.8 over its last 20 tokens, near 1 over longer) ...
        loop_share = repeated_ngram_share(looped[-20:])
        assert loop_share > 0.6, loop_share
        # ... and no loop after the switch (SmolLM2-135M's prose at 0.7 is not good, but it moves on).
        assert repeated_ngram_share(after) < 0.4, ("".join(after), repeated_ngram_share(after))
        expected = {"resample": 1, "periods": 1}
        if "after_resample" in degeneration:  # a second loop is only flagged, and counted once too
            expected = {"resample": 1, "flag": 1, "periods": 2}
        change = moved(before, counts(server))
        change.pop("length", None)
        change.pop("repetition", None)
        assert change == expected


def test_off_notices_nothing():
    with running_server(model_args() + ["--degeneration-guard", "off"], name="guard-off") as server:
        before = counts(server)
        body = ask(server)
        choice = body["choices"][0]
        assert "la Femme, la Femme, la Femme" in choice["message"]["content"]
        assert "degeneration" not in choice
        assert choice["finish_reason"] == "length"
        assert moved(before, counts(server)) == {"length": 1}
        assert server.get("/server_info").json()["degeneration_guard"]["action"] == "off"
        # The request's own repetition_detection still applies.
        assert ask(server, repetition_detection={"max_pattern_size": 8, "min_count": 3})["choices"][0][
            "finish_reason"] == "repetition"


def test_the_config_file_sets_the_guard_and_the_flag_wins(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"degeneration_guard": {"action": "stop", "min_count": 4}}))
    with running_server(model_args() + ["--config", str(config)], name="guard-config") as server:
        guard = server.get("/server_info").json()["degeneration_guard"]
        assert guard["action"] == "stop" and guard["min_count"] == 4
        assert ask(server)["choices"][0]["finish_reason"] == "repetition"
    with running_server(model_args() + ["--config", str(config), "--degeneration-guard", "flag"],
                        name="guard-config-flag") as server:
        guard = server.get("/server_info").json()["degeneration_guard"]
        assert guard["action"] == "flag" and guard["min_count"] == 3


@pytest.mark.parametrize("args, named", [
    (["--degeneration-guard", "halt"], "--degeneration-guard: action"),
    (["--degeneration-guard", '{"min_count": 1}'], "--degeneration-guard: min_count"),
    (["--degeneration-guard", '{"fallback": {"temperature": 9}}'], "--degeneration-guard: fallback.temperature"),
    (["--config", "@bad"], "--config: degeneration_guard: action"),
])
def test_a_bad_value_stops_the_server_and_names_the_key(args, named, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"degeneration_guard": {"action": "explode"}}))
    args = [str(bad) if arg == "@bad" else arg for arg in args]
    result = subprocess.run([str(tempered_bin()), "serve", "--port", "0"] + model_args() + args,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert named in result.stderr, result.stderr


# ---- the agent APIs: the same guard, its report in their own shapes

def test_the_guard_on_responses_and_messages(default_server):
    stop = {"temperature": 0, "repetition_detection": {"max_pattern_size": 8, "min_count": 4}}
    responses = default_server.post("/v1/responses", {"input": QUESTION, "max_output_tokens": MAX_TOKENS, **stop})
    body = responses.json()
    assert body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "content_filter"}, body
    assert body["degeneration"]["action"] == "stop" and body["degeneration"]["repeats"] == 4
    messages = default_server.post("/v1/messages", {"messages": QUESTION, "max_tokens": MAX_TOKENS, **stop}).json()
    assert messages["stop_reason"] == "end_turn" and messages["degeneration"]["action"] == "stop", messages
    assert messages["content"][0]["text"] == body["output"][0]["content"][0]["text"]
    # Streamed, the report rides on the closing event only; no event carries chat's "choices".
    with default_server.client() as http:
        with http.stream("POST", "/v1/responses", json={"input": QUESTION, "max_output_tokens": MAX_TOKENS,
                                                        "stream": True, **stop}) as response:
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    assert all("choices" not in event for event in events)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["degeneration"]["action"] == "stop"
