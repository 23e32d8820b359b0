"""The baselines to beat, with no model at all (beyond the series): TF-IDF nearest neighbours and logistic regression.

    python3 01-why-typed-decisions/beyond/baseline.py                     # BANKING77, both
    python3 01-why-typed-decisions/beyond/baseline.py --method neighbours --all-train

Before asking a language model for a typed decision, see what the cheapest
classifier gets: every training message is a TF-IDF vector of its words and
word pairs, and a message gets the intents of its 10 most similar training
messages, each intent scored by the sum of their similarities
(datasets/neighbours.py defines every step). No server is needed.

Prints, for the calib and test splits, the share of messages whose intent is
ranked first (accuracy, top-1) or among the first 3, 5 or 10, with a score
above 0. The retriever is fitted on the training messages minus the
calibration split (the dataset's fit_messages), so the calib figures are not
leaked; --all-train adds the test figures when fitted on every training
message.

Then (unless --method neighbours) the logistic regression of linear.py in
three regimes of labelled messages: the label file's 5 examples per intent
(those the prompt shows); those and the calibration split (15 per intent,
the series' bargain; calib is then training data, so its figure is
cross-fitted); every training message but the calibration split. The fits
are cached: the first run takes minutes (13 for BANKING77, measured on 2
cores shared with other work), later runs seconds.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from labels import Message
from script_exit import exit_on_bad_input
from neighbours import K, Retriever, gold_positions, recall_at
from registry import DATASETS, Dataset, add_dataset_argument

CUTOFFS = (1, 3, 5, 10)
HEADER = f"{'split':<5} {'messages':>8}  {'which':<12}" + "".join(f" {f'top-{c}':>6}" for c in CUTOFFS)


def recalls(positions: list[int | None]) -> str:
    """The top-1/3/5/10 recalls of these positions as aligned percentages."""
    return "".join(f" {100 * recall_at(positions, c):>5.1f}%" for c in CUTOFFS)


def fit(messages: list[Message], what: str) -> Retriever:
    """Retriever.fit(messages), after printing what it is fitted on and how long fitting took."""
    start = time.perf_counter()
    retriever = Retriever.fit(messages)
    print(f"fitted on {len(messages):,} messages ({what}), {len(retriever.labels)} intents, "
          f"k = {K}: {time.perf_counter() - start:.1f} s")
    return retriever


def evaluate(retriever: Retriever, split: str, messages: list[Message]) -> list[int | None]:
    """gold_positions of a split, after printing how long ranking it took."""
    start = time.perf_counter()
    positions = gold_positions(retriever, messages)
    seconds = time.perf_counter() - start
    print(f"  {split}: {len(messages):,} messages ranked in {seconds:.1f} s "
          f"({1000 * seconds / len(messages):.1f} ms each)")
    return positions


def ranked_splits(dataset: Dataset) -> dict[str, tuple[list[Message], list[int | None]]]:
    """Split name -> (its messages, gold_positions) for calib and test, from one retriever fitted on
    dataset.fit_messages(), after printing its name, the fit and the ranking times."""
    print(dataset.name.upper())
    fitted = fit(dataset.fit_messages(), "training messages, none of the calibration split")
    splits = {name: dataset.load_split(name) for name in ("calib", "test")}
    return {name: (messages, evaluate(fitted, name, messages)) for name, messages in splits.items()}


def recall_row(split: str, which: str, positions: list[int | None]) -> str:
    """One line of the table: the split, how many messages, which of them, their top-1/3/5/10 recalls."""
    return f"{split:<5} {len(positions):>8,}  {which:<12}{recalls(positions)}"


def print_baselines(dataset: Dataset, all_train: bool) -> float:
    """Print one dataset's table (and the all-train comparison); return its test top-1 recall."""
    ranked = ranked_splits(dataset)
    print(HEADER)
    for name, (_, found) in ranked.items():
        print(recall_row(name, "all", found))
    test_messages, test_found = ranked["test"]
    if all_train:
        print("\ntest split, fitted on all of train.csv (the calibration rows are then in the fit, so no calib row)")
        everything = fit(dataset.loader().fit_messages(all_train=True), "all of train.csv")
        leaked = evaluate(everything, "test", test_messages)
        print(f"{'fit':<27}" + "".join(f" {f'top-{c}':>6}" for c in CUTOFFS))
        print(f"{'train minus calib':<27}{recalls(test_found)}")
        print(f"{'all train':<27}{recalls(leaked)}")
        print(f"{'difference (points)':<27}" + "".join(
            f" {100 * (recall_at(test_found, c) - recall_at(leaked, c)):>+6.1f}" for c in CUTOFFS))
    return recall_at(test_found, 1)


