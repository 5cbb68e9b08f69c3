"""bench/pd_value.py --quick end to end: the real binary colocated (directly and behind the real
sgl-model-gateway) and disaggregated (shared memory and TCP), a handful of requests each. Checks that the
run succeeds and that its report has every number for every set-up; never how fast anything was.
"""
import json
import pathlib
import subprocess
import sys

import pytest

from helpers import model_args, tempered_bin

pytest.importorskip("sglang_router", reason="sglang-router is not installed (pip install -r tests/requirements.txt)")
SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "pd_value.py"
SETUPS = ["colocated", "colocated-gateway", "pd-shm", "pd-tcp"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("pd_value")
    args = model_args()
    command = [sys.executable, str(SCRIPT), "--quick", "--tempered", str(tempered_bin()), "--model", args[1],
               *args[2:], "--gateway-python", sys.executable, "--setups", ",".join(SETUPS), "--out", str(out),
               "--log-dir", str(out / "logs")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [json_path] = out.glob("pd_value-*.json")
    [md_path] = out.glob("pd_value-*.md")
    return json.loads(json_path.read_text()), md_path.read_text()


def test_the_report_names_the_machine_versions_and_commands(report):
    data, _ = report
    assert "cores" in data["machine"]
    assert len(data["load_average_at_start"]) == 3
    assert data["versions"]["tempered_commit"] and data["versions"]["sglang_router"]
    assert [r["setup"] for r in data["results"]] == SETUPS
    for result in data["results"]:
        assert any(" serve " in command for command in result["commands"])


@pytest.mark.parametrize("index,name", list(enumerate(SETUPS)))
def test_every_setup_has_every_latency_and_throughput_number(report, index, name):
    result = report[0]["results"][index]
    assert result["setup"] == name
    assert result["failures"] == []
    for key in ("decode_itl_client", "long_ttft_client"):
        assert result[key]["count"] > 0
        assert 0 < result[key]["p50_s"] <= result[key]["p99_s"] <= result[key]["max_s"]
    assert result["long_ttft_client"]["count"] == 3
    assert result["decode_itl_server"]["count"] > 0
    assert 0 < result["decode_itl_server"]["p50_s"] <= result["decode_itl_server"]["p99_s"]
    assert result["output_tokens"] > 0 and result["output_tokens_per_s"] > 0
    assert result["long_prompt_tokens"]["min"] > 100


@pytest.mark.parametrize("index,name", list(enumerate(SETUPS)))
def test_the_kv_transfer_numbers_match_the_setup(report, index, name):
    transfer = report[0]["results"][index]["transfer"]
    if name.startswith("colocated"):
        assert transfer["bytes_shm"] == transfer["bytes_tcp"] == 0
        assert transfer["decode_seconds"]["count"] == transfer["prefill_seconds"]["count"] == 0
        return
    path, other = ("shm", "tcp") if name == "pd-shm" else ("tcp", "shm")
    assert transfer[f"bytes_{path}"] > 0 and transfer[f"bytes_{other}"] == 0
    for role in ("prefill", "decode"):
        assert transfer[f"{role}_seconds"]["count"] > 0
        assert transfer[f"{role}_wait_seconds"]["count"] == transfer[f"{role}_seconds"]["count"]
        assert transfer[f"{role}_seconds"]["p50_s"] is not None and transfer[f"{role}_seconds"]["p99_s"] is not None
        assert transfer[f"{role}_failures"] == 0


def test_the_markdown_puts_the_setups_side_by_side_with_a_verdict(report):
    _, markdown = report
    header = next(line for line in markdown.splitlines() if line.startswith("| |"))
    assert all(name in header for name in SETUPS)
    for label in ("decode ITL p99 (client)", "long-prompt TTFT p50 (client)", "output tokens/s",
                  "KV moved: shm / tcp", "transfer seconds p50 / p99 (decode side)"):
        assert label in markdown
    assert "## Verdict" in markdown and "throughput:" in markdown
