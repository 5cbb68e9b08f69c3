"""Observability of `tempered serve` as an operator sees it: the /metrics text passes `promtool check
metrics`, a real Prometheus (the Debian `prometheus` binary) scraping the server agrees with what the
clients received, the queue gauges move under load and settle after it, and the Grafana dashboard in
deploy/grafana/ queries only series that the server exports, in PromQL that Prometheus accepts. One
strict xfail records a known server bug (client aborts never reach vllm:request_success_total).

Loopback only. Prometheus runs with a config generated from deploy/prometheus.yml (the target moved to
the test server's port, scrape interval 1s), storage in a temporary directory, and is always killed in
teardown. Without `promtool`/`prometheus` the tests that need them are skipped, or fail when
TEMPERED_REQUIRE_MODELS=1 (scripts/test.sh installs both through scripts/install_deps.sh).
"""
import concurrent.futures
import contextlib
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from helpers import REPO, Metrics, chat_body, free_port, httpx, wait_for_metric

PROMETHEUS_CONFIG = REPO / "deploy" / "prometheus.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "tempered-dashboard.json"
MAX_RUNNING = 2
PROMETHEUS_READY_TIMEOUT_S = 60
SCRAPE_TIMEOUT_S = 20  # a 1s scrape interval; generous for the shared 2-core machine
TOOL_TIMEOUT_S = 30


def require_tool(name):
    path = shutil.which(name)
    if path is None:
        message = f"`{name}` is not installed (scripts/install_deps.sh installs the Debian `prometheus` package)"
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def server_args():
    """conftest's `server`, one for the module, with --max-running 2 so that a handful of requests queue, and
    the allocator trimmed every 0.3 s (not 10) so that its counters move within a test."""
    return ["--max-running", str(MAX_RUNNING), "--malloc-trim-interval", "0.3"]


def send_chats(server, count, max_tokens, prefix="Observe"):
    """`count` non-streamed chat requests at once; returns their JSON bodies."""
    def one(i, client):
        body = chat_body(f"{prefix} {i}: name a colour.", max_tokens=max_tokens, seed=i)  # seeded: repeatable
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    with server.client(limits=limits) as client, concurrent.futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda i: one(i, client), range(count)))


# ---- Prometheus

