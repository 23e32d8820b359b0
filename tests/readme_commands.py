"""Every command a README shows, collected, classified and run: a README that drifts from its script fails.

    python3 tests/readme_commands.py            # run the offline commands, show what differs
    python3 tests/readme_commands.py --list     # every command with its kind, and the counts
    python3 tests/readme_commands.py --update   # rewrite the shown output of the offline console blocks
    python3 tests/readme_commands.py 00-setup/README.md   # only the commands of one file

The plot scripts need matplotlib: without it, the command line reruns itself
with .venv/bin/python (made by `python3 run_tests.py`) when there is one.
tests/test_readme_commands.py runs the same commands under pytest; tests/readme_blocks.py
reads them from the blocks.

The convention for commands in the .md files (README.md, beyond/README.md and its pages...)
-----------------------------------------------------------------------------------------------
- A command whose output the README shows is a ```console block: a line
  `$ <command>`, then what it prints on stdout, exactly. A line that is only
  `...` stands for any number of lines (for long outputs the README trims).
  One block may hold several `$` commands, each followed by its output.
- A command shown without output is a line of a ```sh block (`#` starts a
  comment).
- In both, a command goes on over the next lines while a quote is open or a
  line ends with `\\`. `A && B` is two commands. `NAME=value` before a
  command sets an environment variable.
- Commands in backticks inside the prose are not collected. Blocks with
  another info string (```python, ```json, none) are not commands.
- Paths under the repository appear relative to its root: a script that
  prints an absolute path inside the repository is shown without the prefix.

The kinds of command
--------------------
A command is `python3 <script> ...` or `python3 -c "<code>"`. It needs a
server when its script (or code) imports `Client` from llama_http at the top
level, that is outside any function, or imports at the top level a module of
the repository that does (03's run.py gets its client from typed_lines.py).
02's prompt.py imports Client inside main() only for --count, so
`prompt.py --grammar` is offline.

- offline console: run, stdout compared with the block (`...` matching any lines);
- offline sh: run, exit status 0 required;
- server --limit: the script accepts --limit (the text "--limit" is in its
  source, or it calls 02's add_split_arguments, which adds it): run against $LLAMA_URL with `--limit 2` (replacing the README's
  N, or added; `--sample 2` instead when the README's command draws a --sample), and `--out` pointed at a temporary file where the script has
  that option; exit status 0 required, the output is not compared (the test
  model is not the README's);
- parse-only: every other server command, an offline script of SLOW_SCRIPTS
  without the option that keeps it fast (01's baseline.py without `--method
  neighbours`), and an offline command that comes
  after a server command in the same block (it reads what that command
  writes, as 02's compare.py reads run.py's files) or that names a task of
  your own with --dataset (it reads that task's runs, which only a server
  makes: datasets/your-task.md): the script parses the
  README's arguments with its own argparse parser and stops (python3 -c: the
  code is compiled), so a flag the script no longer has fails;
- not run: the programs in NOT_RUN_PROGRAMS (git, uv, pip, export, cd,
  docker), shell scripts, `python3 -m ...` and the scripts in
  NOT_RUN_SCRIPTS. Any other program fails the test: probably a typo.

Offline and server commands run with shell=False from the root of a fresh
copy of the repository (the files git tracks, see `repository_copy`), where
the BANKING77 reference results also stand in for a reader's own files under
the names the READMEs give them (my-calib-run.jsonl, my-test-run.jsonl); so
no command can change a file of the repository, and a command that names
one of those files finds it. `python3` is this interpreter;
TYPED_DECISIONS_DATA comes from the environment, else ../shared/datasets
(run_tests.dataset_mirror, the rule tests/conftest.py applies); MPLBACKEND=Agg.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import functools
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from run_tests import dataset_mirror  # the rule for where the datasets are read
from readme_blocks import ROOT, Command, collect, parse_markdown  # the commands, as the .md files show them

ELISION = "..."
KINDS = ("offline console", "offline sh", "server --limit", "parse-only", "not run")
# Python scripts a README shows that must not run inside a test, and why.
NOT_RUN_SCRIPTS = {"run_tests.py": "runs the whole test suite, this test included, and starts a server",
                   "post_tags.py": "makes tags in a git repository; tests/test_post_tags.py runs it in a clone"}
# Offline scripts too slow for a test unless given the option that keeps them fast, and why: only parsed otherwise.
SLOW_SCRIPTS = {"01-why-typed-decisions/beyond/baseline.py": (
    ("--method", "neighbours"),
    "its logistic regressions take minutes to fit the first time; tests/test_linear.py holds the fit to scikit-learn")}
# Programs a README may show that are never run here (a typo such as `pyhton3` is none of them).
# curl talks to a running service (08-routes/beyond/service); tests/test_service.py sends those requests itself.
NOT_RUN_PROGRAMS = ("cd", "curl", "docker", "export", "git", "pip", "uv")
# Source text that shows a script takes --limit: its own option, or batch.py's add_split_arguments (02's and 03's run.py).
# The names the READMEs give a reader's own results files, and the reference file that stands in for each.
OWN_FILES = {"my-calib-run.jsonl": "banking77-calib.jsonl", "my-test-run.jsonl": "banking77-test.jsonl"}
LIMIT_IN_TESTS = "2"
OFFLINE_TIMEOUT_S = 300
SERVER_TIMEOUT_S = 900

# Run by `python3 -c` with the script and its arguments: the script's own parser
# parses them, then the script stops with status 0 before doing anything else.
PARSE_ONLY = """
import argparse, runpy, sys
parse = argparse.ArgumentParser.parse_args
def parse_then_stop(self, args=None, namespace=None):
    parse(self, args, namespace)
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = parse_then_stop
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
raise SystemExit(f"{sys.argv[0]} ended without parsing its arguments")
"""


@dataclass(frozen=True)
class Kind:
    """What the tests do with a command: one of KINDS, the script (a path, or the code of
    python3 -c), its arguments, and for "not run" (and a slow script only parsed) the reason."""
    name: str
    script: str = ""
    args: tuple[str, ...] = ()
    reason: str = ""
    inline_code: bool = False


@dataclass
class Outcome:
    """A command that was run: the argv it ran with, its exit status, stdout and stderr
    (paths inside the copy of the repository made relative to it)."""
    command: Command
    returncode: int
    stdout: str
    stderr: str
    argv: list[str] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


# ---------------------------------------------------------------- classifying

def imports_client(source: str) -> bool:
    """True when the code imports Client from llama_http outside any function or class."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.ImportFrom) and node.module == "llama_http"
               and any(alias.name == "Client" for alias in node.names) for node in _outside_functions(tree))


