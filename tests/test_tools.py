"""The test command brings its own tools, and `uv sync` + `uv run` work as post 04 uses them.

A system-wide shellcheck once made CI pass while a fresh machine failed: the
tests must find every program they call in the test environment that
run_tests.py installs. And post 04 tells readers to run `uv sync` at the root
and `uv run` a plot script; that must work, and must not break run_tests.py,
which then finds a .venv with only the runtime dependencies in it.
"""
import importlib.util
import os
import tomllib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from readme_commands import repository_copy  # the files git tracks, as a fresh clone has them

ROOT = Path(__file__).resolve().parents[1]
# Every program the tests run that does not come with Python or the OS.
TEST_PROGRAMS = ("shellcheck", "uv", "ruff")


@pytest.mark.parametrize("program", TEST_PROGRAMS)
def test_each_program_the_tests_call_resolves_inside_the_test_environment(program, venv_tool):
    found = shutil.which(program)
    assert found is not None, f"{program} is not on PATH"
    assert Path(found).parent == Path(sys.prefix) / "bin", f"{program} resolves to {found}, outside {sys.prefix}"
    assert Path(found) == Path(venv_tool(program))


def test_uv_sync_then_uv_run_plot_works_and_run_tests_repairs_the_venv_afterwards(tmp_path, venv_tool):
    repo = repository_copy(tmp_path / "repo")
    # Use this machine's Python (never download one) and no settings of the caller's venv.
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    env.update(UV_PYTHON_DOWNLOADS="never", UV_PYTHON=sys._base_executable, MPLBACKEND="Agg")
    uv = venv_tool("uv")
    synced = subprocess.run([uv, "sync"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert synced.returncode == 0, synced.stderr
    png = tmp_path / "reliability.png"
    plotted = subprocess.run([uv, "run", "04-is-the-confidence-honest/plot.py", "--no-show", "--png", str(png)],
                             cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert plotted.returncode == 0, plotted.stderr
    assert png.stat().st_size > 10_000

    # uv sync left only the runtime dependencies in .venv: run_tests.py must notice and repair it.
    spec = importlib.util.spec_from_file_location("run_tests_of_the_copy", repo / "run_tests.py")
    run_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_tests)
    assert run_tests.ROOT == repo
    python = repo / ".venv" / "bin" / "python"
    names = run_tests.requirement_names(tomllib.loads((repo / "pyproject.toml").read_text()))
    lacking = run_tests.missing_packages(python, names)
    assert any(line.startswith("pytest") for line in lacking), lacking
    repaired = subprocess.run([sys.executable, "-c", "import run_tests; run_tests.venv_python()"], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=1800)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert run_tests.missing_packages(python, names) == []  # pytest and the rest of the test extra are back


def test_run_tests_help_prints_its_usage_and_starts_nothing(tmp_path):
    # A lone copy: run_tests.py works in its own folder, where a first step would leave a .venv.
    shutil.copy2(ROOT / "run_tests.py", tmp_path)
    result = subprocess.run([sys.executable, "run_tests.py", "--help"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    assert result.stdout.startswith("Run the whole test suite") and "--offline" in result.stdout
    assert [path.name for path in tmp_path.iterdir()] == ["run_tests.py"]  # no .venv made, nothing installed


def test_run_tests_offline_runs_pytest_without_starting_a_server(free_port):
    if not (ROOT / ".venv").is_dir():
        # A tag's checkout, tested from main's test environment (test_post_tags.py): run_tests.py would spend
        # minutes making a .venv there first. On main, run_tests.py made it before running this test.
        pytest.skip("no .venv in this checkout: run_tests.py would make one first")
    import running_server as server
    port = free_port()  # nothing runs there: a server started for the tests would leave its log
    result = subprocess.run([sys.executable, "run_tests.py", "--offline", "--collect-only", "-q", "tests/test_tools.py"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "TEST_LLAMA_URL": f"http://127.0.0.1:{port}"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (server.RUN / f"llama-server-{port}.log").exists() and server.running(port) is None
