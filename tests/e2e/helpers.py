"""Shared pieces of the `tempered serve` end-to-end tests: the binary and model, a running server,
Server-Sent Events, Prometheus text and the OpenAI error envelope.

The server is the real binary on a free loopback port; every test talks to it over HTTP only.
"""
import contextlib
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import tempfile
import time

import pytest

try:  # the openai SDK ships its HTTP client as `httpx2`; plain httpx has the same interface
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHORT_NAME = "smollm2-135m-instruct"
MODEL_STEM = "SmolLM2-135M-Instruct.Q4_1"
CONTEXT_LENGTH = 8192
VOCAB_SIZE = 49152
READY_TIMEOUT_S = 120    # model load; a healthy start takes a second or two
EXIT_TIMEOUT_S = 60      # SIGTERM to exit (drain included)
REQUEST_TIMEOUT_S = 120  # one request; generous for the shared 2-core machine


def tempered_bin():
    path = pathlib.Path(os.environ.get("TEMPERED_BIN", "build/tempered"))
    return path if path.is_absolute() else REPO / path


def server_model_cache_dir():
    """Where `tempered` looks up short model names (src/runtime/model_names.cpp)."""
    home = os.environ.get("TEMPERED_HOME")
    if home:
        return pathlib.Path(home) / "models"
    return pathlib.Path(os.path.expanduser("~")) / ".cache" / "tempered" / "models"


def model_path(file_name=None, short_name=None):
    """A real model file (default: the SmolLM2 one); skips (or fails with TEMPERED_REQUIRE_MODELS=1) when it
    is absent."""
    file_name = file_name or MODEL_FILE
    short_name = short_name or MODEL_SHORT_NAME
    model_dir = os.environ.get("TEMPERED_MODEL_DIR")
    path = (pathlib.Path(model_dir) if model_dir else server_model_cache_dir()) / file_name
    if not path.is_file():
        message = f"model {path} is absent (scripts/pull_model.py {short_name})"
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    if not tempered_bin().is_file():
        pytest.fail(f"tempered binary not found at {tempered_bin()} (set TEMPERED_BIN)")
    return path


