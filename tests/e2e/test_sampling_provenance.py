"""Sampling provenance: which value each sampling parameter takes and where it came from, reported in the
`sampling` object of every response (non-streaming, and the first chunk of a stream).

Resolution per parameter: the request's explicit value (JSON null = omitted) > --preferred-sampling-params >
the model's generation config (unless --sampling-defaults openai) > OpenAI's defaults; then the operator's
policy may replace a value (source "policy", with "replaced": the value and source it replaced).

The matrix: endpoint (chat, completions) x how a parameter is sent (omitted, null, explicit, explicit 0) x
server set-up (no defaults, preferred only, generation_config.json only, both, policies, --config file).
Then: /v1/models/{id} shows the same defaults table, the per-source counters in /metrics move with the
requests, and the sampler draws with the values it reports.
"""
import dataclasses
import json
import math

import pytest

from helpers import (MODEL_SHORT_NAME, chat_body, completion_body, model_args, running_server, stream_events)

PARAMS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty",
          "seed")
OPENAI_DEFAULTS = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0,
                   "presence_penalty": 0.0, "frequency_penalty": 0.0}
SOURCES = ("request", "preferred", "model", "default", "policy")

PREFERRED = {"temperature": 0.6, "top_p": 0.95}
GENERATION_CONFIG = {"temperature": 0.7, "top_k": 20, "top_p": 0.8, "repetition_penalty": 1.05,
                     "do_sample": True, "bos_token_id": 1, "eos_token_id": 2}
FROM_PREFERRED = {"temperature": (0.6, "preferred"), "top_p": (0.95, "preferred")}
FROM_MODEL = {"temperature": (0.7, "model"), "top_k": (20, "model"), "top_p": (0.8, "model"),
              "repetition_penalty": (1.05, "model")}
FROM_BOTH = {**FROM_MODEL, **FROM_PREFERRED}


@dataclasses.dataclass
class Setup:
    name: str
    args: list            # with @gen, @config and @config_cli standing for the files written below
    base: dict            # param -> (value, source) for what differs from OpenAI's defaults
    min_temperature: float = None   # policy {"temperature": {"min": ...}}
    greedy_use_default: bool = False  # policy {"temperature": {"greedy": "use_default"}}


SETUPS = [
    Setup("no-flags", [], {}),
    Setup("openai-defaults", ["--sampling-defaults", "openai"], {}),
    Setup("openai-ignores-model", ["--sampling-defaults", "openai", "--generation-config", "@gen"], {}),
    Setup("preferred", ["--preferred-sampling-params", json.dumps(PREFERRED)], FROM_PREFERRED),
    Setup("model", ["--generation-config", "@gen"], FROM_MODEL),
    Setup("preferred-and-model", ["--preferred-sampling-params", json.dumps(PREFERRED), "--generation-config",
                                  "@gen"], FROM_BOTH),
    Setup("policy-min", ["--preferred-sampling-params", json.dumps(PREFERRED),
                         "--sampling-policy", json.dumps({"temperature": {"min": 0.3}})],
          FROM_PREFERRED, min_temperature=0.3),
    Setup("policy-greedy", ["--generation-config", "@gen",
                            "--sampling-policy", json.dumps({"temperature": {"greedy": "use_default"}})],
          FROM_MODEL, greedy_use_default=True),
    Setup("config-file", ["--config", "@config"], FROM_BOTH, min_temperature=0.3),
    # Command-line flags win over the file: preferred params and --sampling-defaults openai (which drops the
    # file's generation config).
    Setup("config-file-cli-wins", ["--config", "@config_cli", "--preferred-sampling-params",
                                   json.dumps({"temperature": 0.5, "top_p": 0.9}), "--sampling-defaults", "openai"],
          {"temperature": (0.5, "preferred"), "top_p": (0.9, "preferred")}),
]


@pytest.fixture(scope="module")
def sampling_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sampling")
    gen = folder / "generation_config.json"
    gen.write_text(json.dumps(GENERATION_CONFIG))
    config = folder / "tempered.json"
    config.write_text(json.dumps({"preferred_sampling_params": PREFERRED, "generation_config": str(gen),
                                  "sampling_policy": {"temperature": {"min": 0.3}}, "sampling_defaults": "model"}))
    config_cli = folder / "tempered-cli.json"
    config_cli.write_text(json.dumps({"preferred_sampling_params": PREFERRED, "generation_config": str(gen),
                                      "sampling_defaults": "model"}))
    return {"gen": str(gen), "config": str(config), "config_cli": str(config_cli)}


@pytest.fixture(scope="module", params=SETUPS, ids=[s.name for s in SETUPS])
def setup(request, sampling_files):
    spec = request.param
    args = [sampling_files[a[1:]] if a.startswith("@") else a for a in spec.args]
    with running_server(model_args() + args, name=f"sampling-{spec.name}") as server:
        yield spec, server