def top_level_imports(source: str) -> set[str]:
    """The top-level names of the modules the code imports outside any function or class."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in _outside_functions(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@functools.lru_cache(maxsize=None)
def module_paths(root: Path) -> dict[str, Path]:
    """Module name -> file of the top-level .py files of the post folders and datasets/ (series.py's folders)."""
    return {path.stem: path for folder in sorted(root.iterdir())
            if folder.is_dir() and (folder.name[:2].isdigit() or folder.name == "datasets")
            for path in sorted(folder.glob("*.py"))}


def needs_server(source: str, root: Path = ROOT, seen: frozenset[str] = frozenset()) -> bool:
    """imports_client(source), or a repository module it imports at the top level needs the server (recursively)."""
    if imports_client(source):
        return True
    modules = module_paths(root)
    return any(needs_server(_source(modules[name]), root, seen | {name})
               for name in sorted(top_level_imports(source) - seen) if name in modules)


def _outside_functions(node: ast.AST):
    """The nodes below node that are not inside a function or class body."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield child
            yield from _outside_functions(child)


def classify(command: Command, root: Path = ROOT) -> Kind:
    """The kind of a command (see the module docstring)."""
    argv = command.argv
    if not argv:
        return Kind("not run", reason="unknown program: an empty command")
    if argv[0] != "python3":
        if argv[0] in NOT_RUN_PROGRAMS or argv[0].endswith(".sh"):
            return Kind("not run", reason=f"{argv[0]}: not a python3 command")
        return Kind("not run", reason=f"unknown program {argv[0]}: a typo, or add it to NOT_RUN_PROGRAMS")
    if any(word in ("|", "||", ";", "&", ">", ">>", "<", "(", ")") for word in argv):
        return Kind("not run", reason="shell syntax beyond `&&`")
    if len(argv) < 2:
        return Kind("not run", reason="python3 without a script")
    offline = f"offline {command.block}"
    if argv[1] == "-c":
        code = argv[2] if len(argv) > 2 else ""
        kind = "parse-only" if needs_server(code, root) else offline
        return Kind(kind, code, tuple(argv[3:]), inline_code=True)
    if argv[1].startswith("-"):
        return Kind("not run", reason=f"python3 {argv[1]} runs no script of the repository")
    script, args = argv[1], tuple(argv[2:])
    if script in NOT_RUN_SCRIPTS:
        return Kind("not run", script, args, reason=NOT_RUN_SCRIPTS[script])
    path = root / script
    source = _source(path)
    if not needs_server(source, root):
        fast = SLOW_SCRIPTS.get(script, (None,))[0]
        if fast and not any(args[i:i + len(fast)] == fast for i in range(len(args))):
            return Kind("parse-only", script, args, reason=SLOW_SCRIPTS[script][1])
        if any(needs_server(_source(root / earlier), root) for earlier in command.earlier):
            # It reads what a server command before it in the block writes (02's compare.py after run.py).
            return Kind("parse-only", script, args)
        if task_named(args, root):
            # It reads the runs of a task of your own, which only a server makes (datasets/your-task.md).
            return Kind("parse-only", script, args)
        return Kind(offline, script, args)
    if takes_limit(path):
        return Kind("server --limit", script, args)
    return Kind("parse-only", script, args)


def task_named(args: tuple[str, ...], root: Path = ROOT) -> bool:
    """True when args hold `--dataset NAME` for a task of your own (no loader module NAME.py in datasets/)."""
    name = next((args[i + 1] for i in range(len(args) - 1) if args[i] == "--dataset"), None)
    return name is not None and not (root / "datasets" / f"{name}.py").exists()


def _source(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


@functools.lru_cache(maxsize=None)
def takes_limit(path: Path) -> bool:
    """True when the script's --help lists a --limit option (the option may come from a shared helper)."""
    result = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=60)
    return result.returncode == 0 and "--limit" in result.stdout


