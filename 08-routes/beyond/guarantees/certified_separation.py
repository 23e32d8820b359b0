"""Post 07's coverage at a target, next to a coverage certified for new answers (beyond the series).

    python3 08-routes/beyond/guarantees/certified_separation.py                       # test split, fitted on calib
    python3 08-routes/beyond/guarantees/certified_separation.py --dataset clinc150
    python3 08-routes/beyond/guarantees/certified_separation.py --delta 0.01          # at 99% confidence instead of 95%

Post 07's separation.py prints, for each confidence (raw, temperature,
isotonic) and each target of 95%, 98% and 99% selective accuracy, the
largest coverage whose answers reach the target: the `point` column. It
describes those answers only: 3 right of 3 reach 99%. The `certified`
column asks the same of the exact one-sided lower bound of the selective
accuracy (guarantee.py, built on post 08's intervals.py): the thresholds
that keep 10%, 20%, ... of the answers are tried from the highest down,
stopping at the first whose bound falls short (fixed-sequence testing). On
new answers exchangeable with these, the accuracy it certifies holds with
probability at least 1 - delta. It reads what separation.py reads. No
server needed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from guarantee import DELTA, Certification, add_delta_argument, certify, confidence_percent
from intervals import percent_down
from calib_split import add_fit_arguments, load_fit_and_report
from ece import outcomes
from isotonic import confidence_variants
from separation import (COVERAGES, TARGETS, SweepPoint, accuracy_coverage, coverage_at_accuracy, coverage_cell,
                        percent, point_at_coverage)


def certified_coverage(points: list[SweepPoint], target: float, delta: float = DELTA) -> Certification:
    """The largest coverage whose selective accuracy is certified to reach `target` at level 1 - delta.

    points: separation.accuracy_coverage(...) output. The thresholds tried
    are the ones of post 07's accuracy-coverage table: for each of COVERAGES
    (10%, 20%, ..., 100%) the highest threshold that keeps at least that
    share of the answers (point_at_coverage). They depend on the confidences
    only, never on which answers were right, as fixed-sequence testing
    needs; guarantee.certify tries them from the highest down and stops at
    the first whose exact lower bound falls short. A finer grid would find a
    threshold closer to the edge, but stop sooner at a dip: the few most
    confident answers are a small and noisy sample. Raises ValueError as
    guarantee.certify does.
    """
    grid = []
    for share in COVERAGES:
        point = point_at_coverage(points, share)
        if not grid or grid[-1] != point:  # ties can make two shares one threshold
            grid.append(point)
    return certify(grid, target, delta)


def certified_cell(result: Certification) -> str:
    """A certified point as separation.coverage_cell prints it; when there is none, why: the first test failed
    ('none (56 of 59 right, bound 88.1%)', the bound rounded down) or no threshold keeps the answers needed
    ('none (needs 59 kept)')."""
    if result.point is not None:
        return coverage_cell(result.point)
    if result.failed is not None:
        return f"none ({result.failed.hits} of {result.failed.kept} right, bound {percent_down(result.failed_lower)})"
    return "none (never certified)" if result.needed is None else f"none (needs {result.needed} kept)"


def print_certified(variants: dict[str, list[float]], corrects: list[bool], delta: float = DELTA) -> None:
    """For each variant and target, separation's point coverage and the certified coverage at level 1 - delta."""
    level = confidence_percent(delta)
    print("largest coverage at a selective accuracy of at least the target (answers kept, threshold):\n"
          f"point: on these answers; certified: its one-sided {level} lower bound reaches the target")
    print(f"{'':<12} {'target':>6}  {'point':<24} certified")
    unreachable = False
    for name, confidences in variants.items():
        points = accuracy_coverage(confidences, corrects)
        for k, target in enumerate(TARGETS):
            point, sure = coverage_at_accuracy(points, target), certified_coverage(points, target, delta)
            unreachable = unreachable or point is None or sure.point is None
            print(f"{name if k == 0 else '':<12} {f'{100 * target:.0f}%':>6}  {coverage_cell(point):<24} "
                  f"{certified_cell(sure)}".rstrip())
    print("certified: the thresholds that keep 10%, 20%, ... of the answers, tried from the highest down, stopping at\n"
          "the first whose exact (Clopper-Pearson) lower bound falls short (fixed-sequence testing); on new answers\n"
          f"like these the accuracy it certifies holds with probability at least {level}")
    if unreachable:
        print("none: no threshold keeps a set of answers that accurate, or none certifies it (in brackets: the\n"
              "first threshold tested, where the testing stopped, or how many answers a certificate needs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_delta_argument(parser)
    args = parser.parse_args()

    _, calib, _, records = load_fit_and_report(args)
    variants = confidence_variants(calib, records)
    _, corrects = outcomes(records)
    print(f"\n{args.split}: {len(records)} answers, {sum(corrects)} right ({percent(sum(corrects) / len(records))})\n")
    print_certified(variants, corrects, args.delta)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
