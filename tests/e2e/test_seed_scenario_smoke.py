"""bench/seed_scenario.py, a bounded part of it: SmolLM2, the first five prompts, temperature 0 and 0.6 with the
guard off, max_tokens 256. Checks the report's shape and that its numbers are sane, and that the seed's own
prompt ("What is the capital of France?") loops at temperature 0 by the script's measure. Also the loop
measure itself (bench/text_measures.py) on synthetic token streams.
"""
import json
import os
import subprocess
import sys

import pytest

from helpers import MODEL_SHORT_NAME, REPO, model_args, model_path, tempered_bin

sys.path.insert(0, str(REPO / "bench"))
from seed_report import token_loop  # noqa: E402
from text_measures import distinct_2, loop_suffix, repeated_ngram_share  # noqa: E402

PROMPTS = 5
MAX_TOKENS = 256
CONFIGS = {"t0-off": 0.0, "t0.6-off": 0.6}
SCRIPT_TIMEOUT_S = 300  # ~30 s on an idle 2-core machine; generous for a loaded one
SHARES = ["looping_share", "loop_token_share", "hit_max_tokens_share", "ended_by_guard_share", "flagged_share",
          "distinct_2"]


# ---- the measures, on synthetic streams

def test_loop_suffix_finds_the_block_and_its_extent():
    noise = list(range(100, 130))  # 30 distinct tokens, then "1 2 3 4 5" eight times and a cut copy
    loop = loop_suffix(noise + [1, 2, 3, 4, 5] * 8 + [1, 2])
    assert (loop.period, loop.units, loop.start) == (5, 42, 30)


def test_loop_suffix_ignores_short_and_near_loops():
    noise = list(range(100, 160))
    assert loop_suffix(noise + [7, 7, 7]) is None  # three repeats, but far below 20% of the answer
    assert loop_suffix(noise + [1, 2, 3, 4] * 2 + [1, 2, 3, 9] + [1, 2, 3, 4]) is None  # broken in one copy
    assert loop_suffix(list(range(200))) is None


def test_a_numbered_list_going_round_is_a_loop_in_tokens():
    tokens = ["Verbs", ":"]
    for number in range(1, 40):  # "1. to be\n" ... "39. to be\n", digits one token each as in SmolLM2
        tokens += list(str(number)) + [".", " to", " be", "\n"]
    loop = token_loop(tokens)
    assert loop == {"period": 5, "start": 2, "tokens": len(tokens) - 2}
    distinct_items = ["Verbs", ":"]
    for number, word in enumerate(["go", "be", "do", "see", "make", "take", "get", "come", "know", "think"]):
        distinct_items += [str(number), ".", " " + word, "\n"]
    assert token_loop(distinct_items) is None  # numbered, but each item new


def test_repeated_ngram_share_and_distinct_2():
    assert repeated_ngram_share(list(range(10))) == 0.0
    assert repeated_ngram_share([1, 2, 3, 4] * 10) == pytest.approx(1 - 4 / 37)
    assert repeated_ngram_share([1, 2]) is None
    assert distinct_2(["a b a b"]) == pytest.approx(2 / 3)


# ---- the script, on the real model

@pytest.fixture(scope="module")
def report(tmp_path_factory):
    model_path()  # skips (or fails under TEMPERED_REQUIRE_MODELS=1) without the model
    if model_args()[1] != MODEL_SHORT_NAME:
        pytest.skip("seed_scenario.py runs models by their short names, from the server's model cache")
    out = tmp_path_factory.mktemp("seed") / "seed"
    command = [sys.executable, str(REPO / "bench" / "seed_scenario.py"), "--bin", str(tempered_bin()),
               "--models", "smollm2", "--configs", ",".join(CONFIGS), "--prompts", str(PROMPTS),
               "--max-tokens", str(MAX_TOKENS), "--out-prefix", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    written = sorted(out.parent.iterdir())
    assert [p.suffix for p in written] == [".json", ".md"], written
    return json.loads(written[0].read_text()), written[1].read_text()


def test_report_shape(report):
    data, markdown = report
    assert data["prompts"] == PROMPTS and data["max_tokens"] == MAX_TOKENS
    assert data["environment"]["binary"]["commit"]
    model = data["models"]["smollm2"]
    assert model["model"]["bytes"] > 0 and len(model["model"]["sha256"]) == 64
    assert list(model["configs"]) == list(CONFIGS)
    for name, temperature in CONFIGS.items():
        summary = model["configs"][name]["summary"]
        assert summary["answers"] == PROMPTS and summary["errors"] == 0
        assert summary["units"] == ["tokens"]  # the loop measure ran on logprobs tokens, not words
        assert summary["sampling_reported"]["temperature"] == {"source": "request", "value": temperature}
        assert f"| {name} | {temperature:g} | off | {PROMPTS} |" in markdown


def test_report_numbers_are_sane(report):
    data, _ = report
    for name, result in data["models"]["smollm2"]["configs"].items():
        summary, answers = result["summary"], result["answers"]
        for key in SHARES:
            assert 0.0 <= summary[key] <= 1.0, (name, key, summary[key])
        assert summary["distinct_2"] > 0
        assert 0 < summary["completion_tokens"] <= PROMPTS * MAX_TOKENS
        assert summary["loop_tokens"] == sum(a["loop"]["tokens"] for a in answers if a["loop"])
        assert summary["loop_tokens"] <= summary["completion_tokens"]
        # Guard off: nothing ended by it or flagged, whether or not the binary has it.
        assert summary["ended_by_guard_share"] == 0 and summary["flagged_share"] == 0
        for answer in answers:
            assert answer["finish_reason"] in ("stop", "length")
            if answer["loop"]:
                loop = answer["loop"]
                assert loop["tokens"] >= 3 * loop["period"]
                assert loop["start"] + loop["tokens"] == answer["completion_tokens"]


def test_the_seed_prompt_loops_at_temperature_0(report):
    data, _ = report
    answers = data["models"]["smollm2"]["configs"]["t0-off"]["answers"]
    france = next(a for a in answers if a["index"] == 0)
    assert france["finish_reason"] == "length" and france["completion_tokens"] == MAX_TOKENS
    assert france["loop"] is not None and france["loop"]["tokens"] >= MAX_TOKENS // 2, france["loop"]
    assert 0 in data["models"]["smollm2"]["configs"]["t0-off"]["summary"]["looping_prompts"]