# ---------------------------------------------------------------- running

def repository_copy(target: Path) -> Path:
    """The files git tracks (as a fresh clone has them, plus uncommitted edits) copied to target."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


# Pages whose later commands read what their first ones make (the walk-through makes a task that the rest name):
# workspace() runs their offline commands once, in page order, so each command finds what it reads.
BUILDS_ON = ("datasets/your-task.md", "datasets/your-task-combined.md")


def workspace(target: Path) -> Path:
    """A fresh copy of the repository to run README commands in, with the BANKING77 reference
    results also copied to the names the READMEs give a reader's own files (OWN_FILES), and what the
    offline commands of the BUILDS_ON pages make."""
    repository_copy(target)
    for page in BUILDS_ON:
        if (target / page).exists():
            for command in parse_markdown((target / page).read_text(), page):
                if classify(command, target).name.startswith("offline"):
                    exits = run_offline(command, target).returncode
                    if exits:
                        raise RuntimeError(f"{command.id}: exit status {exits} while preparing the copy")
    for name, reference in OWN_FILES.items():
        # A tag before post-03 has no reference results, and no README there names these files.
        found = next((target / "results" / "reference").rglob(reference), None)
        if found:
            shutil.copy2(found, target / name)
    return target


def command_env(command: Command) -> dict[str, str]:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", **dict(command.env)}
    env.pop("TYPED_DECISIONS_TASKS", None)  # a task a README makes goes into the copy's tasks/
    return {**env, **dataset_mirror(env)}


def _run(command: Command, argv: list[str], workdir: Path, timeout: float, env: dict[str, str] | None = None) -> Outcome:
    result = subprocess.run(argv, cwd=workdir, env=env or command_env(command), capture_output=True, text=True,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    prefix = f"{workdir}{os.sep}"
    return Outcome(command, result.returncode, result.stdout.replace(prefix, ""), result.stderr.replace(prefix, ""),
                   argv)


def run_offline(command: Command, workdir: Path) -> Outcome:
    """Run an offline command in workdir (a `workspace`) as the README shows it: without the tests' LLAMA_URL
    (unless the command sets it), as a reader types it, so a `next:` line that names LLAMA_URL when it is set
    prints as the README shows it."""
    env = command_env(command)
    if "LLAMA_URL" not in dict(command.env):
        env.pop("LLAMA_URL", None)
    return _run(command, [sys.executable, *command.argv[1:]], workdir, OFFLINE_TIMEOUT_S, env)


def with_option(args: tuple[str, ...], option: str, value: str) -> list[str]:
    """args with `option value` (or `option=value`) set to value, added at the end when absent."""
    out, index, found = [], 0, False
    while index < len(args):
        word = args[index]
        if word == option and index + 1 < len(args):
            out += [option, value]
            index += 2
            found = True
            continue
        if word.startswith(option + "="):
            out.append(f"{option}={value}")
            found = True
        else:
            out.append(word)
        index += 1
    return out if found else [*out, option, value]


def limited(command: Command, workdir: Path, tmp: Path) -> Command:
    """The server command as the tests run it: --limit 2 (--sample 2 for a command with --sample, which refuses
    --limit), --out in tmp where the script has --out, and --other-model where it has one (the test server's
    model is not the one of the reference runs it reads)."""
    kind = classify(command, workdir)
    sampled = any(word == "--sample" or word.startswith("--sample=") for word in kind.args)
    args = with_option(kind.args, "--sample" if sampled else "--limit", LIMIT_IN_TESTS)
    source = (workdir / kind.script).read_text()
    if '"--out"' in source:
        args = with_option(tuple(args), "--out", str(tmp / "out.jsonl"))
    if '"--other-model"' in source and "--other-model" not in args:
        args = (*args, "--other-model")
    argv = ("python3", kind.script, *args)
    return replace(command, text=shlex.join(argv), argv=argv)


def run_with_limit(command: Command, workdir: Path, tmp: Path) -> Outcome:
    """Run a server command against $LLAMA_URL as `limited` makes it."""
    return _run(command, [sys.executable, *limited(command, workdir, tmp).argv[1:]], workdir, SERVER_TIMEOUT_S)


def parse_only(command: Command, workdir: Path) -> Outcome:
    """Let the script parse the README's arguments and stop; python3 -c code is compiled."""
    kind = classify(command, workdir)
    if kind.inline_code:
        try:
            compile(kind.script, command.id, "exec")
        except SyntaxError as error:
            return Outcome(command, 1, "", f"{command.id}: {error}")
        return Outcome(command, 0, "", "")
    return _run(command, [sys.executable, "-c", PARSE_ONLY, kind.script, *kind.args], workdir, OFFLINE_TIMEOUT_S)


