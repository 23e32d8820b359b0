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

Here too: the baselines of a task (what make_task.py stores, and
baseline_note, which sets a run's answers beside them on the same messages),
and the parts of making a task that need neither the model nor post 08's
beyond code: the kinds of action a label's description suggests, how the
calibration split is drawn (round_robin, spread_in), and whether a task made
again changed what its runs rest on (changed_task).
"""
from __future__ import annotations

import csv
import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from labels import LabelSet, Message, read_label_file

MESSAGES, TEST = "messages.csv", "test.csv"
HEADER = ["text", "label"]


# What acting on a label does (08-routes/beyond/gate/harm.py): answers only, changes something that can be changed back,
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
        return baseline_note_of_run(self, split, lines)

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
Z_95 = 1.959963984540054  # the standard normal's 97.5% quantile: a two-sided 95% interval


@dataclass(frozen=True)
class Paired:
    """The model and one baseline on the same n messages: key (BASELINE_NAMES), how many each got right, and the
    discordant counts: only_model right with the model and not the baseline (b), only_baseline the other way (c)."""

    key: str
    n: int
    model_right: int
    baseline_right: int
    only_model: int
    only_baseline: int

    @property
    def difference(self) -> float:
        """The model's accuracy minus the baseline's, over the same messages: (b - c) / n, in [-1, 1]."""
        return (self.only_model - self.only_baseline) / self.n

    def interval(self, z: float = Z_95) -> tuple[float, float]:
        """The Wald interval of the paired difference: difference +- z x se, se = sqrt(b + c - (b - c)^2 / n) / n
        (Agresti, Categorical Data Analysis, 3rd ed., section 11.1), clipped to [-1, 1]. With no discordant
        message it is the point: on these messages nothing tells the two apart."""
        b, c = self.only_model, self.only_baseline
        se = math.sqrt(max(b + c - (b - c) ** 2 / self.n, 0.0)) / self.n
        return max(-1.0, self.difference - z * se), min(1.0, self.difference + z * se)


def paired(key: str, model: dict[str, bool], baseline: dict[str, bool]) -> Paired:
    """The model's answers (message id -> right) against a baseline's (id -> right) on the ids both have.
    ValueError when they share none."""
    ids = [message_id for message_id in model if message_id in baseline]
    if not ids:
        raise ValueError("the model and the baseline share no message to compare on")
    return Paired(key, len(ids), sum(model[i] for i in ids), sum(baseline[i] for i in ids),
                  sum(model[i] and not baseline[i] for i in ids), sum(baseline[i] and not model[i] for i in ids))


def baseline_marks(task: TaskLoader, split: str) -> dict[str, dict[str, bool]] | None:
    """Baseline key -> (message id -> right) on a task's split, from the marks make_task.py stored in the label
    file ("baselines", "right": a character per message of the split, in its order, "1" right); None when the
    file has none for this split (a task made before make_task.py stored them) or they do not fit the split."""
    stored = task.data.get("baselines", {}).get("right", {}).get(split)
    if not stored:
        return None
    ids = [message.id for message in task.load_split(split)]
    if any(len(marks) != len(ids) for marks in stored.values()):
        return None
    return {key: {i: mark == "1" for i, mark in zip(ids, marks)} for key, marks in stored.items()}


def baseline_note(task: TaskLoader, split: str, answers: dict[str, bool]) -> str | None:
    """One line comparing the model with the stronger baseline make_task.py stored, on the same messages.

    answers: message id -> whether the model's answer to it was right, for
    the messages a run answered (a whole split, or a --limit or --sample
    part). Each baseline is scored on exactly those messages from its
    per-message marks in the label file (baseline_marks: no model, no
    server, nothing refitted), the stronger one on them is named (most right;
    a tie goes to the higher accuracy on the whole split), and the line gives
    both accuracies, the model's minus the baseline's with its paired 95%
    interval (Paired.interval) and the discordant counts. When the baseline
    is ahead it says where to read what to do. task: the task's loader (the
    registry gives a dataset of the series another loader, so only a task
    has this note). Returns None for a task made before make_task.py stored
    baselines, a split it has no figure for, or no answer of the split; for a
    task made before it stored per-message marks, a line that says how to
    get them.
    """
    dataset_name = task.data["dataset"]
    block = task.data.get("baselines", {})
    figures = {name: value for name, value in block.get(split, {}).items() if value is not None}
    if not figures or not answers:
        return None
    marks = baseline_marks(task, split)
    if marks is None:
        return (f"the baselines make_task.py stored for {dataset_name} have no per-message marks (made before it "
                f"stored them), so the model cannot be compared with them on the same messages: make the task "
                f"again with the same command (the same files and seed give the same splits)")
    compared = [paired(key, answers, right) for key, right in marks.items() if any(i in right for i in answers)]
    if not compared:
        return None
    best = max(compared, key=lambda p: (p.baseline_right, figures.get(p.key, 0.0), p.key))
    low, high = best.interval()
    size = task.data.get("splits", {}).get(split)
    over = (f"the {best.n} messages answered" + (f" of the split's {size:,}" if size and best.n != size else "")
            + (f" ({len(answers) - best.n} answers not in the split left out)" if len(answers) > best.n else ""))
    line = (f"the stronger baseline on {over}: {BASELINE_NAMES.get(best.key, best.key)} "
            f"{100 * best.baseline_right / best.n:.1f}% (make_task.py), the model {100 * best.model_right / best.n:.1f}%"
            f"; model minus baseline {100 * best.difference:+.1f} points (95% interval {100 * low:+.1f} to "
            f"{100 * high:+.1f}; right only with the model {best.only_model}, only with the baseline "
            f"{best.only_baseline})")
    return line + (f": see {WHEN_THE_MODEL_LOSES}" if best.baseline_right > best.model_right else "")


def baseline_note_of_run(task: TaskLoader, split: str, lines: list) -> str | None:
    """baseline_note for a run's lines (ResultsLine of post 03): its answers (status ok, invalid or too_long;
    failed requests left out, as every figure leaves them out), each right or not, by message id. None as
    baseline_note, and for a run with no answer."""
    answers = {line.id: bool(line.correct) for line in lines if line.is_answer}
    return baseline_note(task, split, answers) if answers else None


# ---------------------------------------------------------------- making a task: kinds, the calibration split

KINDS_FROM = ("descriptions",)  # where make_task.py --kinds-from proposes kinds from


# A description that reads as a question or a request for information: acting on its label only answers. A polite
# request ("Can I change my PIN?") asks for a change, so it stays one.
REQUEST = re.compile(r"(?:can|could|would|will|shall|please|i want|i'd like|i would like)\b", re.IGNORECASE)
QUESTION = re.compile(r"(?:what|when|where|which|who|whose|why|how|is|are|was|were|does|did)\b", re.IGNORECASE)
INFORMATION = re.compile(r"(?:asks? (?:about|what|when|where|which|who|why|how|whether|if)|a question|questions|"
                         r"information|info|wants? to know|checks?|looks? up|finds? out)\b", re.IGNORECASE)


def proposed_kind(description: str) -> str:
    """The kind --kinds-from descriptions proposes for a label: "inform" when its description reads as a question
    or a request for information (it ends with "?" or starts with a question word, "asks about", "information",
    "wants to know", "check"... and is not a polite request such as "Can I..."), else SAFE_ACTION (a change).
    Never "irreversible": only you can say that (--irreversible or the kind column)."""
    text = description.strip()
    if REQUEST.match(text):
        return SAFE_ACTION
    return "inform" if text.endswith("?") or QUESTION.match(text) or INFORMATION.match(text) else SAFE_ACTION


def check_kind_options(labels: list, kind: str | None, kinds_from: str | None, accept_kinds: bool) -> None:
    """ValueError (one sentence) for --kind, --kinds-from or --accept-kinds out of their range or at odds with each
    other or with the labels file's kind column."""
    column = bool(labels[0].kind)
    if kind is not None and kind not in ACTION_KINDS:
        raise ValueError(f"--kind {kind!r}: expected one of {', '.join(ACTION_KINDS)} (what acting on every label does)")
    if kinds_from is not None and kinds_from not in KINDS_FROM:
        raise ValueError(f"--kinds-from {kinds_from!r}: the kinds can be proposed from {', '.join(KINDS_FROM)} only")
    if kind is not None and kinds_from is not None:
        raise ValueError("--kind gives every label one kind and --kinds-from proposes one per label: give one of them")
    if column and (kind is not None or kinds_from is not None):
        raise ValueError(f"the labels file has a kind column, which --{'kind' if kind is not None else 'kinds-from'} "
                         f"would override: drop the column or the option")
    if accept_kinds and kinds_from is None:
        raise ValueError("--accept-kinds writes the kinds --kinds-from descriptions proposes: give both")