REGIME_NAMES = {"examples": "5 per intent: the label file's examples",
                "examples+calib": "the examples and the calib split",
                "full": "every training message but the calib split"}


def accuracy(probabilities: list[dict[str, float]], messages: list[Message]) -> float:
    """The share of messages whose most probable intent is theirs (ValueError for none)."""
    if not messages:
        raise ValueError("no messages to take an accuracy of")
    return sum(max(p, key=p.get) == m.intent for p, m in zip(probabilities, messages)) / len(messages)


LINEAR_TITLE = "\nlogistic regression on word and character n-gram TF-IDF (linear.py), accuracy:"
LINEAR_HEADER = f"{'labelled messages used':<48} {'messages':>8} {'calib':>7} {'test':>7}"


def regime_fit(dataset: Dataset, regime: str, splits: dict[str, list[Message]]):
    """Fit (or read from the cache) one regime's logistic regression: (its probabilities per split, the line of
    the table with its calib and test accuracy, its test accuracy). The time it took goes to stderr."""
    from linear import regime_messages, regime_probabilities
    start = time.perf_counter()
    print(f"  fitting and scoring: {REGIME_NAMES[regime]} ...", file=sys.stderr, flush=True)
    scored = regime_probabilities(dataset, regime)
    print(f"  ... {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    calib, test = (accuracy(scored[name], splits[name]) for name in ("calib", "test"))
    line = (f"{REGIME_NAMES[regime]:<48} {len(regime_messages(dataset, regime)):>8,} {100 * calib:6.1f}%"
            f"{'*' if regime == 'examples+calib' else ' '}{100 * test:6.1f}%")
    return scored, line, test


def cross_fit_note() -> str:
    """The table's last line: why the middle regime's calib figure is starred."""
    from linear import FOLDS
    return f"(* the calib split is training data there, so its figure is cross-fitted over {FOLDS} folds)"


def linear_report(dataset: Dataset) -> float:
    """Print the logistic regression's accuracy on calib and test in the three regimes of linear.REGIMES, with how
    many labelled messages each used; return its test accuracy with every training message."""
    from linear import REGIMES
    splits = {name: dataset.load_split(name) for name in ("calib", "test")}
    print(LINEAR_TITLE)
    print(LINEAR_HEADER)
    result = 0.0
    for regime in REGIMES:
        _, line, result = regime_fit(dataset, regime, splits)
        print(line)
    print(cross_fit_note())
    return result


def beat_line(split: str, beat: dict[str, float]) -> str:
    """The closing line: the accuracy per method on `split` ("BANKING77 test") that a model has to beat."""
    return (f"\naccuracy a model has to beat on the {split} split: "
            + ", ".join(f"{100 * value:.1f}% ({method})" for method, value in beat.items())
            + ", fitted on every training message but the calib split")


METHODS = ("both", "neighbours", "linear")


def add_method_argument(parser: argparse.ArgumentParser) -> None:
    """--method: which baselines to run (METHODS), the same in every script that runs them."""
    parser.add_argument("--method", choices=METHODS, default="both",
                        help="nearest neighbours (seconds), logistic regression (minutes the first time) or both "
                             "(default)")


def accuracies_to_beat(dataset: Dataset, method: str, neighbours: Callable[[], float],
                       linear: Callable[[], float]) -> dict[str, float]:
    """Run the baselines `method` asks for (one of METHODS), each printing its report: neighbours() and linear()
    return a test accuracy in [0, 1]. Returns method name -> accuracy, for beat_line. With the logistic regression
    alone, the dataset's name heads the output as the neighbours' report would."""
    beat = {}
    if method == "linear":
        print(dataset.name.upper())
    else:
        beat["nearest neighbours"] = neighbours()
    if method != "neighbours":
        beat["logistic regression"] = linear()
    return beat


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    add_method_argument(parser)
    parser.add_argument("--all-train", action="store_true",
                        help="BANKING77, nearest neighbours: also fit on all 10,003 training messages and show the "
                             "test difference")
    args = parser.parse_args()
    if args.all_train and args.dataset != "banking77":
        parser.error("--all-train is for BANKING77 (the other datasets leave nothing out of their fit)")
    if args.all_train and args.method == "linear":
        parser.error("--all-train is for the nearest neighbours (--method neighbours or both)")
    dataset = DATASETS[args.dataset]
    beat = accuracies_to_beat(dataset, args.method, lambda: print_baselines(dataset, args.all_train),
                              lambda: linear_report(dataset))
    print(beat_line(f"{dataset.name.upper()} test", beat))
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
