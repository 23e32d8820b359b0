"""BANKING77: the messages, and the label set that turns 77 intents into codes.

BANKING77 (PolyAI, CC BY 4.0; Casanueva et al., NLP4ConvAI 2020) holds
customer-support messages for a card-and-app bank, each labelled with one of
77 intents. The series asks a model for a two-letter code such as ``C-F``:
a group letter (A-H here), a hyphen, and the intent's letter inside its group.

The codes, group names, one-line descriptions, five example texts per intent
and the 770 calibration rows live in ``banking77.json`` next to this file.
``make_banking77.py`` regenerates the examples and calibration rows.

Message ids are ``train-<row>`` / ``test-<row>``, where row is the 0-based index
of the data row in the official CSV (the header is not counted).
"""
import csv
import json
from dataclasses import dataclass
from pathlib import Path

from datafiles import fetch

DATASET = "banking77"
SOURCE = "https://github.com/PolyAI-LDN/task-specific-datasets"
BASE_URL = "https://raw.githubusercontent.com/PolyAI-LDN/task-specific-datasets/master/banking_data/"
TRAIN_URL = BASE_URL + "train.csv"
TRAIN_SHA256 = "b06e26ac675513959a63135f11b94ea7786ed02da65db93a5650d8838cbc664b"
TEST_URL = BASE_URL + "test.csv"
TEST_SHA256 = "d12d6e3bc4c3103966ae786dc435913c0c563dfa328f5a3646d0e62cfeeb474d"
FILES = {"train": (TRAIN_URL, TRAIN_SHA256), "test": (TEST_URL, TEST_SHA256)}
N_INTENTS = 77
TEST_SIZE = 3080  # messages in the official test.csv (its sha256 is pinned above)
LABELS_FILE = Path(__file__).with_name("banking77.json")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Message:
    """One customer message.

    id: ``train-<row>`` or ``test-<row>`` (row = 0-based data row of the official CSV).
    text: the message exactly as in the CSV (a few start or end with line breaks).
    intent: the gold intent name, e.g. ``card_arrival``.
    """
    id: str
    text: str
    intent: str


@dataclass(frozen=True)
class Intent:
    """One intent of the label set.

    group: letter of its group (``A``); letter: its letter inside the group (``F``).
    name: the BANKING77 intent name; description: one line on what the dataset uses it for.
    examples: training texts of this intent, shown to the model in the prompt.
    """
    group: str
    letter: str
    name: str
    description: str
    examples: tuple[str, ...]

    @property
    def code(self) -> str:
        """The answer the model gives for this intent: ``<group>-<letter>``, e.g. ``A-F``."""
        return f"{self.group}-{self.letter}"


@dataclass(frozen=True)
class Group:
    """A group of related intents: letter (``A``), short name, intents in letter order."""
    letter: str
    name: str
    intents: tuple[Intent, ...]


@dataclass(frozen=True)
class LabelSet:
    """The groups of a label file and the training rows held out for calibration.

    calibration_rows: 0-based rows of the split the calibration messages come from,
    never used as examples (BANKING77: train.csv, 10 per intent; CLINC150: see clinc150.py).
    """
    groups: tuple[Group, ...]
    calibration_rows: tuple[int, ...]

    @property
    def intents(self) -> list[Intent]:
        """All intents, group by group, in letter order."""
        return [intent for group in self.groups for intent in group.intents]

    @property
    def by_code(self) -> dict[str, Intent]:
        """Intent for each code, e.g. ``{"A-A": Intent(name="card_arrival", ...)}``."""
        return {intent.code: intent for intent in self.intents}

    @property
    def by_intent(self) -> dict[str, Intent]:
        """Intent for each intent name, e.g. ``{"card_arrival": Intent(...)}``."""
        return {intent.name: intent for intent in self.intents}

    def group(self, letter: str) -> Group:
        """The group with this letter; KeyError if there is none."""
        for group in self.groups:
            if group.letter == letter:
                return group
        raise KeyError(f"no group with letter {letter!r}")


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