def label_kinds(labels: list, targets: tuple[float, float], kind: str | None = None, kinds_from: str | None = None,
                accept_kinds: bool = False, out_of_scope: str | None = None,
                irreversible: tuple[str, ...] = ()) -> tuple[dict[str, str], list[str], bool]:
    """(label -> the kind written into the label file, the lines make_task.py prints about them, whether a
    proposal waits for --accept-kinds). labels: make_task.LabelRow (name, description, kind: "" without a kind
    column); targets: the precision 08's beyond router asks of a change and of an inform label's act
    (harm.CHANGE_TARGET, routes.TARGET; make_task.py passes them, as this module imports no beyond code).

    The kind column's, else every label `kind` (--kind), else with
    --kinds-from descriptions and accept_kinds the proposal (proposed_kind),
    else SAFE_ACTION, a change, the safe default; --irreversible marks its
    labels irreversible whatever the rest says. The lines say where the kinds
    came from, what every label being a change costs (08's beyond router acts
    on a change only at a calibrated confidence fitted for the first target on
    calib: harm.py), and the proposal when there is one. The out-of-scope label
    is never acted on, so it is left out of the counts and the proposal.
    """
    inside = [label for label in labels if label.name != out_of_scope]
    proposal = {label.name: proposed_kind(label.description) for label in inside} if kinds_from else {}
    if labels[0].kind:
        kinds, source = {label.name: label.kind for label in labels}, "the kind column"
    elif kind is not None:
        kinds, source = {label.name: kind for label in labels}, f"--kind {kind}"
    elif proposal and accept_kinds:
        kinds, source = {label.name: proposal.get(label.name, SAFE_ACTION) for label in labels}, \
            "--kinds-from descriptions, accepted"
    else:
        kinds, source = {label.name: SAFE_ACTION for label in labels}, ""
    kinds.update({name: "irreversible" for name in irreversible})
    counts = Counter(kinds[label.name] for label in inside)
    counted = ", ".join(f"{counts[k]} {k}" for k in ACTION_KINDS if counts[k])
    pending = bool(proposal) and not accept_kinds
    if source:
        lines = [f"kinds (what acting on a label does, 08-routes/beyond/gate/harm.py): {counted}, from {source}"]
    else:
        lines = [f"kinds: every label is a change, the safe default{' until you accept the proposal' if pending else ''}"
                 f" (no kind column): 08's beyond router (route_beyond.py) acts on a change only at a calibrated "
                 f"confidence fitted for {100 * targets[0]:.1f}% precision on calib, not the {100 * targets[1]:.1f}% of "
                 f"a label that only answers (inform), so it acts on few messages"
                 + ("" if pending else "; if your labels answer questions, add --kind inform (every label) or "
                                       "--kinds-from descriptions (a proposal, label by label) to the command")]
    if proposal:
        lines.append(f"kinds proposed from the descriptions ({'written' if accept_kinds else 'not written'}; "
                     f"a question or a request for information is inform, anything else a change):")
        for proposed in ("inform", SAFE_ACTION):
            names = [name for name, value in proposal.items() if value == proposed]
            if names:
                lines.append(f"  {proposed} ({len(names)}): {', '.join(names)}")
    return kinds, lines, pending


