"""The grammar engine's test bridge, build/tempered_grammar_sample (GRAMMAR_SAMPLE_BIN to override): one JSON
request per line in, one JSON answer per line out. Shared by the grammar e2e files."""
import json
import os
import subprocess

import pytest

BIN = os.environ.get("GRAMMAR_SAMPLE_BIN", "build/tempered_grammar_sample")


def run_engine(requests, timeout=600):
    text = "".join(json.dumps(r) + "\n" for r in requests)
    out = subprocess.run([BIN], input=text, capture_output=True, text=True, check=True, timeout=timeout).stdout
    return [json.loads(line) for line in out.split("\n") if line]


@pytest.fixture(scope="module", autouse=True)
def engine_binary():
    if not os.path.exists(BIN):
        pytest.skip(f"{BIN} not built")
