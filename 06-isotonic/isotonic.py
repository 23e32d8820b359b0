"""Isotonic regression: the map from confidence to P(right) that only has to go up.

    python3 06-isotonic/isotonic.py                 # fit on calib, ECE on test: raw, temperature, isotonic
    python3 06-isotonic/isotonic.py --results my-test-run.jsonl --calib my-calib-run.jsonl

Temperature scaling has one knob per step. Isotonic regression has as many as
the data supports: it fits the non-decreasing function of the raw confidence
that is closest, in squared error, to the 0/1 outcomes of the calibration
split (pool adjacent violators), and reads the calibrated confidence off it.
The order of the answers by confidence is kept (ties may be created), and the
predicted code never changes.
"""
from __future__ import annotations

import argparse
import math
import sys
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path

if TYPE_CHECKING:
    from results_record import ResultsLine

# The fitted map (IsotonicFit) needs no earlier post: fit_isotonic and the comparison import post 04's ece
# where they use it, so a module that only reads a fitted map (post 08's router file) loads this file alone.


@dataclass(frozen=True)
class IsotonicFit:
    """A fitted non-decreasing step-and-ramp function from confidence to P(right).

    thresholds: the distinct calibration confidences, increasing, in [0, 1].
    values: the fitted P(right) at each threshold, non-decreasing, in [0, 1].
    Between two thresholds the value is interpolated linearly; below the
    first and above the last it is clipped to the end values.
    """

    thresholds: tuple[float, ...]
    values: tuple[float, ...]

    def __call__(self, confidence: float) -> float:
        """Calibrated confidence in [0, 1] for a raw confidence (clipped to the fitted range).

        Raises ValueError for NaN, which has no place on the line.
        """
        if math.isnan(confidence):
            raise ValueError(f"confidence {confidence!r} is not a number: the isotonic map takes a probability")
        x, y = self.thresholds, self.values
        if confidence <= x[0]:
            return y[0]
        if confidence >= x[-1]:
            return y[-1]
        right = bisect_right(x, confidence)  # x[right - 1] <= confidence < x[right]
        left = right - 1
        share = (confidence - x[left]) / (x[right] - x[left])
        return y[left] + share * (y[right] - y[left])

    def blocks(self) -> list[tuple[float, float, float]]:
        """The flat stretches of the fit: (first confidence, last confidence, value), lowest first."""
        runs = []
        for x, y in zip(self.thresholds, self.values):
            if runs and runs[-1][2] == y:
                runs[-1] = (runs[-1][0], x, y)
            else:
                runs.append((x, x, y))
        return runs


def pool_adjacent_violators(values: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing sequence closest to `values` in weighted squared error.

    Walks left to right keeping blocks of pooled points; whenever a block's
    mean falls below the previous block's, the two are merged into their
    weighted mean (Ayer et al. 1955; Barlow et al. 1972, "Statistical
    inference under order restrictions"). O(n). values, weights: same length,
    weights > 0. Returns one fitted value per input point.
    """
    blocks: list[list[float]] = []  # [mean, total weight, number of points]
    for value, weight in zip(values, weights):
        blocks.append([value, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, total, count = blocks.pop()
            previous = blocks[-1]
            merged = previous[1] + total
            previous[0] = (previous[0] * previous[1] + mean * total) / merged
            previous[1] = merged
            previous[2] += count
    fitted = []
    for mean, _, count in blocks:
        fitted.extend([mean] * count)
    return fitted


def fit_isotonic(confidences: list[float], corrects: list[bool]) -> IsotonicFit:
    """Fit P(right | confidence) on calibration answers.

    Answers with the same confidence are pooled first into one point (their
    accuracy, weighted by their count), so ties get one value whatever order
    they came in. Raises ValueError on bad input (see ece.check_inputs).
    """
    from ece import check_inputs

    check_inputs(confidences, corrects)
    pooled: dict[float, list[int]] = {}
    for confidence, right in zip(confidences, corrects):
        tally = pooled.setdefault(confidence, [0, 0])
        tally[0] += bool(right)
        tally[1] += 1
    thresholds = sorted(pooled)
    accuracy = [pooled[x][0] / pooled[x][1] for x in thresholds]
    weights = [pooled[x][1] for x in thresholds]
    return IsotonicFit(tuple(thresholds), tuple(pool_adjacent_violators(accuracy, weights)))


def confidence_variants(calib: list[ResultsLine], records: list[ResultsLine],
                        isotonic: IsotonicFit | None = None) -> dict[str, list[float]]:
    """Raw, temperature-scaled (post 05) and isotonic confidences of `records`, both fitted on `calib`.

    Returns {"raw", "temperature", "isotonic"} -> one confidence in [0, 1]
    per record. isotonic: the fit of fit_isotonic on calib's raw confidences,
    when the caller already has it. Post 05's temperature scaling is imported
    here, where the comparison needs it: the fit itself does not use it, so a
    module that imports isotonic.py only for the fit does not load it.
    """
    from ece import outcomes
    from temperature import fit_temperatures, scaled_confidences

    raw, _ = outcomes(records)
    isotonic = isotonic or fit_isotonic(*outcomes(calib))
    return {"raw": raw, "temperature": scaled_confidences(records, fit_temperatures(calib)),
            "isotonic": [isotonic(c) for c in raw]}


def main() -> int:
    # post 04's figures, for this script's own diagram: a module that imports the fit does not load them
    from plot import add_plot_arguments, draw_figure, has_display, png_path, reliability_figure
    from calib_split import add_fit_arguments, load_fit_and_report
    from ece import N_BINS, ece, outcomes, print_bins, reliability_bins

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_plot_arguments(parser, "isotonic")
    args = parser.parse_args()

    calib_path, calib, path, records = load_fit_and_report(args)
    print()
    fit = fit_isotonic(*outcomes(calib))

    print(f"isotonic fit: {len(fit.thresholds)} distinct confidences pooled into {len(fit.blocks())} flat stretches")
    print(f"{'raw confidence':<17} {'P(right)':>8}")
    for first, last, value in fit.blocks():
        print(f"{first:.3f} - {last:.3f}   {value:8.3f}")

    _, corrects = outcomes(records)
    variants = confidence_variants(calib, records, fit)
    print(f"\n{args.split}: {len(records)} answers, accuracy {sum(corrects) / len(corrects):.3f}")
    print(f"{'':<12} {'ECE':>7} {'mean conf':>10}")
    for name, values in variants.items():
        print(f"{name:<12} {ece(values, corrects):7.4f} {sum(values) / len(values):10.3f}")

    print(f"\nreliability table of the isotonic confidences on {args.split}:")
    print_bins(reliability_bins(variants["isotonic"], corrects, N_BINS))
    print(f"\nECE on {args.split}: raw {ece(variants['raw'], corrects):.4f}, "
          f"temperature {ece(variants['temperature'], corrects):.4f}, isotonic {ece(variants['isotonic'], corrects):.4f}")

    show = has_display() and not args.no_show
    panels = [(f"{args.split}, {name}: ECE {ece(values, corrects):.3f}", reliability_bins(values, corrects, N_BINS))
              for name, values in variants.items()]
    draw_figure(lambda: reliability_figure(panels), png_path(args, "isotonic", __file__), show)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