def round_robin(rests: list[list[int]], size: int) -> list[int]:
    """The first `size` rows of rests taken in turn: the first row of every list, then the second..., a list
    that runs out left out. ([[1, 2, 3], [4]], 3) -> [1, 4, 2]."""
    taken = [rows[k] for k in range(max(map(len, rests), default=0)) for rows in rests if k < len(rows)]
    return taken[:size]


def spread_in(inside: list[int], outside: list[int]) -> list[int]:
    """inside and outside merged, each in its own order, outside spread evenly through: row k of a list of n sits
    at (k + 1/2) / n of the way (inside first on a tie), so any first part of the result holds about the same
    share of outside rows as the whole. ([1, 2, 3], [9]) -> [1, 2, 9, 3]."""
    keyed = [((k + 0.5) / len(inside), 0, row) for k, row in enumerate(inside)]
    keyed += [((k + 0.5) / len(outside), 1, row) for k, row in enumerate(outside)]
    return [row for *_, row in sorted(keyed)]


def parse_share(value: str | float | None) -> float | None:
    """--out-of-scope-share as a fraction in (0, 1), or None; ValueError for anything else (a percentage too:
    14 is refused, 0.14 is meant)."""
    if value is None:
        return None
    try:
        share = float(value)
    except ValueError:
        raise ValueError(f"--out-of-scope-share {value!r}: give a fraction between 0 and 1, e.g. 0.14") from None
    if not 0.0 < share < 1.0:
        raise ValueError(f"--out-of-scope-share {value}: give a fraction strictly between 0 and 1, e.g. 0.14 for 14% "
                         f"of your traffic")
    return share


