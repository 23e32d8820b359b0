"""A task of your own as a dataset of the series: its folder holds data, no code.

make_task.py makes the folder from your labels and labelled messages; the
registry finds it by name (registry.DATASETS["my_task"]) and every script that
takes --dataset takes it, like banking77. A task folder
(tasks/<name>/, or $TYPED_DECISIONS_TASKS/<name>/) holds:

    <name>.json         the label file: groups, codes, descriptions, examples, calibration rows
    messages.csv        your labelled messages, as you gave them (header text,label)
    test.csv            your test messages, when you gave them apart
    <name>.prompt.txt   the system prompt and grammar the setup's warm-up and run.py send
    <name>.gbnf

Message ids are messages-<row> and test-<row>, row the 0-based data row of
that CSV (header not counted). Which rows are calibration messages is in the
label file ("calibration": rows of messages.csv); the test split is test.csv,
else the rows of messages.csv the label file lists under "test".
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from labels import LabelSet, Message, read_label_file

MESSAGES, TEST = "messages.csv", "test.csv"
HEADER = ["text", "label"]


# What acting on a label does (08-routes/beyond/harm.py): answers only, changes something that can be changed back,
# or cannot be undone. A label file's intents carry it as "action"; an unmarked one is the safe default, a change.
ACTION_KINDS = ("inform", "change", "irreversible")
SAFE_ACTION = "change"


def read_csv(path: Path, headers: tuple[list[str], ...], what: str) -> tuple[list[str], list[list[str]]]:
    """(header, data rows) of a UTF-8 CSV file (a byte-order mark is allowed) whose first row is one of `headers`.

    Each row has as many fields as the header. Raises ValueError, naming the
    file, for a file that is empty, not UTF-8, not CSV, or whose header or a
    row does not fit; OSError when it cannot be read. `what` names the file's
    role in the errors ("the messages").
    """
    if not Path(path).is_file():
        raise ValueError(f"{what} file {path} does not exist")
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{what} file {path} is not UTF-8 (byte {error.start}); save it as UTF-8") from None
    if not text.strip():
        raise ValueError(f"{what} file {path} is empty")
    try:
        rows = list(csv.reader(text.splitlines(keepends=True)))
    except csv.Error as error:
        raise ValueError(f"{what} file {path} is not a CSV file: {error}") from None
    header = [field.strip() for field in rows[0]]
    if header not in headers:
        expected = " or ".join(",".join(h) for h in headers)
        raise ValueError(f"{what} file {path} starts with {','.join(rows[0])!r}, expected the header {expected}")
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{what} file {path}, line {line}: {len(row)} fields, expected {len(header)} "
                             f"({','.join(header)}); quote a field that holds a comma")
    return header, rows[1:]


def read_messages(path: Path, prefix: str) -> list[Message]:
    """The messages of a text,label CSV in file order, ids `<prefix>-<row>`; ValueError as read_csv, and for an
    empty text or label."""
    messages = []
    for row, (text, label) in enumerate(read_csv(path, (HEADER,), "the messages")[1]):
        if not text.strip() or not label.strip():
            raise ValueError(f"{path}, data row {row}: empty {'text' if not text.strip() else 'label'}")
        messages.append(Message(f"{prefix}-{row}", text, label.strip()))
    return messages


class TaskLoader:
    """What a dataset's loader module provides (load_labels, load_split, fit_messages, PROMPT_INSTRUCTIONS),
    read from a task folder made by make_task.py. label_file: the task's <name>.json."""

    PROMPT_EXAMPLES = 5

    def __init__(self, label_file: Path):
        self.label_file = Path(label_file)
        self.folder = self.label_file.parent
        self.data = json.loads(self.label_file.read_text(encoding="utf-8"))

    @property
    def PROMPT_INSTRUCTIONS(self) -> str:  # noqa: N802 (a loader module's constant)
        """The prompt's opening paragraph, as make_task.py wrote it into the label file."""
        return self.data["task"]["instructions"]

    @property
    def PROMPT_CLOSING(self) -> str:  # noqa: N802 (a loader module's constant)
        """The prompt's last line, as make_task.py wrote it into the label file ("closing_line"). AttributeError
        for a task made before make_task.py chose it, so that getattr(loader, "PROMPT_CLOSING", CLOSING) falls
        back to post 02's line, the one that task's saved prompt ends with."""
        try:
            return self.data["task"]["closing_line"]
        except KeyError:
            raise AttributeError("PROMPT_CLOSING") from None

    def baseline_note_of_run(self, split: str, lines: list) -> str | None:
        """The module's baseline_note_of_run for this task: the loader's hook, so that post 03's run.py (which
        cannot import this later file) reaches it through the registry's loader. lines: ResultsLine of post 03."""
        return baseline_note_of_run(self.label_file.stem, split, lines)

    def load_labels(self) -> LabelSet:
        """The task's label set (labels.read_label_file: the structure is checked). ValueError naming a problem."""
        return read_label_file(self.label_file, self.data["task"]["labels"], self.data["dataset"])

    def messages(self) -> list[Message]:
        """Every row of messages.csv, ids messages-<row>."""
        return read_messages(self.folder / MESSAGES, "messages")

    def load_split(self, split: str) -> list[Message]:
        """calib: the calibration rows of messages.csv, in the label file's order; test: test.csv, else the
        rows of messages.csv listed under "test". ValueError for another split."""
        if split == "test" and (self.folder / TEST).exists():
            return read_messages(self.folder / TEST, "test")
        if split not in ("calib", "test"):
            raise ValueError(f"split must be 'calib' or 'test', not {split!r}")
        rows = self.data["calibration"]["rows"] if split == "calib" else self.data["test"]["rows"]
        if not rows:
            raise ValueError(f"the task {self.data['dataset']} has no {split} split: every message went to the prompt "
                             f"examples and the calibration split; make it again with --test FILE (your test "
                             f"messages), or report on --split calib")
        messages = self.messages()
        return [messages[row] for row in rows]

    def fit_messages(self) -> list[Message]:
        """Every message of messages.csv but the calibration and test rows: what a retriever may see."""
        held_out = set(self.data["calibration"]["rows"]) | set(self.data.get("test", {}).get("rows", ()))
        return [message for row, message in enumerate(self.messages()) if row not in held_out]