class Prometheus:
    """A `prometheus` process scraping one tempered server every second."""

    def __init__(self, binary, target_port, workdir):
        config_text = PROMETHEUS_CONFIG.read_text()
        assert "127.0.0.1:8000" in config_text, "deploy/prometheus.yml no longer targets 127.0.0.1:8000"
        config_text = config_text.replace("127.0.0.1:8000", f"127.0.0.1:{target_port}")
        config_text, intervals = re.subn(r"(scrape_interval|evaluation_interval|scrape_timeout):\s*\S+",
                                         r"\1: 1s", config_text)
        assert intervals >= 1, "deploy/prometheus.yml sets no scrape_interval"
        self.config = workdir / "prometheus.yml"
        self.config.write_text(config_text)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "prometheus.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [binary, f"--config.file={self.config}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, cwd=workdir)

    def log_tail(self, chars=3000):
        return self.log_path.read_text(errors="replace")[-chars:]

    def wait_ready(self):
        deadline = time.monotonic() + PROMETHEUS_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"prometheus exited with {self.process.returncode}\n{self.log_tail()}"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.base_url + "/-/ready", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise AssertionError(f"prometheus not ready after {PROMETHEUS_READY_TIMEOUT_S}s\n{self.log_tail()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def query(self, expr):
        """The instant vector of `expr` now: a list of (labels, float value)."""
        response = httpx.get(self.base_url + "/api/v1/query", params={"query": expr}, timeout=10)
        body = response.json()
        assert response.status_code == 200 and body.get("status") == "success", f"query {expr!r}: {response.text}"
        assert body["data"]["resultType"] == "vector", f"query {expr!r}: {body['data']['resultType']}"
        return [(sample["metric"], float(sample["value"][1])) for sample in body["data"]["result"]]

    def scalar(self, expr):
        """The value of a single-sample query; 0 when the vector is empty (series not exported yet)."""
        result = self.query(expr)
        assert len(result) <= 1, f"query {expr!r} returned {len(result)} samples: {result}"
        return result[0][1] if result else 0.0

    def wait_scrape_after(self, wall_time):
        """Waits until a successful scrape of the tempered target started after `wall_time` (time.time())."""
        deadline = time.monotonic() + SCRAPE_TIMEOUT_S
        seen = None
        while time.monotonic() < deadline:
            # timestamp() of a plain selector is the scrape's start; of a computed vector it would be now.
            seen = self.query('timestamp(up{job="tempered"})')
            if seen and seen[0][1] > wall_time and self.scalar('up{job="tempered"}') == 1:
                return
            time.sleep(0.2)
        raise AssertionError(f"no successful scrape of the tempered target after {wall_time} within "
                             f"{SCRAPE_TIMEOUT_S}s (last: {seen})\n{self.log_tail()}")


@pytest.fixture(scope="module")
def prometheus(server):
    binary = require_tool("prometheus")
    with tempfile.TemporaryDirectory(prefix="tempered-prometheus-") as workdir:
        instance = Prometheus(binary, server.port, pathlib.Path(workdir))
        try:
            instance.wait_ready()
            instance.wait_scrape_after(time.time())
            yield instance
        finally:
            instance.stop()


# ---- 1. promtool

PROMTOOL_COLON_LINT = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*) metric names should not contain ':'$")


def test_promtool_accepts_metrics_after_traffic(server):
    promtool = require_tool("promtool")
    send_chats(server, 3, max_tokens=4)
    with server.client() as client:  # a streamed request and a refused one, so that more series have values
        body = chat_body("Stream a word.", max_tokens=3, stream=True, stream_options={"include_usage": True})
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            response.read()
        assert client.post("/v1/chat/completions", json=chat_body(temperature=-1)).status_code == 400
    text = server.get("/metrics").text
    result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                            timeout=TOOL_TIMEOUT_S)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    # promtool lints ':' in names (reserved for recording rules); the names are vLLM's, kept on purpose.
    other = [line for line in lines if not PROMTOOL_COLON_LINT.match(line)]
    assert not other, f"promtool check metrics (exit {result.returncode}) reported more than the ':' lint:\n" + \
        "\n".join(other)
    # Exit 3 means lint findings only; anything else (1: parse error) is a real failure.
    assert result.returncode in (0, 3), f"promtool exit {result.returncode}\n" + "\n".join(lines)
    assert (result.returncode == 3) == bool(lines), (result.returncode, lines)
    for line in lines:
        assert ":" in PROMTOOL_COLON_LINT.match(line).group(1), line


# ---- 2. Prometheus agrees with the clients

COUNTERS = ["vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
            "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
            "vllm:e2e_request_latency_seconds_count", "vllm:time_to_first_token_seconds_count",
            "vllm:inter_token_latency_seconds_count", "vllm:request_queue_time_seconds_count",
            "tempered:requests_failed_total"]


