"""CLINC150: 150 intents in 10 domains, plus queries that fit none of them.

CLINC150 (Clinc, CC BY 3.0; Larson et al., EMNLP 2019) holds short requests
to a virtual assistant, each labelled with one of 150 intents from 10 domains
(banking, travel, small talk...), plus "out-of-scope" requests labelled
``oos`` that fit none of them. The series asks a model for a two-letter code
as with BANKING77: a group letter (A-J, one group per domain; K for out of
scope), a hyphen, and the intent's letter inside its group (``C-F``, ``K-A``).

The codes, group names, one-line descriptions, five examples per intent and
the calibration rows live in ``clinc150.json`` next to this file;
``make_clinc150.py`` regenerates the examples and calibration rows. The types
(Message, Intent, Group, LabelSet) are labels.py's.

Message ids are ``<split>-<i>``, with i the 0-based position in that list of
data_full.json: ``train-0``, ``val-17``, ``oos_test-999``. An out-of-scope
message has intent ``oos``.
"""
import json
from dataclasses import replace
from pathlib import Path

import banking77
from datafiles import fetch
from labels import LabelSet, Message, read_label_file

DATASET = "clinc150"
SOURCE = "https://github.com/clinc/oos-eval"
BASE_URL = "https://raw.githubusercontent.com/clinc/oos-eval/master/data/"
DATA_URL = BASE_URL + "data_full.json"
DATA_SHA256 = "36923c3705a59e08fe9c3883d8bc2dd966ef93e22cb78ac41171782a698d56e0"
DOMAINS_URL = BASE_URL + "domains.json"
DOMAINS_SHA256 = "b947b579d3b8e74b06f93b01083d8efaff2888b43a3e362533bd88a6e1211b3a"
SPLITS = ("train", "val", "test", "oos_train", "oos_val", "oos_test")
OUT_OF_SCOPE = "oos"
N_INTENTS = 151  # 150 in-scope intents and "oos"
LABELS_FILE = Path(__file__).with_name("clinc150.json")
CALIB_SPLIT = "val"          # in-scope calibration rows are rows of this split...
CALIB_OOS_SPLIT = "oos_val"  # ...and every row of this one is added


def load_rows(split: str) -> list[Message]:
    """All messages of one list of data_full.json, in file order.

    Sizes: ``train`` 15,000, ``val`` 3,000, ``test`` 4,500 (150 intents, 100/20/30
    each); ``oos_train`` 100, ``oos_val`` 100, ``oos_test`` 1,000 (intent ``oos``).
    Downloads and verifies the file on first use (see datafiles.fetch).
    Raises ValueError for another split name or an item that is not [text, intent].
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}.")
    path = fetch(DATASET, "data_full.json", DATA_URL, DATA_SHA256)
    items = json.loads(path.read_text(encoding="utf-8"))[split]
    rows = []
    for i, item in enumerate(items):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            raise ValueError(f"{path}: item {i} of {split} is {item!r}, expected [text, intent].")
        rows.append(Message(f"{split}-{i}", item[0], item[1]))
    return rows


def load_domains() -> dict[str, list[str]]:
    """domains.json: the 10 domains in file order, each with its 15 intent names in file order."""
    path = fetch(DATASET, "domains.json", DOMAINS_URL, DOMAINS_SHA256)
    return json.loads(path.read_text(encoding="utf-8"))


def load_labels(path: Path = LABELS_FILE) -> LabelSet:
    """Read and check a CLINC150 label file: labels.read_label_file with 151 intents.

    ``calibration_rows`` of the result are 0-based rows of the ``val`` list
    (CALIB_SPLIT). Raises ValueError naming the first structural problem.
    """
    return read_label_file(path, N_INTENTS, "CLINC150")


def check_labels(labels: LabelSet) -> None:
    """Check a label set against the data; raise ValueError on the first mismatch.

    Groups A-J hold exactly the intents of the 10 domains of domains.json, in
    that order; the last group holds only ``oos``. Every example is a text of
    its intent in ``train`` (``oos_train`` for ``oos``). Calibration rows are
    distinct rows of ``val``, the same number for every in-scope intent, and
    no calibration text (nor any ``oos_val`` text) is also an example.
    """
    domains = load_domains()
    expected = [set(names) for names in domains.values()] + [{OUT_OF_SCOPE}]
    actual = [{intent.name for intent in group.intents} for group in labels.groups]
    if actual != expected:
        raise ValueError(f"groups must be the {len(domains)} domains of domains.json in file order, "
                         f"then one group holding only {OUT_OF_SCOPE!r}.")
    # banking77.check_labels checks names and examples; calibration rows of
    # val are checked below, so it gets none.
    banking77.check_labels(replace(labels, calibration_rows=()), load_rows("train") + load_rows("oos_train"))
    val = load_rows(CALIB_SPLIT)
    rows = labels.calibration_rows
    if len(set(rows)) != len(rows) or not all(0 <= row < len(val) for row in rows):
        raise ValueError(f"calibration rows must be distinct rows of {CALIB_SPLIT} (0 to {len(val) - 1}).")
    examples = {text for intent in labels.intents for text in intent.examples}
    calib = [val[row] for row in rows] + load_rows(CALIB_OOS_SPLIT)
    if shared := [m.id for m in calib if m.text in examples]:
        raise ValueError(f"calibration messages {shared} are also prompt examples.")
    counts = {intent.name: 0 for intent in labels.intents if intent.name != OUT_OF_SCOPE}
    for row in rows:
        counts[val[row].intent] += 1
    if len(set(counts.values())) != 1:
        uneven = {name: n for name, n in counts.items() if n != len(rows) // len(counts)}
        raise ValueError(f"calibration rows are uneven across intents: {uneven}.")


def load_split(name: str, labels: LabelSet | None = None) -> list[Message]:
    """Messages of one evaluation split, in-scope first, then out-of-scope.

    ``test``: the official 4,500 ``test`` and 1,000 ``oos_test`` messages (5,500).
    ``calib``: the ``val`` rows of ``labels.calibration_rows`` (750: 5 per
    intent, in file order), then all 100 ``oos_val`` messages (850).
    ``labels`` defaults to ``load_labels()``; only ``calib`` uses it.
    Raises ValueError for another name (use load_rows for a single list).
    """
    if name == "test":
        return load_rows("test") + load_rows("oos_test")
    if name != "calib":
        raise ValueError(f"split must be 'calib' or 'test', not {name!r} (load_rows reads single lists).")
    labels = labels or load_labels()
    val = load_rows(CALIB_SPLIT)
    return [val[row] for row in labels.calibration_rows] + load_rows(CALIB_OOS_SPLIT)


def fit_messages() -> list[Message]:
    """The messages a retriever is fitted on: ``train`` (15,000) then ``oos_train`` (100).

    Nothing is left out: the calibration split comes from ``val`` and ``oos_val``.
    """
    return load_rows("train") + load_rows("oos_train")


# Post 02's prompt.py builds CLINC150's prompt with these instead of its BANKING77 defaults.
PROMPT_INSTRUCTIONS = """\
You sort the requests that people say or type to a virtual assistant. Each request gets \
exactly one intent from the list below; a request that fits none of them gets K-A (out of \
scope). Answer with the code of that intent and nothing else: the group letter, a hyphen \
and the intent letter, for example C-F."""
# 151 intents with 3 examples give a system prompt of 7,018 tokens (2: 5,627;
# measured in datasets/clinc150.md), which leaves room in a 10,240-token context.
PROMPT_EXAMPLES = 3
