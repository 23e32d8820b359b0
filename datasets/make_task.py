"""Make a task of your own from two CSV files: your labels and your labelled messages.

    python3 datasets/make_task.py my_task --labels labels.csv --messages messages.csv
    python3 datasets/make_task.py my_task --labels labels.csv --messages messages.csv --test test.csv
    python3 datasets/make_task.py my_task ... --out-of-scope none_of_these
    python3 datasets/make_task.py my_task ... --irreversible close_account   # confirmed, never acted on

labels.csv has the header label,description (a row per label, the description
one line on what the label is used for), label,description,group (your own
groups), and either with a kind column last: what acting on the label does
(inform, change or irreversible; 08-routes/beyond/harm.py). Without it, every
label is a change, the safe default. messages.csv, and test.csv if you keep test messages apart, have the
header text,label. Both are UTF-8; quote a field that holds a comma.

It writes tasks/<name>/ (or $TYPED_DECISIONS_TASKS/<name>/): the label file
<name>.json, the prompt and grammar the setup's warm-up and run.py send, and a
copy of your CSVs. Then every script that takes --dataset takes <name>, as it
takes banking77 (walk-through: datasets/your-task.md). How the messages are
shared out, label by label (so the same files and seed give the same task):

  1. a text that repeats an earlier one (same words, case, spaces and a final
     ?.! aside) is left out of the splits: it would be its own neighbour;
  2. the label's messages are shuffled with random.Random("<seed>:<label>");
  3. examples: the first 5 that are one line of at most 100 characters
     without a "|" (the prompt's separator between examples);
  4. calibration split: the next ones, taken round-robin over the labels
     (the first of each label, then the second...) until --calib N messages;
     by default 10 per label, at least 300 in all (2 labels take 150 each),
     and up to 1,000 when a quarter of what the examples leave is more
     (--calib has the reason);
  5. test split: the rest (unless --test gives one).

Then it prints the baselines with no model (no server, seconds): post 01's
TF-IDF nearest neighbours (datasets/neighbours.py) fitted on the fit messages
(every labelled message but the calibration and test splits, as
baseline.py --dataset <name> fits it), and the logistic regression of
01-why-typed-decisions/beyond/linear.py fitted on the prompt's examples and on
the fit messages (at most 2,000 of them, round-robin over the labels), with
their accuracy on the calibration and test splits. The label file keeps them
("baselines"), so later scripts name them without fitting again
(task.baseline_note). A model that does worse than them on your task is not
worth its cost there: datasets/your-task.md says what to try.

The prompt's last line asks for the code alone (--closing none, the default),
or names one code of the task as an example (--closing example); post 02's
line names C-F, a code a task of up to 26 labels does not have.

A description that starts with its label's name ("travel: trips") loses that
start, with a note: the prompt writes the name just before it.

Codes follow the task. Up to 26 labels: one group, A, whose letter the
grammar writes for the model, so the code A-C is a choice of one letter among
the labels. More: your groups (the group column), or groups proposed from the
messages: labels whose messages share words share a group, so that the model
tells the close ones apart at the second step. Edit the groups in the label
file, then write the prompt again (02-forcing-a-valid-answer/prompt.py <name>
--save). At most 26 groups of 26 labels. Bad input (an unknown label, a label
without a description or messages, a duplicate, a header other than the
above...) ends with one line and exit status 2, and writes nothing.
"""
from __future__ import annotations

import argparse
import math
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
sys.path.insert(0, str(series.ROOT / "01-why-typed-decisions" / "beyond"))  # post 01's baselines (beyond the series)
from labels import LETTERS, Group, Intent, LabelSet, Message, printable
from linear import example_messages, fit_classifier
from make_banking77 import fits_in_prompt, normalise, to_json
from neighbours import Retriever, gold_positions, recall_at
from prompt import build_prompt
from registry import DATASETS, HERE, tasks_dir
from saved_answers import OWN_RESULTS
from script_exit import exit_on_bad_input
from task import ACTION_KINDS, BASELINE_NAMES, MESSAGES, SAFE_ACTION, TEST, read_csv, read_messages

