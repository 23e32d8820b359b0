"""The types every dataset of the series shares: a message, an intent with its code, a group, a label set.

A label file (banking77.json; format in datasets/README.md)
gives each intent a group letter and a letter inside its group: the code the
model answers with, such as ``C-F``. read_label_file() reads one and checks
its structure; each dataset module (banking77.py) adds its
loaders and its check against the data.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

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
    never used as examples (BANKING77: train.csv, 10 per intent; another dataset: see its module).
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


def split_code(code: str) -> tuple[str, str]:
    """A code's two letters: "C-F" -> ("C", "F"), the group letter and the intent letter.

    The one place a code string is taken apart. Raises ValueError for
    anything that is not a capital letter, a hyphen and a capital letter.
    """
    if not (isinstance(code, str) and len(code) == 3 and code[1] == "-" and code[0] in LETTERS and code[2] in LETTERS):
        raise ValueError(f"{code!r} is not a code such as 'C-F' (group letter, hyphen, intent letter)")
    return code[0], code[2]


def _letter_error(letter, seen: set, what: str) -> str | None:
    if not (isinstance(letter, str) and len(letter) == 1 and letter in LETTERS):
        return f"{what} letter {letter!r} is not a single capital letter A-Z"
    if letter in seen:
        return f"{what} letter {letter!r} is used twice"
    return None


def read_label_file(path: Path, n_intents: int, dataset: str) -> LabelSet:
    """Read and check a label file (format: datasets/README.md).

    Checks the structure only: group letters unique A-Z, intent letters unique
    A-Z within their group, every intent name once, ``n_intents`` intents in all
    (77 for BANKING77; ``dataset`` only names it in the error).
    Each dataset's ``check_labels`` compares the file with its data.
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
    # a label file that extends another ("extends": its name) takes that one's calibration rows
    rows = tuple(data["calibration"]["rows"]) if "calibration" in data or "extends" not in data else ()
    if not all(isinstance(row, int) for row in rows):
        raise ValueError(f"{path}: calibration rows must be integers.")
    return LabelSet(tuple(groups), rows)


def printable(text: str) -> str:
    """text with every control character (C0 but newline and tab, DEL, C1) written as an escape (\\x1b): a message
    echoed to a terminal cannot move the cursor, clear the screen or ring the bell."""
    return "".join(c if c in "\n\t" or not (ord(c) < 32 or 127 <= ord(c) < 160) else f"\\x{ord(c):02x}" for c in text)


def spread(messages: list[Message]) -> list[Message]:
    """The same messages, one of each intent first, then each intent in proportion to its size.

    The official files (and so the splits) are grouped by intent, so the first
    200 test messages are only a handful of intents. spread() gives the k-th
    (from 0) of an intent's n messages the position k / n along the split and
    sorts by it, ties in order of the intents' first appearance. So the first
    messages are one per intent, and when every intent has as many messages
    (BANKING77's splits) the whole order is plain round-robin: the next 77 are
    the second of each, and so on. An intent with more messages (an out-of-scope
    intent with a thousand test messages, say) then comes up more often all along,
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
