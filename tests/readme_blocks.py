"""The README commands of tests/readme_commands.py, read: every ```console and ```sh block of the .md files
git tracks, turned into Commands by the convention that module's docstring sets out.

parse_markdown reads one text, collect every README of the repository;
unlabelled_command_blocks finds the blocks that look like commands but carry
no info string. A block that breaks the convention raises ReadmeFormatError
naming the file and line. Nothing here runs a command: readme_commands.py
classifies and runs them.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class ReadmeFormatError(ValueError):
    """A command block that breaks the convention (the message names the file and line)."""


@dataclass(frozen=True)
class Command:
    """One command of a README block.

    file, line: the README (relative to the repository root) and the 1-based
    line where the command starts; part: 1 for the first command of a line,
    2 for the one after `&&`, ... block: "console" or "sh". text: the command
    as written (continuation lines included). argv: its words; env: the
    NAME=value settings before it. output: the lines the README shows after
    it (console only, else None), found at output_span (0-based, end
    excluded) of the file's lines, indented by indent. earlier: the python3
    scripts run before it in the same block (a later command may read what
    they write).
    """
    file: str
    line: int
    block: str
    text: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    part: int = 1
    output: tuple[str, ...] | None = None
    output_span: tuple[int, int] = (0, 0)
    indent: str = ""
    earlier: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}" + (f"+{self.part}" if self.part > 1 else "")


# ---------------------------------------------------------------- parsing

def _words(text: str, where: str) -> list[str] | None:
    """The shell words of text (comments dropped, `&&` and other operators as their own
    words), or None while a quote is still open."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError as error:
        if "closing quotation" in str(error):
            return None
        raise ReadmeFormatError(f"{where}: {error}") from None


def _split_command(file: str, line: int, block: str, text: str, **extra) -> list[Command]:
    """The commands of one command text: split at `&&`, NAME=value prefixes taken out."""
    words = _words(text, f"{file}:{line}")
    parts, current = [], []
    for word in words + ["&&"]:
        if word == "&&":
            if not current:
                raise ReadmeFormatError(f"{file}:{line}: empty command around && in {text!r}")
            parts.append(current)
            current = []
        else:
            current.append(word)
    if len(parts) > 1 and block == "console":
        raise ReadmeFormatError(f"{file}:{line}: a console command cannot chain with && (give each its own $ line)")
    commands = []
    for number, words in enumerate(parts, start=1):
        env = []
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]) and len(words) > 1:
            name, value = words.pop(0).split("=", 1)
            env.append((name, value))
        commands.append(Command(file, line, block, text, tuple(words), tuple(env), number, **extra))
    return commands


def _read_command(lines: list[str], start: int, end: int, first: str, where: str) -> tuple[str, int]:
    """The command that starts with `first` at lines[start], taking continuation lines up to
    end: returns its text and the index after its last line."""
    text, index = first, start + 1
    while True:
        if text.endswith("\\"):
            if index >= end:
                raise ReadmeFormatError(f"{where}: the block ends after a `\\` continuation")
            text = text[:-1] + lines[index]
        elif _words(text, where) is None:
            if index >= end:
                raise ReadmeFormatError(f"{where}: a quote opened here is never closed")
            text = text + "\n" + lines[index]
        else:
            return text, index
        index += 1


def _blocks(text: str, file: str):
    """(info string, index of the first line inside, index of the closing fence, indent, lines)
    for every ``` block of a Markdown text; the lines have the fence's indentation removed."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        # CommonMark: 3 or more backticks, an info string without backticks; closed by as many or more
        opening = re.fullmatch(r"( {0,3})(`{3,})\s*([^`\s]*)[^`]*", lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, info = opening.groups()
        end = index + 1
        while end < len(lines) and not re.fullmatch(rf" {{0,3}}{fence}`*\s*", lines[end]):
            end += 1
        if end == len(lines):
            raise ReadmeFormatError(f"{file}:{index + 1}: a ``` block that is never closed")
        inside = list(lines)
        inside[index + 1:end] = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                                 for line in lines[index + 1:end]]
        yield info, index + 1, end, indent, inside
        index = end + 1


def _with_earlier(commands: list[Command]) -> list[Command]:
    """The commands of one block, each knowing the python3 scripts run before it in the block."""
    scripts, out = [], []
    for command in commands:
        out.append(replace(command, earlier=tuple(scripts)))
        if len(command.argv) > 1 and command.argv[0] == "python3" and not command.argv[1].startswith("-"):
            scripts.append(command.argv[1])
    return out


def parse_markdown(text: str, file: str = "README.md") -> list[Command]:
    """Every command of the ```console and ```sh blocks of one Markdown text, in order."""
    commands: list[Command] = []
    for info, start, end, indent, lines in _blocks(text, file):
        if info == "console":
            commands += _console_block(lines, start, end, file, indent)
        elif info == "sh":
            commands += _sh_block(lines, start, end, file)
    return commands


def _console_block(lines: list[str], start: int, end: int, file: str, indent: str) -> list[Command]:
    commands, index = [], start
    while index < end:
        if not lines[index].startswith("$ "):
            raise ReadmeFormatError(f"{file}:{index + 1}: a console block must start with a `$ <command>` line")
        where = f"{file}:{index + 1}"
        text, after = _read_command(lines, index, end, lines[index][2:], where)
        output_end = after
        while output_end < end and not lines[output_end].startswith("$ "):
            output_end += 1
        commands += _split_command(file, index + 1, "console", text, output=tuple(lines[after:output_end]),
                                   output_span=(after, output_end), indent=indent)
        index = output_end
    return _with_earlier(commands)


def _sh_block(lines: list[str], start: int, end: int, file: str) -> list[Command]:
    commands, index = [], start
    while index < end:
        if not lines[index].strip() or lines[index].lstrip().startswith("#"):
            index += 1
            continue
        text, after = _read_command(lines, index, end, lines[index], f"{file}:{index + 1}")
        commands += _split_command(file, index + 1, "sh", text)
        index = after
    return _with_earlier(commands)


def readme_files(root: Path = ROOT) -> list[str]:
    """The .md files git tracks, relative to root: every README.md (a post's, and that of the beyond/ folder
    of what goes beyond a post), the pages beside a README (08-routes/beyond/gate/gate.md...) and the like."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.md"], cwd=root, capture_output=True, text=True,
                            check=True).stdout
    return sorted(filter(None, listed.split("\0")))


def collect(root: Path = ROOT) -> list[Command]:
    """Every command of every README, in file order."""
    return [command for name in readme_files(root)
            for command in parse_markdown((root / name).read_text(), name)]


def unlabelled_command_blocks(text: str, file: str = "README.md") -> list[str]:
    """`file:line` of the opening fence of every ``` block without an info string whose first
    line looks like a command (`$ ...` or `python3 ...`): it should be a console or sh block."""
    return [f"{file}:{start}" for info, start, end, _, lines in _blocks(text, file)
            if not info and start < end and lines[start].startswith(("$ ", "python3 "))]