# ---- what each request should get

def expected_sampling(spec, sent):
    """{param: (value, source)} and {param: (replaced value, replaced source)} for a request that sends
    `sent` (param -> value; None means JSON null, i.e. omitted)."""
    table = {p: (v, "default") for p, v in OPENAI_DEFAULTS.items()}
    table.update(spec.base)
    base_temperature = table["temperature"][0]
    for param, value in sent.items():
        if value is not None:
            table[param] = (value, "request")
    replaced = {}
    value, source = table["temperature"]
    if spec.greedy_use_default and value == 0 and source == "request":
        replaced["temperature"] = (value, source)
        table["temperature"] = (base_temperature, "policy")
    if spec.min_temperature is not None and table["temperature"][0] < spec.min_temperature:
        replaced.setdefault("temperature", table["temperature"])
        table["temperature"] = (spec.min_temperature, "policy")
    return table, replaced


def same_value(got, want):
    if isinstance(want, int) and not isinstance(want, bool) and want == int(want) and isinstance(got, int):
        return got == want
    return isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(got, want, abs_tol=1e-6)


def check_sampling(sampling, spec, sent, where):
    table, replaced = expected_sampling(spec, sent)
    assert isinstance(sampling, dict), f"{where}: no sampling object"
    assert set(sampling) == set(PARAMS), f"{where}: sampling has {sorted(sampling)}"
    for param, (value, source) in table.items():
        got = sampling[param]
        assert got.get("source") == source and same_value(got.get("value"), value), (
            f"{where}: {param} expected {value} from {source}, got {got} (sent {sent})")
        if param in replaced:
            want_value, want_source = replaced[param]
            assert "replaced" in got, f"{where}: {param} changed by the policy without 'replaced': {got}"
            assert got["replaced"]["source"] == want_source and same_value(got["replaced"]["value"], want_value), (
                f"{where}: {param} replaced expected {replaced[param]}, got {got['replaced']}")
        else:
            assert "replaced" not in got, f"{where}: {param} reports a replacement but the policy made none: {got}"
    seed = sampling["seed"]
    assert seed["source"] == ("request" if sent.get("seed") is not None else "default"), f"{where}: seed {seed}"
    assert isinstance(seed["value"], int), f"{where}: seed value {seed}"


MODES = {  # how the parameter is sent: name -> (value to send, or a marker)
    "omitted": "omit",
    "null": None,
    "explicit": "explicit",
    "zero": 0,
}
EXPLICIT = {"temperature": 0.9, "top_k": 5}


def request_fields(param, mode):
    """(fields to put in the body, what resolution should see)"""
    marker = MODES[mode]
    if marker == "omit":
        return {}, {}
    if marker is None:
        return {param: None}, {param: None}
    value = EXPLICIT[param] if marker == "explicit" else 0
    return {param: value}, {param: value}


def body_for(endpoint, fields, stream=False):
    body = chat_body("Hi.") if endpoint == "chat" else completion_body("Hello")
    body.update(max_tokens=1, **fields)
    if stream:
        body["stream"] = True
    return body


def path_for(endpoint):
    return "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("param", ["temperature", "top_k"])
@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_reported_sampling(setup, endpoint, param, mode):
    spec, server = setup
    fields, sent = request_fields(param, mode)
    with server.client() as client:
        response = client.post(path_for(endpoint), json=body_for(endpoint, fields))
        assert response.status_code == 200, response.text
        check_sampling(response.json().get("sampling"), spec, sent, f"{spec.name}/{endpoint}/{param}={mode}")

        status, _, events = stream_events(client, path_for(endpoint), body_for(endpoint, fields, stream=True))
        assert status == 200, events
        assert events[-1] == "[DONE]"
        check_sampling(events[0].get("sampling"), spec, sent, f"{spec.name}/{endpoint}/{param}={mode}/stream")


def test_models_endpoint_shows_defaults_table(setup):
    spec, server = setup
    response = server.get(f"/v1/models/{MODEL_SHORT_NAME}")
    assert response.status_code == 200, response.text
    table = response.json().get("sampling_defaults")
    assert isinstance(table, dict), response.json()
    expected, replaced = expected_sampling(spec, {})
    assert not replaced
    assert set(table) == set(PARAMS), sorted(table)
    for param, (value, source) in expected.items():
        assert table[param]["source"] == source and same_value(table[param]["value"], value), (
            f"{spec.name}: /v1/models {param} expected {value} from {source}, got {table[param]}")
    assert table["seed"]["source"] == "default"


