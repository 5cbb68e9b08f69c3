"""deploy/: the one-host launch script and the Kubernetes manifests, read as data (nothing is deployed).

Checks what breaks silently in a cluster: a probe on an endpoint tempered does not serve, a container
port that is not the one the server listens on, a gateway selector that matches no worker, a prefill
bootstrap port that differs between the flag, the container and the annotation the gateway reads, a
missing resource request. Flags are checked against the real `--help` of both programs where those run.
"""
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

from helpers import REPO, tempered_bin

DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
LAUNCH_SCRIPT = DEPLOY / "launch_local.sh"
NAMESPACE = "tempered"
# What tempered serves that a probe may ask (src/server/probe_service.cpp) and the gateway's own.
TEMPERED_PROBE_PATHS = {"/health", "/health_generate"}
GATEWAY_PROBE_PATHS = {"/liveness", "/readiness", "/health"}
BOOTSTRAP_ANNOTATION = "sglang.ai/bootstrap-port"  # sgl-model-gateway's default bootstrap_port_annotation
TOPOLOGIES = {"regular": {"worker"}, "pd": {"prefill", "decode"}}


def load(name):
    return [doc for doc in yaml.safe_load_all((K8S / name).read_text()) if doc]


def by_kind(docs, kind):
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == kind}


def flag_values(args, flag):
    """The values after `flag` up to the next --flag (argparse nargs='+' style)."""
    if flag not in args:
        return None
    rest = args[args.index(flag) + 1:]
    values = []
    for value in rest:
        if value.startswith("--"):
            break
        values.append(value)
    return values


def flag(args, name):
    values = flag_values(args, name)
    assert values and len(values) == 1, f"{name} should have one value in {args}"
    return values[0]


def selector(args, name):
    return dict(pair.split("=", 1) for pair in flag_values(args, name))


def container(deployment):
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def port_number(container_spec, port):
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container_spec["ports"]}
    assert port in named, f"probe port {port!r} is not a container port ({named})"
    return named[port]


def worker_deployments(docs):
    return {name: d for name, d in by_kind(docs, "Deployment").items() if name != "tempered-gateway"}


def gateway_args(docs):
    gateway = container(by_kind(docs, "Deployment")["tempered-gateway"])
    return gateway["command"] + gateway["args"]


@pytest.fixture(scope="module", params=sorted(TOPOLOGIES))
def topology(request):
    return request.param, load(f"{request.param}.yaml")


def test_every_object_is_in_the_namespace_and_the_gateway_may_watch_pods():
    common = load("common.yaml")
    assert by_kind(common, "Namespace").keys() == {NAMESPACE}
    role = by_kind(common, "Role")["tempered-gateway-pod-reader"]
    assert any("pods" in rule["resources"] and {"list", "watch"} <= set(rule["verbs"]) for rule in role["rules"])
    binding = by_kind(common, "RoleBinding")["tempered-gateway-pod-reader"]
    assert binding["subjects"][0]["name"] == "tempered-gateway" and binding["roleRef"]["name"] == role["metadata"]["name"]
    for name in ("common.yaml", "regular.yaml", "pd.yaml"):
        for doc in load(name):
            if doc["kind"] != "Namespace":
                assert doc["metadata"]["namespace"] == NAMESPACE, (name, doc["metadata"])


