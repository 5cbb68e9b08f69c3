"""`tempered serve` started on a free local port for a bench script, and waited for until /health answers."""
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, model, extra=(), timeout=120, stderr=subprocess.DEVNULL):
    """(process, port); exits the script when the server does not come up within `timeout` seconds. `stderr`:
    where the server's log goes (a file object), none by default."""
    port = free_port()
    process = subprocess.Popen([binary, "serve", "--model", model, "--port", str(port), *extra],
                               stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    sys.exit("server did not start")