EXAMPLES = 5          # per label in the prompt, as the series does
CALIBRATION = 10      # per label at least, as the series does...
CALIBRATION_TOTAL = 300  # ...and a few hundred in all (post 1), so fewer labels take more each;
CALIBRATION_SHARE = 4    # from a large pile, a quarter of what the examples leave...
CALIBRATION_MAX = 1000   # ...up to this many (a run of 1,000 messages takes about 4 minutes on 2 cores)
MIN_CALIBRATION = 20  # below this the split cannot be said to calibrate anything: refused
LINEAR_CAP = 2000     # fit messages the logistic regression takes at most: 2,000 fit in seconds, 18,000 in 47 s
LINEAR_MAX_LABELS = 26  # one group; its fit and scoring cost grows with the labels (150: a minute on 750 messages)
CLOSINGS = ("none", "example")
MAX_LABEL = 60        # characters of a label name
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
LABEL_HEADERS = (["label", "description"], ["label", "description", "group"], ["label", "description", "kind"],
                 ["label", "description", "group", "kind"])
INSTRUCTIONS = (
    "You sort messages into the labels listed below. Each message gets exactly one label{none}. Answer with the "
    "code of that label and nothing else: the group letter, a hyphen and the label letter{example}.")


@dataclass(frozen=True)
class LabelRow:
    """One row of the labels file: name, description, and its group's name ("" when the file has no groups)."""

    name: str
    description: str
    group: str = ""
    stripped: str = ""  # what read_labels removed from the start of the description: the label's own name
    kind: str = SAFE_ACTION  # what acting on it does (task.ACTION_KINDS), from the kind column


@dataclass
class Made:
    """What make_task() decided, before anything is written.

    labels: the LabelSet (groups, codes, descriptions, examples). calibration,
    test: rows of messages.csv (test empty when a test file was given).
    notes: what the reader should know (labels short of messages, repeats).
    files: file name -> the bytes to write into the task folder.
    baselines: the label file's "baselines" block (Baselines.block()).
    """

    labels: LabelSet
    calibration: list[int]
    test: list[int]
    test_size: int
    counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)


def label_problem(name: str) -> str | None:
    """Why a label name cannot stand in the prompt's line "<code> <name>: <description>", or None."""
    if not name or name != name.strip():
        return "is empty or starts or ends with a space"
    if len(name) > MAX_LABEL:
        return f"is longer than {MAX_LABEL} characters"
    if printable(name) != name or "\n" in name or "\t" in name:
        return "holds a line break or a control character"
    if ":" in name or "|" in name:
        return "holds ':' or '|', which the prompt uses to separate a label from its description and examples"
    return None


def own_name_prefix(name: str, description: str) -> str:
    """The start of description that repeats the label's name, with its separator ("travel: ", "credit cards - ",
    case and _/space aside), or "": the prompt writes "<code> <name>: <description>", and post 08's question
    quotes the description's first clause after the name, so the name would be said twice ("travel (travel)")."""
    spellings = "|".join(re.escape(spelling) for spelling in sorted({name, name.replace("_", " ")}, key=len, reverse=True))
    found = re.match(rf"(?:{spellings})\s*(?::|,|\s-|\s\u2013|\s\u2014)\s*", description, re.IGNORECASE)
    return found.group(0) if found else ""


def read_labels(path: Path) -> list[LabelRow]:
    """The rows of a labels file (label,description[,group][,kind]); ValueError for a duplicate label, a name the
    prompt cannot hold, an empty or multi-line description, (with a group column) an empty group, or (with a kind
    column) a kind that is not one of task.ACTION_KINDS (without it, every label is SAFE_ACTION). A description
    that starts with its label's name loses that start (own_name_prefix; LabelRow.stripped keeps it)."""
    header, rows = read_csv(path, LABEL_HEADERS, "the labels")
    labels, seen = [], set()
    for line, row in enumerate(rows, start=2):
        name, description = row[0], " ".join(row[1].split())
        if problem := label_problem(name):
            raise ValueError(f"{path}, line {line}: the label {printable(name)!r} {problem}")
        if name in seen:
            raise ValueError(f"{path}: the label {name!r} appears twice")
        stripped = own_name_prefix(name, description)
        description = description[len(stripped):]
        if not description or "\n" in row[1].strip() or printable(row[1]) != row[1]:
            raise ValueError(f"{path}: the label {name!r} has no description, or one that is not a single line")
        group = row[header.index("group")].strip() if "group" in header else ""
        if "group" in header and not group:
            raise ValueError(f"{path}: the label {name!r} has no group")
        kind = row[header.index("kind")].strip() if "kind" in header else SAFE_ACTION
        if kind not in ACTION_KINDS:
            raise ValueError(f"{path}, line {line}: the label {name!r} has the kind {printable(kind)!r}; expected "
                             f"{', '.join(ACTION_KINDS)} (what acting on it does)")
        seen.add(name)
        labels.append(LabelRow(name, description, group, stripped.strip(), kind))
    if len(labels) < 2:
        raise ValueError(f"{path} lists {len(labels)} label(s): a decision needs at least 2")
    return labels