def model_args():
    """--model as the known short name when the server will find it by that name, else the path plus
    --served-model-name, so that every server set-up serves the model as MODEL_SHORT_NAME."""
    path = model_path()
    if path.resolve() == (server_model_cache_dir() / MODEL_FILE).resolve():
        return ["--model", MODEL_SHORT_NAME]
    return ["--model", str(path), "--served-model-name", MODEL_SHORT_NAME]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One `tempered serve` process. stderr goes to a file (read it with .log())."""

    def __init__(self, args, name="server", threads=2):
        self.args = list(args)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.name = name
        self._log = tempfile.NamedTemporaryFile(prefix=f"tempered-{name}-", suffix=".log", delete=False)
        command = [str(tempered_bin()), "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        if threads and "--threads" not in self.args:
            command += ["--threads", str(threads)]
        self.command = command + self.args
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT)

    def log(self):
        with open(self._log.name, "r", errors="replace") as f:
            return f.read()

    def log_tail(self, chars=4000):
        return self.log()[-chars:]

    def wait_ready(self, timeout=READY_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name}: tempered serve exited with {self.process.returncode} before "
                                     f"it was ready\ncommand: {self.command}\n{self.log_tail()}")
            try:
                response = httpx.get(self.base_url + "/health", timeout=2)
                last = response.status_code
                if response.status_code == 200:
                    return self
                assert response.status_code == 503, f"/health answered {response.status_code} while loading"
            except httpx.TransportError as error:
                last = repr(error)
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"{self.name}: not ready after {timeout}s (last /health: {last})\n{self.log_tail()}")

    def terminate(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout=EXIT_TIMEOUT_S):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name}: still running {timeout}s after SIGTERM\n{self.log_tail()}")

    def stop(self):
        """SIGTERM (unless it has already exited), wait, and insist on exit status 0."""
        self.terminate()
        code = self.wait_exit()
        assert code == 0, f"{self.name}: exit status {code} after SIGTERM (expected 0)\n{self.log_tail()}"

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    # ---- HTTP helpers
    def client(self, **kwargs):
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        return httpx.Client(base_url=self.base_url, **kwargs)

    def get(self, path, **kwargs):
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        return httpx.get(self.base_url + path, **kwargs)

    def post(self, path, body=None, **kwargs):
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        if body is not None:
            kwargs["json"] = body
        return httpx.post(self.base_url + path, **kwargs)

    def metrics(self):
        response = self.get("/metrics")
        assert response.status_code == 200, response.text
        return Metrics(response.text)

    def openai(self):
        import openai
        return openai.OpenAI(base_url=self.base_url + "/v1", api_key="x", max_retries=0, timeout=REQUEST_TIMEOUT_S)


@contextlib.contextmanager
def running_server(args, name="server", threads=2):
    """Starts a server, waits for /health, yields it; on exit SIGTERM and asserts status 0."""
    server = Server(args, name=name, threads=threads)
    try:
        server.wait_ready()
    except BaseException:
        server.kill()
        raise
    try:
        yield server
    except BaseException:
        # The test failed: still stop the server, but report the test's failure, not the stop's.
        server.terminate()
        with contextlib.suppress(Exception):
            server.wait_exit()
        server.kill()
        raise
    server.stop()


# ---- Server-Sent Events

def read_sse(response):
    """The `data:` payloads of a streamed response: dicts for JSON events, the string "[DONE]" as is."""
    return parse_sse_lines(response.iter_lines())


def parse_sse_lines(lines):
    """Asserts the framing: every non-empty line is a `data: ` line (or an SSE comment)."""
    events = []
    for line in lines:
        if line == "" or line.startswith(":"):
            continue
        assert line.startswith("data: "), f"not an SSE data line: {line!r}"
        payload = line[len("data: "):]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def first_text_chunk(lines, chat=False):
    """Reads SSE lines up to the first chunk that carries generated text (the first chunk may carry only
    the role or the sampling report). Keep `lines` (response.iter_lines()) referenced while the stream
    should stay open: a half-read iterator that is dropped closes the connection."""
    for line in lines:
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[len("data: "):]).get("choices", []):
            if (choice.get("delta", {}).get("content") if chat else choice.get("text")):
                return True
    return False


def stream_events(client, path, body, headers=None):
    """POSTs body with stream=True and returns (status, headers, events)."""
    with client.stream("POST", path, json=body, headers=headers or {}) as response:
        if response.status_code != 200:
            response.read()
            return response.status_code, response.headers, response.json()
        assert response.headers.get("content-type", "").startswith("text/event-stream"), response.headers
        return response.status_code, response.headers, read_sse(response)


def stream_text(events, index=0, chat=True):
    """The generated text of one choice, joined across chunks."""
    parts = []
    for event in events:
        if event == "[DONE]":
            continue
        for choice in event.get("choices", []):
            if choice["index"] != index:
                continue
            if chat:
                parts.append(choice["delta"].get("content") or "")
            else:
                parts.append(choice.get("text") or "")
    return "".join(parts)


def finish_reasons(events):
    """{choice index: finish_reason} from the chunks that carry one."""
    reasons = {}
    for event in events:
        if event == "[DONE]":
            continue
        for choice in event.get("choices", []):
            if choice.get("finish_reason") is not None:
                assert choice["index"] not in reasons, f"two finish_reasons for choice {choice['index']}"
                reasons[choice["index"]] = choice["finish_reason"]
    return reasons


# ---- Prometheus text

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Metrics:
    def __init__(self, text):
        self.text = text
        self.samples = []  # (name, {label: value}, float)
        self.types = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(None, 3)
                self.types[name] = kind
                continue
            if not line or line.startswith("#"):
                continue
            match = _SAMPLE.match(line)
            assert match, f"malformed Prometheus sample line: {line!r}"
            labels = dict(_LABEL.findall(match.group(3) or ""))
            self.samples.append((match.group(1), labels, float(match.group(4))))

    def find(self, name, **labels):
        return [(l, v) for n, l, v in self.samples if n == name and all(l.get(k) == str(x) for k, x in labels.items())]

    def has(self, name):
        return any(n == name for n, _, _ in self.samples)

    def value(self, name, **labels):
        """The sum over the samples of `name` whose labels include `labels`; 0 when there are none."""
        return sum(v for _, v in self.find(name, **labels))

    def require(self, name, **labels):
        found = self.find(name, **labels)
        assert found, f"/metrics has no sample {name} {labels}\n" + "\n".join(
            line for line in self.text.splitlines() if name.split(":")[-1][:12] in line)
        return sum(v for _, v in found)


def wait_for_metric(server, name, predicate, timeout=10.0, **labels):
    """Polls /metrics until predicate(value) holds; returns the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while True:
        value = server.metrics().value(name, **labels)
        if predicate(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


# ---- OpenAI error envelope

def assert_error(response, status, param=None, code=None, message_contains=None):
    """The response is an OpenAI error envelope with this status (and param/code when given)."""
    assert response.status_code == status, (
        f"expected HTTP {status}, got {response.status_code}: {response.text[:500]}")
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON: {response.text[:500]!r}")
    assert set(body) >= {"error"}, body
    error = body["error"]
    assert isinstance(error, dict), body
    assert set(error) >= {"message", "type", "param", "code"}, f"error envelope lacks fields: {body}"
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["type"], str) and error["type"], body
    if param is not None:
        if callable(param):
            assert param(error["param"]), f"unexpected param {error['param']!r}: {body}"
        else:
            assert error["param"] == param, f"expected param {param!r}, got {error['param']!r}: {body}"
    if code is not None:
        assert error["code"] == code, f"expected code {code!r}, got {error['code']!r}: {body}"
    if message_contains is not None:
        assert message_contains in error["message"], body
    return error


def chat_body(content="Say hello.", **fields):
    body = {"model": MODEL_SHORT_NAME, "messages": [{"role": "user", "content": content}]}
    body.update(fields)
    return body


def completion_body(prompt="The capital of France is", **fields):
    body = {"model": MODEL_SHORT_NAME, "prompt": prompt}
    body.update(fields)
    return body