def _letter_error(letter, seen: set, what: str) -> str | None:
    if not (isinstance(letter, str) and len(letter) == 1 and letter in LETTERS):
        return f"{what} letter {letter!r} is not a single capital letter A-Z"
    if letter in seen:
        return f"{what} letter {letter!r} is used twice"
    return None


def load_labels(path: Path = LABELS_FILE, n_intents: int = N_INTENTS, dataset: str = "BANKING77") -> LabelSet:
    """Read and check a label file (format: datasets/README.md).

    Checks the structure only: group letters unique A-Z, intent letters unique
    A-Z within their group, every intent name once, ``n_intents`` intents in all
    (77 for BANKING77; clinc150.load_labels passes its own count and ``dataset``
    name, which only appears in the error message).
    ``check_labels`` compares the file with the training data.
    Raises ValueError with a sentence naming the first problem found.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        return _parse_labels(data, path, n_intents, dataset)
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path}: a group, intent or calibration entry lacks "
                         f"or mistypes the field {error}.") from error


def _parse_labels(data: dict, path, n_intents: int, dataset: str) -> LabelSet:
    groups, names, group_letters = [], set(), set()
    for group in data["groups"]:
        if problem := _letter_error(group["letter"], group_letters, "group"):
            raise ValueError(f"{path}: {problem}.")
        group_letters.add(group["letter"])
        intents, intent_letters = [], set()
        for item in group["intents"]:
            where = f"intent {item['intent']!r} in group {group['letter']}"
            if problem := _letter_error(item["letter"], intent_letters, where):
                raise ValueError(f"{path}: {problem}.")
            if item["intent"] in names:
                raise ValueError(f"{path}: intent {item['intent']!r} appears more than once.")
            intent_letters.add(item["letter"])
            names.add(item["intent"])
            intents.append(Intent(group["letter"], item["letter"], item["intent"],
                                  item["description"], tuple(item["examples"])))
        groups.append(Group(group["letter"], group["name"], tuple(intents)))
    if len(names) != n_intents:
        raise ValueError(f"{path}: has {len(names)} intents, {dataset} has {n_intents}.")
    rows = tuple(data["calibration"]["rows"])
    if not all(isinstance(row, int) for row in rows):
        raise ValueError(f"{path}: calibration rows must be integers.")
    return LabelSet(tuple(groups), rows)


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


def split_size(name: str, labels: LabelSet | None = None) -> int:
    """How many messages load_split(name) gives, without reading the data files.

    ``test``: 3,080; ``calib``: the calibration rows of the label file (770).
    Lets a reader of results files tell a complete run from a partial one
    offline. Raises ValueError for another name.
    """
    if name == "test":
        return TEST_SIZE
    if name == "calib":
        return len((labels or load_labels()).calibration_rows)
    raise ValueError(f"split must be 'test' or 'calib', not {name!r}.")


def spread(messages: list[Message]) -> list[Message]:
    """The same messages, one of each intent first, then each intent in proportion to its size.

    The official files (and so the splits) are grouped by intent, so the first
    200 test messages are only a handful of intents. spread() gives the k-th
    (from 0) of an intent's n messages the position k / n along the split and
    sorts by it, ties in order of the intents' first appearance. So the first
    messages are one per intent, and when every intent has as many messages
    (BANKING77's splits) the whole order is plain round-robin: the next 77 are
    the second of each, and so on. An intent with more messages (CLINC150's
    1,000 out-of-scope test messages) then comes up more often all along,
    instead of filling the end. Deterministic; a full split keeps every
    message once.
    """
    by_intent: dict[str, list[Message]] = {}
    for message in messages:
        by_intent.setdefault(message.intent, []).append(message)
    keyed = [(rank / len(queue), order, rank)
             for order, queue in enumerate(by_intent.values()) for rank in range(len(queue))]
    queues = list(by_intent.values())
    return [queues[order][rank] for _, order, rank in sorted(keyed)]
