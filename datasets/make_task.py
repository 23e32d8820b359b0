"""Make a task of your own from two CSV files: your labels and your labelled messages.

    python3 datasets/make_task.py my_task --labels labels.csv --messages messages.csv
    python3 datasets/make_task.py my_task --labels labels.csv --messages messages.csv --test test.csv
    python3 datasets/make_task.py my_task ... --out-of-scope none_of_these --out-of-scope-share 0.14
    python3 datasets/make_task.py my_task ... --irreversible close_account   # confirmed, never acted on
    python3 datasets/make_task.py my_task ... --kind inform                  # every label only answers
    python3 datasets/make_task.py my_task ... --kinds-from descriptions      # a proposal; --accept-kinds writes it

labels.csv has the header label,description (a row per label, the description
one line on what the label is used for), label,description,group (your own
groups), and either with a kind column last: what acting on the label does
(inform, change or irreversible; 08-routes/beyond/gate/harm.py). Without it,
every label is a change, the safe default, and a line says what that costs;
--kind gives every label one kind, --kinds-from descriptions proposes one per
label (task.proposed_kind) and --accept-kinds writes the proposal. messages.csv
(and test.csv) have the header text,label. UTF-8; quote a field with a comma.

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
     (--calib has the reason). With --out-of-scope-share S, the out-of-scope
     label gives round(S x N) of them (as many as it has, with a note, when
     fewer), the other labels the rest, round-robin, spread through the split;
  5. test split: the rest (unless --test gives one).

Then it prints the baselines with no model (no server): post 01's TF-IDF
nearest neighbours (datasets/neighbours.py) fitted on the fit messages (every
labelled message but the calibration and test splits, as baseline.py
--dataset <name> fits it), and the logistic regression of
01-why-typed-decisions/beyond/linear.py fitted on the prompt's examples and on
the fit messages (at most task.LINEAR_CAP = 2,000, round-robin over the
labels), with their accuracy on both splits. The logistic regression is
fitted whatever the number of labels; its cost grows with them (a line on
stderr says when a fit starts). Timed with `time` on 2 cores shared with
other work (load average 3 to 5): a task of 31 labels (CLINC150's travel and
car intents and out of scope, 20 labelled messages each, a test file of
1,050) took 6.5 s and 10.1 s to make in two runs, 0.6 s without it; one of
CLINC150's 150 intents and out of scope (20 each: 1,510 fit messages; a test
file of 5,500) took 136 s and 182 s, 3.9 s without it. The label file keeps
them ("baselines"), with each one's right or wrong answer on each message
("right"), so that later scripts compare the model with them on the very
messages it answered, without fitting again (task.baseline_note).

It also says whether 08-routes/beyond/guarantees/certified_routes.py can ever
act on the task: it needs at least 199 right calibration answers with an
in-scope code to certify its 98.5% target at delta 0.05 (guarantee's
minimum_answers: 199 right of 199 have a Clopper-Pearson lower bound of
0.05 ** (1 / 199) = 0.98506, 198 of 198 0.98498).

The prompt's last line asks for the code alone (--closing none, the default),
or names one code of the task as an example (--closing example); post 02's
line names C-F, a code a task of up to 26 labels does not have.

A description that starts with its label's name ("travel: trips") loses that start, with a note: the
prompt writes the name just before it. --fields: questions besides the intent (08-routes/beyond/fields/).

Codes follow the task. Up to 26 labels: one group, A, whose letter the
grammar writes for the model, so the code A-C is a choice of one letter among
the labels. More: your groups (the group column), or groups proposed from the
messages (check_groups.propose_groups), with a warning naming a proposed group
that puts unlike labels together (check_groups.unlike_labels). Edit the groups
in the label file, then write the prompt again (python3
02-forcing-a-valid-answer/prompt.py <name> --save), or give the labels file a
group column. At most 26 groups of 26 labels. Bad input (an unknown label, a
label without a description or messages, a duplicate, a header other than the
above, an option out of its range or at odds with another...) ends with one
line and exit status 2, and writes nothing.
"""
from __future__ import annotations

