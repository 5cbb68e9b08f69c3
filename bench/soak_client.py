"""The soak's request kinds (bench/soak.py): each sends one request of its kind and says how it ended.

Outcome classes:
- `completed`: 200 with a well-formed body, or a stream of well-formed events ending in [DONE];
- `clear_error`: a 4xx/5xx with OpenAI's error shape, or a stream that ends with an SSE error event;
- `client_abort`: the client went away on purpose before the answer ended;
- `lost`: anything else: the connection reset or closed without an answer, a malformed body or event, a
  stream without [DONE], no byte of an answer for the client timeout (--timeout, 120 s).
Only `lost` is a failure. A kind also names the classes it expects (an oversized prompt should get a clear
error, not an answer); an outcome outside them is reported as unexpected, apart from the lost count.
"""
import http.client
import json
import random
import select
import socket
import time
from dataclasses import dataclass

try:  # the openai SDK ships its HTTP client as `httpx2`; plain httpx has the same interface
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx

COMPLETED, CLEAR_ERROR, CLIENT_ABORT, LOST = "completed", "clear_error", "client_abort", "lost"
CLASSES = (COMPLETED, CLEAR_ERROR, CLIENT_ABORT, LOST)

SYSTEM_PROMPTS = [  # shared prefixes, so that the prefix cache holds blocks between requests
    "You are a concise assistant. Answer in one or two sentences.",
    "You are a helpful assistant for a hardware shop. Be friendly, precise and brief. " * 4,
    "You are a poet. Every answer rhymes.",
]
USER_PROMPTS = [
    "What is the capital of France?", "Name three prime numbers.", "Why is the sky blue?",
    "Write a haiku about rain.", "List the planets of the solar system.", "What is 17 times 23?",
    "Explain recursion to a child.", "Give me a word that rhymes with cat.", "Describe a cup of tea.",
    "How do magnets work?", "Count from one to ten.", "What does a compiler do?",
]
TEMPERATURES = [0, 0, 0.3, 0.7, 1.0, 1.5, None]


@dataclass
class Outcome:
    outcome: str
    detail: str = ""


@dataclass
class Target:
    """Where and how the kinds send: the server, the served model name, headers, limits."""
    host: str
    port: int
    model: str
    api_key: str | None
    timeout_s: float
    max_body_bytes: int
    context_length: int
    deadline: float = 0.0  # the soak's end (monotonic): stalls do not run past it by much

    def headers(self):
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


# ---- request bodies

