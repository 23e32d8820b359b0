"""BANKING77 with a code of its own for messages outside the list (beyond post 08).

Post 02 notes that the model cannot say "none of these"; BANKING77 has no
code for it, so nothing can say that a message is not a banking request. This dataset is BANKING77 (the same messages, splits, 77 intents,
codes and calibration rows) plus one group, ``I`` OUT_OF_SCOPE, whose one
intent ``out_of_scope`` has the code ``I-A``. Its label file
(``banking77oos.json``) holds only that group and ``"extends": "banking77"``;
the registry and this loader add BANKING77's. No message of BANKING77 is out
of scope, so on its splits an ``I-A`` answer is always wrong: what the code
costs in accuracy, and what it does to hostile and off-topic messages, is in
08-routes/beyond/README.md. The five examples of ``out_of_scope`` were written for
this repository (none is in 08-routes/beyond/adversarial/banking77.jsonl).
"""
from pathlib import Path

import banking77
from labels import LabelSet, Message, read_label_file

DATASET = "banking77oos"
LABELS_FILE = Path(__file__).with_name("banking77oos.json")
OUT_OF_SCOPE = "out_of_scope"
N_OWN_INTENTS = 1  # out_of_scope; the other 77 are BANKING77's
PROMPT_INSTRUCTIONS = """\
You sort the messages that customers send to their bank. Each message gets \
exactly one intent from the list below; a message that is not a request to the \
bank, or fits none of them, gets I-A (out of scope). Answer with the code of that \
intent and nothing else: the group letter, a hyphen and the intent letter, for example C-F."""


def load_labels(path: Path = LABELS_FILE) -> LabelSet:
    """BANKING77's label set with the groups of this label file after its own (78 intents, I-A the last).

    Raises ValueError when the file's structure is wrong (labels.read_label_file)
    or when it reuses a group letter or an intent name of BANKING77.
    """
    base = banking77.load_labels()
    own = read_label_file(path, N_OWN_INTENTS, DATASET)
    letters = {group.letter for group in base.groups} & {group.letter for group in own.groups}
    names = set(base.by_intent) & set(own.by_intent)
    if letters or names:
        raise ValueError(f"{path}: reuses BANKING77's {'group letters' if letters else 'intent names'} "
                         f"{sorted(letters or names)}")
    return LabelSet(base.groups + own.groups, base.calibration_rows)


def load_split(name: str, labels: LabelSet | None = None) -> list[Message]:
    """BANKING77's split of that name (banking77.load_split): the calibration rows are the same."""
    return banking77.load_split(name, labels)


def fit_messages(labels: LabelSet | None = None, all_train: bool = False) -> list[Message]:
    """BANKING77's training messages minus the calibration rows (banking77.fit_messages)."""
    return banking77.fit_messages(labels, all_train)