# ---------------------------------------------------------------- comparing and updating

def matches(shown: list[str] | tuple[str, ...], actual: list[str]) -> bool:
    """True when actual equals shown, where a shown line `...` stands for any number of lines."""
    pieces, current = [], []
    for line in shown:
        if line == ELISION:
            pieces.append(current)
            current = []
        else:
            current.append(line)
    pieces.append(current)
    if len(pieces) == 1:
        return list(shown) == actual
    head, *middle, tail = pieces
    if len(head) + len(tail) > len(actual) or actual[:len(head)] != head:
        return False
    if tail and actual[len(actual) - len(tail):] != tail:
        return False
    position, stop = len(head), len(actual) - len(tail)
    for piece in middle:  # leftmost match of each piece in turn is enough for `...` patterns
        found = next((start for start in range(position, stop - len(piece) + 1)
                      if actual[start:start + len(piece)] == piece), None)
        if found is None:
            return False
        position = found + len(piece)
    return True


def difference(command: Command, actual: list[str]) -> str:
    """A unified diff from the block the README shows to what the command printed."""
    return "\n".join(difflib.unified_diff(list(command.output or ()), actual, f"{command.id} (README)",
                                          f"{command.id} (printed)", lineterm=""))


def update_readmes(outcomes: list[Outcome], root: Path = ROOT) -> list[str]:
    """Rewrite the output of every console block whose command printed something else; returns one
    line per block changed. A block with `...` keeps them while the output still matches around
    them (then it is unchanged); otherwise the whole output replaces it."""
    changed = []
    by_file: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_file.setdefault(outcome.command.file, []).append(outcome)
    for name, found in by_file.items():
        path = root / name
        lines = path.read_text().split("\n")
        for outcome in sorted(found, key=lambda o: o.command.output_span, reverse=True):
            command = outcome.command
            if outcome.returncode != 0 or matches(command.output, outcome.lines):
                continue
            start, end = command.output_span
            lines[start:end] = [command.indent + line if line else line for line in outcome.lines]
            elided = ELISION in (command.output or ())
            changed.append(f"{command.id}: output updated" +
                           (" (its `...` no longer fit: the whole output replaces the block, trim it again)"
                            if elided else ""))
        text = "\n".join(lines)
        if text != path.read_text():
            path.write_text(text)
    return sorted(changed)


