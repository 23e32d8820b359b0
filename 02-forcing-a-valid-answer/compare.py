"""Two results files, message by message: the same code? right in both? how far did the confidence move?

    python3 02-forcing-a-valid-answer/compare.py       # post 02: the 200-message run with the grammar vs without
    python3 02-forcing-a-valid-answer/compare.py first.jsonl second.jsonl   # any two results files of one split

Only the messages in both files are compared (matched by id), and only their
answers: a line with status error (a failed request) is counted on its own
and left out. When both files carry a confidence per answer (a later post
adds one to each line), it also prints how much the confidences moved: two
runs of the same split give the same codes and probabilities against one
running server, and may differ in the last digits after a restart.
"""
from __future__ import annotations

import argparse
import statistics
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


def percent(part: int, whole: int) -> str:
    """part / whole as a right-aligned percentage with one decimal, "-" for no whole."""
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def percentile_95(values: list[float]) -> float:
    """The 95th percentile, interpolated linearly between order statistics (numpy's default); values not empty."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=20, method="inclusive")[-1]


@dataclass(frozen=True)
class Comparison:
    """Two results files' answers to the messages in both (matched by id, in the first file's order).

    messages: how many; valid_first, valid_second: answers with a code (status ok) in each; same_code:
    messages given the same code (or no code in both); right_both, right_only_first, right_only_second:
    counts of correct answers; moved: |first - second| confidence for each message answered with a code
    in both, when both files carry confidences (a later post's), else empty; differing: the (first, second)
    lines of the messages with different codes.
    """

    messages: int
    valid_first: int
    valid_second: int
    same_code: int
    right_both: int
    right_only_first: int
    right_only_second: int
    moved: list[float]
    differing: list[tuple[dict, dict]]


def compare(first: list[dict], second: list[dict]) -> Comparison:
    """The Comparison of two files' answers (lines without status error); messages is 0 when no id is in both."""
    second_by_id = {r["id"]: r for r in second}
    a = [r for r in {r["id"]: r for r in first}.values() if r["id"] in second_by_id]
    b = [second_by_id[r["id"]] for r in a]
    same = [x["code"] == y["code"] for x, y in zip(a, b)]
    return Comparison(
        messages=len(a), valid_first=sum(r["status"] == "ok" for r in a), valid_second=sum(r["status"] == "ok" for r in b),
        same_code=sum(same), right_both=sum(x["correct"] and y["correct"] for x, y in zip(a, b)),
        right_only_first=sum(x["correct"] and not y["correct"] for x, y in zip(a, b)),
        right_only_second=sum(y["correct"] and not x["correct"] for x, y in zip(a, b)),
        moved=[abs(x["confidence"] - y["confidence"]) for x, y in zip(a, b)
               if x.get("status") == y.get("status") == "ok" and "confidence" in x and "confidence" in y],
        differing=[(x, y) for x, y, s in zip(a, b, same) if not s])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", nargs="?", type=Path, default=WITH_GRAMMAR,
                        help="a results file (default: post 02's calib run with the grammar)")
    parser.add_argument("second", nargs="?", type=Path, default=WITHOUT_GRAMMAR,
                        help="another results file (default: the same run without the grammar)")
    args = parser.parse_args()
    (first, first_failed), (second, second_failed) = (final_and_failed(read_results(path, WRITE_THEM))
                                                      for path in (args.first, args.second))
    comparison = compare(first, second)
    if not comparison.messages:
        raise ValueError(f"{args.first} and {args.second} have no message in common")
    n = comparison.messages
    for name, path, answers, failed in (("first: ", args.first, first, first_failed),
                                        ("second:", args.second, second, second_failed)):
        left_out = f"; {len(failed)} failed requests left out" if failed else ""
        print(f"{name} {path} ({len({r['id'] for r in answers})} messages{left_out})")
    print(f"\n{n} messages in both:")
    print(f"  valid code in the first   {comparison.valid_first:5d}  {percent(comparison.valid_first, n)}")
    print(f"  valid code in the second  {comparison.valid_second:5d}  {percent(comparison.valid_second, n)}")
    print(f"  same code                 {comparison.same_code:5d}  {percent(comparison.same_code, n)}")
    print(f"  right in both             {comparison.right_both:5d}  {percent(comparison.right_both, n)}")
    print(f"  right only in the first   {comparison.right_only_first:5d}")
    print(f"  right only in the second  {comparison.right_only_second:5d}")
    moved = comparison.moved
    if moved:
        print(f"\nconfidence moved by (|first - second|, {len(moved)} answers): median {statistics.median(moved):.4f}, "
              f"95th percentile {percentile_95(moved):.4f}, max {max(moved):.4f}; "
              f"more than 0.01: {sum(m > 0.01 for m in moved)}")
    differing = comparison.differing
    if differing:
        print(f"\nmessages with different codes ({len(differing)}):")
        for x, y in differing[:SHOWN]:
            print(f"  {x['text'][:60]!r:64} {x['code'] or x['status']!s:>8} vs {y['code'] or y['status']!s:<8}"
                  f" (true {x['gold_code']})")
        if len(differing) > SHOWN:
            print(f"  ... and {len(differing) - SHOWN} more")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
