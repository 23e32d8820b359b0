"""The two CSV files of a task of your own, written by hand for the tests of datasets/make_task.py.

write_csv writes any header and rows; synthetic makes a labels.csv and a
messages.csv of n labels whose messages share a topic word two labels at a
time, so that proposed groups have something to go by. SCRIPT is the script
the tests run, WORDS the topic words.
"""
import csv
from pathlib import Path

SCRIPT = "datasets/make_task.py"
WORDS = ("card", "transfer", "refund", "pin", "cash", "fee", "rate", "account", "app", "phone", "top", "limit")


def write_csv(path: Path, header, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as file:
        out = csv.writer(file)
        out.writerow(header)
        out.writerows(rows)
    return path


def synthetic(tmp_path: Path, n_labels: int, per_label: int = 15, groups: int = 0):
    """labels.csv and messages.csv of n_labels labels, per_label distinct messages each; labels k and k+1 share a
    topic word, so proposed groups have something to go by."""
    names = [f"label_{k}" for k in range(n_labels)]
    header = ["label", "description"] + (["group"] if groups else [])
    rows = [[name, f"what {name} is for"] + ([f"G{k % groups}"] if groups else []) for k, name in enumerate(names)]
    labels = write_csv(tmp_path / "labels.csv", header, rows)
    texts = [[f"my {WORDS[(k // 2) % len(WORDS)]} question number {i} for {name}", name]
             for k, name in enumerate(names) for i in range(per_label)]
    return labels, write_csv(tmp_path / "messages.csv", ["text", "label"], texts)