# ---------------------------------------------------------------- the command line

def main(argv: list[str] | None = None) -> int:
    venv_python = ROOT / ".venv" / "bin" / "python"
    if importlib.util.find_spec("matplotlib") is None and venv_python.exists() and sys.prefix != str(ROOT / ".venv"):
        os.execv(venv_python, [str(venv_python), __file__, *sys.argv[1:]])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="list every command with its kind, run nothing")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the shown output of offline console blocks with what the commands print")
    parser.add_argument("files", nargs="*", help="only the commands of these .md files (default: every one)")
    args = parser.parse_args(argv)
    commands = [command for command in collect() if not args.files or command.file in args.files]
    kinds = {command.id: classify(command) for command in commands}
    if args.list:
        for command in commands:
            kind = kinds[command.id]
            first = command.text.split("\n")[0] + (" ..." if "\n" in command.text else "")
            print(f"{command.id:<46} {kind.name:<16} {first[:100]}"
                  + (f"  ({kind.reason})" if kind.reason else ""))
        print()
        print(", ".join(f"{name}: {sum(k.name == name for k in kinds.values())}" for name in KINDS)
              + f"; {len(commands)} in all")
        return 0
    offline = [c for c in commands if kinds[c.id].name.startswith("offline")]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = workspace(Path(tmp) / "repo")
        outcomes = [run_offline(command, workdir) for command in offline]
    failed = 0
    for outcome in outcomes:
        command = outcome.command
        if outcome.returncode != 0:
            failed += 1
            print(f"{command.id}: exit status {outcome.returncode}\n{outcome.stderr.strip()}\n")
        elif command.block == "console" and not matches(command.output, outcome.lines):
            failed += 1
            print(difference(command, outcome.lines) + "\n")
    if args.update:
        for line in update_readmes([o for o in outcomes if o.command.block == "console"]):
            print(line)
    print(f"{len(outcomes)} offline commands run, {failed} "
          + ("differed or failed before the update" if args.update else "differ or fail"))
    return 1 if failed and not args.update else 0


if __name__ == "__main__":
    sys.exit(main())
