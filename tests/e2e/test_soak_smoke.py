"""bench/soak.py, bounded: 8 streams for 25 s against the real binary (the recorded soak runs 64 streams for
30 minutes). Checks that the script runs its whole mix and that its own checks pass: no lost request, KV blocks
back to 0 when idle, descriptors back to where they started, the report written; never how fast anything was.
"""
import json
import pathlib
import subprocess
import sys

import pytest

from helpers import model_args, tempered_bin

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "soak.py"


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    out = tmp_path_factory.mktemp("soak")
    args = model_args()
    command = [sys.executable, str(SCRIPT), "--bin", str(tempered_bin()), "--model", args[1], "--seconds", "25",
               "--streams", "8", "--sample-seconds", "10", "--out", str(out), "--label", "smoke", "--",
               "--threads", "2", *args[2:]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    [json_path] = out.glob("smoke-*.json")
    [md_path] = out.glob("smoke-*.md")
    return done, json.loads(json_path.read_text()), md_path.read_text()


def test_the_script_passes_its_checks(soak):
    done, data, _ = soak
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert all(check["ok"] for check in data["verdict"]), data["verdict"]


def test_nothing_is_lost_and_the_mix_ran(soak):
    _, data, _ = soak
    assert data["outcomes"]["lost"] == 0, data["lost_requests"]
    assert data["outcomes"]["completed"] > 0
    assert data["outcomes"]["client_abort"] > 0
    assert data["outcomes"]["clear_error"] > 0


def test_kv_blocks_and_descriptors_return_when_idle(soak):
    _, data, _ = soak
    assert data["final"]["kv_blocks_in_use"] == 0
    assert data["final"]["running"] == data["final"]["waiting"] == 0
    assert abs(data["final"]["fds"] - data["samples"][0]["fds"]) <= 4
    assert data["flush"].startswith("200")


def test_the_report_has_the_table_counts_and_verdict(soak):
    _, data, markdown = soak
    assert "## Verdict" in markdown and "**PASS**" in markdown
    assert "| phase | min | RSS MiB | stacks / heap / files MiB | malloc in use / free MiB | fds |" in markdown
    assert "rss slope after warm-up (reported)" in markdown
    load = [s for s in data["samples"] if s["phase"] == "load"]
    # The RSS split by mapping adds up to VmRSS (give or take pages that move between the two reads), and the
    # allocator's gauges come from the server's /metrics.
    for sample in load:
        split = sample["rss_stacks"] + sample["rss_heap"] + sample["rss_files"]
        assert abs(split - sample["rss_bytes"]) < 0.05 * sample["rss_bytes"], sample
        assert sample["heap_in_use"] > 0 and sample["heap_free"] >= 0
    assert "| cancel_stream |" in markdown and "| body_too_large |" in markdown
    assert len([s for s in data["samples"] if s["phase"] == "load"]) >= 2
