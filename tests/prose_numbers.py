"""Numbers in the prose of the READMEs that state a measured result: each one is quoted or says where it comes from.

    python3 tests/prose_numbers.py            # list every measured number that is neither, and count them
    python3 tests/prose_numbers.py FILE ...   # only these files

tests/test_prose_numbers.py runs the same check: a README whose prose quotes
a figure that no block of it shows and whose paragraph names no source fails.

The rule
--------
Prose is the text of a .md file outside its ``` blocks, table rows included.
A measured number is
- a percentage: 26.9%, 98.5 %;
- a number with a decimal point: 0.0849, 7.58 (a confidence, an ECE, a
  threshold, a rate);
- a count of answers: a whole number followed by one of the words answers,
  right, wrong, acted, asked, handed, correct (1,378 acted on, 19 wrong).
It is sourced when
1. a ```console block of the same file shows it (the output of the command
   shown: 0.0849 in "ECE, 15 bins: 0.0849"), to the digits written or
   rounded to them (0.085 for 0.0849, 26.9% for 26.851 or 0.26851), or
2. its paragraph (the lines between blank lines; for a table row, the whole
   table and the paragraph just before it) names where it comes from: a
   command or script in backticks (`python3 ...`, `baseline.py`), the GB10
   (a figure of the series' reference setup), or "the series' post" (a
   figure the posts give).
Exempt, by this rule, as definitions, settings or arithmetic shown inline:
- numbers in `inline code`, headings, link targets and HTML comments;
- a probability with one decimal, 0.0 to 1.0 (a bin edge, a range bound, a
  threshold to talk about: "below 0.5"), and the bounds of a range written
  with a hyphen (0.33-0.47);
- versions and dates (3.11.2, b11312, 2026-11-30), clock times (09:03), and
  the number after "Python", "Ubuntu", "Debian", "CC BY" and "load average" (a version, a
  licence, the machine's load while a figure was measured);
- a number followed by a unit of time, size or length: ms, s, min, minutes,
  hours, seconds, MB, GB, KB, bytes, tokens, tokens/s, cores, GiB (timings
  are named with their command where they are measured, and checked by eye);
- every number of an arithmetic expression written out, one with an "=" and
  a x, ×, /, + or - between two numbers (0.9486 x 0.9818 = 0.9314): its
  operands are quoted elsewhere or it is a worked definition.
"""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

NUMBER = re.compile(r"(?<![\w.\-/:])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\s?%)?(?![\w\-/:]|\.\d)")
COUNT_WORDS = ("answers", "right", "wrong", "acted", "asked", "handed", "correct")
UNITS = re.compile(r"\s?(ms|s|min|minutes|hours|seconds|MB|GB|KB|GiB|bytes|tokens(/s)?|cores)\b")
SOURCES = re.compile(r"`python3 [^`]+`|`[\w./-]+\.py`|GB10|the series' post", re.I)
CONSOLE_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")
ARITHMETIC = re.compile(r"\d[\d,.]*%?\s*(?:[x×*/+]|\s-\s)\s*\d[\d,.]*%?(?:\s*(?:[x×*/+]|\s-\s)\s*\d[\d,.]*%?)*\s*=\s*\d[\d,.]*%?")
INLINE = re.compile(r"`[^`]*`|<!--.*?-->|\]\([^)]*\)|https?://\S+")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(:\d{2})?|\bb\d{3,}|(?:Python|Ubuntu|Debian|CC BY|load average)\s+[\d.]+\+?")


@dataclass(frozen=True)
class Finding:
    """A measured number of a file's prose with no source: file and 1-based line, the number, the line's text."""

    file: str
    line: int
    number: str
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.number!r} in: {self.text.strip()[:110]}"


def blocks_and_prose(text: str) -> tuple[str, list[tuple[int, str]]]:
    """(the text of every console block joined, the prose lines as (1-based line number, line))."""
    console, prose, fence = [], [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip()
            continue
        if fence is None:
            prose.append((number, line))
        elif fence == "console":
            console.append(line)
    return "\n".join(console), prose


def paragraphs(prose: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """The prose split at blank lines; a table (lines starting with |) joins the paragraph before it."""
    groups: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    previous_number = None
    for number, line in prose:
        gap = previous_number is not None and number != previous_number + 1  # a block came between
        if not line.strip() or gap:
            if current:
                groups.append(current)
            current = []
        if line.strip():
            current.append((number, line))
        previous_number = number
    if current:
        groups.append(current)
    joined: list[list[tuple[int, str]]] = []
    for group in groups:
        if joined and group[0][1].lstrip().startswith("|"):
            joined[-1] = joined[-1] + group
        else:
            joined.append(group)
    return joined


def measured_numbers(line: str) -> list[str]:
    """The measured numbers of one prose line (the rule above), as written."""
    if line.lstrip().startswith("#"):
        return []
    cleaned = INLINE.sub(lambda m: " " * len(m.group(0)), line)
    cleaned = ARITHMETIC.sub(lambda m: " " * len(m.group(0)), cleaned)
    cleaned = DATE.sub(lambda m: " " * len(m.group(0)), cleaned)
    found = []
    for match in NUMBER.finditer(cleaned):
        whole, decimals, percent = match.groups()
        after = cleaned[match.end():]
        if not percent and UNITS.match(after):
            continue
        if decimals and len(decimals) == 2 and whole in ("0", "1") and float(whole + decimals) <= 1.0 and not percent:
            continue  # 0.5, 1.0: a bound to talk about
        if percent or decimals:
            found.append(match.group(0).strip())
        elif re.match(r"\s+(?:\w+\s+)?(" + "|".join(COUNT_WORDS) + r")\b", after):
            found.append(match.group(0).strip())
    return found


def shown_in(value: str, console_numbers: set[float], console: str) -> bool:
    """Whether a console block shows value: its digits as written, or a number that rounds to them (a
    percentage also as a share: 26.9% for 0.26851)."""
    digits = value.replace("%", "").strip()
    if re.search(rf"(?<![\d.]){re.escape(digits)}(?![\d])", console):
        return True
    number = float(digits.replace(",", ""))
    places = len(digits.split(".")[1]) if "." in digits else 0
    scales = (1, 100) if value.endswith("%") else (1,)
    return any(round(shown * scale, places) == number for shown in console_numbers for scale in scales)


def unsourced(text: str, file: str = "README.md") -> list[Finding]:
    """Every measured number of text's prose that no console block shows and whose paragraph names no source."""
    console, prose = blocks_and_prose(text)
    console_numbers = {float(n.replace(",", "")) for n in CONSOLE_NUMBER.findall(console)}
    findings = []
    for paragraph in paragraphs(prose):
        if SOURCES.search(" ".join(line for _, line in paragraph)):
            continue
        for number, line in paragraph:
            for value in measured_numbers(line):
                if not shown_in(value, console_numbers, console):
                    findings.append(Finding(file, number, value, line))
    return findings


def markdown_files(root: Path = ROOT) -> list[str]:
    """The .md files git tracks, relative to root."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.md"], cwd=root, capture_output=True, text=True,
                            check=True).stdout
    return sorted(filter(None, listed.split("\0")))


def check(files: list[str] | None = None, root: Path = ROOT) -> list[Finding]:
    """unsourced() of every tracked .md file (or of `files`)."""
    return [finding for name in (files or markdown_files(root))
            for finding in unsourced((root / name).read_text(encoding="utf-8"), name)]


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    findings = check(argv or None)
    for finding in findings:
        print(finding)
    print(f"{len(findings)} measured numbers in prose with no source")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
