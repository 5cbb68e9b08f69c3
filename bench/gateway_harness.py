"""tempered workers behind the real sgl-model-gateway (PyPI sglang-router), started the same way by the
benches (cache_aware_routing.py, failover.py) and the e2e smoke test (tests/e2e/test_gateway.py).

`Cluster` is a context manager: on leaving it every process it started is killed, whatever happened.
Only the standard library is used, so the benches run from any Python; the gateway runs from
`gateway_python` (default: this one), which must be able to import sglang_router.
"""
import contextlib
import json
import math
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = "smollm2-135m-instruct"
READY_TIMEOUT_S = 120
# Gateway settings for losing a worker: a dead worker is dropped after two failed /health checks 2 s
# apart, and a request that meets it is retried (on another worker) up to 3 times meanwhile.
FAILOVER_FLAGS = ["--health-check-interval-secs", "2", "--health-failure-threshold", "2",
                  "--health-check-timeout-secs", "2", "--retry-max-retries", "3",
                  "--retry-initial-backoff-ms", "50", "--retry-max-backoff-ms", "1000",
                  "--cb-failure-threshold", "2", "--cb-timeout-duration-secs", "30"]
TOKENIZER_WARNINGS = ("Failed to load tokenizer", "HuggingFace")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_json(method, url, body=None, timeout=60):
    """(status, parsed JSON or text) without raising on HTTP errors."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode(errors="replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


class Process:
    """One child process with its log file."""

    def __init__(self, name, command, log_dir):
        self.name = name
        self.command = [str(part) for part in command]
        self.log_path = pathlib.Path(log_dir) / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self):
        return self.process.poll() is None

    def log(self):
        return self.log_path.read_text(errors="replace")

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.process.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        if self.alive():
            self.process.kill()
            self.process.wait()
        self._log.close()


class Worker(Process):
    def __init__(self, index, binary, model, threads, log_dir, extra=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        name = index if isinstance(index, str) else f"worker-{index}"
        super().__init__(name, [binary, "serve", "--model", model, "--host", "127.0.0.1",
                                             "--port", self.port, "--threads", threads, *extra], log_dir)

    def wait_ready(self, timeout=READY_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            with contextlib.suppress(OSError):
                if http_json("GET", self.url + "/health", timeout=2)[0] == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout}s:\n{self.log()[-3000:]}")

    def metrics(self):
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as response:
            return parse_prometheus(response.read().decode())

    def flush_cache(self):
        return http_json("POST", self.url + "/flush_cache")


class Gateway(Process):
    def __init__(self, python, worker_urls, policy, log_dir, extra=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__("gateway", [python, "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
                                     "--port", self.port, "--prometheus-port", free_port(), "--policy", policy,
                                     *(["--worker-urls", *worker_urls] if worker_urls else []), *extra], log_dir)
        self.worker_urls = list(worker_urls)

    def wait_ready(self, timeout=READY_TIMEOUT_S):
        """Until the gateway lists every worker as registered and answers /v1/models."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"gateway exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            with contextlib.suppress(OSError):
                status, workers = http_json("GET", self.url + "/workers", timeout=2)
                if status == 200 and set(self.worker_urls) <= registered_urls(workers):
                    if http_json("GET", self.url + "/v1/models", timeout=2)[0] == 200:
                        return
            time.sleep(0.2)
        raise RuntimeError(f"gateway not ready after {timeout}s:\n{self.log()[-3000:]}")

    def tokenizer_warnings(self):
        return [line for line in self.log().splitlines() if "WARN" in line and "okenizer" in line]


def registered_urls(listing):
    """The worker URLs in the gateway's GET /workers answer."""
    if not isinstance(listing, dict):
        return set()
    return {entry.get("url") for entry in listing.get("workers", []) if isinstance(entry, dict)}


class _ProcessGroup(contextlib.AbstractContextManager):
    """Workers and a gateway started on entering the `with` (by `start()`); leaving it kills every process,
    as does a failure while starting."""

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for process in ([self.gateway] if self.gateway else []) + self.workers:
            process.kill()