# the keys of the label file's "baselines" block (make_task.py writes it), and what each baseline is
BASELINE_NAMES = {"neighbours": "nearest neighbours", "linear_examples": "logistic regression on the examples",
                  "linear_fit": "logistic regression on the fit messages"}
WHEN_THE_MODEL_LOSES = "datasets/your-task.md#when-the-model-loses-to-the-baseline"


def baseline_note(dataset_name: str, split: str, accuracy: float, answered: int | None = None) -> str | None:
    """One line comparing the model's accuracy on a task's split with the best baseline make_task.py stored.

    accuracy: the model's, in [0, 1]. The baselines are the label file's
    "baselines" block (accuracies in [0, 1], no model, no server), so nothing
    is refitted. Returns None for a dataset of the series (banking77,
    clinc150...: their baselines are post 01's beyond/baseline.py), for a task
    made before make_task.py stored baselines, and for a split it has no
    figure for. When the best baseline is above the model, the line says so
    and where to read what to do; else it names the baseline the model beat.
    answered: how many of the split's messages the model's accuracy is over
    (a --limit or --sample run); when it is not the whole split the line says
    so, since the baselines are over all of it.
    Raises ValueError for an unknown dataset or an accuracy outside [0, 1].
    """
    from registry import dataset_named
    dataset = dataset_named(dataset_name)
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be in [0, 1], got {accuracy}")
    if not dataset.is_task:
        return None
    figures = {name: value for name, value in dataset.header.get("baselines", {}).get(split, {}).items()
               if value is not None}
    if not figures:
        return None
    best = max(figures, key=lambda name: (figures[name], name))
    named = f"{BASELINE_NAMES.get(best, best)} {100 * figures[best]:.1f}% (make_task.py)"
    size = dataset.header.get("splits", {}).get(split)
    model = f"the model {100 * accuracy:.1f}%" + (f" on {answered} of its {size} messages"
                                                  if answered is not None and size and answered != size else "")
    if figures[best] > accuracy:
        return f"the better baseline on this split: {named}, {model}: see {WHEN_THE_MODEL_LOSES}"
    return f"the best baseline on this split: {named}, {model}"


def baseline_note_of_run(dataset_name: str, split: str, lines: list) -> str | None:
    """baseline_note for a run's lines (ResultsLine of post 03): the model's accuracy over its answers (status
    ok, invalid or too_long; failed requests left out, as every figure leaves them out) and their count. None
    as baseline_note, and for a run with no answer."""
    answers = [line for line in lines if line.is_answer]
    if not answers:
        return None
    return baseline_note(dataset_name, split, sum(line.correct for line in answers) / len(answers), len(answers))


class ExtendingLoader:
    """The loader of a label file that extends a dataset of the series ("extends": its name; banking77oos): that
    dataset's messages, splits, calibration rows and groups, then the file's own groups, and the prompt's opening
    paragraph from the file's "instructions". No loader module is needed for it. label_file: its <name>.json."""

    def __init__(self, label_file: Path):
        self.label_file = Path(label_file)
        self.data = json.loads(self.label_file.read_text(encoding="utf-8"))

    def base(self):
        """The registry's Dataset that the label file extends."""
        from registry import dataset_named
        return dataset_named(self.data["extends"])

    @property
    def PROMPT_INSTRUCTIONS(self) -> str:  # noqa: N802 (a loader module's constant)
        """The prompt's opening paragraph, from the label file."""
        return self.data["instructions"]

    def load_labels(self, path: Path | None = None) -> LabelSet:
        """The base's label set with the groups of the label file (default: this one) after its own.

        Raises ValueError when the file's structure is wrong (labels.read_label_file)
        or when it reuses a group letter or an intent name of the base.
        """
        path = Path(path or self.label_file)
        own_count = sum(len(group["intents"]) for group in json.loads(path.read_text(encoding="utf-8"))["groups"])
        base, own = self.base().load_labels(), read_label_file(path, own_count, self.data["dataset"])
        letters = {group.letter for group in base.groups} & {group.letter for group in own.groups}
        names = set(base.by_intent) & set(own.by_intent)
        if letters or names:
            raise ValueError(f"{path}: reuses {self.data['extends'].upper()}'s "
                             f"{'group letters' if letters else 'intent names'} {sorted(letters or names)}")
        return LabelSet(base.groups + own.groups, base.calibration_rows)

    def load_split(self, split: str) -> list[Message]:
        """The base's split of that name: the messages and calibration rows are the same."""
        return self.base().load_split(split)

    def fit_messages(self) -> list[Message]:
        """The base's training messages minus its calibration rows."""
        return self.base().fit_messages()