def test_prometheus_scrape_matches_client_usage(server, prometheus):
    requests = 6
    before_time = time.time()
    prometheus.wait_scrape_after(before_time)  # nothing runs between this scrape and the load
    before = {name: prometheus.scalar(f"sum({name})") for name in COUNTERS}
    before_reasons = {m["finished_reason"]: v for m, v in
                      prometheus.query("sum by (finished_reason) (vllm:request_success_total)")}

    responses = send_chats(server, requests, max_tokens=8, prefix="Scrape")
    load_end = time.time()
    prometheus.wait_scrape_after(load_end)
    delta = {name: prometheus.scalar(f"sum({name})") - before[name] for name in COUNTERS}

    usages = [r["usage"] for r in responses]
    prompt_tokens = sum(u["prompt_tokens"] for u in usages)
    completion_tokens = sum(u["completion_tokens"] for u in usages)
    cached_tokens = sum(u.get("prompt_tokens_details", {}).get("cached_tokens", 0) for u in usages)
    assert delta["vllm:prompt_tokens_total"] == prompt_tokens, (delta, usages)
    assert delta["vllm:generation_tokens_total"] == completion_tokens, (delta, usages)
    assert delta["vllm:request_success_total"] == requests, delta
    reasons = {}
    for r in responses:
        reasons[r["choices"][0]["finish_reason"]] = reasons.get(r["choices"][0]["finish_reason"], 0) + 1
    after_reasons = {m["finished_reason"]: v for m, v in
                     prometheus.query("sum by (finished_reason) (vllm:request_success_total)")}
    for reason, count in reasons.items():
        assert after_reasons.get(reason, 0) - before_reasons.get(reason, 0) == count, (reason, after_reasons)
    # The histograms saw every request, and one inter-token gap per token after the first.
    for name in ["vllm:e2e_request_latency_seconds_count", "vllm:time_to_first_token_seconds_count",
                 "vllm:request_queue_time_seconds_count"]:
        assert delta[name] == requests, (name, delta)
    assert all(u["completion_tokens"] >= 1 for u in usages), usages
    assert delta["vllm:inter_token_latency_seconds_count"] == completion_tokens - requests, delta
    # Every prompt token was looked up in the prefix cache; the hits are what usage reports as cached.
    assert delta["vllm:prefix_cache_queries_total"] == prompt_tokens, delta
    assert delta["vllm:prefix_cache_hits_total"] == cached_tokens, (delta, usages)
    assert delta["tempered:requests_failed_total"] == 0, delta

    # What Prometheus stored is what /metrics says now (nothing ran since the load).
    live = server.metrics()
    for name in ["vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"]:
        assert prometheus.scalar(f"sum({name})") == live.value(name), name


# ---- 3. The queue and running gauges move under load, and settle after it

def test_queue_gauges_move_under_load_and_kv_usage_returns_to_idle(server):
    requests = 8
    idle = server.metrics()
    assert idle.value("vllm:num_requests_running") == 0 and idle.value("vllm:num_requests_waiting") == 0
    assert idle.value("vllm:kv_cache_usage_perc") == 0, "the KV cache is not empty before the load"

    def one(i, client):
        body = chat_body(f"Queue {i}: tell a story.", max_tokens=24, ignore_eos=True)
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        return response.json()["usage"]["completion_tokens"]

    scrapes = []  # (running, waiting, kv usage) per /metrics read during the load
    limits = httpx.Limits(max_connections=requests, max_keepalive_connections=requests)
    with server.client(limits=limits) as client, concurrent.futures.ThreadPoolExecutor(requests) as pool:
        futures = [pool.submit(one, i, client) for i in range(requests)]
        with server.client() as metrics_client:
            while not all(f.done() for f in futures):
                metrics = Metrics(metrics_client.get("/metrics").text)
                scrapes.append((metrics.value("vllm:num_requests_running"),
                                metrics.value("vllm:num_requests_waiting"),
                                metrics.value("vllm:kv_cache_usage_perc")))
                time.sleep(0.02)
        assert [f.result() for f in futures] == [24] * requests

    assert scrapes, "the load finished before a single /metrics read"
    assert any(running >= 1 and waiting >= 1 for running, waiting, _ in scrapes), \
        f"no scrape saw requests running and waiting at once: {scrapes[:40]}"
    assert max(running for running, _, _ in scrapes) <= MAX_RUNNING, scrapes
    assert max(waiting for _, waiting, _ in scrapes) <= requests, scrapes
    assert all(0 <= usage <= 1 for _, _, usage in scrapes), scrapes
    assert max(usage for _, _, usage in scrapes) > 0, "KV cache usage never rose during the load"

    for name in ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "tempered:kv_blocks_in_use",
                 "vllm:num_requests_running", "vllm:num_requests_waiting"]:
        value = wait_for_metric(server, name, lambda v: v == 0, timeout=10)
        assert value == 0, f"{name} is {value} after the load, not its idle value 0"