import argparse
import math
import random
import re
import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders and the rooms beyond them on sys.path
from check_groups import group_name, propose_groups, shown, unlike_labels, unlike_warnings
from guarantee import DELTA, minimum_answers
from harm import CHANGE_TARGET
from labels import LETTERS, Group, Intent, LabelSet, Message, printable
from linear import example_messages, fit_classifier
from make_banking77 import fits_in_prompt, normalise, to_json
from neighbours import Retriever, gold_positions
from prompt import build_prompt
from registry import DATASETS, Dataset, tasks_dir
from routes import TARGET
from saved_answers import OWN_RESULTS
from script_exit import exit_on_bad_input
from task import (ACTION_KINDS, MESSAGES, SAFE_ACTION, TEST, Baseline, baselines_block, baselines_table,
                  changed_task, check_kind_options, label_kinds, linear_sample, mark_string, parse_share, read_csv,
                  read_messages, round_robin, spread_in)

EXAMPLES = 5          # per label in the prompt, as the series does
CALIBRATION = 10      # per label at least, as the series does...
CALIBRATION_TOTAL = 300  # ...and a few hundred in all (post 1), so fewer labels take more each;
CALIBRATION_SHARE = 4    # from a large pile, a quarter of what the examples leave...
CALIBRATION_MAX = 1000   # ...up to this many (a run of 1,000 messages takes about 4 minutes on 2 cores)
MIN_CALIBRATION = 20  # below this the split cannot be said to calibrate anything: refused
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
    kind: str = ""  # what acting on it does (task.ACTION_KINDS), from the kind column; "" without one


@dataclass
class Made:
    """What make_task() decided, before anything is written.

    labels: the LabelSet (groups, codes, descriptions, examples). calibration,
    test: rows of messages.csv (test empty when a test file was given).
    notes: what the reader should know (labels short of messages, repeats).
    files: file name -> the bytes to write into the task folder.
    baselines: the label file's "baselines" block (baselines_block).
    kind_lines: what make_task.py prints on the labels' kinds (label_kinds);
    kinds_pending: a proposal of kinds waits for --accept-kinds.
    certified: the line on 08's certified act rule (certified_line).
    unlike: the labels of proposed groups that share more words with another
    group (check_groups.unlike_labels); empty for one group or your own.
    """

    labels: LabelSet
    calibration: list[int]
    test: list[int]
    test_size: int
    counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    kind_lines: list[str] = field(default_factory=list)
    kinds_pending: bool = False
    certified: str = ""
    unlike: list = field(default_factory=list)


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