def test_source_counters_follow_requests(setup):
    spec, server = setup
    requests = [{}, {}, {"temperature": None}, {"temperature": 0.9}, {"temperature": 0}]
    want = dict.fromkeys(SOURCES, 0)
    for sent in requests:
        want[expected_sampling(spec, sent)[0]["temperature"][1]] += 1
    before = server.metrics()
    with server.client() as client:
        for sent in requests:
            response = client.post("/v1/completions", json=body_for("completions", sent))
            assert response.status_code == 200, response.text
    after = server.metrics()
    for source in SOURCES:
        name = "tempered:sampling_param_source_total"
        delta = after.value(name, param="temperature", source=source) - \
            before.value(name, param="temperature", source=source)
        assert delta == want[source], f"{spec.name}: {name}{{param=temperature,source={source}}} moved by {delta}, " \
                                      f"expected {want[source]}"
    if want["preferred"]:
        assert after.require("tempered:sampling_param_source_total", param="temperature", source="preferred") > 0


def reported_values_body(sampling, seed):
    fields = {p: sampling[p]["value"] for p in PARAMS if p != "seed"}
    fields["seed"] = seed
    return fields


def test_sampler_draws_the_reported_values(setup):
    """A request that leaves sampling to the server draws exactly what one that sends the reported values
    explicitly draws (same seed); and, where the server's defaults differ from OpenAI's, not what OpenAI's
    defaults would draw."""
    spec, server = setup
    prompt = "Once upon a time, in a small village by the sea, there lived"
    differs_from_openai = False
    with server.client() as client:
        def sample(fields):
            response = client.post("/v1/completions", json=completion_body(prompt, max_tokens=16, ignore_eos=True,
                                                                            **fields))
            assert response.status_code == 200, response.text
            return response.json()

        leave_to_server = [{"seed": s} for s in (11, 12)]
        if spec.greedy_use_default or spec.min_temperature is not None:
            leave_to_server.append({"seed": 14, "temperature": 0})  # the policy replaces this 0
        for fields in leave_to_server:
            implicit = sample(fields)
            explicit = sample(reported_values_body(implicit["sampling"], fields["seed"]))
            assert explicit["choices"][0]["text"] == implicit["choices"][0]["text"], (
                f"{spec.name}: {fields} reported {implicit['sampling']} but drew something else than those values")
            openai_defaults = sample(dict(OPENAI_DEFAULTS, seed=fields["seed"]))
            if openai_defaults["choices"][0]["text"] != implicit["choices"][0]["text"]:
                differs_from_openai = True
    if spec.base:
        assert differs_from_openai, f"{spec.name}: the server's defaults drew the same as OpenAI's for every seed"


def test_no_report_sampling_removes_it():
    args = model_args() + ["--no-report-sampling", "--preferred-sampling-params", json.dumps(PREFERRED)]
    with running_server(args, name="no-report") as server, server.client() as client:
        for endpoint in ("chat", "completions"):
            response = client.post(path_for(endpoint), json=body_for(endpoint, {}))
            assert response.status_code == 200, response.text
            assert "sampling" not in response.json(), response.json()
            status, _, events = stream_events(client, path_for(endpoint), body_for(endpoint, {}, stream=True))
            assert status == 200 and events[-1] == "[DONE]", events
            assert all("sampling" not in e for e in events if e != "[DONE]"), events[0]


# ---- the sampler draws what it reports, on the default server

STORY = "Once upon a time, in a small village by the sea, there lived"


def test_top_k_1_at_temperature_1_is_greedy(default_server):
    with default_server.client() as client:
        greedy = client.post("/v1/completions", json=completion_body(STORY, max_tokens=16, temperature=0,
                                                                     ignore_eos=True)).json()
        for seed in (1, 2, 3):
            response = client.post("/v1/completions", json=completion_body(
                STORY, max_tokens=16, temperature=1, top_k=1, seed=seed, ignore_eos=True))
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["sampling"]["top_k"] == {"value": 1, "source": "request"}
            assert body["sampling"]["temperature"]["source"] == "request"
            assert body["sampling"]["temperature"]["value"] == 1
            assert body["choices"][0]["text"] == greedy["choices"][0]["text"], f"seed {seed}"


def test_logit_bias_minus_100_bans_the_greedy_token(default_server):
    with default_server.client() as client:
        greedy = client.post("/v1/completions", json=completion_body(STORY, max_tokens=1, temperature=0)).json()
        first = greedy["choices"][0]["text"]
        assert first
        tokens = client.post("/tokenize", json={"prompt": first, "add_special_tokens": False}).json()["tokens"]
        assert len(tokens) == 1, f"the greedy token {first!r} does not tokenize back to one token: {tokens}"
        bias = {str(tokens[0]): -100}
        banned = client.post("/v1/completions", json=completion_body(STORY, max_tokens=1, temperature=0,
                                                                     logit_bias=bias)).json()
        assert banned["choices"][0]["text"] != first
        for seed in range(8):
            response = client.post("/v1/completions", json=completion_body(STORY, max_tokens=1, temperature=1,
                                                                           seed=seed, logit_bias=bias))
            assert response.status_code == 200, response.text
            assert response.json()["choices"][0]["text"] != first, f"seed {seed} drew the banned token"