# ---- Client disconnects reach the vLLM-named series too

def test_client_abort_counts_as_finished_with_reason_abort(server):
    before = server.metrics()
    body = chat_body("Abort: tell a long story.", max_tokens=400, ignore_eos=True, stream=True)
    received = 0
    with server.client() as client, client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        for line in response.iter_lines():  # leaving the block mid-stream closes the connection
            if line.startswith("data: ") and '"content"' in line:
                received += 1
                if received == 4:
                    break
    aborted = wait_for_metric(server, "tempered:requests_aborted_total",
                              lambda v: v > before.value("tempered:requests_aborted_total"), timeout=10)
    assert aborted == before.value("tempered:requests_aborted_total") + 1
    wait_for_metric(server, "vllm:num_requests_running", lambda v: v == 0, timeout=10)
    after = server.metrics()
    assert after.value("tempered:kv_blocks_in_use") == 0
    # vLLM's meaning: an abandoned request finishes with reason "abort", and what it used is counted.
    reason = "vllm:request_success_total"
    assert after.value(reason, finished_reason="abort") == before.value(reason, finished_reason="abort") + 1
    assert after.value("vllm:prompt_tokens_total") > before.value("vllm:prompt_tokens_total")
    assert after.value("vllm:generation_tokens_total") >= before.value("vllm:generation_tokens_total") + received
    assert after.value("vllm:e2e_request_latency_seconds_count") == \
        before.value("vllm:e2e_request_latency_seconds_count") + 1


