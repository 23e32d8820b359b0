"""Does the confidence put the right answers first? AUROC, the accuracy-coverage curve and AURC.

    python3 07-separation/separation.py                 # fit on calib, report on test: raw, temperature, isotonic
    python3 07-separation/separation.py --split calib
    python3 07-separation/separation.py --results my-test-run.jsonl \\
        --calib my-calib-run.jsonl

Calibration (posts 04-06) asks whether a confidence of 0.7 is right 70% of
the time. Separation asks something else: if we keep only the answers above a
threshold, do the ones we keep get more accurate? A program that answers when
the confidence is high and hands the rest to a person lives on this. AUROC
counts how often a right answer outranks a wrong one; the accuracy-coverage
curve shows what each threshold keeps and how accurate that part is; AURC
sums the risk along the curve. Temperature scaling (05) and isotonic
regression (06) are fitted on the calibration split and compared with the raw
confidence: isotonic maps stretches of confidences to one value (ties), and
temperature scaling keeps the order of the letters within a step but may
reorder the product P(group) x P(intent | group) across answers. The script
measures both. No server needed.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from bisect import bisect_right, insort
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from calib_split import add_fit_arguments, load_fit_and_report
from compare import percent
from ece import check_inputs, outcomes
from isotonic import confidence_variants

TARGETS = (0.95, 0.98, 0.99)
COVERAGES = tuple(k / 10 for k in range(1, 11))


class SingleClassError(ValueError):
    """AUROC is undefined: every answer is right, or every answer is wrong (no pair to compare)."""


@dataclass(frozen=True)
class SweepPoint:
    """One threshold of a sweep: keep every item whose score is >= threshold (ties at it kept together).

    The one threshold type of the series: a point of post 07's
    accuracy-coverage curve (score = confidence, hit = right answer), of its
    ROC curve for out-of-scope detection (score = out-of-scope score, hit =
    out-of-scope message), and of any rule that acts above a threshold.

    threshold: a score that occurs in the data, in [0, 1]. kept: items at or
    above it. hits: hits among them. total, total_hits: all items and all hits.
    """

    threshold: float
    kept: int
    hits: int
    total: int
    total_hits: int

    @property
    def coverage(self) -> float:
        """kept / total, in (0, 1]."""
        return self.kept / self.total

    @property
    def accuracy(self) -> float:
        """hits / kept, in [0, 1]: the selective accuracy of the kept answers (precision of a detector)."""
        return self.hits / self.kept

    @property
    def risk(self) -> float:
        """1 - accuracy: the selective risk."""
        return 1.0 - self.accuracy

    @property
    def recall(self) -> float:
        """hits / total_hits, in [0, 1] (true-positive rate); raises ZeroDivisionError with no hits at all."""
        return self.hits / self.total_hits

    @property
    def fpr(self) -> float:
        """(kept - hits) / (total - total_hits), in [0, 1] (false-positive rate); raises ZeroDivisionError with no misses."""
        return (self.kept - self.hits) / (self.total - self.total_hits)


@dataclass(frozen=True)
class OrderChange:
    """How a second confidence orders the answers compared with a first one (pairs of answers).

    pairs: n (n - 1) / 2. reversed: pairs strictly ordered by both, in
    opposite directions. tied: pairs the first orders strictly and the second
    ties. split: pairs the first ties and the second orders strictly.
    """

    pairs: int
    reversed: int
    tied: int
    split: int


def class_counts(corrects: list[bool]) -> tuple[int, int]:
    """(right answers, wrong answers)."""
    right = sum(bool(c) for c in corrects)
    return right, len(corrects) - right


def tie_groups(confidences: list[float], corrects: list[bool]) -> list[tuple[float, int, int]]:
    """(confidence, answers, right answers) for each distinct confidence, highest confidence first."""
    groups: dict[float, list[int]] = {}
    for confidence, correct in zip(confidences, corrects):
        tally = groups.setdefault(confidence, [0, 0])
        tally[0] += 1
        tally[1] += bool(correct)
    return [(c, *groups[c]) for c in sorted(groups, reverse=True)]


def tie_sizes(values) -> dict:
    """How many times each distinct value occurs."""
    sizes: dict = {}
    for value in values:
        sizes[value] = sizes.get(value, 0) + 1
    return sizes


def auroc(confidences: list[float], corrects: list[bool]) -> float:
    """P(a random right answer has a higher confidence than a random wrong one), ties counting one half.

    confidences: one per answer, in [0, 1]; corrects: whether each was right.
    Returns U / (n_right * n_wrong) in [0, 1], where U is the Mann-Whitney
    statistic of the right answers' confidences against the wrong ones'
    (Hanley and McNeil 1982, "The meaning and use of the area under a ROC
    curve"). 0.5 is a confidence that does not separate at all, 1.0 puts
    every right answer above every wrong one. O(n log n): one sort, then each
    tie group adds right_in_group x (wrong below + wrong_in_group / 2).
    Raises SingleClassError (a ValueError) when all answers are right or all
    are wrong: there is no pair to compare, and 0 or 0.5 would be made up.
    Other bad input raises ValueError (see ece.check_inputs).
    """
    check_inputs(confidences, corrects)
    n_right, n_wrong = class_counts(corrects)
    if n_right == 0 or n_wrong == 0:
        which = "right" if n_wrong == 0 else "wrong"
        raise SingleClassError(f"AUROC needs right and wrong answers, and all {len(corrects)} answers are {which}: "
                               "there is no pair to compare")
    wrong_below = 0
    twice_u = 0  # 2U in integers: a tie adds 1, a win 2, so the sum is exact and only the last division rounds
    for _, count, right in reversed(tie_groups(confidences, corrects)):  # lowest confidence first
        wrong = count - right
        twice_u += right * (2 * wrong_below + wrong)
        wrong_below += wrong
    return twice_u / (2 * n_right * n_wrong)


def sweep(scores: list[float], hits: list[bool]) -> list[SweepPoint]:
    """Every distinct score as a threshold, highest first; the last one keeps everything.

    Lowering the threshold to the next score in the data adds every item at
    that score at once, so items tied at a score are never split (a threshold
    cannot tell them apart). scores in [0, 1], one per item; hits: whether
    each item is a hit. Raises ValueError on bad input (see ece.check_inputs).
    """
    check_inputs(scores, hits)
    total, total_hits = len(scores), sum(bool(hit) for hit in hits)
    points, kept, hit_count = [], 0, 0
    for score, count, hits_here in tie_groups(scores, hits):
        kept += count
        hit_count += hits_here
        points.append(SweepPoint(score, kept, hit_count, total, total_hits))
    return points


def accuracy_coverage(confidences: list[float], corrects: list[bool]) -> list[SweepPoint]:
    """The accuracy-coverage curve: one point per distinct confidence, highest threshold first.

    Lowering the threshold to the next confidence in the data adds every
    answer at that confidence at once, so answers tied at a confidence are
    never split (a threshold cannot tell them apart). The last point keeps all
    answers (coverage 1, the overall accuracy). Selective accuracy is the
    curve a confidence-gated router rides (El-Yaniv and Wiener 2010, "On the
    foundations of noise-free selective classification"). Raises ValueError
    on bad input (see ece.check_inputs).
    """
    return sweep(confidences, corrects)


def aurc(confidences: list[float], corrects: list[bool]) -> float:
    """Area under the risk-coverage curve, in [0, 1]; lower is better.

    AURC = (1 / n) * sum over answers i of risk(c_i), where risk(c) is the
    selective risk (1 - selective accuracy) of keeping every answer with
    confidence >= c. Without ties this is the mean, over k = 1..n, of the risk
    of the k most confident answers (Geifman and El-Yaniv 2017, "Selective
    classification for deep neural networks"; Ding et al. 2020, "Revisiting
    the evaluation of uncertainty estimation and its application to explore
    model complexity-uncertainty trade-off"). With ties, every answer of a tie
    group gets the risk of the whole group, since no threshold keeps part of
    it: the area under the step curve of accuracy_coverage, each point
    covering (previous coverage, its coverage]. The result does not depend on
    the order of tied answers. Raises ValueError on bad input.
    """
    return area_under_risk(accuracy_coverage(confidences, corrects))


def area_under_risk(points: list[SweepPoint]) -> float:
    """AURC from accuracy_coverage(...) points: each point's risk over the answers it adds, divided by all answers.

    Raises ValueError when there are no points.
    """
    if not points:
        raise ValueError("no points: the accuracy-coverage curve is empty")
    total, previous = 0.0, 0
    for point in points:
        total += (point.kept - previous) * point.risk
        previous = point.kept
    return total / points[-1].kept


def optimal_aurc(corrects: list[bool]) -> float:
    """The AURC of a perfect ranking of the same answers: every right answer above every wrong one.

    The floor for this accuracy (Geifman et al. 2019, "Bias-reduced
    uncertainty estimation for deep neural classifiers", where AURC minus it
    is called E-AURC). A ranking that carries no information has an expected
    AURC of 1 - accuracy. Raises ValueError on an empty list.
    """
    if len(corrects) == 0:
        raise ValueError("no answers: the list of outcomes is empty")
    n_right, _ = class_counts(corrects)
    # The k-th answer (k > n_right) is kept with risk (k - n_right) / k.
    return sum((k - n_right) / k for k in range(n_right + 1, len(corrects) + 1)) / len(corrects)


def coverage_at_accuracy(points: list[SweepPoint], target: float) -> SweepPoint | None:
    """The point with the largest coverage whose selective accuracy is at least `target`, or None.

    points: accuracy_coverage(...) output. target: in (0, 1], e.g. 0.95.
    Selective accuracy need not fall steadily as coverage grows, so every
    point is checked, not only the first crossing from the top. The point's
    threshold is the one to set; its coverage is the share of answers kept.
    Returns None when no threshold reaches the target (not coverage 0: no
    threshold keeps zero answers). Raises ValueError for a target outside
    (0, 1].
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target accuracy {target!r} is outside (0, 1]")
    reached = [p for p in points if p.accuracy >= target]
    return max(reached, key=lambda p: p.coverage) if reached else None


def point_at_coverage(points: list[SweepPoint], coverage: float) -> SweepPoint:
    """The highest threshold that keeps at least `coverage` (in (0, 1]) of the answers.

    Because tied answers enter together, its coverage can be larger than
    asked. Raises ValueError for a coverage outside (0, 1] or no points.
    """
    if not 0.0 < coverage <= 1.0:
        raise ValueError(f"coverage {coverage!r} is outside (0, 1]")
    if not points:
        raise ValueError("no points: the accuracy-coverage curve is empty")
    return next((p for p in points if p.coverage >= coverage), points[-1])


def order_change(first: list[float], second: list[float]) -> OrderChange:
    """Count the pairs of answers whose order differs between two confidences of the same answers.

    Sorts by (first, second) and counts, for each answer, the earlier answers
    with a strictly higher second confidence (pairs with equal first values
    are sorted by second and never counted). The tie counts follow Knight
    (1966), "A computer method for calculating Kendall's tau with ungrouped
    data". Raises ValueError when the lengths differ.
    """
    if len(first) != len(second):
        raise ValueError(f"{len(first)} and {len(second)} confidences: the lengths differ")
    n = len(first)
    reversed_pairs, seen = 0, []
    for _, value in sorted(zip(first, second)):
        reversed_pairs += len(seen) - bisect_right(seen, value)
        insort(seen, value)

    def tied_pairs(keys) -> int:
        return sum(c * (c - 1) // 2 for c in tie_sizes(keys).values())

    both = tied_pairs(zip(first, second))
    return OrderChange(n * (n - 1) // 2, reversed_pairs, tied_pairs(second) - both, tied_pairs(first) - both)


def share(count: int, total: int) -> str:
    """A count and its percentage of total, e.g. '  52833 ( 4.52%)'."""
    return f"{count:8d} ({100 * count / total if total else 0.0:5.2f}%)"


def print_measures(variants: dict[str, list[float]], corrects: list[bool]) -> dict[str, float | None]:
    """AUROC and AURC of each variant, then the coverage at each target; returns the AUROCs (None if undefined)."""
    print(f"{'':<12} {'AUROC':>6} {'AURC':>7}")
    aurocs, undefined = {}, None
    for name, confidences in variants.items():
        try:
            aurocs[name] = auroc(confidences, corrects)
        except SingleClassError as error:
            aurocs[name], undefined = None, error
        shown = "-" if aurocs[name] is None else f"{aurocs[name]:.3f}"
        print(f"{name:<12} {shown:>6} {aurc(confidences, corrects):7.4f}")
    if undefined:
        print(f"AUROC undefined: {undefined}")
    print(f"AURC of a perfect ranking of these answers {optimal_aurc(corrects):.4f}, "
          f"of a ranking that knows nothing {1 - sum(corrects) / len(corrects):.4f} (1 - accuracy)")
    print()
    print_targets(variants, corrects)
    return aurocs


def print_targets(variants: dict[str, list[float]], corrects: list[bool]) -> None:
    """For each variant and each of TARGETS, the largest coverage whose selective accuracy reaches the target."""
    print("largest coverage at a selective accuracy of at least the target (answers kept, threshold):")
    print(f"{'':<12} {'target':>6}  coverage")
    unreachable = False
    for name, confidences in variants.items():
        points = accuracy_coverage(confidences, corrects)
        for k, target in enumerate(TARGETS):
            point = coverage_at_accuracy(points, target)
            unreachable = unreachable or point is None
            print(f"{name if k == 0 else '':<12} {f'{100 * target:.0f}%':>6}  {coverage_cell(point)}")
    if unreachable:
        print("none: no threshold keeps a set of answers that accurate")


def coverage_cell(point: SweepPoint | None) -> str:
    """A point as the coverage table prints it: '1.0% (31, >= 0.835)', or 'none'."""
    return "none" if point is None else f"{percent(point.coverage)} ({point.kept}, >= {point.threshold:.3f})"


def print_order(variants: dict[str, list[float]]) -> None:
    """Ties and reorderings of each variant against the raw confidence, measured over all pairs of answers."""
    raw = variants["raw"]
    print(f"{'':<12} {'distinct':>8} {'largest tie':>11} {'pairs reversed':>17} {'pairs newly tied':>18}"
          "   (against raw)")
    for name, confidences in variants.items():
        change = order_change(raw, confidences)
        sizes = tie_sizes(confidences)
        print(f"{name:<12} {len(sizes):8d} {max(sizes.values()):11d} {share(change.reversed, change.pairs):>17} "
              f"{share(change.tied, change.pairs):>18}")
    print(f"out of {math.comb(len(raw), 2):,} pairs of answers")


def print_curve(variants: dict[str, list[float]], corrects: list[bool]) -> None:
    """The accuracy-coverage table: the highest threshold, then for each coverage asked the highest threshold
    that keeps at least that much."""
    curves = {name: accuracy_coverage(confidences, corrects) for name, confidences in variants.items()}
    print((f"{'at least':<9}" + "".join(f"   {name:<25}" for name in curves)).rstrip())
    print(f"{'coverage':<9}" + "   coverage accuracy  conf>=" * len(curves))
    for wanted in (None, *COVERAGES):  # None: the highest threshold alone
        cells = []
        for points in curves.values():
            p = points[0] if wanted is None else point_at_coverage(points, wanted)
            cells.append(f"   {percent(p.coverage):>8} {percent(p.accuracy):>8} {p.threshold:7.3f}")
        print(f"{'top' if wanted is None else f'{100 * wanted:.0f}%':>8} " + "".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    args = parser.parse_args()

    calib_path, calib, path, records = load_fit_and_report(args)
    if calib_path.resolve() == path.resolve():
        print("note: fitted and scored on the same answers, so temperature and isotonic look better than they are")
    variants = confidence_variants(calib, records)
    _, corrects = outcomes(records)
    n_right, _ = class_counts(corrects)
    print(f"\n{args.split}: {len(records)} answers, {n_right} right ({percent(n_right / len(records))}), "
          f"median confidence {statistics.median(variants['raw']):.3f}\n")

    aurocs = print_measures(variants, corrects)
    print()
    print_order(variants)
    print("isotonic maps each flat stretch of raw confidences to one value (ties; order otherwise kept);\n"
          "temperature keeps each step's letter order but may reorder P(group) x P(intent | group) across answers.\n")
    print_curve(variants, corrects)
    print("\ntop: the highest threshold alone. conf>=: the threshold; answers tied at it are kept together,\n"
          "so the coverage can exceed the one asked")

    shown = ", ".join(f"{name} {'undefined' if value is None else f'{value:.3f}'}" for name, value in aurocs.items())
    print(f"\nAUROC on {args.split}: {shown}")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
