"""Upstream mode over a real llama-server (llama.cpp, built outside this repository; LLAMA_CPP_BIN names the
directory holding llama-server). Skipped without it: CI has no llama.cpp, and bench/results records the runs.

The front drives llama-server's own /completion (--upstream-kind llamacpp: the endpoint that returns the drawn
token ids) with SmolLM2 rendered and tokenized on the front. Shown: the kind is detected; a greedy answer reads
as llama-server's own; an omitted temperature reaches llama-server as the front's value (its /slots say so);
the guard flags a SmolLM2 loop that llama.cpp draws, `stop` ends it with finish_reason "repetition" and frees
the slot, `resample` continues without a loop.

On Qwen2.5-Coder (tool calls): 20 prompts inviting an undeclared tool under `flag` return no undeclared or invalid
call; under `constrain` with tool_choice required the front writes its tool-call grammar as GBNF into
llama-server's `grammar` (its /slots show it) and no call it returns needs rejecting; response_format likewise.

The loop: llama.cpp's greedy SmolLM2 answers "What is the capital of France?" with "The capital of France is
Paris." (tempered's own greedy loops there, "la Femme, la Femme, ...": the two part at a near-tie of the first
tokens), but loops on Italy: "... il Coriobella, il Coriobella, ..." (period 6) until max_tokens."""
import json
import os
import pathlib
import subprocess
import time

import pytest

from helpers import REQUEST_TIMEOUT_S, free_port, httpx, model_args, model_path, running_server

LLAMA_CPP_BIN = os.environ.get("LLAMA_CPP_BIN")
pytestmark = pytest.mark.skipif(not LLAMA_CPP_BIN or not (pathlib.Path(LLAMA_CPP_BIN) / "llama-server").is_file(),
                                reason="LLAMA_CPP_BIN does not hold llama-server")
LOOP_QUESTION = [{"role": "user", "content": "What is the capital of Italy?"}]
LOOP_TEXT = "il Coriobella, il Coriobella, il Coriobella"