# ---- 4. The Grafana dashboard

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
                   "offset", "inf", "nan", "atan2"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def promql_metric_names(expr):
    """The metric names an expression selects: identifiers that are not functions, aggregations,
    keywords, label names (in {} or by/without/on/ignoring/group_*), durations or Grafana variables."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values and other strings
    expr = re.sub(r"\$\{[^}]*\}|\$\w+", " ", expr)  # Grafana variables
    expr = re.sub(r"\{[^}]*\}", " ", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", " ", expr)  # range and subquery durations
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*", expr):
        word = match.group(0)
        if word.lower() in PROMQL_KEYWORDS or expr[match.end():].lstrip().startswith("("):
            continue
        names.add(word)
    return names


def test_promql_metric_names_extractor():
    expr = ('histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket'
            '{model_name=~"$model_name", x="a:b"}[$__rate_interval]))) / on (job) group_left '
            'sum without (instance) (up offset 5m) > bool 1e3')
    assert promql_metric_names(expr) == {"vllm:time_to_first_token_seconds_bucket", "up"}


def dashboard_queries(dashboard):
    """Every PromQL text in the dashboard: panel targets (rows included) and template variable queries."""
    queries = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                if target.get("expr"):
                    queries.append((panel["title"], target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            queries.append((f"variable {variable['name']}", inner.group(1) if inner else query))
    return queries


def exported_names(metrics):
    """The sample names /metrics exports: every sample seen, plus each family's names by its # TYPE
    (a histogram exports only <name>_bucket/_sum/_count, a labelled counter may have no sample yet)."""
    names = {name for name, _, _ in metrics.samples}
    for family, kind in metrics.types.items():
        if kind == "histogram":
            names.update(family + suffix for suffix in HISTOGRAM_SUFFIXES)
        else:
            names.add(family)
    return names


@pytest.fixture(scope="module")
def dashboard():
    return json.loads(DASHBOARD.read_text())


def test_dashboard_names_only_exported_metrics(server, dashboard):
    send_chats(server, 2, max_tokens=4, prefix="Dashboard")
    exported = exported_names(server.metrics())
    queries = dashboard_queries(dashboard)
    assert queries, "the dashboard has no PromQL queries"
    used = set()
    for title, expr in queries:
        names = promql_metric_names(expr)
        assert names, f"{title}: no metric name found in {expr!r}"
        unknown = names - exported
        assert not unknown, f"{title}: {sorted(unknown)} not exported by /metrics (expr {expr!r})"
        for name in names:
            if name.endswith("_bucket"):
                assert "histogram_quantile(" in expr and re.search(r"\bby\s*\([^)]*\ble\b", expr), (title, expr)
        used |= names

    # The panels the dashboard promises, each by a series it must query.
    for name in ["vllm:generation_tokens_total", "vllm:prompt_tokens_total",
                 "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
                 "vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running",
                 "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:prefix_cache_hits_total",
                 "vllm:prefix_cache_queries_total", "tempered:sampling_param_source_total",
                 "tempered:requests_failed_total", "tempered:requests_rejected_total",
                 "tempered:requests_aborted_total", "vllm:spec_decode_num_drafts_total",
                 "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_per_pos_total"]:
        assert name in used, f"the dashboard does not query {name}"
    sampling = [expr for _, expr in queries if "tempered:sampling_param_source_total" in expr]
    assert any(re.search(r"by\s*\(\s*param\s*,\s*source\s*\)", expr) for expr in sampling), sampling
    titles = [panel["title"] for panel in dashboard["panels"]]
    assert len(titles) == len(set(titles)), f"duplicate panel titles: {titles}"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {ids}"
    cells = {}  # the 24-column grid: no panel sticks out or covers another
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, (panel["title"], grid)
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def grafana_to_promql(expr):
    """Replaces the dashboard's Grafana variables by what they expand to for one Prometheus."""
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
    expr = expr.replace("${model_name}", ".*").replace("$model_name", ".*")
    assert "$" not in expr, f"an unknown Grafana variable in {expr!r}"
    return expr


def test_dashboard_queries_evaluate_in_prometheus(server, prometheus, dashboard):
    send_chats(server, 2, max_tokens=4, prefix="Evaluate")
    load_end = time.time()
    prometheus.wait_scrape_after(load_end)
    prometheus.wait_scrape_after(time.time())  # two scrapes since the load: rate() has two points
    live = server.metrics()
    with_samples = {name for name, _, _ in live.samples}
    for title, expr in dashboard_queries(dashboard):
        promql = grafana_to_promql(expr)
        result = prometheus.query(promql)  # asserts that Prometheus parses and evaluates it
        if promql_metric_names(expr) <= with_samples:
            assert result, f"{title}: {promql!r} is empty although its series are exported"
            assert not any(math.isinf(value) for _, value in result), (title, result)


def test_the_allocator_and_resident_memory_are_exported(server):
    # The soak's view of memory (bench/soak.py): what the program holds, what malloc keeps free, and the resident
    # size, each from the server itself; the resident size is the process's own (as /proc says).
    metrics = server.metrics()
    resident = metrics.require("process_resident_memory_bytes")
    assert resident > 50 * 2**20  # a model's weights and KV pool at least
    assert metrics.require("tempered:malloc_in_use_bytes") > 2**20
    assert metrics.require("tempered:malloc_free_bytes") >= 0
    assert metrics.require("tempered:malloc_mapped_bytes") >= 0
    # The trimmer gives free pages back every --malloc-trim-interval (0.3 s here); its totals are counters.
    trims = wait_for_metric(server, "tempered:malloc_trims_total", lambda value: value >= 3)
    assert trims >= 3
    assert metrics.require("tempered:malloc_trim_seconds_total") >= 0
    assert 0 < server.metrics().require("tempered:malloc_trim_longest_seconds") < 1.0
