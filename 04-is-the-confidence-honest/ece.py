"""Is the confidence honest? Reliability bins and the expected calibration error (ECE).

    python3 04-is-the-confidence-honest/ece.py                    # reference test split
    python3 04-is-the-confidence-honest/ece.py --split calib
    python3 04-is-the-confidence-honest/ece.py --results my-test-run.jsonl

Sorts the answers into 15 equal-width confidence bins and compares, in each
bin, the mean confidence with the fraction of answers that were right. No
server needed: it reads post 03's results (your own complete run, else the
committed reference run; --results names any other file).
"""
from __future__ import annotations

import argparse
import math
import sys
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from results_record import ResultsLine
from saved_answers import add_results_arguments, describe, read_split

N_BINS = 15
BIN_COUNTS = (5, 10, 15, 20, 30)
# log(0) is minus infinity: NLL clips confidences to [EPSILON, 1 - EPSILON].
EPSILON = 1e-15


@dataclass(frozen=True)
class Bin:
    """One confidence bin [low, high) of a reliability diagram ([low, 1.0] for the last).

    count: answers in the bin. mean_confidence and accuracy are in [0, 1]
    (None when the bin is empty). gap = accuracy - mean_confidence: negative
    when the model claims more than it delivers (overconfident). weight = the
    bin's share of all answers, so weight * |gap| is its contribution to ECE.
    """

    low: float
    high: float
    count: int
    mean_confidence: float | None
    accuracy: float | None
    weight: float

    @property
    def gap(self) -> float | None:
        return None if self.count == 0 else self.accuracy - self.mean_confidence

    @property
    def contribution(self) -> float:
        return 0.0 if self.count == 0 else self.weight * abs(self.gap)


def check_inputs(confidences: list[float], corrects: list[bool]) -> None:
    """The guard every metric of the series shares.

    Raises ValueError when the lists are empty, differ in length, or a
    confidence is not a number in [0, 1].
    """
    if len(confidences) == 0:
        raise ValueError("no answers: the lists of confidences and outcomes are empty")
    if len(confidences) != len(corrects):
        raise ValueError(f"{len(confidences)} confidences but {len(corrects)} outcomes: the lengths differ")
    for confidence in confidences:
        if not 0.0 <= confidence <= 1.0:  # also rejects NaN
            raise ValueError(f"confidence {confidence!r} is outside [0, 1]")


def bin_index(confidence: float, n_bins: int = N_BINS) -> int:
    """Which of n_bins equal-width bins a confidence in [0, 1] falls in (0 = lowest).

    A confidence on an edge goes to the bin above (0.2 is in [0.2, 0.2667) with
    15 bins), 0.0 to the first bin and 1.0 to the last. The edges are compared
    as the floats k / n_bins, so 7 / 15 lands in bin 7 whatever the rounding of
    7 / 15 * 15.
    """
    edges = [k / n_bins for k in range(1, n_bins)]
    return bisect_right(edges, confidence)


def reliability_bins(confidences: list[float], corrects: list[bool], n_bins: int = N_BINS) -> list[Bin]:
    """All n_bins bins, empty ones included (count 0), lowest first.

    confidences: one per answer, in [0, 1]; corrects: whether each answer was
    right. Raises ValueError on bad input (see check_inputs) or n_bins < 1.
    """
    check_inputs(confidences, corrects)
    if n_bins < 1:
        raise ValueError(f"n_bins must be 1 or more, not {n_bins}")
    members: list[list[int]] = [[] for _ in range(n_bins)]
    for i, confidence in enumerate(confidences):
        members[bin_index(confidence, n_bins)].append(i)
    total = len(confidences)
    bins = []
    for k, inside in enumerate(members):
        count = len(inside)
        bins.append(Bin(
            low=k / n_bins,
            high=(k + 1) / n_bins,
            count=count,
            mean_confidence=sum(confidences[i] for i in inside) / count if count else None,
            accuracy=sum(bool(corrects[i]) for i in inside) / count if count else None,
            weight=count / total,
        ))
    return bins


def ece(confidences: list[float], corrects: list[bool], n_bins: int = N_BINS) -> float:
    """Expected calibration error in [0, 1]: sum over bins of (n_b / N) * |accuracy_b - mean confidence_b|.

    Naeini, Cooper and Hauskrecht (2015), "Obtaining well calibrated
    probabilities using Bayesian binning"; as used by Guo et al. (2017), "On
    calibration of modern neural networks", eq. (3). Equal-width bins; edges
    as in bin_index. With one bin it is |mean confidence - accuracy|.
    """
    return sum(b.contribution for b in reliability_bins(confidences, corrects, n_bins))


