"""Two results files, message by message: the same code? right in both?

    python3 02-forcing-a-valid-answer/compare.py       # post 02: the 200-message run with the grammar vs without
    python3 02-forcing-a-valid-answer/compare.py first.jsonl second.jsonl   # any two results files of one split

Only the messages in both files are compared (matched by id), and only their
answers: a line with status error (a failed request) is counted on its own
and left out.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from results_file import final_and_failed, read_results, results_folder

WITH_GRAMMAR = results_folder(__file__) / "codes-banking77-calib.jsonl"
WITHOUT_GRAMMAR = results_folder(__file__) / "codes-banking77-calib-nogrammar.jsonl"
WRITE_THEM = ("python3 02-forcing-a-valid-answer/run.py --split calib --limit 200 [--no-grammar]")
SHOWN = 10


def percent(value: float | None) -> str:
    """A fraction as a percentage with one decimal ("12.3%"), "-" for None: the one percent formatter of the
    series (every later post imports it)."""
    return "-" if value is None else f"{100 * value:.1f}%"


def share_of(part: int, whole: int) -> str:
    """part / whole as percent() right-aligned in 6 characters ("  12.3%"), "-" for no whole."""
    return f"{percent(part / whole if whole else None):>6}"


def matched(first: list[dict], second: list[dict]) -> list[tuple[dict, dict]]:
    """The (first, second) lines of the messages in both lists, matched by id, in the first list's order (a
    message twice in the first counts once, its last line)."""
    second_by_id = {r["id"]: r for r in second}
    return [(r, second_by_id[r["id"]]) for r in {r["id"]: r for r in first}.values() if r["id"] in second_by_id]


@dataclass(frozen=True)
class Comparison:
    """Two results files' answers to the messages in both (matched(), in the first file's order).

    messages: how many; valid_first, valid_second: answers with a code (status ok) in each; same_code:
    messages given the same code (or no code in both); right_both, right_only_first, right_only_second:
    counts of correct answers; differing: the (first, second) lines of the messages with different codes.
    """

    messages: int
    valid_first: int
    valid_second: int
    same_code: int
    right_both: int
    right_only_first: int
    right_only_second: int
    differing: list[tuple[dict, dict]]


def compare(first: list[dict], second: list[dict]) -> Comparison:
    """The Comparison of two files' answers (lines without status error); messages is 0 when no id is in both."""
    pairs = matched(first, second)
    return Comparison(
        messages=len(pairs), valid_first=sum(x["status"] == "ok" for x, _ in pairs),
        valid_second=sum(y["status"] == "ok" for _, y in pairs), same_code=sum(x["code"] == y["code"] for x, y in pairs),
        right_both=sum(x["correct"] and y["correct"] for x, y in pairs),
        right_only_first=sum(x["correct"] and not y["correct"] for x, y in pairs),
        right_only_second=sum(y["correct"] and not x["correct"] for x, y in pairs),
        differing=[(x, y) for x, y in pairs if x["code"] != y["code"]])


def add_file_arguments(parser: argparse.ArgumentParser) -> None:
    """The two results files to compare (default: post 02's calib runs with and without the grammar)."""
    parser.add_argument("first", nargs="?", type=Path, default=WITH_GRAMMAR,
                        help="a results file (default: post 02's calib run with the grammar)")
    parser.add_argument("second", nargs="?", type=Path, default=WITHOUT_GRAMMAR,
                        help="another results file (default: the same run without the grammar)")


def read_both(first: Path, second: Path) -> tuple[list[dict], list[dict]]:
    """The answers of both files (lines without status error), after printing each file's name, messages and
    failed requests left out. Raises ValueError when no message is in both, and as read_results does."""
    (answers_first, failed_first), (answers_second, failed_second) = (final_and_failed(read_results(path, WRITE_THEM))
                                                                      for path in (first, second))
    if not matched(answers_first, answers_second):
        raise ValueError(f"{first} and {second} have no message in common")
    for name, path, answers, failed in (("first: ", first, answers_first, failed_first),
                                        ("second:", second, answers_second, failed_second)):
        left_out = f"; {len(failed)} failed requests left out" if failed else ""
        print(f"{name} {path} ({len({r['id'] for r in answers})} messages{left_out})")
    return answers_first, answers_second


def print_counts(comparison: Comparison) -> None:
    """How many messages are in both, and their valid codes, same codes and right answers."""
    n = comparison.messages
    print(f"\n{n} messages in both:")
    print(f"  valid code in the first   {comparison.valid_first:5d}  {share_of(comparison.valid_first, n)}")
    print(f"  valid code in the second  {comparison.valid_second:5d}  {share_of(comparison.valid_second, n)}")
    print(f"  same code                 {comparison.same_code:5d}  {share_of(comparison.same_code, n)}")
    print(f"  right in both             {comparison.right_both:5d}  {share_of(comparison.right_both, n)}")
    print(f"  right only in the first   {comparison.right_only_first:5d}")
    print(f"  right only in the second  {comparison.right_only_second:5d}")


def print_differing(comparison: Comparison) -> None:
    """The first SHOWN messages with different codes (nothing when there is none)."""
    differing = comparison.differing
    if differing:
        print(f"\nmessages with different codes ({len(differing)}):")
        for x, y in differing[:SHOWN]:
            print(f"  {x['text'][:60]!r:64} {x['code'] or x['status']!s:>8} vs {y['code'] or y['status']!s:<8}"
                  f" (true {x['gold_code']})")
        if len(differing) > SHOWN:
            print(f"  ... and {len(differing) - SHOWN} more")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_file_arguments(parser)
    args = parser.parse_args()
    comparison = compare(*read_both(args.first, args.second))
    print_counts(comparison)
    print_differing(comparison)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
