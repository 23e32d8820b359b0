"""The types every dataset of the series shares: a message, an intent with its code, a group, a label set.

A label file (banking77.json; format in datasets/README.md)
gives each intent a group letter and a letter inside its group: the code the
model answers with, such as ``C-F``. read_label_file() reads one and checks
its structure; each dataset module (banking77.py) adds its
loaders and its check against the data.
"""
from __future__ import annotations

import hashlib
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


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """How many messages of each label a sample of n messages takes: each label in proportion to its share.

    sizes: label -> its number of messages in the split (each 1 or more).
    Largest remainder (Hamilton's method): label i's quota is n * size_i /
    total; each gets the whole part of its quota, and the messages left over
    go one each to the largest fractional parts (ties: the larger label, then
    the label name first in alphabetical order: nothing depends on file order).
    Then, when n is at least the number of labels, a label left with none
    takes one from the label furthest above its quota (allocation - quota;
    ties the same way), so every label is in the sample. With 6, 3 and 1
    messages and n = 5: quotas 3, 1.5, 0.5; whole parts 3, 1, 0; the one left
    over goes to the 3-message label (tie at .5, larger label): 3, 2, 0; the
    1-message label then takes one from it (0.5 above its quota): 3, 1, 1.
    Every allocation is at most the label's size. Raises ValueError for n
    below 1 or above the total, or a label size below 1.
    """
    total = sum(sizes.values())
    if any(size < 1 for size in sizes.values()):
        raise ValueError(f"every label needs a message to sample from: {sizes}")
    if not 1 <= n <= total:
        raise ValueError(f"a sample of {n} messages out of {total}: it must be 1 to {total}")
    # exact integer arithmetic: quota_i = n * size_i / total, whole part and remainder over total
    taken = {label: n * size // total for label, size in sizes.items()}
    by_remainder = sorted(sizes, key=lambda label: (-(n * sizes[label] % total), -sizes[label], label))
    for label in by_remainder[: n - sum(taken.values())]:
        taken[label] += 1
    if n >= len(sizes):
        for label in sorted(label for label, count in taken.items() if count == 0):
            # above quota by (taken - quota) * total = taken * total - n * size, an integer
            donor = min((other for other, count in taken.items() if count > 1),
                        key=lambda other: (-(taken[other] * total - n * sizes[other]), -sizes[other], other))
            taken[donor] -= 1
            taken[label] = 1
    return taken


def sample_rank(message: Message, seed: int) -> str:
    """A message's place in the seeded order a sample draws from: hex sha256 of "<seed>:<id>". The same on every
    machine and run, and independent of where the message sits in its file."""
    return hashlib.sha256(f"{seed}:{message.id}".encode("utf-8")).hexdigest()


def seeded_sample(messages: list[Message], n: int, seed: int) -> list[Message]:
    """n messages of a split drawn at random with a seed, each label in proportion to its share (allocate).

    Within a label, the messages come first whose sample_rank is lowest, so
    the sample depends on the ids, n and seed only: the same on every run and
    machine, whatever the file order. The sample keeps the split's order. A
    larger n with the same seed takes a longer prefix of each label's order,
    so it holds the smaller sample whenever no label's allocation shrinks as n
    grows: always when the labels are the same size (BANKING77's splits);
    largest remainder can, rarely, give a label one fewer at a larger n (the
    "Alabama paradox"). Raises ValueError as allocate does, and for an id on
    two messages.
    """
    if len({m.id for m in messages}) != len(messages):
        raise ValueError("two messages have the same id: a sample draws by id")
    by_label: dict[str, list[Message]] = {}
    for message in messages:
        by_label.setdefault(message.intent, []).append(message)
    counts = allocate({label: len(group) for label, group in by_label.items()}, n)
    chosen = {m.id for label, group in by_label.items()
              for m in sorted(group, key=lambda m: sample_rank(m, seed))[: counts[label]]}
    return [m for m in messages if m.id in chosen]