def start_llama_server(model, verbose=False):
    port = free_port()
    log = open(f"/tmp/llama-server-{port}.log", "w")
    # --no-repack: llama.cpp's AMX path faults on some hosts that advertise it.
    process = subprocess.Popen([str(pathlib.Path(LLAMA_CPP_BIN) / "llama-server"), "-m", str(model),
                                "--host", "127.0.0.1", "--port", str(port), "-np", "2", "-c", "4096", "-t", "2",
                                "--no-repack"] + (["--verbose"] if verbose else []), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, open(log.name).read()[-3000:]
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    return process, url, log.name


@pytest.fixture(scope="module")
def llama_server():
    process, url, _ = start_llama_server(model_path())
    yield url
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def front(llama_server):
    with running_server(model_args() + ["--upstream", llama_server, "--upstream-model", "smollm2"],
                        name="front-llamacpp") as server:
        yield server


def loop_answer(server, **extra):
    body = {"messages": LOOP_QUESTION, "temperature": 0, "max_tokens": 200, **extra}
    response = server.post("/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
    assert response.status_code == 200, response.text
    return response.json()


def slots_busy(llama_server):
    return sum(slot["is_processing"] for slot in httpx.get(llama_server + "/slots", timeout=5).json())


def test_the_kind_is_detected(front):
    assert ", kind llamacpp (detected)" in front.log()


def test_a_greedy_answer_reads_as_llama_servers_own(front, llama_server):
    body = {"messages": [{"role": "user", "content": "Name three colours."}], "temperature": 0, "max_tokens": 24}
    through = front.post("/v1/chat/completions", body).json()
    direct = httpx.post(llama_server + "/v1/chat/completions", json=body, timeout=REQUEST_TIMEOUT_S).json()
    assert through["choices"][0]["message"]["content"] == direct["choices"][0]["message"]["content"]


def test_an_omitted_temperature_reaches_llama_server_as_the_fronts_value(front, llama_server):
    answer = front.post("/v1/chat/completions", {"messages": LOOP_QUESTION, "max_tokens": 4}).json()
    sent = answer["sampling"]["temperature"]["value"]
    # llama-server's /slots shows the last task's sampling parameters.
    params = [slot["params"] for slot in httpx.get(llama_server + "/slots", timeout=5).json() if "params" in slot]
    assert any(abs(p["temperature"] - sent) < 1e-6 for p in params), (sent, json.dumps(params)[:2000])


def test_n_choices_come_back_and_min_tokens_is_refused_naming_it(front):
    body = {"messages": [{"role": "user", "content": "Name a colour."}], "temperature": 0.9, "seed": 3, "n": 2,
            "max_tokens": 12}
    choices = front.post("/v1/chat/completions", body).json()["choices"]
    assert [c["index"] for c in choices] == [0, 1] and all(c["message"]["content"] for c in choices)
    response = front.post("/v1/chat/completions", dict(body, min_tokens=4))
    assert response.status_code == 400 and response.json()["error"]["param"] == "min_tokens", response.text


def test_the_guard_flags_and_stops_llama_servers_loop(front, llama_server):
    flagged_body = loop_answer(front)
    flagged, flagged_tokens = flagged_body["choices"][0], flagged_body["usage"]["completion_tokens"]
    assert flagged["degeneration"]["action"] == "flag" and flagged["finish_reason"] == "length"
    assert LOOP_TEXT in flagged["message"]["content"]
    stopped = loop_answer(front, repetition_detection={"max_pattern_size": 8, "min_count": 4})
    assert stopped["choices"][0]["finish_reason"] == "repetition"
    assert stopped["usage"]["completion_tokens"] < flagged_tokens
    left = time.monotonic()
    while slots_busy(llama_server):  # the front closed the request: llama-server's slot is free again
        assert time.monotonic() - left < 2.0
        time.sleep(0.05)


def test_resample_continues_llama_server_without_a_loop(llama_server):
    args = model_args() + ["--upstream", llama_server, "--upstream-model", "smollm2", "--degeneration-guard",
                           "resample"]
    with running_server(args, name="front-llamacpp-resample") as front:
        body = loop_answer(front, seed=11)
        choice = body["choices"][0]
        assert choice["degeneration"]["action"] == "resample"
        # The continuation drew on with the fallback sampling (in the recorded run it ended the answer itself
        # 31 tokens later; the loop had run to max_tokens).
        assert body["usage"]["completion_tokens"] > choice["degeneration"]["detected_at_token"] + 1
        assert choice["finish_reason"] in ("stop", "length")
        tail = choice["message"]["content"][-120:]
        assert LOOP_TEXT not in tail, tail


@pytest.fixture(scope="module")
def qwen_llama_server():
    from test_qwen2 import QWEN2_FILE, QWEN2_NAME
    # --verbose: llama-server logs each streamed chunk, the last with the settings it applied.
    process, url, log = start_llama_server(model_path(QWEN2_FILE, QWEN2_NAME), verbose=True)
    yield url, log
    process.terminate()
    process.wait(timeout=30)


def qwen_front(qwen_llama_server, validation):
    from test_qwen2 import qwen2_args
    return running_server(qwen2_args() + ["--upstream", qwen_llama_server[0], "--upstream-model", "qwen",
                                          "--tool-call-validation", validation], name=f"front-llamacpp-{validation}")


def applied_settings(qwen_llama_server):
    """The generation_settings of each final /completion chunk llama-server logged (--verbose): its own record of
    what it applied, the grammar included. A request the front ended first has no final chunk."""
    settings = []
    for line in open(qwen_llama_server[1], errors="replace"):
        marker = "streamed chunk: data: "
        if marker in line and '"stop":true' in line:
            settings.append(json.loads(line.split(marker, 1)[1]).get("generation_settings", {}))
    return settings


def test_qwen_flag_returns_no_undeclared_or_invalid_call(qwen_llama_server):
    from test_tool_calls import UNDECLARED, ask_undeclared_and_check
    with qwen_front(qwen_llama_server, "flag") as front:
        calls, violations = ask_undeclared_and_check(front)
    print(f"\nllama-server, flag: {len(UNDECLARED)} prompts inviting an undeclared tool: returned "
          f"{calls} declared valid calls, flagged {violations} violations")


def test_qwen_constrain_required_sends_gbnf_and_no_call_needs_rejecting(qwen_llama_server):
    from test_tool_calls import SINGLE, UNDECLARED, ask_whole, check_calls, messages_for, request_fields, run_all
    asks = [request_fields(messages_for(q), tool_choice="required") for q in SINGLE[:10] + UNDECLARED[:10]]
    with qwen_front(qwen_llama_server, "constrain") as front:
        answers = run_all(lambda fields: ask_whole(front, fields), asks)
    grammars = [settings.get("grammar", "") for settings in applied_settings(qwen_llama_server)]
    assert sum("root ::=" in grammar and "get_weather" in grammar for grammar in grammars) >= len(asks) // 2
    for answer in answers:
        check_calls(answer)
        assert answer["calls"] and not answer["violations"], answer
        assert answer["finish_reason"] == "tool_calls", answer
    print(f"\nllama-server, constrain required: {len(asks)} prompts, {sum(len(a['calls']) for a in answers)} calls, "
          f"{sum(len(a['violations']) for a in answers)} rejected")


def test_qwen_constrain_auto_sends_a_lazy_grammar_triggered_by_the_call_tag(qwen_llama_server):
    from test_tool_calls import UNDECLARED, ask_undeclared_and_check
    seen = len(applied_settings(qwen_llama_server))
    with qwen_front(qwen_llama_server, "constrain") as front:
        calls, violations = ask_undeclared_and_check(front)
    settings = applied_settings(qwen_llama_server)[seen:]
    assert settings and all(s["grammar_lazy"] and s["grammar_triggers"][0]["value"] == "<tool_call>" for s in settings)
    print(f"\nllama-server, constrain auto: {len(UNDECLARED)} prompts inviting an undeclared tool: returned "
          f"{calls} declared valid calls, flagged {violations} untagged violations")


def test_qwen_response_format_goes_to_llama_server_as_gbnf(qwen_llama_server):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "population": {"type": "integer", "minimum": 0}},
              "required": ["city", "population"]}
    with qwen_front(qwen_llama_server, "constrain") as front:
        for seed in range(4):
            body = {"messages": [{"role": "user", "content": "Describe Paris as JSON."}], "temperature": 0.8,
                    "seed": seed, "max_tokens": 60,
                    "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}}}
            response = front.post("/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
            assert response.status_code == 200, response.text
            choice = response.json()["choices"][0]
            assert choice["finish_reason"] == "stop", choice
            jsonschema.validate(json.loads(choice["message"]["content"]), schema)
    assert any('\\u0022city\\u0022' in s.get("grammar", "") for s in applied_settings(qwen_llama_server))


def test_qwen_the_schema_corpus_as_gbnf_is_taken_by_llama_server(qwen_llama_server):
    """Every schema of tests/fixtures/grammar/schemas.json, written as GBNF by the front, is parsed and applied by
    llama.cpp's own grammar engine: each greedy answer that ends by itself validates (jsonschema)."""
    import concurrent.futures
    from test_structured_output import CORPUS, FORMATS
    jsonschema = pytest.importorskip("jsonschema")
    with qwen_front(qwen_llama_server, "constrain") as front:
        def one(entry):
            body = {"messages": [{"role": "user", "content": f"Give a value named {entry['name']} as JSON."}],
                    "temperature": 0, "max_tokens": 200,
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "v", "schema": entry["schema"]}}}
            return front.post("/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            responses = list(pool.map(one, CORPUS))
    cut = 0
    for entry, response in zip(CORPUS, responses):
        assert response.status_code == 200, (entry["name"], response.text)
        choice = response.json()["choices"][0]
        if choice["finish_reason"] == "length":
            cut += 1
            continue
        jsonschema.validate(json.loads(choice["message"]["content"]), entry["schema"], format_checker=FORMATS)
    print(f"\nllama-server, corpus: {len(CORPUS)} schemas, {len(CORPUS) - cut} validated, {cut} cut at max_tokens")
    assert cut <= len(CORPUS) // 10  # recorded run: 4 (llama.cpp's greedy nests recursive schemas on)