def brier_score(confidences: list[float], corrects: list[bool]) -> float:
    """Mean squared error of the confidence as a forecast of being right: mean (c - y)^2, y in {0, 1}.

    Brier (1950), "Verification of forecasts expressed in terms of
    probability", for one event (was the chosen answer right?). 0 is perfect;
    always saying 0.5 scores 0.25. Unlike ECE it also rewards separating right
    from wrong, not only matching averages.
    """
    check_inputs(confidences, corrects)
    return sum((c - bool(y)) ** 2 for c, y in zip(confidences, corrects)) / len(confidences)


def nll(confidences: list[float], corrects: list[bool]) -> float:
    """Negative log-likelihood (natural log, nats per answer) of the outcomes under the confidence.

    -mean [y log c + (1 - y) log(1 - c)] over answers: the binary log loss of
    "was the chosen answer right?". A confident wrong answer costs a lot: an
    answer right at confidence 0 would cost infinity, so c is clipped to
    [1e-15, 1 - 1e-15] first (at most 34.5 nats per answer).
    """
    check_inputs(confidences, corrects)
    total = 0.0
    for c, y in zip(confidences, corrects):
        c = min(max(c, EPSILON), 1.0 - EPSILON)
        total -= math.log(c) if y else math.log(1.0 - c)
    return total / len(confidences)


def outcomes(records: list[ResultsLine]) -> tuple[list[float], list[bool]]:
    """(confidences, corrects) of post 03 answers; one without a code (invalid, too_long) carries confidence 0 and
    counts as wrong. Error lines are no answers: saved_answers.read_split leaves them out before this."""
    return [r.confidence for r in records], [r.correct for r in records]


def signed(value: float) -> str:
    """value to 3 decimals with its sign ("+0.021", "-0.013"); one that rounds to zero is "0.000", never "-0.000"."""
    text = f"{value:+.3f}"
    return "0.000" if float(text) == 0 else text


def print_bins(bins: list[Bin]) -> None:
    """The reliability table: non-empty bins only (range, answers, mean confidence, accuracy, gap, share of ECE)."""
    print(f"{'bin':>11}  {'answers':>7}  {'confidence':>10}  {'accuracy':>8}  {'gap':>6}  {'adds to ECE':>11}")
    for b in bins:
        if b.count:
            print(f"{b.low:.3f}-{b.high:.3f}  {b.count:7d}  {b.mean_confidence:10.3f}  {b.accuracy:8.3f}  "
                  f"{signed(b.gap):>6}  {b.contribution:11.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    parser.add_argument("--bins", type=int, default=N_BINS, help=f"number of equal-width bins (default: {N_BINS})")
    args = parser.parse_args()
    if not 1 <= args.bins <= 100:
        parser.error("--bins must be between 1 and 100")
    loaded = read_split(args.split, args.results, args.dataset, "--results")
    records = loaded.records
    confidences, corrects = outcomes(records)
    print(describe(loaded.path, records, len(loaded.errors)))
    accuracy = sum(corrects) / len(corrects)
    print(f"{args.dataset} {args.split}: {len(records)} answers, accuracy {100 * accuracy:.1f}%, "
          f"mean confidence {100 * sum(confidences) / len(confidences):.1f}%\n")
    print_bins(reliability_bins(confidences, corrects, args.bins))
    print(f"\nECE, {args.bins} bin{'' if args.bins == 1 else 's'}: {ece(confidences, corrects, args.bins):.4f}")
    print("\nThe same answers with other bin counts:")
    for n in BIN_COUNTS:
        print(f"  {n:3d} bins: ECE {ece(confidences, corrects, n):.4f}")
    constant = [accuracy] * len(corrects)
    print(f"\nEvery answer given the same confidence, {accuracy:.3f} (the accuracy): "
          f"ECE {ece(constant, corrects, args.bins):.4f}")
    print(f"Brier score {brier_score(confidences, corrects):.4f} (the same confidence for all: "
          f"{brier_score(constant, corrects):.4f}), NLL {nll(confidences, corrects):.4f} nats per answer")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