def propose_groups(names: list[str], messages: list[Message]) -> list[list[str]]:
    """Groups for more labels than one group of single letters holds: labels whose messages are alike together.

    Each label is the mean of its messages' TF-IDF vectors (post 01's
    retriever, fitted on `messages`), and labels are merged, closest average
    cosine first (average linkage), into max(ceil(n / 26), round(sqrt(n)))
    groups of at most 1.5 times the mean size (26 at most). Returns the groups
    as lists of names, each in the order of `names`, ordered by their first
    name. Deterministic: ties go to the earlier pair.
    """
    retriever = Retriever.fit(messages)
    centroid: dict[str, Counter] = {name: Counter() for name in names}
    for message in messages:
        centroid[message.intent].update(retriever.vector(message.text))
    for vector in centroid.values():
        length = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        for term in vector:
            vector[term] /= length
    n = len(names)
    similarity = [[sum(w * centroid[b].get(t, 0.0) for t, w in centroid[a].items()) for b in names] for a in names]
    target = max(math.ceil(n / len(LETTERS)), round(math.sqrt(n)))
    cap = min(len(LETTERS), math.ceil(1.5 * n / target))
    clusters = [[i] for i in range(n)]
    while len(clusters) > target:
        best, pair = -1.0, None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                if len(clusters[i]) + len(clusters[j]) <= cap:
                    average = (sum(similarity[a][b] for a in clusters[i] for b in clusters[j])
                               / (len(clusters[i]) * len(clusters[j])))
                    if average > best:
                        best, pair = average, (i, j)
        if pair is None:  # every merge would pass the cap: allow bigger groups
            cap += 1
            continue
        i, j = pair
        clusters[i] = sorted(clusters[i] + clusters.pop(j))
    return [[names[i] for i in cluster] for cluster in sorted(clusters)]


def group_name(names: list[str], taken: set[str]) -> str:
    """A name for a proposed group: the word its labels' names share most (in capitals), made unique."""
    words = Counter(word for name in names for word in set(re.findall(r"[a-z0-9]+", name.lower())))
    best = max(words, key=lambda word: (words[word], -len(word)), default="group").upper()
    name, k = best, 2
    while name in taken:
        name, k = f"{best}_{k}", k + 1
    return name


def grouped(labels: list[LabelRow], by_label: dict[str, list[Message]], task: str,
            out_of_scope: str | None) -> list[tuple[str, list[str]]]:
    """(group name, label names) in code order: one group up to 26 labels, else the labels file's groups, else
    proposed ones (the out-of-scope label in a group of its own, last). ValueError when the codes cannot hold
    the labels: more than 26 groups, or more than 26 labels in one."""
    names = [label.name for label in labels]
    if labels[0].group:
        groups: dict[str, list[str]] = {}
        for label in labels:
            groups.setdefault(label.group, []).append(label.name)
        result = list(groups.items())
    elif len(names) <= len(LETTERS):
        result = [(task.upper(), names)]
    else:
        inside = [name for name in names if name != out_of_scope]
        messages = [m for name in inside for m in by_label[name]]
        taken: set[str] = set()
        result = []
        for members in propose_groups(inside, messages):
            taken.add(name := group_name(members, taken))
            result.append((name, members))
        if out_of_scope:
            result.append(("OUT_OF_SCOPE", [out_of_scope]))
    if len(result) > len(LETTERS) or max(len(members) for _, members in result) > len(LETTERS):
        raise ValueError(f"{len(names)} labels in {len(result)} groups do not fit the codes: at most "
                         f"{len(LETTERS)} groups of at most {len(LETTERS)} labels each (one letter each)")
    return result


