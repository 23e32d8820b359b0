"""BANKING77: the messages, and the label set that turns 77 intents into codes.

BANKING77 (PolyAI, CC BY 4.0; Casanueva et al., NLP4ConvAI 2020) holds
customer-support messages for a card-and-app bank, each labelled with one of
77 intents. The series asks a model for a two-letter code such as ``C-F``:
a group letter (A-H here), a hyphen, and the intent's letter inside its group.

The codes, group names, one-line descriptions, five example texts per intent
and the 770 calibration rows live in ``banking77.json`` next to this file;
the types (Message, Intent, Group, LabelSet) are labels.py's.
``make_banking77.py`` regenerates the examples and calibration rows.

Message ids are ``train-<row>`` / ``test-<row>``, where row is the 0-based index
of the data row in the official CSV (the header is not counted).
"""
import csv
from pathlib import Path

from datafiles import fetch
from labels import LabelSet, Message, read_label_file

DATASET = "banking77"
SOURCE = "https://github.com/PolyAI-LDN/task-specific-datasets"
BASE_URL = "https://raw.githubusercontent.com/PolyAI-LDN/task-specific-datasets/master/banking_data/"
TRAIN_URL = BASE_URL + "train.csv"
TRAIN_SHA256 = "b06e26ac675513959a63135f11b94ea7786ed02da65db93a5650d8838cbc664b"
TEST_URL = BASE_URL + "test.csv"
TEST_SHA256 = "d12d6e3bc4c3103966ae786dc435913c0c563dfa328f5a3646d0e62cfeeb474d"
FILES = {"train": (TRAIN_URL, TRAIN_SHA256), "test": (TEST_URL, TEST_SHA256)}
N_INTENTS = 77
LABELS_FILE = Path(__file__).with_name("banking77.json")


def load_rows(split: str) -> list[Message]:
    """All messages of the official ``train`` (10,003) or ``test`` (3,080) CSV, in file order.

    Downloads and verifies the file on first use (see datafiles.fetch).
    Raises ValueError for another split name or a CSV whose header is not ``text,category``.
    """
    if split not in FILES:
        raise ValueError(f"split must be 'train' or 'test', not {split!r}.")
    url, sha256 = FILES[split]
    path = fetch(DATASET, f"{split}.csv", url, sha256)
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next(reader)
        if header != ["text", "category"]:
            raise ValueError(f"{path} starts with {header}, expected ['text', 'category'].")
        return [Message(f"{split}-{row}", text, intent) for row, (text, intent) in enumerate(reader)]


def load_labels(path: Path = LABELS_FILE) -> LabelSet:
    """The BANKING77 label set: labels.read_label_file() of banking77.json (77 intents).

    ``check_labels`` compares it with the training data. Raises ValueError
    naming the first structural problem.
    """
    return read_label_file(path, N_INTENTS, "BANKING77")


def check_labels(labels: LabelSet, train_rows: list[Message]) -> None:
    """Check a label set against the training data; raise ValueError on the first mismatch.

    The intent names must be exactly the dataset's; every example must be a
    training text of its intent; calibration rows must be distinct, exist, give
    every intent the same number of rows, and not repeat an example text.
    """
    texts = {(m.text, m.intent) for m in train_rows}
    names = {m.intent for m in train_rows}
    if names != set(labels.by_intent):
        raise ValueError(f"intent names differ from the dataset: missing {sorted(names - set(labels.by_intent))}, "
                         f"unknown {sorted(set(labels.by_intent) - names)}.")
    examples = set()
    for intent in labels.intents:
        for text in intent.examples:
            if (text, intent.name) not in texts:
                raise ValueError(f"example {text!r} of {intent.name} is not a training text of that intent.")
            examples.add(text)
    rows = labels.calibration_rows
    if len(set(rows)) != len(rows) or not all(0 <= row < len(train_rows) for row in rows):
        raise ValueError(f"calibration rows must be distinct rows of train.csv (0 to {len(train_rows) - 1}).")
    counts = {name: 0 for name in labels.by_intent}
    for row in rows:
        message = train_rows[row]
        if message.text in examples:
            raise ValueError(f"calibration row {row} is also an example of {message.intent}.")
        counts[message.intent] += 1
    if len(set(counts.values())) != 1:
        uneven = {name: n for name, n in counts.items() if n != len(rows) // N_INTENTS}
        raise ValueError(f"calibration rows are uneven across intents: {uneven}.")


def load_split(name: str, labels: LabelSet | None = None) -> list[Message]:
    """Messages of one split: ``train``, ``test`` (official 3,080, file order) or
    ``calib`` (the 770 training rows of ``labels.calibration_rows``, in that order).

    ``labels`` defaults to ``load_labels()``; only ``calib`` uses it.
    Raises ValueError for another name.
    """
    if name in FILES:
        return load_rows(name)
    if name != "calib":
        raise ValueError(f"split must be 'train', 'test' or 'calib', not {name!r}.")
    labels = labels or load_labels()
    train = load_rows("train")
    return [train[row] for row in labels.calibration_rows]


def fit_messages(labels: LabelSet | None = None, all_train: bool = False) -> list[Message]:
    """The messages a retriever is fitted on: train.csv minus the label file's calibration rows.

    10,003 - 770 = 9,233 messages in file order, for ``labels`` (default
    load_labels()). Later posts fit thresholds on the calibration rows, so
    their figures must not come from a retriever that has seen them.
    ``all_train=True`` keeps all 10,003, for comparison with figures measured
    that way; then calibration figures are leaked (every calibration message
    is its own nearest neighbour).
    """
    train = load_rows("train")
    if all_train:
        return train
    held_out = set((labels or load_labels()).calibration_rows)
    return [message for row, message in enumerate(train) if row not in held_out]
