"""The baseline to beat, with no model at all: TF-IDF nearest neighbours.

    python3 01-why-typed-decisions/baseline.py                     # BANKING77 and CLINC150
    python3 01-why-typed-decisions/baseline.py --dataset banking77 --all-train

Before asking a language model for a typed decision, see what the cheapest
classifier gets: every training message is a TF-IDF vector of its words and
word pairs, and a message gets the intents of its 10 most similar training
messages, each intent scored by the sum of their similarities
(datasets/neighbours.py defines every step). No server is needed.

Prints, for the calib and test splits, the share of messages whose intent is
ranked first (accuracy, top-1) or among the first 3, 5 or 10, with a score
above 0. BANKING77 is fitted on train.csv minus the 770 calibration rows, so
the calib figures are not leaked; --all-train adds the test figures when
fitted on all 10,003 training messages. CLINC150 is fitted on train and
oos_train; its rows split into in-scope messages and out-of-scope ones,
whose top-1 is the share ranked ``oos`` first.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
import banking77
import clinc150
from labels import Message
from llama_http import exit_on_server_errors
from neighbours import K, Retriever, banking77_fit_messages, clinc150_fit_messages, gold_positions, recall_at

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


def banking77_report(all_train: bool) -> float:
    """Print BANKING77's table (and the all-train comparison); return its test top-1 recall."""
    labels = banking77.load_labels()
    print("BANKING77")
    fitted = fit(banking77_fit_messages(labels), f"train.csv minus the {len(labels.calibration_rows)} calibration rows")
    splits = {name: banking77.load_split(name, labels) for name in ("calib", "test")}
    positions = {name: evaluate(fitted, name, messages) for name, messages in splits.items()}
    print(HEADER)
    for name, found in positions.items():
        print(f"{name:<5} {len(found):>8,}  {'all':<12}{recalls(found)}")
    if all_train:
        print("\ntest split, fitted on all of train.csv (the calibration rows are then in the fit, so no calib row)")
        everything = fit(banking77_fit_messages(labels, all_train=True), "all of train.csv")
        leaked = evaluate(everything, "test", splits["test"])
        print(f"{'fit':<27}" + "".join(f" {f'top-{c}':>6}" for c in CUTOFFS))
        print(f"{'train minus calib':<27}{recalls(positions['test'])}")
        print(f"{'all train':<27}{recalls(leaked)}")
        print(f"{'difference (points)':<27}" + "".join(
            f" {100 * (recall_at(positions['test'], c) - recall_at(leaked, c)):>+6.1f}" for c in CUTOFFS))
    return recall_at(positions["test"], 1)


def clinc150_report() -> float:
    """Print CLINC150's table (all, in scope, out of scope per split); return its in-scope test top-1 recall."""
    labels = clinc150.load_labels()
    print("CLINC150")
    fitted = fit(clinc150_fit_messages(), "train 15,000 + oos_train 100")
    splits = {name: clinc150.load_split(name, labels) for name in ("calib", "test")}
    parts = {}
    for name, messages in splits.items():
        found = evaluate(fitted, name, messages)
        parts[name] = {"all": found,
                       "in scope": [p for p, m in zip(found, messages) if m.intent != clinc150.OUT_OF_SCOPE],
                       "out of scope": [p for p, m in zip(found, messages) if m.intent == clinc150.OUT_OF_SCOPE]}
    print(HEADER)
    for name, by_scope in parts.items():
        for which, found in by_scope.items():
            print(f"{name:<5} {len(found):>8,}  {which:<12}{recalls(found)}")
    print("(out of scope: top-1 is the share ranked oos first)")
    return recall_at(parts["test"]["in scope"], 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("banking77", "clinc150", "all"), default="all",
                        help="which dataset (default: all)")
    parser.add_argument("--all-train", action="store_true",
                        help="BANKING77: also fit on all 10,003 training messages and show the test difference")
    args = parser.parse_args()
    if args.all_train and args.dataset == "clinc150":
        parser.error("--all-train is for BANKING77 (CLINC150 leaves nothing out of its fit)")
    last = []
    if args.dataset in ("banking77", "all"):
        last.append(f"BANKING77 test {100 * banking77_report(args.all_train):.1f}%")
        print()
    if args.dataset in ("clinc150", "all"):
        last.append(f"CLINC150 in-scope test {100 * clinc150_report():.1f}%")
        print()
    print(f"accuracy a model has to beat: {', '.join(last)}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