def chat_body(rng, target, **extra):
    messages = [{"role": "user", "content": rng.choice(USER_PROMPTS)}]
    if rng.random() < 0.7:
        messages.insert(0, {"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    body = {"model": target.model, "messages": messages, "max_tokens": rng.randint(16, 128)}
    return with_temperature(rng, body) | extra


def completion_body(rng, target, **extra):
    prompt = rng.choice(SYSTEM_PROMPTS) + "\n" + rng.choice(USER_PROMPTS) + "\n"
    body = {"model": target.model, "prompt": prompt, "max_tokens": rng.randint(16, 128)}
    return with_temperature(rng, body) | extra


def with_temperature(rng, body):
    temperature = rng.choice(TEMPERATURES)
    if temperature is not None:
        body["temperature"] = temperature
    return body


# ---- checking answers

def is_openai_error(text):
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return False
    return isinstance(error, dict) and isinstance(error.get("message"), str) and "type" in error


def error_outcome(status, text):
    if is_openai_error(text):
        return Outcome(CLEAR_ERROR, f"{status}")
    return Outcome(LOST, f"{status} without OpenAI's error shape: {text[:120]!r}")


def whole_outcome(status, text, n, chat, logprobs):
    if status != 200:
        return error_outcome(status, text)
    try:
        choices = json.loads(text)["choices"]
    except (ValueError, KeyError, TypeError):
        return Outcome(LOST, f"200 with a malformed body: {text[:120]!r}")
    problem = choices_problem(choices, n, chat, logprobs)
    return Outcome(LOST, problem) if problem else Outcome(COMPLETED, "200")


def choices_problem(choices, n, chat, logprobs):
    if not isinstance(choices, list) or sorted(c.get("index") for c in choices) != list(range(n)):
        return f"expected choices 0..{n - 1}, got {choices!r:.120}"
    for choice in choices:
        if not choice.get("finish_reason"):
            return f"choice {choice.get('index')} has no finish_reason"
        text = choice.get("message", {}).get("content") if chat else choice.get("text")
        if not isinstance(text, str) and not (chat and choice.get("message", {}).get("tool_calls")):
            return f"choice {choice.get('index')} has no text"
        if logprobs and choice.get("logprobs") is None:
            return f"choice {choice.get('index')} has no logprobs"
    return None


class StreamChecker:
    """Reads SSE lines: every data line is JSON or [DONE]; each choice gets a finish_reason before [DONE]."""

    def __init__(self, n):
        self.n = n
        self.finished = set()
        self.chunks = 0
        self.error = None
        self.done = False

    def feed(self, line):
        """None to go on, else the problem (a string) that makes the stream malformed."""
        if line == "" or line.startswith(":"):
            return None
        if not line.startswith("data: ") or self.done:
            return f"unexpected line {line[:80]!r}" + (" after [DONE]" if self.done else "")
        payload = line[len("data: "):]
        if payload == "[DONE]":
            self.done = True
            return None
        try:
            event = json.loads(payload)
        except ValueError:
            return f"event is not JSON: {payload[:80]!r}"
        if "error" in event:
            self.error = event["error"]
            return None
        self.chunks += 1
        for choice in event.get("choices", []):
            if choice.get("finish_reason"):
                self.finished.add(choice.get("index"))
        return None

    def outcome(self):
        if not self.done:
            return Outcome(LOST, f"stream ended without [DONE] after {self.chunks} chunks")
        if self.error is not None:
            ok = isinstance(self.error, dict) and isinstance(self.error.get("message"), str)
            return Outcome(CLEAR_ERROR, "SSE error event") if ok else Outcome(LOST, f"bad error event {self.error!r}")
        if self.finished != set(range(self.n)):
            return Outcome(LOST, f"[DONE] but finish_reason only for choices {sorted(self.finished)}")
        return Outcome(COMPLETED, "[DONE]")


# ---- kinds over an httpx client (keep-alive, as SDK clients do)

def post_whole(client, target, path, body, chat):
    response = client.post(path, json=body, headers=target.headers())
    return whole_outcome(response.status_code, response.text, body.get("n", 1), chat, bool(body.get("logprobs")))


def post_stream(client, target, path, body, stop_after=None):
    """A streamed request; with `stop_after`, the client closes it after that many chunks. A stream that
    goes on slowly is not lost; one silent for the client timeout is (httpx's read timeout)."""
    with client.stream("POST", path, json=body | {"stream": True}, headers=target.headers()) as response:
        if response.status_code != 200:
            return error_outcome(response.status_code, response.read().decode(errors="replace"))
        checker = StreamChecker(body.get("n", 1))
        for line in response.iter_lines():
            problem = checker.feed(line)
            if problem:
                return Outcome(LOST, problem)
            if stop_after is not None and checker.chunks >= stop_after and not checker.done:
                return Outcome(CLIENT_ABORT, f"closed after {checker.chunks} chunks")
        return checker.outcome()


def chat(rng, client, target):
    return post_whole(client, target, "/v1/chat/completions", chat_body(rng, target), chat=True)


def chat_stream(rng, client, target):
    return post_stream(client, target, "/v1/chat/completions", chat_body(rng, target))


def completion(rng, client, target):
    return post_whole(client, target, "/v1/completions", completion_body(rng, target), chat=False)


def completion_stream(rng, client, target):
    return post_stream(client, target, "/v1/completions", completion_body(rng, target))


def stop_strings(rng, client, target):
    body = chat_body(rng, target, stop=rng.choice([["."], ["\n"], [".", "!", "?"], ["the", "and"]]))
    if rng.random() < 0.5:
        return post_stream(client, target, "/v1/chat/completions", body)
    return post_whole(client, target, "/v1/chat/completions", body, chat=True)


def n_choices(rng, client, target):
    body = chat_body(rng, target, n=rng.randint(2, 4), temperature=rng.choice([0.5, 0.8, 1.0]))
    if rng.random() < 0.5:
        return post_stream(client, target, "/v1/chat/completions", body)
    return post_whole(client, target, "/v1/chat/completions", body, chat=True)


def logprobs(rng, client, target):
    if rng.random() < 0.5:
        body = chat_body(rng, target, logprobs=True, top_logprobs=rng.randint(0, 5))
        return post_whole(client, target, "/v1/chat/completions", body, chat=True)
    body = completion_body(rng, target, logprobs=rng.randint(1, 5))
    return post_stream(client, target, "/v1/completions", body)


def cancel_stream(rng, client, target):
    path, body = rng.choice([("/v1/chat/completions", chat_body(rng, target, max_tokens=128)),
                             ("/v1/completions", completion_body(rng, target, max_tokens=128))])
    return post_stream(client, target, path, body, stop_after=rng.randint(1, 8))


# ---- oversized and malformed inputs (clear errors expected)

def prompt_too_long(rng, client, target):
    words = " ".join(rng.choice(["apple", "river", "stone", "cloud"]) for _ in range(target.context_length + 500))
    body = {"model": target.model, "messages": [{"role": "user", "content": words}], "max_tokens": 16}
    return post_whole(client, target, "/v1/chat/completions", body, chat=True)


def max_tokens_too_big(rng, client, target):
    body = chat_body(rng, target, max_tokens=target.context_length * rng.choice([2, 100]))
    return post_whole(client, target, "/v1/chat/completions", body, chat=True)


def malformed_json(rng, client, target):
    content = rng.choice(['{"model": "x", "messages": [', "not json at all", '{"messages": [{"role": "user"}]',
                          '{"model": 1, "prompt": {"a": ]}', ""])
    response = client.post(rng.choice(["/v1/chat/completions", "/v1/completions"]), content=content,
                           headers=target.headers() | {"Content-Type": "application/json"})
    return whole_outcome(response.status_code, response.text, 1, True, False)


def unknown_model(rng, client, target):
    body = chat_body(rng, target, model=rng.choice(["gpt-4o", "no-such-model", "smollm2-135m-instruct-x"]))
    return post_whole(client, target, "/v1/chat/completions", body, chat=True)


# ---- kinds over a raw connection (Connection: close), where the client's own timing matters

def raw_connection(target, receive_buffer=None):
    connection = http.client.HTTPConnection(target.host, target.port, timeout=target.timeout_s)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(target.timeout_s)
    sock.connect((target.host, target.port))
    connection.sock = sock
    return connection


def send_raw(connection, target, path, body_bytes):
    headers = target.headers() | {"Content-Type": "application/json", "Connection": "close"}
    connection.request("POST", path, body=body_bytes, headers=headers)


def close_hard(connection):
    """Close with RST (SO_LINGER 0), as a killed client does, rather than FIN."""
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    connection.close()


def close(rng, connection):
    close_hard(connection) if rng.random() < 0.5 else connection.close()


def disconnect_at_once(rng, client, target):
    connection = raw_connection(target)
    body = chat_body(rng, target, stream=rng.random() < 0.5)
    send_raw(connection, target, "/v1/chat/completions", json.dumps(body).encode())
    close(rng, connection)
    return Outcome(CLIENT_ABORT, "closed right after sending")


def cancel_whole(rng, client, target):
    """A whole (unstreamed) request whose socket is closed while the server works on it."""
    connection = raw_connection(target)
    body = chat_body(rng, target, max_tokens=128)
    send_raw(connection, target, "/v1/chat/completions", json.dumps(body).encode())
    wait = rng.uniform(0.1, 3.0)
    readable, _, _ = select.select([connection.sock], [], [], wait)
    if readable:  # the answer came first: it must be a whole, well-formed one
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
        connection.close()
        return whole_outcome(response.status, text, 1, True, False)
    close(rng, connection)
    return Outcome(CLIENT_ABORT, f"closed after {wait:.1f} s")


def stop_reading(rng, client, target):
    """Opens a long stream, reads nothing for a while (small receive buffer), then closes."""
    connection = raw_connection(target, receive_buffer=4096)
    body = chat_body(rng, target, max_tokens=512, stream=True)
    send_raw(connection, target, "/v1/chat/completions", json.dumps(body).encode())
    stall = min(rng.uniform(5, 30), max(1.0, target.deadline - time.monotonic()))
    time.sleep(stall)
    close(rng, connection)
    return Outcome(CLIENT_ABORT, f"read nothing for {stall:.0f} s")


def body_too_large(rng, client, target):
    """A body over --max-body-bytes: sent whole (Content-Length), then the answer read."""
    filler = "x" * (target.max_body_bytes + rng.randint(1, 512 * 1024))
    body = json.dumps({"model": target.model, "messages": [{"role": "user", "content": filler}]}).encode()
    connection = raw_connection(target)
    try:
        send_raw(connection, target, "/v1/chat/completions", body)
    except (BrokenPipeError, ConnectionResetError) as error:
        detail = f"server closed while the client sent the body ({type(error).__name__})"
        # The server may have answered 413 before closing; read what it sent.
        try:
            response = connection.getresponse()
            return whole_outcome(response.status, response.read().decode(errors="replace"), 1, True, False)
        except (OSError, http.client.HTTPException):
            return Outcome(LOST, detail)
    response = connection.getresponse()
    outcome = whole_outcome(response.status, response.read().decode(errors="replace"), 1, True, False)
    connection.close()
    return outcome


@dataclass
class Kind:
    name: str
    weight: int
    run: object
    expected: tuple


KINDS = [
    Kind("chat", 12, chat, (COMPLETED,)),
    Kind("chat_stream", 16, chat_stream, (COMPLETED,)),
    Kind("completion", 8, completion, (COMPLETED,)),
    Kind("completion_stream", 8, completion_stream, (COMPLETED,)),
    Kind("stop_strings", 5, stop_strings, (COMPLETED,)),
    Kind("n_choices", 5, n_choices, (COMPLETED,)),
    Kind("logprobs", 5, logprobs, (COMPLETED,)),
    Kind("cancel_stream", 8, cancel_stream, (CLIENT_ABORT, COMPLETED)),
    Kind("cancel_whole", 5, cancel_whole, (CLIENT_ABORT, COMPLETED)),
    Kind("disconnect_at_once", 5, disconnect_at_once, (CLIENT_ABORT,)),
    Kind("stop_reading", 3, stop_reading, (CLIENT_ABORT,)),
    Kind("prompt_too_long", 2, prompt_too_long, (CLEAR_ERROR,)),
    Kind("max_tokens_too_big", 2, max_tokens_too_big, (CLEAR_ERROR,)),
    Kind("body_too_large", 2, body_too_large, (CLEAR_ERROR,)),
    Kind("malformed_json", 3, malformed_json, (CLEAR_ERROR,)),
    Kind("unknown_model", 2, unknown_model, (CLEAR_ERROR,)),
]


def pick_kind(rng):
    return rng.choices(KINDS, weights=[kind.weight for kind in KINDS])[0]


def run_kind(kind, rng, client, target):
    """The kind's outcome; any exception the client raises (reset, timeout, protocol error) is LOST."""
    try:
        return kind.run(rng, client, target)
    except (httpx.TimeoutException, socket.timeout, TimeoutError) as error:
        return Outcome(LOST, f"client timeout ({target.timeout_s:.0f} s): {type(error).__name__}")
    except (httpx.HTTPError, OSError, http.client.HTTPException) as error:
        return Outcome(LOST, f"{type(error).__name__}: {str(error)[:160]}")


def new_client(target):
    # Idle pooled connections are dropped after 2 s, before the server's keep-alive limit closes them, so a
    # request never races the server's close of an idle connection (that would read as a lost request).
    return httpx.Client(base_url=f"http://{target.host}:{target.port}", timeout=target.timeout_s,
                        limits=httpx.Limits(max_connections=1, keepalive_expiry=2.0))


def seeded(seed, worker):
    return random.Random(seed * 1000 + worker)
