"""Count the asserts of the tests that check printed text, against all asserts.

    python3 tests/printed_asserts.py            # the share, and the five files with most
    python3 tests/printed_asserts.py --list     # every assert on printed text, file:line

Printed output is pinned in one place, the README block check
(tests/readme_commands.py); the other tests assert on returned values.
An assert counts as one on printed text when its expression reads what a
script or function printed:
- capsys.readouterr() (or its .out / .err), or
- the .stdout / .stderr of a finished subprocess (run_script's result), or
- a local name bound, earlier in the same test, to one of those (out =
  capsys.readouterr().out; text = result.stdout + result.stderr).
Tests of a one-line error may check that line (the error line is the
behaviour); they count as printed-text asserts all the same, so the share
says how much of the suite a rewording touches.

Counted over tests/test_*.py, every `assert` statement (a parametrized test
counts once per assert statement, not per case).
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PRINTED_ATTRIBUTES = {"out", "err", "stdout", "stderr"}


@dataclass(frozen=True)
class Assert:
    """One assert statement: file (name under tests/), line (1-based), printed (reads printed text)."""

    file: str
    line: int
    printed: bool


def reads_printed(node: ast.AST, printed_names: set[str]) -> bool:
    """Whether the expression node reads printed text: a readouterr() call, a .out/.err/.stdout/.stderr
    attribute, or a name in printed_names."""
    for part in ast.walk(node):
        if isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr == "readouterr":
            return True
        if isinstance(part, ast.Attribute) and part.attr in PRINTED_ATTRIBUTES:
            return True
        if isinstance(part, ast.Name) and part.id in printed_names:
            return True
    return False


def asserts_of(path: Path) -> list[Assert]:
    """Every assert statement of one test file, marked printed or not (see the module docstring)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[Assert] = []
    tests = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    tests += [item for node in tree.body if isinstance(node, ast.ClassDef)
              for item in node.body if isinstance(item, ast.FunctionDef)]
    for test in tests:
        printed_names: set[str] = set()
        # Source order, not ast.walk's breadth-first order: a name bound inside a with-block comes before
        # the assert that reads it.
        for node in sorted((node for node in ast.walk(test) if isinstance(node, (ast.Assign, ast.Assert))),
                           key=lambda node: (node.lineno, node.col_offset)):
            if isinstance(node, ast.Assign) and reads_printed(node.value, printed_names):
                printed_names.update(target.id for target in node.targets if isinstance(target, ast.Name))
            elif isinstance(node, ast.Assert):
                found.append(Assert(path.name, node.lineno, reads_printed(node.test, printed_names)))
    return sorted(found, key=lambda found: found.line)


def count(folder: Path = TESTS) -> list[Assert]:
    """The asserts of every tests/test_*.py file, in file and line order."""
    return [found for path in sorted(folder.glob("test_*.py")) for found in asserts_of(path)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="list every assert on printed text")
    args = parser.parse_args(argv)
    asserts = count()
    printed = [found for found in asserts if found.printed]
    if args.list:
        for found in printed:
            print(f"tests/{found.file}:{found.line}")
    share = len(printed) / len(asserts) if asserts else 0.0
    print(f"{len(printed):,} of {len(asserts):,} asserts check printed text ({share:.1%}), "
          f"in {len({found.file for found in printed})} of {len({found.file for found in asserts})} test files")
    for file, n in Counter(found.file for found in printed).most_common(5):
        print(f"  {n:4d}  tests/{file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
