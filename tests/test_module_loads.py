"""The floors hold: a script that needs no server loads no module of 00-setup (the HTTP client's floor).

Each script runs as a reader runs it, `python3 <script> --help`, in a fresh
interpreter; tests/module_loads.py collects the repository modules it loads
and tells server scripts from offline ones (`python3 tests/module_loads.py`
prints the table). test_confidence.py holds post 03's
03-where-confidence-comes-from/confidence.py to the same rule.
"""
import pytest
from module_loads import ROOT, script_modules, scripts, setup_modules, talks_to_server

# Scripts that read files and need no server: the ones that once loaded llama_http for its error wrapper.
OFFLINE = ("01-why-typed-decisions/beyond/baseline.py", "02-forcing-a-valid-answer/compare.py", "datasets/check_groups.py")


@pytest.fixture(scope="module")
def loads() -> dict[str, tuple[bool, list[str]]]:
    """script (relative path) -> (talks to a server, the repository modules its --help loads)."""
    measured = {}
    for script in scripts():
        modules = script_modules(script)
        measured[str(script.relative_to(ROOT))] = (talks_to_server(script, modules), modules)
    return measured


def test_every_script_that_needs_no_server_loads_no_00_setup_module(loads):
    offline = {script: modules for script, (server, modules) in loads.items() if not server}
    assert len(offline) >= len(OFFLINE)
    assert {script: setup_modules(modules) for script, modules in offline.items() if setup_modules(modules)} == {}


@pytest.mark.parametrize("script", OFFLINE)
def test_a_script_without_a_client_counts_as_offline_and_ends_without_llama_http(loads, script):
    server, modules = loads[script]
    assert not server
    assert "00-setup/toolbox/script_exit.py" in modules and "00-setup/llama_http.py" not in modules


def test_a_script_that_asks_the_server_counts_as_a_server_script(loads):
    # 02's run.py imports Client itself; 03's run.py gets it from typed_lines.py, which it loads
    assert loads["02-forcing-a-valid-answer/run.py"][0]
    assert "00-setup/llama_http.py" in loads["02-forcing-a-valid-answer/run.py"][1]