class Cluster(_ProcessGroup):
    """N workers and a gateway in front of them. Leaving the `with` kills every process."""

    def __init__(self, binary, workers=3, policy="cache_aware", model=DEFAULT_MODEL, threads=1, log_dir=None,
                 gateway_python=None, gateway_flags=(), worker_flags=()):
        self.log_dir = pathlib.Path(log_dir or tempfile.mkdtemp(prefix="tempered-gateway-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.binary, self.model, self.threads = str(binary), model, threads
        self.worker_flags = list(worker_flags)
        self.worker_count, self.policy = workers, policy
        self.gateway_python = gateway_python or sys.executable
        self.gateway_flags = list(gateway_flags)
        self.workers, self.gateway = [], None

    def start(self):
        self.workers = [Worker(i, self.binary, self.model, self.threads, self.log_dir, self.worker_flags)
                        for i in range(self.worker_count)]
        for worker in self.workers:
            worker.wait_ready()
        self.gateway = Gateway(self.gateway_python, [w.url for w in self.workers], self.policy, self.log_dir,
                               self.gateway_flags)
        self.gateway.wait_ready()


class PdCluster(_ProcessGroup):
    """Prefill/decode disaggregation: P prefill workers (each with its bootstrap port) and D decode workers
    behind the gateway's --pd-disaggregation mode. Leaving the `with` kills every process."""

    def __init__(self, binary, prefill=1, decode=1, model=DEFAULT_MODEL, threads=1, log_dir=None,
                 gateway_python=None, gateway_flags=(), prefill_flags=(), decode_flags=(), policy="round_robin"):
        self.log_dir = pathlib.Path(log_dir or tempfile.mkdtemp(prefix="tempered-pd-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.binary, self.model, self.threads, self.policy = str(binary), model, threads, policy
        self.prefill_count, self.decode_count = prefill, decode
        self.prefill_flags, self.decode_flags = list(prefill_flags), list(decode_flags)
        self.gateway_python = gateway_python or sys.executable
        self.gateway_flags = list(gateway_flags)
        self.prefills, self.decodes, self.gateway = [], [], None

    def start_prefill(self, index, extra=()):
        bootstrap_port = free_port()
        worker = Worker(f"prefill-{index}", self.binary, self.model, self.threads, self.log_dir,
                        ["--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port", bootstrap_port,
                         *self.prefill_flags, *extra])
        worker.bootstrap_port = bootstrap_port
        return worker

    def start_decode(self, index, extra=()):
        return Worker(f"decode-{index}", self.binary, self.model, self.threads, self.log_dir,
                      ["--disaggregation-mode", "decode", *self.decode_flags, *extra])

    @property
    def workers(self):
        return self.prefills + self.decodes

    def start(self):
        self.prefills = [self.start_prefill(i) for i in range(self.prefill_count)]
        self.decodes = [self.start_decode(i) for i in range(self.decode_count)]
        for worker in self.workers:
            worker.wait_ready()
        extra = ["--pd-disaggregation"]
        for worker in self.prefills:
            extra += ["--prefill", worker.url, str(worker.bootstrap_port)]
        for worker in self.decodes:
            extra += ["--decode", worker.url]
        self.gateway = Gateway(self.gateway_python, [], self.policy, self.log_dir, [*extra, *self.gateway_flags])
        self.gateway.worker_urls = [w.url for w in self.workers]
        self.gateway.wait_ready()


# ---- Requests

def chat_body(model, system, user, max_tokens, stream=False):
    return {"model": model, "max_tokens": max_tokens, "temperature": 0, "stream": stream,
            **({"stream_options": {"include_usage": True}} if stream else {}),
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def streamed_chat(base_url, body, timeout=300):
    """One streamed chat request: {status, ttft_s, total_s, usage, error}. Never raises on a failure."""
    started = time.monotonic()
    request = urllib.request.Request(base_url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    result = {"status": None, "ttft_s": None, "total_s": None, "usage": None, "error": None}
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            result["status"] = response.status
            for raw in response:
                line = raw.decode(errors="replace").strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: "):])
                if "error" in event:
                    result["error"] = json.dumps(event["error"])[:500]
                if result["ttft_s"] is None and any(c.get("delta", {}).get("content") for c in event.get("choices", [])):
                    result["ttft_s"] = time.monotonic() - started
                if event.get("usage"):
                    result["usage"] = event["usage"]
    except urllib.error.HTTPError as error:
        result["status"] = error.code
        result["error"] = error.read().decode(errors="replace")[:500]
    except Exception as error:  # a connection reset or a broken stream: recorded, not raised
        result["error"] = f"{type(error).__name__}: {error}"[:500]
    result["total_s"] = time.monotonic() - started
    if result["status"] == 200 and result["usage"] is None and result["error"] is None:
        result["error"] = "the stream ended without its usage chunk"
    return result


def whole_chat(base_url, body, timeout=300):
    """One non-streamed chat request: {status, total_s, usage, error}. Never raises on a failure."""
    started = time.monotonic()
    result = {"status": None, "total_s": None, "usage": None, "error": None}
    try:
        status, answer = http_json("POST", base_url + "/v1/chat/completions", body, timeout=timeout)
        result["status"] = status
        if status == 200 and isinstance(answer, dict) and answer.get("choices"):
            result["usage"] = answer.get("usage")
        else:
            result["error"] = (answer if isinstance(answer, str) else json.dumps(answer))[:500]
    except Exception as error:  # connection refused or reset, timeout
        result["error"] = f"{type(error).__name__}: {error}"[:500]
    result["total_s"] = time.monotonic() - started
    return result


def run_requests(send, bodies, concurrency, after_each=None):
    """Sends `bodies` in order from `concurrency` client threads (each takes the next body when free).
    `send(body)` returns a result dict; `after_each(done_count)` runs after every completion. Results are
    in the order of `bodies`, each with its index and start time."""
    import threading
    results = [None] * len(bodies)
    next_index = [0]
    done = [0]
    lock = threading.Lock()

    def client():
        while True:
            with lock:
                index = next_index[0]
                if index >= len(bodies):
                    return
                next_index[0] += 1
            started = time.monotonic()
            result = send(bodies[index])
            result.update(index=index, started=started)
            results[index] = result
            with lock:
                done[0] += 1
                count = done[0]
            if after_each:
                after_each(count)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def machine_description():
    """CPU model and core count, for a results file."""
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} logical cores"


def versions(gateway_python):
    """The tempered commit and the sglang-router version, for a results file."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    router = subprocess.run([gateway_python, "-c", "import importlib.metadata as m; print(m.version('sglang-router'))"],
                            capture_output=True, text=True).stdout.strip()
    return {"tempered_commit": commit, "sglang_router": router}


# ---- Prometheus text and percentiles

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_prometheus(text):
    """[(name, {label: value}, value)] for every sample line."""
    samples = []
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        samples.append((match.group(1), labels, float(match.group(3))))
    return samples


def metric_sum(samples, name):
    return sum(value for sample_name, _, value in samples if sample_name == name)


def histogram_buckets(samples, name):
    """{le: cumulative count} summed over label sets, for the histogram `name`."""
    buckets = {}
    for sample_name, labels, value in samples:
        if sample_name == name + "_bucket":
            le = float(labels["le"])
            buckets[le] = buckets.get(le, 0.0) + value
    return buckets


def subtract_buckets(after, before):
    return {le: count - before.get(le, 0.0) for le, count in after.items()}


def histogram_quantile(q, buckets):
    """Prometheus's histogram_quantile: linear inside the bucket that holds the q-th observation."""
    ordered = sorted(buckets.items())
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for upper, count in ordered:
        if count >= rank:
            if math.isinf(upper):
                return lower_bound
            return lower_bound + (upper - lower_bound) * (rank - lower_count) / max(count - lower_count, 1e-12)
        lower_bound, lower_count = upper, count
    return ordered[-1][0]


def percentile(values, q):
    """Nearest-rank percentile of a list (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def default_binary():
    path = pathlib.Path(os.environ.get("TEMPERED_BIN", "build/tempered"))
    return path if path.is_absolute() else REPO / path
