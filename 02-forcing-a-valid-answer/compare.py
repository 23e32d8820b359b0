"""Two results files, message by message: the same code? right in both? how far did the confidence move?

    python3 02-forcing-a-valid-answer/compare.py       # post 02: the 200-message run with the grammar vs without
    python3 02-forcing-a-valid-answer/compare.py first.jsonl second.jsonl   # e.g. two runs of post 03's run.py

Only the messages in both files are compared (matched by id), and only their
answers: a line with status error (a failed request) is counted on its own
and left out. For files of
post 03's run.py, which carry a confidence, it also prints how much the
confidences moved: two runs of the same split give the same codes and
probabilities against one running server, and differ in the last digits
after a restart (post 03's README explains why).
"""
from __future__ import annotations

import argparse
import statistics
import sys
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", nargs="?", type=Path, default=WITH_GRAMMAR,
                        help="a results file (default: post 02's calib run with the grammar)")
    parser.add_argument("second", nargs="?", type=Path, default=WITHOUT_GRAMMAR,
                        help="another results file (default: the same run without the grammar)")
    args = parser.parse_args()
    (first, first_failed), (second, second_failed) = (final_and_failed(read_results(path, WRITE_THEM))
                                                      for path in (args.first, args.second))
    first, second = {r["id"]: r for r in first}, {r["id"]: r for r in second}
    ids = [i for i in first if i in second]
    if not ids:
        raise ValueError(f"{args.first} and {args.second} have no message in common")
    a, b = [first[i] for i in ids], [second[i] for i in ids]
    n = len(ids)
    for name, path, answers, failed in (("first: ", args.first, first, first_failed),
                                        ("second:", args.second, second, second_failed)):
        left_out = f"; {len(failed)} failed requests left out" if failed else ""
        print(f"{name} {path} ({len(answers)} messages{left_out})")
    print(f"\n{n} messages in both:")
    print(f"  valid code in the first   {sum(r['status'] == 'ok' for r in a):5d}  {percent(sum(r['status'] == 'ok' for r in a), n)}")
    print(f"  valid code in the second  {sum(r['status'] == 'ok' for r in b):5d}  {percent(sum(r['status'] == 'ok' for r in b), n)}")
    same = [x["code"] == y["code"] for x, y in zip(a, b)]
    print(f"  same code                 {sum(same):5d}  {percent(sum(same), n)}")
    both = sum(x["correct"] and y["correct"] for x, y in zip(a, b))
    print(f"  right in both             {both:5d}  {percent(both, n)}")
    print(f"  right only in the first   {sum(x['correct'] and not y['correct'] for x, y in zip(a, b)):5d}")
    print(f"  right only in the second  {sum(y['correct'] and not x['correct'] for x, y in zip(a, b)):5d}")
    moved = [abs(x["confidence"] - y["confidence"]) for x, y in zip(a, b)
             if x.get("status") == y.get("status") == "ok" and "confidence" in x and "confidence" in y]
    if moved:
        print(f"\nconfidence moved by (|first - second|, {len(moved)} answers): median {statistics.median(moved):.4f}, "
              f"95th percentile {percentile_95(moved):.4f}, max {max(moved):.4f}; "
              f"more than 0.01: {sum(m > 0.01 for m in moved)}")
    differing = [(x, y) for x, y, s in zip(a, b, same) if not s]
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
