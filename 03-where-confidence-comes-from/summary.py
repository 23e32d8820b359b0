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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class OffLabelMass:
    """The off-label mass at one step of the code ("group" or "intent") over the answers with a code:
    median, 95th percentile and max, each in percent."""

    step: str
    median: float
    percentile_95: float
    max: float


@dataclass(frozen=True)
class ConfidenceRange:
    """The answers whose confidence is in [low, high) (the last range includes 1.0): how many, and the
    percentage of them that are right (None for no answers)."""

    low: float
    high: float
    messages: int
    accuracy: float | None


@dataclass(frozen=True)
class Summary:
    """The figures of post 03's summary block for one results file, over its answers (error lines apart).

    messages: answers (lines that are not failed requests); failed: failed requests, in no other figure;
    seconds: the answers' wall time added up; valid: answers with a code; no_code: answers without one,
    by status ("invalid", "too_long"); correct, right_group: counts; median_right, median_wrong: median
    confidence of the right and the wrong answers (None when there are none); off_label: one entry per
    step with at least one answer with a code; ranges: one entry per range of RANGES.
    """

    messages: int
    failed: int
    seconds: float
    valid: int
    no_code: dict[str, int]
    correct: int
    right_group: int
    median_right: float | None
    median_wrong: float | None
    off_label: tuple[OffLabelMass, ...]
    ranges: tuple[ConfidenceRange, ...]


def summarize(records: list[ResultsLine]) -> Summary:
    """The figures of the summary block; records may include error lines (failed requests), which are
    counted in `failed` and take no part in any other figure."""
    records, failed = answers_and_errors(records)
    right = [r.confidence for r in records if r.correct]
    wrong = [r.confidence for r in records if not r.correct]
    ok = [r for r in records if r.status == "ok"]
    off_label = []
    for step in STEPS:
        masses = [100 * r.off_label(step) for r in ok]
        if masses:
            off_label.append(OffLabelMass(step, statistics.median(masses), percentile(masses, 0.95), max(masses)))
    ranges = []
    for low, high in RANGES:
        inside = [r for r in records if in_range(r.confidence, low, high)]
        accuracy = 100 * sum(r.correct for r in inside) / len(inside) if inside else None
        ranges.append(ConfidenceRange(low, high, len(inside), accuracy))
    return Summary(messages=len(records), failed=len(failed), seconds=sum(r.wall_ms for r in records) / 1000,
                   valid=len(ok), no_code={s: sum(r.status == s for r in records) for s in ("invalid", "too_long")},
                   correct=len(right), right_group=sum(r.right_group for r in records),
                   median_right=statistics.median(right) if right else None,
                   median_wrong=statistics.median(wrong) if wrong else None,
                   off_label=tuple(off_label), ranges=tuple(ranges))


def print_summary(records: list[ResultsLine], title: str = "") -> None:
    """The summary block of post 03 for one results file; title names it ("banking77 test").

    records may include error lines (failed requests): they get a line of
    their own and take no part in any figure. Seconds are the requests' wall
    time added up over the answers (a resumed run counts all). Off-label
    masses are over the answers with a code, in percent.
    """
    summary = summarize(records)
    n = summary.messages
    if n == 0:
        failed = summary.failed
        print(f"\n{title}: no messages" + (f" answered ({failed} failed requests)" if failed else ""))
        return
    seconds = summary.seconds
    rate = f" ({n / seconds:.2f} messages/s)" if seconds > 0 else ""
    print(f"\n{title}: {n} messages in {seconds:.0f} s of requests{rate}")
    if summary.failed:
        print(f"  errors: {summary.failed} requests failed; left out of every figure below (the run.py command that "
              "wrote the file asks them again)")
    print(f"  valid codes: {summary.valid} ({100 * summary.valid / n:.1f}%)"
          + "".join(f", {s} {c}" for s, c in summary.no_code.items() if c))
    print(f"  correct: {summary.correct} ({100 * summary.correct / n:.1f}%), right group: "
          f"{summary.right_group} ({100 * summary.right_group / n:.1f}%)")
    for label, median in (("right", summary.median_right), ("wrong", summary.median_wrong)):
        if median is not None:
            print(f"  median confidence when {label}: {median:.3f}")
    for mass in summary.off_label:
        print(f"  off-label mass at the {mass.step} step: median {mass.median:.2f}%, "
              f"95th percentile {mass.percentile_95:.2f}%, max {mass.max:.2f}%")
    print(f"\n  {'confidence':<12} {'messages':>8} {'correct':>9}")
    for row in summary.ranges:
        accuracy = f"{row.accuracy:8.1f}%" if row.accuracy is not None else "        -"
        print(f"  {row.low:.2f}-{row.high:<7.2f} {row.messages:8d} {accuracy}")


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
