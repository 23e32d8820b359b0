"""Shared test setup: module paths, the offline dataset mirror and the test server.

Integration tests talk to a real llama-server at $LLAMA_URL (run_tests.py
starts one with the 0.5B model). When it cannot be reached, those tests fail
with a line saying how to start it; they are never skipped.

`pytest --offline` deselects them instead (every test whose fixtures include
`client`, also through another fixture such as `letter_ids`), so the rest of a
post's tests run on a machine without a server. A test that needs the server
asks for `client`, even when only a script it runs talks to the server.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from llama_http import Client, ServerLoading, ServerUnreachable
from run_tests import dataset_mirror
import server_start as server
from script_sandbox import FakePath

# and every post's beyond/ folder and the rooms in it, whose scripts put them on sys.path themselves: the tests
# import their modules
sys.path[1:1] = [str(path) for path in sorted(Path(series.ROOT).glob("[0-9][0-9]-*/beyond"))
                 + sorted({p.parent for p in Path(series.ROOT).glob("[0-9][0-9]-*/beyond/*/*.py")})]

ROOT = series.ROOT
# Tests read the offline mirror next to the repository (as in CI) unless the
# caller points elsewhere; without one, the loaders download: run_tests.py's rule,
# and the only place the tests set it up.
os.environ.update(dataset_mirror(os.environ))


VENV_BIN = Path(sys.prefix) / "bin"
SERVER_FIXTURE = "client"


def pytest_addoption(parser):
    parser.addoption("--offline", action="store_true",
                     help=f"deselect the tests that need a llama-server (those using the {SERVER_FIXTURE!r} fixture)")


def pytest_collection_modifyitems(config, items):
    """With --offline, drop every test whose fixture closure reaches the server fixture (not a skip)."""
    if not config.getoption("--offline"):
        return
    offline = [item for item in items if SERVER_FIXTURE not in getattr(item, "fixturenames", ())]
    if len(offline) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in offline])
        items[:] = offline


@pytest.fixture(scope="session")
def venv_tool():
    """tool(name) -> the path of program `name` in the test environment's bin folder.

    Programs the tests call (shellcheck, uv) come from the test extra that
    run_tests.py installs, never from the machine: a system-wide copy once hid
    a missing install. Fails the test when the program is not there.
    """
    def tool(name: str) -> str:
        path = VENV_BIN / name
        if not path.exists():
            pytest.fail(f"{name} is not in {VENV_BIN}: run the tests with python3 run_tests.py, "
                        "which installs the test extra of pyproject.toml", pytrace=False)
        return str(path)
    return tool


@pytest.fixture
def fake_path(tmp_path):
    """A FakePath (script_sandbox.py) in this test's tmp_path: fake programs (and spies on real ones) that
    record each call, its argv and environment, as one JSON line; calls() reads them back."""
    return FakePath(tmp_path)


@pytest.fixture(scope="session")
def run_script():
    """run(path, *args, env=None) -> CompletedProcess: a script of the repository run as a reader runs it.

    From the repository root, with this interpreter, output captured as text;
    env entries are added to (not replacing) the environment.
    """
    def run(path: str, *args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / path), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)
    return run


@pytest.fixture
def label_file(tmp_path):
    """write(data) -> the path of a label file holding data (a dict, written as JSON) in the test's tmp folder."""
    def write(data: dict) -> Path:
        path = tmp_path / "labels.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path
    return write


@pytest.fixture(scope="session")
def free_port():
    """port() -> a TCP port on 127.0.0.1 that nothing listens on (at the moment of asking)."""
    return server.free_port


@pytest.fixture(scope="session")
def client():
    """A client of the running test server; fails (not skips) when there is none."""
    client = Client()
    try:
        client.wait_ready(timeout_s=120)
    except (ServerUnreachable, ServerLoading) as error:
        pytest.fail(f"integration tests need a running llama-server: {error} "
                    "(or run everything with: python3 run_tests.py)", pytrace=False)
    return client


@pytest.fixture(scope="session")
def prompt():
    """Post 02's prompt of BANKING77 (prompt.load_prompt): for the tests of post 02 on."""
    from prompt import load_prompt
    return load_prompt()


@pytest.fixture(scope="session")
def saved_prompt():
    """BANKING77's saved prompt (registry.SavedPrompt: system and grammar), what the setup sends before post 02
    exists: for the tests of 00-setup, which are in every tag."""
    from registry import dataset_named
    return dataset_named("banking77").saved_prompt()


@pytest.fixture(scope="session")
def letter_ids(client):
    from tokens import letter_tokens
    return letter_tokens(client)