def read_label_rows(path: Path) -> list[LabelRow]:
    """The rows of a labels file (label,description[,group][,kind]); ValueError for a duplicate label, a name the
    prompt cannot hold, an empty or multi-line description, (with a group column) an empty group, or (with a kind
    column) a kind that is not one of task.ACTION_KINDS (without it, LabelRow.kind is "": label_kinds decides). A description
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
        kind = row[header.index("kind")].strip() if "kind" in header else ""
        if "kind" in header and kind not in ACTION_KINDS:
            raise ValueError(f"{path}, line {line}: the label {name!r} has the kind {printable(kind)!r}; expected "
                             f"{', '.join(ACTION_KINDS)} (what acting on it does)")
        seen.add(name)
        labels.append(LabelRow(name, description, group, stripped.strip(), kind))
    if len(labels) < 2:
        raise ValueError(f"{path} lists {len(labels)} label(s): a decision needs at least 2")
    return labels


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


def certified_line(calibration: int, in_scope: int) -> str:
    """The line make_task.py prints on 08-routes/beyond/guarantees/certified_routes.py's act rule: it certifies the act target
    (routes.TARGET) at level 1 - DELTA only on at least minimum_answers right calib answers with an in-scope code
    (a Clopper-Pearson lower bound: n right of n bound DELTA ** (1 / n)), so a calibration split with fewer
    in-scope messages can never act; then the --calib that would give it enough."""
    needed = minimum_answers(TARGET, DELTA)
    line = (f"certified act rule (08-routes/beyond/guarantees/certified_routes.py): it needs at least {needed} right calib "
            f"answers with an in-scope code to certify {100 * TARGET:.1f}% at delta {DELTA} ({needed} right of {needed}: "
            f"lower bound {DELTA ** (1 / needed):.4f}); the calibration split has {calibration} messages, {in_scope} in "
            f"scope, ")
    if in_scope >= needed:
        return line + "so it can act on this task once the model gets enough of them right"
    more = math.ceil(needed * calibration / in_scope) if in_scope else needed
    return line + f"so it can never act on this task: make it again with --calib {more} or more (add messages if need be)"


def prompt_closing(closing: str, labels: LabelSet, out_of_scope: str | None) -> tuple[str, str | None]:
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


def measure_baselines(fit: list[Message], examples: list[Message], splits: dict[str, list[Message]],
                      seed: int, say=None) -> list[Baseline]:
    """The nearest neighbours fitted on `fit` (post 01's retriever, as baseline.py fits it on fit_messages), and
    the logistic regression (linear.py, seeded with `seed`) fitted on `examples` and on linear_sample(fit), each
    right or wrong on every message of every split of `splits` that holds messages. The logistic regression
    whatever the number of labels (the module docstring has what it costs), on the fit messages only when they are
    more than the examples. say: called with a line before each logistic regression fit (main prints it to
    stderr: a fit of 150 labels takes a minute), or None. ValueError when fit is empty."""
    splits = {name: messages for name, messages in splits.items() if messages}
    retriever = Retriever.fit(fit)
    result = [Baseline("neighbours", len(fit),
                       {name: mark_string(position == 1 for position in gold_positions(retriever, messages))
                        for name, messages in splits.items()})]
    sample = linear_sample(fit, seed)
    for key, messages in (("linear_examples", examples), ("linear_fit", sample)):
        labels = len({m.intent for m in messages})
        if labels < 2 or (key == "linear_fit" and len(sample) == len(examples)):
            continue  # nothing to fit; or the same messages as the examples
        if say:
            say(f"fitting the logistic regression on {len(messages):,} messages of {labels} labels ...")
        model = fit_classifier(messages, seed=seed, cache=None)
        result.append(Baseline(key, len(messages), {
            split: mark_string(model.predict(m.text) == m.intent for m in listed) for split, listed in splits.items()}))
    return result


def make_task(name: str, labels_path: Path, messages_path: Path, test_path: Path | None = None, seed: int = 0,
              out_of_scope: str | None = None, instructions: str | None = None, calib: int | None = None,
              closing: str = "none", irreversible: tuple[str, ...] = (), kind: str | None = None,
              kinds_from: str | None = None, accept_kinds: bool = False, out_of_scope_share: float | None = None,
              say=None) -> Made:
    """Read and check the files, decide groups, codes, examples and splits, measure the baselines, and build
    every file of the task.

    calib: the calibration split's size (None: default_calibration). closing:
    the prompt's last line, "none" or "example" (closing_line). Each label's
    "action" in the label file is what label_kinds decides: its kind column's,
    else `kind` for every label (--kind), else with kinds_from="descriptions"
    and accept_kinds the kinds proposed from the descriptions, else
    SAFE_ACTION, a change, as banking77.json marks its intents; irreversible:
    labels whose action cannot be undone, marked "irreversible" whatever their
    kind, so that 08-routes/beyond/service/route_beyond.py asks to confirm them
    instead of acting (harm.py). out_of_scope_share: the share of the
    calibration split the out-of-scope label takes (your traffic's; needs
    out_of_scope), as far as its messages allow. say: passed to
    measure_baselines. Nothing is written here (write_task does it). Raises
    ValueError with one sentence for every bad input the module docstring
    lists, and for a calib below 20 or above the messages the examples leave;
    OSError for a file that cannot be read.
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
    share = parse_share(out_of_scope_share)
    if share is not None and out_of_scope is None:
        raise ValueError(f"--out-of-scope-share {out_of_scope_share} needs --out-of-scope LABEL: the label whose "
                         f"share it is")
    labels = read_label_rows(labels_path)
    check_kind_options(labels, kind, kinds_from, accept_kinds)
    if len(labels) > len(LETTERS) ** 2:
        raise ValueError(f"{len(labels)} labels do not fit the codes: at most {len(LETTERS)} groups of at most "
                         f"{len(LETTERS)} labels each ({len(LETTERS) ** 2} labels)")
    known = {label.name for label in labels}
    if out_of_scope is not None and out_of_scope not in known:
        raise ValueError(f"--out-of-scope {out_of_scope!r} is not a label of {labels_path}")
    if unknown := sorted(set(irreversible) - known):
        raise ValueError(f"--irreversible {unknown[0]!r} is not a label of {labels_path}")
    if out_of_scope in irreversible:
        raise ValueError(f"--irreversible {out_of_scope!r} is the out-of-scope label, which is never acted on")
    kinds, kind_lines, kinds_pending = label_kinds(labels, (CHANGE_TARGET, TARGET), kind, kinds_from, accept_kinds,
                                                   out_of_scope, irreversible)
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
    asked = dict.fromkeys(order, per_label)
    if share is None:
        calibration_rows = round_robin([shared[label][1] for label in order], size)
    else:  # the out-of-scope label at the share of your traffic, the others round-robin, it spread through them
        asked[out_of_scope] = wanted = round(share * size)
        outside = shared[out_of_scope][1][:wanted]
        asked.update(dict.fromkeys((label for label in order if label != out_of_scope),
                                   (size - wanted) // (len(order) - 1)))
        calibration_rows = spread_in(round_robin([shared[label][1] for label in order if label != out_of_scope],
                                                 size - len(outside)), outside)
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
            short = calib_count < asked[label] and not (share is not None and label == out_of_scope)  # noted below
            if len(examples) < EXAMPLES or short:
                notes.append(f"{label}: {len(by_label[label])} messages, {len(rows_of[label])} distinct: "
                             f"{len(examples)} examples, {calib_count} calibration (asked: {EXAMPLES} and "
                             f"{asked[label]})")
            intents.append(Intent(letter, intent_letter, label, description[label],
                                  tuple(texts[row] for row in examples)))
            test_rows += rest
            counts[label] = (len(examples), calib_count, test_of[label] if test_path else len(rest))
        groups.append(Group(letter, group, tuple(intents)))
    if notes:
        notes.append("a label with fewer calibration messages than asked weighs less in every fit on the "
                     "calibration split, and its wrong answers are more often missed there")
    outside_count = sum(messages[row].intent == out_of_scope for row in calibration_rows)
    test_split = test if test_path else [messages[row] for row in test_rows]
    if share is not None and outside_count < asked[out_of_scope]:
        notes.append(f"--out-of-scope-share {share:g}: the out-of-scope label {out_of_scope} has {outside_count} "
                     f"messages beyond the prompt's examples, so the calibration split holds {outside_count} of "
                     f"{len(calibration_rows)} ({100 * outside_count / len(calibration_rows):.1f}%), not "
                     f"{asked[out_of_scope]}: add about {asked[out_of_scope] - outside_count} out-of-scope messages "
                     f"to reach {100 * share:g}%")
    elif share is None and out_of_scope and (in_test := sum(m.intent == out_of_scope for m in test_split)):
        test_share, calib_share = in_test / len(test_split), outside_count / len(calibration_rows)
        if max(test_share, calib_share) > 1.5 * min(test_share, calib_share):
            notes.append(f"the test split holds {100 * test_share:.1f}% out-of-scope messages, the calibration split "
                         f"{100 * calib_share:.1f}%: the thresholds fitted on calib expect them that often; if your "
                         f"traffic is like the test split, make the task again with --out-of-scope-share "
                         f"{test_share:.2f}")
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
    last_line, example_code = prompt_closing(closing, label_set, out_of_scope)
    text = instructions or INSTRUCTIONS.format(none=none, example=f", for example {example_code}" if example_code else "")
    prompt = build_prompt(label_set, EXAMPLES, True, text, last_line)
    held_out = in_calibration | set(test_rows)
    fit = [message for row, message in enumerate(messages) if row not in held_out]  # = TaskLoader.fit_messages
    splits = {"calib": [messages[row] for row in calibration_rows], "test": test_split}
    baselines = baselines_block(measure_baselines(fit, example_messages(label_set), splits, seed, say), len(fit))
    data = {"dataset": name,
            "source": f"made by datasets/make_task.py from {Path(labels_path).name} and {Path(messages_path).name}"
                      + (f" and {Path(test_path).name}" if test_path else ""),
            "splits": {"calib": len(calibration_rows), "test": len(test) if test_path else len(test_rows)},
            **({"out_of_scope_intents": [out_of_scope]} if out_of_scope else {}),
            "task": {"labels": len(labels), "seed": seed, "instructions": text, "closing": closing,
                     "closing_line": last_line},
            "groups": [{"letter": g.letter, "name": g.name,
                        "intents": [{"letter": i.letter, "intent": i.name, "description": i.description,
                                     "examples": list(i.examples), "action": kinds[i.name]}
                                    for i in g.intents]} for g in groups],
            "calibration": {"seed": seed, "per_label": per_label,
                            **({} if share is None else {"out_of_scope_share": share}), "rows": calibration_rows},
            **({} if test_path else {"test": {"rows": test_rows}}),
            "baselines": baselines}  # last: its per-message marks are long lines
    made = Made(label_set, calibration_rows, test_rows, data["splits"]["test"], counts, notes, baselines=baselines,
                kind_lines=kind_lines, kinds_pending=kinds_pending,
                certified=certified_line(len(calibration_rows), len(calibration_rows) - outside_count))
    if not labels[0].group and len(labels) > len(LETTERS):  # proposed groups: say which hold unlike labels
        made.unlike = unlike_labels([(f"{g.letter} {g.name}", [i.name for i in g.intents]) for g in groups],
                                    [m for m in messages if m.intent != out_of_scope])
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


def summary(made: Made) -> list[str]:
    """The table make_task.py prints: per group its labels, and the examples, calibration and test messages of
    its labels."""
    lines = [f"{'group':<36} {'labels':>6} {'examples':>8} {'calib':>5} {'test':>5}"]
    for group in made.labels.groups:
        counts = [sum(made.counts[intent.name][k] for intent in group.intents) for k in range(3)]
        lines.append(f"{group.letter + ' ' + group.name:<36} {len(group.intents):>6} {counts[0]:>8} "
                     f"{counts[1]:>5} {counts[2]:>5}")
    return lines


def this_command(*more: str) -> str:
    """The make_task.py command this run was started with, and `more` after it, as a reader types it again."""
    return shlex.join(["python3", "datasets/make_task.py", *sys.argv[1:], *more])


def check_letters(letters: str, name: str) -> str:
    """Whether every letter of the codes, and '-' before it, is one token for the running server's model
    (02's tokens.py asks /tokenize). A line to print; ValueError when one is not (then nothing is written).
    name: the task's, for the command that starts the server with its prompt."""
    from llama_http import (Client, ConnectionLost, ServerError, ServerLoading, ServerTimeout, ServerUnreachable,
                            server_command)
    from tokens import letter_tokens
    client = Client(timeout_s=10)
    try:
        letter_tokens(client, letters)
        return f"letters {letters}: single tokens for {client.model_info()['model']} (checked with /tokenize)"
    except (ServerUnreachable, ServerLoading, ServerTimeout, ConnectionLost, ServerError):
        return (f"letters {letters}: not checked, no server at {client.url}; start it "
                f"({server_command(client.url, f'start --dataset {name}')}) and run {this_command()} again to "
                f"check them")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the task's name: lower-case letters, digits and _ (it is --dataset's value)")
    parser.add_argument("--labels", type=Path, required=True, help="CSV: label,description[,group][,kind]")
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
    parser.add_argument("--kind", metavar="KIND",
                        help=f"what acting on every label does, one of {', '.join(ACTION_KINDS)} (without a kind "
                             f"column; default: {SAFE_ACTION}, the safe one): inform when your labels only answer")
    parser.add_argument("--kinds-from", metavar="SOURCE",
                        help="propose a kind per label from its description (SOURCE: descriptions): inform for a "
                             "question or a request for information, change for anything else; printed, written "
                             "only with --accept-kinds")
    parser.add_argument("--accept-kinds", action="store_true", help="write the kinds --kinds-from proposes")
    parser.add_argument("--fields", type=Path, metavar="CSV", help="questions besides the intent, a row per option: "
                        "key,question,option,description,safe,gates,out_of_scope (08-routes/beyond/fields/fields.py)")
    parser.add_argument("--out-of-scope-share", metavar="S",
                        help="the share of your traffic that fits none of the labels, a fraction such as 0.14: the "
                             "calibration split holds the out-of-scope label's messages at that share (as far as "
                             "they go) instead of one label's even share")
    args = parser.parse_args()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
    from fields import fields_from_csv, fields_lines, save_fields_prompt, with_fields_entry  # 08-routes/beyond/fields
    fields = fields_from_csv(args.fields) if args.fields else None  # refused before any work when wrong
    made = make_task(args.name, args.labels, args.messages, args.test, args.seed, args.out_of_scope,
                     args.instructions, args.calib, args.closing, tuple(args.irreversible), args.kind,
                     args.kinds_from, args.accept_kinds, args.out_of_scope_share, say)
    if fields:
        made.files[f"{args.name}.json"] = with_fields_entry(made.files[f"{args.name}.json"], fields)
    letters = "".join(sorted({g.letter for g in made.labels.groups} | {i.letter for i in made.labels.intents}))
    checked = check_letters(letters, args.name)
    for line in summary(made):
        print(line)
    folder = tasks_dir() / args.name
    label_file = folder / f"{args.name}.json"
    if changed_task(folder, made.files, args.name):
        runs = sorted(OWN_RESULTS.glob(f"{args.name}-*.jsonl"))
        made.notes += [f"{shown(run)} holds answers to the task as it was; move it away before run.py, as its "
                       f"splits may have changed" for run in runs]
    write_task(made, folder)
    print(f"wrote {shown(folder)}/: {', '.join(made.files)}")
    if fields:  # the task just written, as a fresh registry finds it, asked its fields after the code
        DATASETS[args.name] = Dataset(args.name, folder)
        print("\n".join(fields_lines(args.name, [shown(path) for path in save_fields_prompt(args.name)])))
    intents = made.labels.intents
    print(f"{args.name}: {len(intents)} labels in {len(made.labels.groups)} group"
          f"{'s' if len(made.labels.groups) > 1 else ''}, codes {intents[0].code} to {intents[-1].code}; "
          f"calibration split {len(made.calibration)} messages, test split {made.test_size}")
    print(checked)
    print(made.certified)
    for line in made.kind_lines:
        print(line)
    if made.kinds_pending:
        print(f"to write these kinds: {this_command('--accept-kinds')}")
    for line in baselines_table(made.baselines):
        print(line)
    for line in unlike_warnings(made.unlike, args.name, label_file):
        print(line)
    for note in made.notes:
        print(f"note: {note}")
    from llama_http import server_command, server_url, split_credentials
    print(f"next: {server_command(split_credentials(server_url())[0], f'start --dataset {args.name}')}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
