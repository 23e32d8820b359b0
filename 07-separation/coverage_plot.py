"""The accuracy-coverage curves of the raw, temperature-scaled and isotonic confidences on one plot.

    python3 07-separation/coverage_plot.py                   # reference test split, fitted on calib
    python3 07-separation/coverage_plot.py --split calib --png calib.png
    python3 07-separation/coverage_plot.py --results my-test-run.jsonl --no-show

Each curve lowers the confidence threshold from the top: x is the share of
answers kept (coverage), y the accuracy of the kept ones (selective accuracy).
A curve that stays high further to the right separates right from wrong
better. The dashed curve is a perfect ranking of the same answers, the dotted
line a ranking that knows nothing (the overall accuracy), the light lines the
target accuracies 95%, 98% and 99%. Isotonic draws few points: each flat
stretch enters at once. Saves a PNG (default 07-separation/results/coverage-<split>.png)
and shows it when a display is available. Needs matplotlib (pip install
matplotlib).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from calib_split import add_fit_arguments, load_fit_and_report
from ece import outcomes
from plot import add_plot_arguments, draw_figure, has_display, png_path
from isotonic import confidence_variants
from separation import TARGETS, SweepPoint, accuracy_coverage, area_under_risk

# Curves with at most this many points get a marker on each, so a flat stretch entering at once is visible.
MARKED = 60


def perfect_curve(corrects: list[bool]) -> tuple[list[float], list[float]]:
    """(coverages, selective accuracies) of the ranking with every right answer first, one point per answer."""
    n, right = len(corrects), sum(bool(c) for c in corrects)
    return [k / n for k in range(1, n + 1)], [min(k, right) / k for k in range(1, n + 1)]


def coverage_figure(curves: dict[str, list[SweepPoint]], corrects: list[bool], title: str):
    """One matplotlib Figure: each (name -> accuracy_coverage points) curve, the perfect ranking and the base rate."""
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(7, 5))
    coverages, accuracies = perfect_curve(corrects)
    axes.plot(coverages, accuracies, color="grey", linestyle="--", linewidth=1, label="perfect ranking")
    base = sum(bool(c) for c in corrects) / len(corrects)
    axes.axhline(base, color="grey", linestyle=":", linewidth=1, label=f"no ranking ({100 * base:.1f}%)")
    for k, target in enumerate(TARGETS):
        axes.axhline(target, color="lightgrey", linewidth=0.8,
                     label=", ".join(f"{100 * t:.0f}%" for t in TARGETS) if k == 0 else None)
    for name, points in curves.items():
        marker = "o" if len(points) <= MARKED else None
        axes.plot([p.coverage for p in points], [p.accuracy for p in points], marker=marker, markersize=3,
                  linewidth=1.5, label=f"{name} (AURC {area_under_risk(points):.3f})")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("coverage (share of answers kept)")
    axes.set_ylabel("selective accuracy (of the kept answers)")
    axes.set_title(title)
    axes.legend(loc="lower left")
    figure.tight_layout()
    return figure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_plot_arguments(parser, "coverage")
    args = parser.parse_args()
    show = has_display() and not args.no_show
    calib_path, calib, path, records = load_fit_and_report(args)
    _, corrects = outcomes(records)
    variants = confidence_variants(calib, records)
    curves = {name: accuracy_coverage(confidences, corrects) for name, confidences in variants.items()}
    for name in variants:
        print(f"{name:<12} {len(curves[name]):5d} points, AURC {area_under_risk(curves[name]):.4f}")
    title = f"{args.split}: {len(records)} answers, {100 * sum(corrects) / len(corrects):.1f}% right"
    draw_figure(lambda: coverage_figure(curves, corrects, title), png_path(args, "coverage", __file__), show)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
