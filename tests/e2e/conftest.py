"""Fixtures that run `tempered serve` (TEMPERED_BIN, default build/tempered) on the real model.

- `default_server` (session): the model with default flags, shared by the tests that need nothing special.
- `server` (module): a server started with the flags given by indirect parametrisation, e.g.

      @pytest.mark.parametrize("server", [["--max-running", "1"]], indirect=True)
      def test_x(server): ...

  or with a dict {"args": [...], "name": "..."}; the model flags are added. Test modules may also
  override `server_args` instead of parametrising.

Each fixture waits for GET /health to answer 200, yields a helpers.Server (base_url, client(), openai(),
metrics(), log()), and on teardown sends SIGTERM and asserts exit status 0. Without the model file the
tests are skipped, or fail when TEMPERED_REQUIRE_MODELS=1.
"""
import pytest

from helpers import model_args, running_server


@pytest.fixture(scope="session")
def default_server():
    with running_server(model_args(), name="default") as server:
        yield server


@pytest.fixture(scope="module")
def server_args():
    return []


@pytest.fixture(scope="module")
def server(request, server_args):
    param = getattr(request, "param", None)
    name = request.module.__name__.rsplit(".", 1)[-1]
    if isinstance(param, dict):
        args = list(param.get("args", []))
        name = param.get("name", name)
    elif param is not None:
        args = list(param)
    else:
        args = list(server_args)
    with running_server(model_args() + args, name=name) as running:
        yield running
