"""Which repository modules a post script loads: the floors, measured.

    python3 tests/module_loads.py            # every script run with --help, and confidence.py imported
    python3 tests/module_loads.py --all      # also list the modules of each

A script is run as a reader runs it (`python3 <script> --help`) in a fresh
interpreter, and the modules in sys.modules whose file lies in the
repository are collected (series.py included, the script itself not). A
script talks to a server when it imports `Client` from llama_http anywhere
(02's prompt.py does inside main() for --count), or a module of the
repository it loads does at its top level (03's run.py gets its client from
typed_lines.py); every other script is offline, and an offline script
loads no module of 00-setup, the floor that holds the HTTP client.
tests/test_module_loads.py asserts on these values.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUP = "00-setup"
MAIN_BLOCK = 'if __name__ == "__main__":'  # a line of its own in every script

# Run in the child: the script as __main__ with --help (argparse exits), stdout muted, then the module files.
_PROBE = """
import contextlib, io, json, runpy, sys
root, target, kind = sys.argv[1:4]
sys.path.insert(0, root)
if kind == "script":
    sys.argv = [target, "--help"]
    sys.path.insert(0, str(__import__("pathlib").Path(target).parent))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(target, run_name="__main__")
    except SystemExit:
        pass
else:
    import series
    __import__(target)
files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
print(json.dumps(sorted(f for f in files if f and f.startswith(root + "/") and "/.venv/" not in f)))
"""


def _loaded(target: str, kind: str) -> list[str]:
    """The repository files (relative to ROOT, sorted) loaded by running or importing `target`."""
    done = subprocess.run([sys.executable, "-c", _PROBE, str(ROOT), target, kind], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {target} failed: {done.stderr.strip().splitlines()[-1:]}")
    return [str(Path(f).relative_to(ROOT)) for f in json.loads(done.stdout)]


def script_modules(script: Path) -> list[str]:
    """The repository modules that `python3 <script> --help` loads: paths relative to the root, the script
    itself left out. Raises RuntimeError when the script fails before argparse stops it."""
    own = str(script.resolve().relative_to(ROOT))
    return [f for f in _loaded(str(script.resolve()), "script") if f != own]


def import_modules(module: str) -> list[str]:
    """The repository modules that `import series; import <module>` loads (series.py and the module included)."""
    return _loaded(module, "module")


def imports_client(path: Path, anywhere: bool) -> bool:
    """True when the file imports Client from llama_http: at its top level, or (anywhere) also inside a function
    or its __main__ block."""
    tree = ast.parse(path.read_text())
    return any(isinstance(node, ast.ImportFrom) and node.module == "llama_http"
               and any(alias.name == "Client" for alias in node.names)
               for node in (ast.walk(tree) if anywhere else tree.body))


def scripts() -> list[Path]:
    """Every script of the post folders (any depth) and of datasets/: a .py file with a line MAIN_BLOCK."""
    folders = sorted(p for p in ROOT.iterdir() if p.is_dir() and (p.name[:2].isdigit() or p.name == "datasets"))
    return sorted(path for folder in folders for path in folder.rglob("*.py")
                  if MAIN_BLOCK in path.read_text().splitlines() and "/reference/" not in str(path))


def talks_to_server(script: Path, modules: list[str]) -> bool:
    """Whether the script imports Client from llama_http anywhere, or a module it loads does at its top level
    (a module's function that would import it is not called by the script just for being loaded)."""
    return imports_client(script, anywhere=True) or any(imports_client(ROOT / m, anywhere=False) for m in modules)


def setup_modules(modules: list[str]) -> list[str]:
    """The modules of 00-setup among `modules`, its toolbox/ left out (the toolbox every script uses, not the
    HTTP client's floor)."""
    return [m for m in modules if m.startswith(SETUP + "/") and not m.startswith(SETUP + "/toolbox/")]


def main() -> int:
    show_all = "--all" in sys.argv[1:]
    rows = [("import confidence", import_modules("confidence"), False)]
    rows += [(str(s.relative_to(ROOT)) + " --help", mods, talks_to_server(s, mods))
             for s in scripts() for mods in [script_modules(s)]]
    print(f"{'what':<52} {'kind':<8} {'modules':>7} {'00-setup':>8}")
    for what, modules, server in rows:
        print(f"{what:<52} {'server' if server else 'offline':<8} {len(modules):7d} {len(setup_modules(modules)):8d}")
        if show_all:
            print("    " + " ".join(modules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