# ---------------------------------------------------------------- the baselines make_task.py measures and stores

LINEAR_CAP = 2000     # fit messages the logistic regression takes at most: 18,000 of 11 labels took 47 s to fit


@dataclass(frozen=True)
class Baseline:
    """One baseline with no model: key (the label file's name for it, task.BASELINE_NAMES says what it is), how
    many labelled messages it was fitted on, and per split ("calib", "test"; a split with no message is left out)
    whether it was right on each message, in the split's order: "1" right, "0" wrong."""

    key: str
    fitted_on: int
    right: dict[str, str]

    @property
    def accuracy(self) -> dict[str, float]:
        """split -> the share of its messages the baseline got right (top-1), in [0, 1]."""
        return {split: marks.count("1") / len(marks) for split, marks in self.right.items()}


def mark_string(hits) -> str:
    """A sequence of right (True) and wrong (False) as the label file keeps it: "1" and "0" in order."""
    return "".join("1" if hit else "0" for hit in hits)


def linear_sample(fit: list[Message], seed: int, cap: int = LINEAR_CAP) -> list[Message]:
    """fit, or `cap` of its messages taken round-robin over the labels (each label's own shuffled with
    random.Random("<seed>:linear:<label>")), in label order then turn, when it holds more."""
    if len(fit) <= cap:
        return fit
    by_label: dict[str, list[Message]] = {}
    for message in fit:
        by_label.setdefault(message.intent, []).append(message)
    for label, listed in by_label.items():
        random.Random(f"{seed}:linear:{label}").shuffle(listed)
    lists = [by_label[label] for label in sorted(by_label)]
    return [lists[i][k] for i, k in round_robin([[(i, k) for k in range(len(rows))] for i, rows in enumerate(lists)], cap)]


def baselines_block(baselines: list[Baseline], fit_size: int) -> dict:
    """The label file's "baselines": per split, key -> accuracy rounded to 4 decimals (so the same files give the
    same bytes), what each was fitted on, and under "right" per split and key the baseline's marks (Baseline.right:
    "1" right, "0" wrong, a character per message in the split's order), which task.baseline_note pairs with a
    run's answers."""
    splits = sorted({split for b in baselines for split in b.right})
    return {**{split: {b.key: round(b.accuracy[split], 4) for b in baselines if split in b.right} for split in splits},
            "fitted_on": {b.key: b.fitted_on for b in baselines}, "fit_messages": fit_size,
            "right": {split: {b.key: b.right[split] for b in baselines if split in b.right} for split in splits}}


def baselines_table(block: dict) -> list[str]:
    """The baselines make_task.py prints, from the label file's "baselines" block: per baseline, the labelled
    messages it was fitted on and its accuracy on calib and test ("-" for a split the task lacks)."""
    lines = [f"{'baselines with no model (accuracy)':<40} {'fitted on':>9} {'calib':>6} {'test':>6}"]
    for key, fitted_on in block["fitted_on"].items():
        figures = "".join(f" {100 * block[split][key]:>5.1f}%" if key in block.get(split, {}) else f" {'-':>6}"
                          for split in ("calib", "test"))
        lines.append(f"{BASELINE_NAMES[key]:<40} {fitted_on:>9,}{figures}")
    if block["fitted_on"].get("linear_fit", block["fit_messages"]) < block["fit_messages"]:
        lines.append(f"(the fit messages: {block['fit_messages']:,}, every labelled message but the calib and test "
                     f"splits; the logistic regression took {block['fitted_on']['linear_fit']:,} of them, round-robin "
                     f"over the labels)")
    return lines


def changed_task(folder: Path, files: dict[str, bytes], name: str) -> bool:
    """Whether folder holds the task `name` made otherwise than `files` say (make_task.Made.files: file name ->
    bytes), in what a run's answers rest on: its
    messages or its label file (groups, codes, splits, prompt), the "baselines" block aside (no run reads it, so a
    task made again only to store the baselines' marks keeps its runs). False when there is no task there."""
    label_file = folder / f"{name}.json"
    if not label_file.exists():
        return False
    try:
        old = json.loads(label_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    new = json.loads(files[label_file.name])
    old.pop("baselines", None)
    new.pop("baselines", None)
    return old != new or any(not (folder / csv_name).exists() or (folder / csv_name).read_bytes() != content
                             for csv_name, content in files.items() if csv_name in (MESSAGES, TEST))
