"""The reliability diagram: accuracy against confidence per bin, with how many answers each bin holds.

    python3 04-is-the-confidence-honest/plot.py                   # reference test split
    python3 04-is-the-confidence-honest/plot.py --split calib --png calib.png
    python3 04-is-the-confidence-honest/plot.py --results my-test-run.jsonl --no-show

A point sits at (mean confidence, accuracy) of its bin; on the diagonal the
confidence is honest. The red line from a point to the diagonal is the bin's
gap: below the diagonal the model was overconfident. The bars underneath count
the answers per bin, which says how much each point weighs in ECE. Saves a PNG
(default 04-is-the-confidence-honest/results/reliability-<split>.png) and shows it when a display is
available. Needs matplotlib (pip install matplotlib).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from ece import N_BINS, Bin, ece, outcomes, reliability_bins
from registry import DATASETS
from results_file import results_folder
from saved_answers import add_results_arguments, describe, read_split


def has_display() -> bool:
    """True where plt.show() can open a window: macOS, Windows, or an X11/Wayland session."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def pyplot(show: bool):
    """matplotlib.pyplot with a file-only backend unless a window will be shown.

    Raises ImportError with the pip command when matplotlib is missing. Call it
    before the first figure; plot.py itself imports matplotlib only here, so
    the scripts that import it still load without matplotlib.
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError("the plots need matplotlib: pip install matplotlib (where python3 refuses that, in a "
                          "virtual environment: python3 -m venv .venv && .venv/bin/pip install matplotlib)") from None
    if not show:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def add_plot_arguments(parser: argparse.ArgumentParser, figure: str) -> None:
    """--png and --no-show, shared by every script that draws a figure (named `figure`, e.g. "coverage")."""
    # the dataset's name goes into the file name only for a dataset other than BANKING77 (png_path)
    others = f", {figure}-<dataset>-<split>.png for a dataset other than banking77" if len(DATASETS) > 1 else ""
    parser.add_argument("--png", type=Path, help=f"where to save the figure (default: results/{figure}-<split>.png "
                                                 f"in this post's folder{others})")
    parser.add_argument("--no-show", action="store_true", help="only save the PNG, even when a display is available")


def png_path(args: argparse.Namespace, figure: str, script: str | Path) -> Path:
    """--png, or the default in the results/ folder of script's post: <figure>-<split>.png for
    BANKING77, <figure>-<dataset>-<split>.png otherwise."""
    if args.png:
        return args.png
    dataset = "" if args.dataset == "banking77" else args.dataset
    parts = (figure, dataset, args.split)
    return results_folder(script) / ("-".join(part for part in parts if part) + ".png")


def draw_reliability(diagram, histogram, bins: list[Bin], title: str) -> None:
    """Draw one reliability diagram on two matplotlib Axes: the diagram above, the answers per bin below.

    bins: reliability_bins(...) output, empty bins included (they get no point).
    """
    width = bins[0].high - bins[0].low
    full = [b for b in bins if b.count]
    diagram.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="honest")
    for b in full:
        diagram.plot([b.mean_confidence, b.mean_confidence], [b.mean_confidence, b.accuracy], color="tab:red", linewidth=1.5)
    diagram.plot([b.mean_confidence for b in full], [b.accuracy for b in full], "o", color="tab:blue", label="bin")
    diagram.set_xlim(0, 1)
    diagram.set_ylim(0, 1)
    diagram.set_ylabel("accuracy")
    diagram.set_title(title)
    diagram.legend(loc="upper left")
    histogram.bar([b.low for b in bins], [b.count for b in bins], width=width, align="edge",
                  color="tab:blue", edgecolor="white")
    histogram.set_xlim(0, 1)
    histogram.set_xlabel("confidence")
    histogram.set_ylabel("answers")


def reliability_figure(panels: list[tuple[str, list[Bin]]]):
    """One column per (title, bins) panel, diagrams on top and histograms underneath, sharing the x axis."""
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(2, len(panels), figsize=(4.5 * len(panels), 6), squeeze=False,
                                gridspec_kw={"height_ratios": [3, 1]}, sharex="col")
    for column, (title, bins) in enumerate(panels):
        draw_reliability(axes[0][column], axes[1][column], bins, title)
    figure.tight_layout()
    return figure


def save_figure(figure, png: Path, show: bool) -> None:
    """Save the figure as PNG (creating the folder), print where, and show it if asked."""
    import matplotlib.pyplot as plt
    png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png, dpi=110)
    print(f"saved {png}")
    if show:
        plt.show()
    plt.close(figure)


def draw_figure(make_figure, png: Path, show: bool) -> bool:
    """Make the figure (make_figure: no arguments -> a matplotlib Figure) and save_figure it; True when drawn.

    Without matplotlib, print one line saying the figure is skipped and how
    to install it, and return False: the numbers a script printed before
    stand, so it still ends with status 0. pyplot selects the backend
    before make_figure makes any figure.
    """
    try:
        pyplot(show)
    except ImportError as error:
        print(f"no figure: {error}")
        return False
    save_figure(make_figure(), png, show)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    add_plot_arguments(parser, "reliability")
    args = parser.parse_args()
    show = has_display() and not args.no_show
    loaded = read_split(args.split, args.results, args.dataset, "--results")
    records = loaded.records
    confidences, corrects = outcomes(records)
    print(describe(loaded.path, records, len(loaded.errors)))
    bins = reliability_bins(confidences, corrects, N_BINS)
    title = f"{args.split}: {len(records)} answers, ECE {ece(confidences, corrects, N_BINS):.3f}"
    print(title)
    draw_figure(lambda: reliability_figure([(title, bins)]), png_path(args, "reliability", __file__), show)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