def test_workers_listen_where_their_ports_and_probes_say(topology):
    name, docs = topology
    workers = worker_deployments(docs)
    assert {d["spec"]["template"]["metadata"]["labels"]["tempered.dev/role"] for d in workers.values()} \
        == TOPOLOGIES[name]
    for deployment in workers.values():
        spec = container(deployment)
        args = spec["args"]
        assert args[0] == "serve" and flag(args, "--host") == "0.0.0.0"
        port = int(flag(args, "--port"))
        assert {"name": "http", "containerPort": port} in spec["ports"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            check = spec[probe]["httpGet"]
            assert check["path"] in TEMPERED_PROBE_PATHS, (probe, check)
            assert port_number(spec, check["port"]) == port, (probe, check)
            assert spec[probe]["periodSeconds"] >= 5
        # The startup probe gives the model time to load; liveness must not kill a slow but live server.
        assert spec["startupProbe"]["periodSeconds"] * spec["startupProbe"]["failureThreshold"] >= 120
        assert spec["livenessProbe"]["periodSeconds"] * spec["livenessProbe"]["failureThreshold"] >= 30
        drain = float(flag(args, "--drain-timeout"))
        assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > drain
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= spec["resources"][kind].keys(), (kind, spec["resources"])
        mounts = {m["name"]: m["mountPath"] for m in spec["volumeMounts"]}
        env = {e["name"]: e["value"] for e in spec["env"]}
        assert mounts["models"] == env["TEMPERED_HOME"]
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["models"]["persistentVolumeClaim"]["claimName"] in by_kind(load("common.yaml"),
                                                                                  "PersistentVolumeClaim")


def test_the_gateway_discovers_exactly_the_workers(topology):
    name, docs = topology
    args = gateway_args(docs)
    assert "--service-discovery" in args and flag(args, "--service-discovery-namespace") == NAMESPACE
    discovery_port = int(flag(args, "--service-discovery-port"))
    workers = worker_deployments(docs)
    if name == "pd":
        assert "--pd-disaggregation" in args
        selectors = {"prefill": selector(args, "--prefill-selector"), "decode": selector(args, "--decode-selector")}
    else:
        selectors = {"worker": selector(args, "--selector")}
    for deployment in workers.values():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        role = labels["tempered.dev/role"]
        for other_role, chosen in selectors.items():
            matches = all(labels.get(k) == v for k, v in chosen.items())
            assert matches == (other_role == role), (role, other_role, chosen, labels)
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert int(flag(container(deployment)["args"], "--port")) == discovery_port


def test_prefill_bootstrap_port_agrees_everywhere():
    docs = load("pd.yaml")
    prefill = by_kind(docs, "Deployment")["tempered-prefill"]
    spec = container(prefill)
    port = int(flag(spec["args"], "--disaggregation-bootstrap-port"))
    assert flag(spec["args"], "--disaggregation-mode") == "prefill"
    assert int(prefill["spec"]["template"]["metadata"]["annotations"][BOOTSTRAP_ANNOTATION]) == port
    assert {"name": "bootstrap", "containerPort": port} in spec["ports"]
    service_ports = {p["name"]: p["port"] for p in by_kind(docs, "Service")["tempered-prefill"]["spec"]["ports"]}
    assert service_ports["bootstrap"] == port
    decode = container(by_kind(docs, "Deployment")["tempered-decode"])
    assert flag(decode["args"], "--disaggregation-mode") == "decode"


def test_services_point_at_named_container_ports(topology):
    _, docs = topology
    deployments = by_kind(docs, "Deployment")
    for name, service in by_kind(docs, "Service").items():
        deployment = deployments[name]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items()
        spec = container(deployment)
        for port in service["spec"]["ports"]:
            port_number(spec, port["targetPort"])
    gateway = container(deployments["tempered-gateway"])
    gateway_port = int(flag(gateway["args"], "--port"))
    assert {"name": "http", "containerPort": gateway_port} in gateway["ports"]
    assert int(flag(gateway["args"], "--prometheus-port")) in {p["containerPort"] for p in gateway["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        assert gateway[probe]["httpGet"]["path"] in GATEWAY_PROBE_PATHS
        assert port_number(gateway, gateway[probe]["httpGet"]["port"]) == gateway_port
    assert {"cpu", "memory"} <= gateway["resources"]["requests"].keys()
    assert deployments["tempered-gateway"]["spec"]["template"]["spec"]["serviceAccountName"] == "tempered-gateway"


def test_launch_script_parses():
    result = subprocess.run(["bash", "-n", str(LAUNCH_SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def used_flags(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", text))


def gateway_help():
    try:
        import sglang_router  # noqa: F401
    except ImportError:
        pytest.skip("sglang_router is not installed (tests/requirements.txt pins sglang-router)")
    result = subprocess.run([sys.executable, "-m", "sglang_router.launch_router", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_gateway_flags_exist_in_sglang_router():
    known = used_flags(gateway_help())
    for name in ("regular.yaml", "pd.yaml"):
        unknown = used_flags(" ".join(gateway_args(load(name)))) - known
        assert not unknown, (name, unknown)
    script = LAUNCH_SCRIPT.read_text()
    gateway_part = script[script.index("gateway_args=("):]
    flags = used_flags(" ".join(re.findall(r"gateway_args(?:\+?=)\(([^)]*)\)", gateway_part)))
    assert flags and not flags - known, flags - known


def test_tempered_flags_exist_in_tempered_serve():
    binary = tempered_bin()
    if not binary.is_file():
        pytest.skip(f"no tempered binary at {binary}")
    help_text = subprocess.run([str(binary), "serve", "--help"], capture_output=True, text=True).stdout
    known = used_flags(help_text)
    # The disaggregation flags arrive with the prefill/decode roles; until then they are not checked.
    pending = {"--disaggregation-mode", "--disaggregation-bootstrap-port"} - known
    for name in ("regular.yaml", "pd.yaml"):
        for deployment in worker_deployments(load(name)).values():
            unknown = used_flags(" ".join(container(deployment)["args"])) - known - pending
            assert not unknown, (name, unknown)
    script = LAUNCH_SCRIPT.read_text()
    worker_flags = used_flags(script[script.index('"$tempered" serve'):script.index("> \"$log_dir/$name.log\"")])
    worker_flags |= used_flags(" ".join(re.findall(r"start_worker \"[a-z]+-\$i\" \"\$port\"([^\n]*\n?[^\n]*)",
                                                   script)))
    assert worker_flags and not worker_flags - known - pending, worker_flags - known - pending
