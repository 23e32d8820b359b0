"""The summary block of post 03: accuracy, confidence when right and wrong, off-label mass, ranges.

    python3 03-where-confidence-comes-from/summary.py                   # test split: your run, else the reference
    python3 03-where-confidence-comes-from/summary.py --split calib
    python3 03-where-confidence-comes-from/summary.py --results my-run.jsonl

run.py prints it at the end of a run; this prints it for any results file,
without a server. The files are found and read by saved_answers.py, the
loader every later post reads post 03's answers through.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from results_record import STEPS, ResultsLine, answers_and_errors
from saved_answers import add_results_arguments, describe, read_split

RANGES = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 0.99), (0.99, 1.0))


def in_range(confidence: float, low: float, high: float) -> bool:
    """Ranges are [low, high), the last one [0.99, 1.0] with 1.0 included."""
    return low <= confidence < high or (high == 1.0 and confidence == 1.0)


def percentile(values: list[float], fraction: float) -> float:
    """The `fraction` quantile of values, interpolated linearly between order statistics.

    Position fraction x (n - 1) in the sorted values, as numpy.percentile's
    default ("linear", Hyndman and Fan 1996, definition 7). Raises ValueError on
    no values or a fraction outside [0, 1].
    """
    if not values:
        raise ValueError("no values to take a percentile of")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"the fraction must be in [0, 1], not {fraction!r}")
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])



def print_summary(records: list[ResultsLine], title: str = "") -> None:
    """The summary block of post 03 for one results file; title names it ("banking77 test").

    records may include error lines (failed requests): they get a line of
    their own and take no part in any figure. Seconds are the requests' wall
    time added up over the answers (a resumed run counts all). Off-label
    masses are over the answers with a code, in percent.
    """
    records, failed = answers_and_errors(records)
    n = len(records)
    if n == 0:
        print(f"\n{title}: no messages" + (f" answered ({len(failed)} failed requests)" if failed else ""))
        return
    seconds = sum(r.wall_ms for r in records) / 1000
    right = [r for r in records if r.correct]
    wrong = [r for r in records if not r.correct]
    ok = [r for r in records if r.status == "ok"]
    rate = f" ({n / seconds:.2f} messages/s)" if seconds > 0 else ""
    print(f"\n{title}: {n} messages in {seconds:.0f} s of requests{rate}")
    if failed:
        print(f"  errors: {len(failed)} requests failed; left out of every figure below (the run.py command that "
              "wrote the file asks them again)")
    no_code = {s: sum(r.status == s for r in records) for s in ("invalid", "too_long")}
    print(f"  valid codes: {len(ok)} ({100 * len(ok) / n:.1f}%)" + "".join(f", {s} {c}" for s, c in no_code.items() if c))
    print(f"  correct: {len(right)} ({100 * len(right) / n:.1f}%), right group: "
          f"{sum(r.right_group for r in records)} ({100 * sum(r.right_group for r in records) / n:.1f}%)")
    for label, group in (("right", right), ("wrong", wrong)):
        if group:
            print(f"  median confidence when {label}: {statistics.median(r.confidence for r in group):.3f}")
    for step in STEPS:
        masses = [100 * r.off_label(step) for r in ok]
        if masses:
            print(f"  off-label mass at the {step} step: median {statistics.median(masses):.2f}%, "
                  f"95th percentile {percentile(masses, 0.95):.2f}%, max {max(masses):.2f}%")
    print(f"\n  {'confidence':<12} {'messages':>8} {'correct':>9}")
    for low, high in RANGES:
        inside = [r for r in records if in_range(r.confidence, low, high)]
        accuracy = f"{100 * sum(r.correct for r in inside) / len(inside):8.1f}%" if inside else "        -"
        print(f"  {low:.2f}-{high:<7.2f} {len(inside):8d} {accuracy}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    args = parser.parse_args()
    loaded = read_split(args.split, args.results, args.dataset, "--results")
    print(describe(loaded.path, loaded.records, len(loaded.errors)))
    print_summary(loaded.records + loaded.errors, f"{args.dataset} {args.split}")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
