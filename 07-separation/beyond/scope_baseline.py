"""Post 01's baselines (beyond the series) on a dataset with out-of-scope messages: every row also in scope and out of scope.

    python3 07-separation/beyond/scope_baseline.py --method neighbours   # CLINC150, nearest neighbours
    python3 07-separation/beyond/scope_baseline.py                       # and the logistic regression

Post 01's baseline.py, TF-IDF nearest neighbours and a logistic regression,
with no model and no server, on CLINC150 (the default) or another dataset
whose label file names out-of-scope intents. The out-of-scope training
messages are one more intent to the retriever and the classifier, so a
message can be ranked out of scope like any other intent. Each split gets
three rows: all its messages, the in-scope ones and the out-of-scope ones
(top-1 of the latter: the share ranked out of scope first). The logistic
regression's table gets a column for the in-scope test messages, and the
accuracy to beat is the in-scope one.

The regimes are post 01's: the label file's 5 examples per intent (CLINC150's
prompt shows 3 of them); those and the calibration split (10 per intent on
CLINC150, whose calib split holds 5 per intent; its figure is cross-fitted);
every training message but the calibration split. The fits are cached in the
same place as post 01's: the first run on CLINC150 took about 10 minutes on 2
cores, a later one under half a minute (this folder's README has the measured times).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from baseline import (HEADER, LINEAR_HEADER, LINEAR_TITLE, accuracies_to_beat, accuracy, add_method_argument, beat_line,
                      cross_fit_note, ranked_splits, recall_row, regime_fit)
from neighbours import recall_at
from registry import DATASETS, Dataset
from script_exit import exit_on_bad_input

SCOPED = sorted(name for name, dataset in DATASETS.items() if dataset.out_of_scope_intents)


def neighbours_report(dataset: Dataset) -> float:
    """Print the nearest neighbours' table with in-scope and out-of-scope rows; return the in-scope test top-1."""
    ranked = ranked_splits(dataset)
    print(HEADER)
    inside = {}
    for name, (messages, found) in ranked.items():
        outside = [m.intent in dataset.out_of_scope_intents for m in messages]
        inside[name] = [p for p, out in zip(found, outside) if not out]
        print(recall_row(name, "all", found))
        print(recall_row(name, "in scope", inside[name]))
        print(recall_row(name, "out of scope", [p for p, out in zip(found, outside) if out]))
    print("(out of scope: top-1 is the share ranked out of scope first)")
    return recall_at(inside["test"], 1)


def linear_scope_report(dataset: Dataset) -> float:
    """Print post 01's logistic regression table with a column for the in-scope test messages; return the
    in-scope test accuracy with every training message."""
    from linear import REGIMES
    splits = {name: dataset.load_split(name) for name in ("calib", "test")}
    inside = [i for i, m in enumerate(splits["test"]) if m.intent not in dataset.out_of_scope_intents]
    print(LINEAR_TITLE)
    print(LINEAR_HEADER + "  test, in scope")
    result = 0.0
    for regime in REGIMES:
        scored, line, _ = regime_fit(dataset, regime, splits)
        result = accuracy([scored["test"][i] for i in inside], [splits["test"][i] for i in inside])
        print(f"{line}  {100 * result:14.1f}%")
    print(cross_fit_note())
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=SCOPED, default="clinc150",
                        help="a dataset with out-of-scope intents (default: clinc150)")
    add_method_argument(parser)
    args = parser.parse_args()
    dataset = DATASETS[args.dataset]
    beat = accuracies_to_beat(dataset, args.method, lambda: neighbours_report(dataset), lambda: linear_scope_report(dataset))
    print(beat_line(f"{dataset.name.upper()} in-scope test", beat))
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