def share_out(rows: list[int], texts: list[str], seed: int, label: str) -> tuple[list[int], list[int]]:
    """(example rows, the other rows in their shuffled order) of one label's distinct messages (rows of
    messages.csv)."""
    order = list(rows)
    random.Random(f"{seed}:{label}").shuffle(order)
    # " | " separates the examples in the prompt, so a text holding "|" would read as two
    examples = [row for row in order if fits_in_prompt(texts[row]) and "|" not in texts[row]][:EXAMPLES]
    return examples, [row for row in order if row not in examples]


def default_calibration(labels: int, left: int) -> int:
    """How many calibration messages make_task takes without --calib, from `left` distinct messages (the
    examples taken out) of `labels` labels.

    max(10 per label, 300, min(1,000, left // 4)), and never more than left:
    a few hundred is post 01's bargain for a small pile, but post 08's act
    threshold rests on the few calibration answers above it (on 300, about a
    hundred; one wrong answer among them moves it) and isotonic regression
    fits only as many flat stretches as the answers allow (nine on 300), so a
    pile that can spare more gives more, up to 1,000 (about 4 minutes of
    run.py on 2 cores), keeping three quarters for the test split or the fit
    messages. 6 labels and 700 messages left: 300; 11 labels and 18,145: 1,000.
    """
    return min(left, max(CALIBRATION * labels, CALIBRATION_TOTAL, min(CALIBRATION_MAX, left // CALIBRATION_SHARE)))


def round_robin(rests: list[list[int]], size: int) -> list[int]:
    """The first `size` rows of rests taken in turn: the first row of every list, then the second..., a list
    that runs out left out. ([[1, 2, 3], [4]], 3) -> [1, 4, 2]."""
    taken = [rows[k] for k in range(max(map(len, rests), default=0)) for rows in rests if k < len(rows)]
    return taken[:size]


def closing_line(closing: str, labels: LabelSet, out_of_scope: str | None) -> tuple[str, str | None]:
    """(the prompt's last line, the code it names or None) for --closing: "none" asks for the code alone;
    "example" names the middle code of the labels that are not out of scope (a code named in the prompt's last
    line gets extra weight from the model, so neither the first one, which the list shows first, nor the
    none-of-these label). The opening paragraph names the same code, or none. ValueError for another value."""
    if closing == "none":
        return "Answer with the code only.", None
    if closing != "example":
        raise ValueError(f"--closing must be one of {', '.join(CLOSINGS)}, not {closing!r}")
    inside = [intent for intent in labels.intents if intent.name != out_of_scope]
    code = inside[(len(inside) - 1) // 2].code
    return f"Answer with the code only, for example {code}.", code


@dataclass(frozen=True)
class Baseline:
    """One baseline with no model: key (the label file's name for it, task.BASELINE_NAMES says what it is), how
    many labelled messages it was fitted on, and its accuracy (top-1, in [0, 1]) per split ("calib", "test"; a
    split with no message is left out)."""

    key: str
    fitted_on: int
    accuracy: dict[str, float]


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


def measure_baselines(fit: list[Message], examples: list[Message], splits: dict[str, list[Message]],
                      seed: int) -> list[Baseline]:
    """The nearest neighbours fitted on `fit` (post 01's retriever, as baseline.py fits it on fit_messages), and
    the logistic regression (linear.py, seeded with `seed`) fitted on `examples` and on linear_sample(fit), each
    with its top-1 accuracy on every split of `splits` that holds messages. The logistic regression only for up
    to LINEAR_MAX_LABELS labels (it takes minutes for more), and on the fit messages only when they are more
    than the examples. ValueError when fit is empty."""
    splits = {name: messages for name, messages in splits.items() if messages}
    retriever = Retriever.fit(fit)
    result = [Baseline("neighbours", len(fit),
                       {name: recall_at(gold_positions(retriever, messages), 1) for name, messages in splits.items()})]
    sample = linear_sample(fit, seed)
    labels = len({m.intent for m in fit})
    for key, messages in (("linear_examples", examples), ("linear_fit", sample)):
        if labels > LINEAR_MAX_LABELS or len({m.intent for m in messages}) < 2 or (key == "linear_fit" and
                                                                                   len(sample) == len(examples)):
            continue  # too slow to wait for here; or nothing to fit; or the same messages as the examples
        model = fit_classifier(messages, seed=seed, cache=None)
        result.append(Baseline(key, len(messages), {
            split: sum(model.predict(m.text) == m.intent for m in listed) / len(listed) for split, listed in splits.items()}))
    return result


def baselines_block(baselines: list[Baseline], fit_size: int) -> dict:
    """The label file's "baselines": per split, key -> accuracy rounded to 4 decimals (so the same files give the
    same bytes), and what each was fitted on."""
    splits = sorted({split for b in baselines for split in b.accuracy})
    return {**{split: {b.key: round(b.accuracy[split], 4) for b in baselines if split in b.accuracy} for split in splits},
            "fitted_on": {b.key: b.fitted_on for b in baselines}, "fit_messages": fit_size}


def make_task(name: str, labels_path: Path, messages_path: Path, test_path: Path | None = None, seed: int = 0,
              out_of_scope: str | None = None, instructions: str | None = None, calib: int | None = None,
              closing: str = "none", irreversible: tuple[str, ...] = ()) -> Made:
    """Read and check the files, decide groups, codes, examples and splits, measure the baselines, and build
    every file of the task.

    calib: the calibration split's size (None: default_calibration). closing:
    the prompt's last line, "none" or "example" (closing_line). Each label's
    "action" in the label file is its kind column's (read_labels; without it
    SAFE_ACTION, a change), as banking77.json marks its intents; irreversible:
    labels whose action cannot be undone, marked "irreversible" whatever their
    kind, so that 08-routes/beyond/route_beyond.py asks to confirm them
    instead of acting (harm.py). Nothing is written here (write_task
    does it). Raises ValueError with one sentence for every bad input the
    module docstring lists, and for a calib below 20 or above the messages the
    examples leave; OSError for a file that cannot be read.
    """
    if closing not in CLOSINGS:
        raise ValueError(f"--closing must be one of {', '.join(CLOSINGS)}, not {closing!r}")
    if calib is not None and calib < MIN_CALIBRATION:
        raise ValueError(f"--calib {calib}: at least {MIN_CALIBRATION} calibration messages are needed to fit anything")
    if not NAME.fullmatch(name):
        raise ValueError(f"task name {name!r}: use lower-case letters, digits and _, starting with a letter "
                         f"(it names files and --dataset)")
    if name in DATASETS and not DATASETS[name].is_task:
        raise ValueError(f"{name!r} is a dataset of the series; give your task another name")
    labels = read_labels(labels_path)
    if len(labels) > len(LETTERS) ** 2:
        raise ValueError(f"{len(labels)} labels do not fit the codes: at most {len(LETTERS)} groups of at most "
                         f"{len(LETTERS)} labels each ({len(LETTERS) ** 2} labels)")
    known = {label.name for label in labels}
    kinds = {label.name: label.kind for label in labels}
    if out_of_scope is not None and out_of_scope not in known:
        raise ValueError(f"--out-of-scope {out_of_scope!r} is not a label of {labels_path}")
    if unknown := sorted(set(irreversible) - known):
        raise ValueError(f"--irreversible {unknown[0]!r} is not a label of {labels_path}")
    if out_of_scope in irreversible:
        raise ValueError(f"--irreversible {out_of_scope!r} is the out-of-scope label, which is never acted on")
    messages = read_messages(messages_path, "messages")
    test = read_messages(test_path, "test") if test_path else []
    for path, listed in ((messages_path, messages), (test_path, test)):
        if unknown := sorted({m.intent for m in listed} - known):
            raise ValueError(f"{path} uses labels that {labels_path} lacks: {', '.join(map(repr, unknown[:5]))}"
                             f"{' ...' if len(unknown) > 5 else ''}")
    texts = [m.text for m in messages]
    first: dict[str, int] = {}
    for row, text in enumerate(texts):
        first.setdefault(normalise(text), row)
    by_label: dict[str, list[Message]] = {label.name: [] for label in labels}
    rows_of: dict[str, list[int]] = {label.name: [] for label in labels}
    for row, message in enumerate(messages):
        by_label[message.intent].append(message)
        if first[normalise(message.text)] == row:
            rows_of[message.intent].append(row)
    if empty := [label for label, rows in by_label.items() if not rows]:
        raise ValueError(f"{messages_path} has no message of the label(s) {', '.join(map(repr, empty[:5]))}: "
                         f"each label needs messages (about fifteen)")

    groups_of = grouped(labels, by_label, name, out_of_scope)
    order = [label for _, members in groups_of for label in members]
    shared = {label: share_out(rows_of[label], texts, seed, label) for label in order}
    left = sum(len(rest) for _, rest in shared.values())
    if calib is not None and calib > left:
        raise ValueError(f"--calib {calib}: the messages hold {left} distinct ones besides the prompt's examples, "
                         f"so at most --calib {left}")
    size = default_calibration(len(labels), left) if calib is None else calib
    per_label = size // len(labels)  # the even share, that a label short of messages is noted against
    calibration_rows = round_robin([shared[label][1] for label in order], size)
    if len(calibration_rows) < MIN_CALIBRATION:
        raise ValueError(f"only {len(calibration_rows)} messages are left for the calibration split after the prompt "
                         f"examples; at least {MIN_CALIBRATION} are needed to fit anything (about {per_label} per "
                         f"label for a few hundred in all): add messages")
    in_calibration = set(calibration_rows)
    description = {label.name: label.description for label in labels}
    groups, test_rows, notes, counts = [], [], [], {}
    test_of = Counter(m.intent for m in test)
    for letter, (group, members) in zip(LETTERS, groups_of):
        intents = []
        for intent_letter, label in zip(LETTERS, members):
            examples, rest = shared[label]
            calib_count = sum(row in in_calibration for row in rest)
            rest = sorted(row for row in rest if row not in in_calibration) if not test_path else []
            if len(examples) < EXAMPLES or calib_count < per_label:
                notes.append(f"{label}: {len(by_label[label])} messages, {len(rows_of[label])} distinct: "
                             f"{len(examples)} examples, {calib_count} calibration (asked: {EXAMPLES} and {per_label})")
            intents.append(Intent(letter, intent_letter, label, description[label],
                                  tuple(texts[row] for row in examples)))
            test_rows += rest
            counts[label] = (len(examples), calib_count, test_of[label] if test_path else len(rest))
        groups.append(Group(letter, group, tuple(intents)))
    if notes:
        notes.append("a label with fewer calibration messages than asked weighs less in every fit on the "
                     "calibration split, and its wrong answers are more often missed there")
    if stripped := [label for label in labels if label.stripped]:
        notes.append(f"{len(stripped)} description{'s' if len(stripped) > 1 else ''} began with the label's own name, "
                     f"which the prompt writes just before it: removed ("
                     + ", ".join(f"{label.name}: {label.stripped!r}" for label in stripped[:3])
                     + (" ..." if len(stripped) > 3 else "") + ")")
    if repeats := len(messages) - len(first):
        notes.append(f"{repeats} message{'s repeat' if repeats > 1 else ' repeats'} an earlier text: in no split")
    if test_path:
        seen = {normalise(texts[row]) for row in calibration_rows}
        seen |= {normalise(text) for group in groups for intent in group.intents for text in intent.examples}
        if leaked := sum(normalise(m.text) in seen for m in test):
            notes.append(f"{leaked} test message{'s repeat' if leaked > 1 else ' repeats'} an example or a "
                         f"calibration message")
    elif not test_rows:
        notes.append("no message is left for the test split, so the scripts that report on test (ece.py, "
                     "separation.py, routes.py...) need --split calib, which reports on the answers the fit saw; "
                     "give test messages with --test to measure on messages the fit did not see")
    label_set = LabelSet(tuple(groups), tuple(calibration_rows))

    oos = [intent for intent in label_set.intents if intent.name == out_of_scope]
    none = f"; a message that fits none of them gets {oos[0].code} ({out_of_scope})" if oos else ""
    last_line, example_code = closing_line(closing, label_set, out_of_scope)
    text = instructions or INSTRUCTIONS.format(none=none, example=f", for example {example_code}" if example_code else "")
    prompt = build_prompt(label_set, EXAMPLES, True, text, last_line)
    held_out = in_calibration | set(test_rows)
    fit = [message for row, message in enumerate(messages) if row not in held_out]  # = TaskLoader.fit_messages
    splits = {"calib": [messages[row] for row in calibration_rows],
              "test": test if test_path else [messages[row] for row in test_rows]}
    baselines = baselines_block(measure_baselines(fit, example_messages(label_set), splits, seed), len(fit))
    data = {"dataset": name,
            "source": f"made by datasets/make_task.py from {Path(labels_path).name} and {Path(messages_path).name}"
                      + (f" and {Path(test_path).name}" if test_path else ""),
            "splits": {"calib": len(calibration_rows), "test": len(test) if test_path else len(test_rows)},
            **({"out_of_scope_intents": [out_of_scope]} if out_of_scope else {}),
            "task": {"labels": len(labels), "seed": seed, "instructions": text, "closing": closing,
                     "closing_line": last_line},
            "baselines": baselines,
            "groups": [{"letter": g.letter, "name": g.name,
                        "intents": [{"letter": i.letter, "intent": i.name, "description": i.description,
                                     "examples": list(i.examples),
                                     "action": "irreversible" if i.name in irreversible else kinds[i.name]}
                                    for i in g.intents]} for g in groups],
            "calibration": {"seed": seed, "per_label": per_label, "rows": calibration_rows},
            **({} if test_path else {"test": {"rows": test_rows}})}
    made = Made(label_set, calibration_rows, test_rows, data["splits"]["test"], counts, notes, baselines=baselines)
    made.files = {f"{name}.json": to_json(data).encode("utf-8"), MESSAGES: Path(messages_path).read_bytes(),
                  f"{name}.prompt.txt": prompt.system.encode("utf-8"), f"{name}.gbnf": prompt.grammar.encode("utf-8")}
    if test_path:
        made.files[TEST] = Path(test_path).read_bytes()
    return made


def write_task(made: Made, folder: Path) -> None:
    """Write made.files into folder (made if need be); a test.csv of an earlier making that no longer has one is
    removed. A file whose bytes are already these is left as it is."""
    folder.mkdir(parents=True, exist_ok=True)
    for filename, content in made.files.items():
        path = folder / filename
        if not (path.exists() and path.read_bytes() == content):
            path.write_bytes(content)
    if TEST not in made.files and (folder / TEST).exists():
        (folder / TEST).unlink()


def shown(path: Path) -> str:
    """path relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(HERE.parent))
    except ValueError:
        return str(path)


def summary(made: Made) -> list[str]:
    """The table make_task.py prints: per group its labels, and the examples, calibration and test messages of
    its labels."""
    lines = [f"{'group':<36} {'labels':>6} {'examples':>8} {'calib':>5} {'test':>5}"]
    for group in made.labels.groups:
        counts = [sum(made.counts[intent.name][k] for intent in group.intents) for k in range(3)]
        lines.append(f"{group.letter + ' ' + group.name:<36} {len(group.intents):>6} {counts[0]:>8} "
                     f"{counts[1]:>5} {counts[2]:>5}")
    return lines


def baselines_table(block: dict) -> list[str]:
    """The baselines make_task.py prints, from the label file's "baselines" block: per baseline, the labelled
    messages it was fitted on and its accuracy on calib and test ("-" for a split the task lacks)."""
    lines = [f"{'baselines with no model (accuracy)':<40} {'fitted on':>9} {'calib':>6} {'test':>6}"]
    for key, fitted_on in block["fitted_on"].items():
        figures = "".join(f" {100 * block[split][key]:>5.1f}%" if key in block.get(split, {}) else f" {'-':>6}"
                          for split in ("calib", "test"))
        lines.append(f"{BASELINE_NAMES[key]:<40} {fitted_on:>9,}{figures}")
    if "linear_examples" not in block["fitted_on"]:
        lines.append(f"(no logistic regression for more than {LINEAR_MAX_LABELS} labels here, it takes minutes: "
                     f"01-why-typed-decisions/beyond/baseline.py --dataset <name> --method linear fits it)")
    elif block["fitted_on"].get("linear_fit", block["fit_messages"]) < block["fit_messages"]:
        lines.append(f"(the fit messages: {block['fit_messages']:,}, every labelled message but the calib and test "
                     f"splits; the logistic regression took {block['fitted_on']['linear_fit']:,} of them, round-robin "
                     f"over the labels)")
    return lines


def check_letters(letters: str) -> str:
    """Whether every letter of the codes, and '-' before it, is one token for the running server's model
    (02's tokens.py asks /tokenize). A line to print; ValueError when one is not (then nothing is written)."""
    from llama_http import (Client, ConnectionLost, ServerError, ServerLoading, ServerTimeout, ServerUnreachable,
                            server_command)
    from tokens import letter_tokens
    client = Client(timeout_s=10)
    try:
        letter_tokens(client, letters)
        return f"letters {letters}: single tokens for {client.model_info()['model']} (checked with /tokenize)"
    except (ServerUnreachable, ServerLoading, ServerTimeout, ConnectionLost, ServerError):
        return (f"letters {letters}: not checked, no server at {client.url}; start it "
                f"({server_command(client.url, 'start')}) and run this again to check them")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the task's name: lower-case letters, digits and _ (it is --dataset's value)")
    parser.add_argument("--labels", type=Path, required=True, help="CSV: label,description[,group]")
    parser.add_argument("--messages", type=Path, required=True, help="CSV: text,label")
    parser.add_argument("--test", type=Path, help="CSV: text,label, your test messages (default: what is left)")
    parser.add_argument("--out-of-scope", metavar="LABEL", help="the label that means 'none of these'")
    parser.add_argument("--instructions", help="the prompt's opening paragraph (default: a general one)")
    parser.add_argument("--seed", type=int, default=0, help="the shuffle's seed, and the logistic regression's "
                                                            "(default: 0)")
    parser.add_argument("--calib", type=int, metavar="N",
                        help=f"calibration messages, at least {MIN_CALIBRATION} (default: {CALIBRATION} per label, at "
                             f"least {CALIBRATION_TOTAL}, up to {CALIBRATION_MAX:,} when a quarter of the messages "
                             f"left after the examples is more: post 08's act threshold rests on the few answers "
                             f"above it, and isotonic regression's stretches on the answers they hold)")
    parser.add_argument("--closing", choices=CLOSINGS, default="none",
                        help="the prompt's last line: 'none' asks for the code alone (the default), 'example' "
                             "names one of the task's codes, the middle one")
    parser.add_argument("--irreversible", metavar="LABEL", action="append", default=[],
                        help="a label whose action cannot be undone: post 08's beyond routes ask to confirm it "
                             "instead of acting (repeat for several)")
    args = parser.parse_args()
    made = make_task(args.name, args.labels, args.messages, args.test, args.seed, args.out_of_scope,
                     args.instructions, args.calib, args.closing, tuple(args.irreversible))
    letters = "".join(sorted({g.letter for g in made.labels.groups} | {i.letter for i in made.labels.intents}))
    checked = check_letters(letters)
    for line in summary(made):
        print(line)
    folder = tasks_dir() / args.name
    label_file = folder / f"{args.name}.json"
    if label_file.exists() and label_file.read_bytes() != made.files[label_file.name]:
        runs = sorted(OWN_RESULTS.glob(f"{args.name}-*.jsonl"))
        made.notes += [f"{shown(run)} holds answers to the task as it was; move it away before run.py, as its "
                       f"splits may have changed" for run in runs]
    write_task(made, folder)
    print(f"wrote {shown(folder)}/: {', '.join(made.files)}")
    intents = made.labels.intents
    print(f"{args.name}: {len(intents)} labels in {len(made.labels.groups)} group"
          f"{'s' if len(made.labels.groups) > 1 else ''}, codes {intents[0].code} to {intents[-1].code}; "
          f"calibration split {len(made.calibration)} messages, test split {made.test_size}")
    print(checked)
    for line in baselines_table(made.baselines):
        print(line)
    for note in made.notes:
        print(f"note: {note}")
    from llama_http import server_command, server_url, split_credentials
    print(f"next: {server_command(split_credentials(server_url())[0], f'start --dataset {args.name}')}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
