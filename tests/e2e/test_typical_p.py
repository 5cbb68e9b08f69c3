"""typical_p (locally typical sampling, llama.cpp's and Hugging Face's name) through every path of the sampling
parameter table, on SmolLM2: the request (chat and completions), --preferred-sampling-params and the config file,
the model's generation_config.json, the policy, the `sampling` report, /v1/models/{id} and the per-source counter.

Like DRY's values it is reported only once something sets it: a response that does not use it has the same
`sampling` object, byte for byte, as before typical_p existed. It reaches the sampler: a typical_p so small that
one token survives each step makes the text the same whatever the seed.
"""
import json
import re
import subprocess

import pytest

from helpers import (MODEL_SHORT_NAME, assert_error, chat_body, completion_body, model_args, running_server,
                     stream_events, tempered_bin)

COUNTER = "tempered:sampling_param_source_total"
# What every response reported before typical_p existed, for a request that sets only the seed.
SAMPLING_WITHOUT_TYPICAL = (
    '{"frequency_penalty":{"source":"default","value":0.0},"min_p":{"source":"default","value":0.0},'
    '"presence_penalty":{"source":"default","value":0.0},"repetition_penalty":{"source":"default","value":1.0},'
    '"seed":{"source":"request","value":7},"temperature":{"source":"default","value":1.0},'
    '"top_k":{"source":"default","value":0},"top_p":{"source":"default","value":1.0}}')


@pytest.fixture(scope="module")
def plain_server():
    with running_server(model_args(), name="typical-plain") as server:
        yield server


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("typical")
    gen = folder / "generation_config.json"
    gen.write_text(json.dumps({"typical_p": 0.95, "do_sample": True}))
    config = folder / "tempered.json"
    config.write_text(json.dumps({"preferred_sampling_params": {"typical_p": 0.8}}))
    return {"gen": str(gen), "config": str(config)}


def sampling_of(server, path, body):
    response = server.post(path, body)
    assert response.status_code == 200, response.text
    return response.json()["sampling"]


def path_and_body(endpoint, **fields):
    if endpoint == "chat":
        return "/v1/chat/completions", chat_body(max_tokens=4, **fields)
    return "/v1/completions", completion_body(max_tokens=4, **fields)


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_unset_it_is_not_reported_and_the_sampling_bytes_are_unchanged(plain_server, endpoint):
    path, body = path_and_body(endpoint, seed=7)
    response = plain_server.post(path, body)
    assert response.status_code == 200, response.text
    match = re.search(r'"sampling":(\{.*?\}\})', response.text)
    assert match and match.group(1) == SAMPLING_WITHOUT_TYPICAL, response.text
    with plain_server.client() as client:
        status, _, events = stream_events(client, path, dict(body, stream=True))
    assert status == 200, events
    assert "typical_p" not in events[0]["sampling"]
    table = plain_server.get(f"/v1/models/{MODEL_SHORT_NAME}").json()["sampling_defaults"]
    assert "typical_p" not in table, table


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_request_value_is_reported_and_counted(plain_server, endpoint):
    path, body = path_and_body(endpoint, typical_p=0.5)
    before = plain_server.metrics().value(COUNTER, param="typical_p", source="request")
    sampling = sampling_of(plain_server, path, body)
    assert sampling["typical_p"] == {"value": 0.5, "source": "request"}
    assert "dry_multiplier" not in sampling  # a group of its own
    after = plain_server.metrics().value(COUNTER, param="typical_p", source="request")
    assert after - before == 1
    with plain_server.client() as client:
        status, _, events = stream_events(client, path, dict(body, stream=True))
    assert status == 200, events
    assert events[0]["sampling"]["typical_p"] == {"value": 0.5, "source": "request"}


def story(server, seed, **fields):
    body = completion_body("Once upon a time, in a small village by the sea, there lived", max_tokens=24,
                           temperature=1.0, seed=seed, **fields)
    response = server.post("/v1/completions", body)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["text"]


def test_it_reaches_the_sampler(plain_server):
    """At temperature 1 two seeds tell different stories; with typical_p 1e-6 one token survives each step
    (the most typical, not always the most likely), so every seed tells the same one."""
    assert story(plain_server, 1) != story(plain_server, 2)
    narrow = [story(plain_server, seed, typical_p=1e-6) for seed in (1, 2, 3)]
    assert narrow[0] == narrow[1] == narrow[2], narrow


@pytest.mark.parametrize("value", [0, -0.5, 1.5, "0.9", True])
def test_bad_values_are_400_naming_the_field(plain_server, value):
    for endpoint in ("chat", "completions"):
        path, body = path_and_body(endpoint, typical_p=value)
        assert_error(plain_server.post(path, body), 400, param="typical_p")


def test_generation_config_preferred_and_policy(files):
    args = model_args() + ["--generation-config", files["gen"]]
    with running_server(args, name="typical-model") as server:
        sampling = sampling_of(server, *path_and_body("completions"))
        assert sampling["typical_p"] == {"value": 0.95, "source": "model"}
        table = server.get(f"/v1/models/{MODEL_SHORT_NAME}").json()["sampling_defaults"]
        assert table["typical_p"] == {"value": 0.95, "source": "model"}
    args += ["--preferred-sampling-params", json.dumps({"typical_p": 0.9}),
             "--sampling-policy", json.dumps({"typical_p": {"min": 0.5}})]
    with running_server(args, name="typical-preferred") as server:
        sampling = sampling_of(server, *path_and_body("chat"))
        assert sampling["typical_p"] == {"value": 0.9, "source": "preferred"}
        sampling = sampling_of(server, *path_and_body("chat", typical_p=0.2))
        assert sampling["typical_p"] == {"value": 0.5, "source": "policy",
                                         "replaced": {"value": 0.2, "source": "request"}}
        metrics = server.metrics()
        assert metrics.value(COUNTER, param="typical_p", source="preferred") >= 1
        assert metrics.value(COUNTER, param="typical_p", source="policy") >= 1


def test_config_file(files):
    with running_server(model_args() + ["--config", files["config"]], name="typical-config") as server:
        sampling = sampling_of(server, *path_and_body("completions"))
        assert sampling["typical_p"] == {"value": 0.8, "source": "preferred"}


def test_an_out_of_range_preferred_value_stops_the_server():
    args = model_args() + ["--preferred-sampling-params", json.dumps({"typical_p": 0})]
    result = subprocess.run([str(tempered_bin()), "serve", "--port", "0", *args], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert "typical_p must be in (0, 1] (1 turns it off)" in result.stderr, result.stderr
