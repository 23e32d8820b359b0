"""Will you get the same numbers? Two runs of run.py, message by message: codes, and how far the confidence moved.

    python3 03-where-confidence-comes-from/same_numbers.py mine.jsonl \\
        results/reference/qwen2.5-coder-1.5b-instruct-q4_k_m/banking77-calib.jsonl

Post 02's compare.py matches two results files by message id and counts the
same codes and right answers; this script prints that, then, for the
messages answered with a code in both, |first - second| of their confidence
(post 03's fields): its median, 95th percentile and maximum. Two runs of a
split against one running server give the same probabilities; after a
restart, or once the server has processed the system prompt anew, they may
differ in the last digits (the README's "Will you get the same numbers?").
No server needed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from compare import compare, matched, print_counts, print_differing, read_both


def confidence_moves(first: list[dict], second: list[dict]) -> list[float]:
    """|first - second| confidence (probabilities, in [0, 1]) of each message in both lists (compare.matched order)
    whose answer has a code (status ok) in both; lines without a confidence (post 02's runs) are left out."""
    return [abs(x["confidence"] - y["confidence"]) for x, y in matched(first, second)
            if x.get("status") == y.get("status") == "ok" and "confidence" in x and "confidence" in y]


def percentile_95(values: list[float]) -> float:
    """The 95th percentile, interpolated linearly between order statistics (numpy's default); values not empty."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=20, method="inclusive")[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path, help="a results file of run.py (a run of yours, say)")
    parser.add_argument("second", type=Path, help="another one of the same split (the reference run, say)")
    args = parser.parse_args()
    first, second = read_both(args.first, args.second)
    comparison = compare(first, second)
    print_counts(comparison)
    moved = confidence_moves(first, second)
    if moved:
        print(f"\nconfidence moved by (|first - second|, {len(moved)} answers): median {statistics.median(moved):.4f}, "
              f"95th percentile {percentile_95(moved):.4f}, max {max(moved):.4f}; "
              f"more than 0.01: {sum(m > 0.01 for m in moved)}")
    print_differing(comparison)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
