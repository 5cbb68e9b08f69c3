"""Loops of shapes (issue 30): the guard's numbers and nesting channels on the real models.

At temperature 0 SmolLM2 answers "Give me a list of ten common English verbs." with "1. to be", "2. to be", ...
until max_tokens: no block of tokens repeats (the numbers change), so the exact detector never saw it. The
server's default guard now reports it with "kind": "numbers"; `--degeneration-guard '{"shapes": false}'` is the
guard as it was, blind to it; `tempered run` reports the same loop at the same token. Under a recursive
json_schema Qwen2.5-Coder nests {"name": ..., "children": [{"name": ... one level per name until max_tokens:
the nesting channel reports it ("kind": "nesting") and the answer still parses (grammar closing).
"""
import json
import re
import subprocess

import pytest

from helpers import REQUEST_TIMEOUT_S, model_args, running_server, tempered_bin
from test_grammar_closing import TREE, response_format
from test_qwen2 import QWEN2_NAME, qwen2_args

VERBS = "Give me a list of ten common English verbs."
MAX_TOKENS = 160


def ask(server, content, **extra):
    body = {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": MAX_TOKENS, **extra}
    response = server.post("/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]


@pytest.fixture(scope="module")
def smollm2():
    with running_server(model_args(), name="loop-shapes") as server:
        yield server


def test_a_numbered_list_going_round_is_a_numbers_loop(smollm2):
    choice = ask(smollm2, VERBS)
    text = choice["message"]["content"]
    assert re.search(r"\n5\. to be\n6\. to be\n", text), text  # the answer the seed scenario recorded
    degeneration = choice["degeneration"]
    assert degeneration["kind"] == "numbers"
    assert degeneration["action"] == "flag" and degeneration["phase"] == "content"
    # The period is one line's tokens ("7. to be\n"); the loop went on to max_tokens.
    assert 4 <= degeneration["period"] <= 6
    assert degeneration["repeats"] * degeneration["period"] > MAX_TOKENS // 2
    info = smollm2.get("/server_info").json()["degeneration_guard"]
    assert info["shapes"] is True and info["min_loop_share"] == 0.2 and info["max_pattern_size"] == 128


def test_shapes_off_is_the_exact_guard_and_does_not_see_it():
    with running_server(model_args() + ["--degeneration-guard", '{"shapes": false}'], name="no-shapes") as server:
        choice = ask(server, VERBS)
        assert re.search(r"\n5\. to be\n6\. to be\n", choice["message"]["content"])
        assert "degeneration" not in choice
        assert server.get("/server_info").json()["degeneration_guard"]["shapes"] is False


def test_tempered_run_reports_the_same_loop_as_the_server(smollm2):
    server_report = ask(smollm2, VERBS)["degeneration"]
    run = subprocess.run([tempered_bin(), "run", *model_args()[:2], "--chat", VERBS, "--temperature", "0",
                          "--max-tokens", str(MAX_TOKENS)], capture_output=True, text=True, timeout=REQUEST_TIMEOUT_S)
    assert run.returncode == 0, run.stderr
    reports = [json.loads(line[len("degeneration: "):]) for line in run.stderr.splitlines()
               if line.startswith("degeneration: ")]
    assert reports, run.stderr
    assert reports[-1] == server_report


def test_names_nesting_forever_is_a_nesting_loop_and_still_parses():
    jsonschema = pytest.importorskip("jsonschema")
    with running_server(qwen2_args(), name="loop-nesting") as qwen:
        body = {"model": QWEN2_NAME, "messages": [{"role": "user", "content": "Give me a small tree of names as JSON."}],
                "temperature": 0, "max_tokens": 200, "response_format": response_format(TREE)}
        response = qwen.post("/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        text = choice["message"]["content"]
        jsonschema.validate(json.loads(text), TREE)
        assert choice["finish_reason"] == "length" and choice["closed_early"] is True
        degeneration = choice["degeneration"]
        assert degeneration["kind"] == "nesting", degeneration
        assert degeneration["repeats"] >= 4
