"""Messages that are not a split of the dataset: the off-topic set, and the committed hostile and ordinary sets.

    messages = offtopic_messages()                                  # 400 CLINC150 messages no bank is asked
    messages = set_messages(Path("08-routes/beyond/gate/adversarial/banking77-third.jsonl"))

A decision's thresholds are fitted on calib answers, which are all requests
to the bank. A message that is not one (small talk, the weather, a plain
order that names no intent) is an answer the fit never saw. The off-topic
set is public data for that: CLINC150's out-of-scope messages of its train
and validation lists (oos_train, oos_val: 200) and a seeded sample of its
in-scope training messages of two domains that are not about money
(small_talk and utility: 100 each). None of them has a right BANKING77
intent, so every answer to one is wrong, whatever its code.

Such a message has no BANKING77 intent, so its gold code is the out-of-scope
code that datasets/banking77oos.json adds (I-A, "out_of_scope"): BANKING77's
grammar cannot write it, so the answer is never right, and a results line of
it passes post 03's checks. A hostile message (a set line with "target" and
no "intent") is one no act should take: its gold is the same code. An
ordinary one keeps its own intent.
"""
from __future__ import annotations

import json
from pathlib import Path

from labels import Message, seeded_sample

OUT_OF_SCOPE_INTENT = "out_of_scope"  # the intent banking77oos.json adds, with its code
OUT_OF_SCOPE_CODE = "I-A"
OFFTOPIC_LISTS = ("oos_train", "oos_val")       # CLINC150's out-of-scope messages outside its test list
OFFTOPIC_DOMAINS = ("small_talk", "utility")    # CLINC150 domains with nothing of a bank's
PER_DOMAIN = 100
SEED = 0
OFFTOPIC = "offtopic"  # the set's name in file names: <dataset>-<variant>-offtopic.jsonl


def offtopic_messages(per_domain: int = PER_DOMAIN, seed: int = SEED) -> list[Message]:
    """The off-topic set: CLINC150's oos_train and oos_val messages (100 each), then per_domain of its train
    messages from each OFFTOPIC_DOMAINS domain, a seeded sample spread over the domain's intents
    (labels.seeded_sample). Ids "offtopic-<CLINC150 id>"; intent OUT_OF_SCOPE_INTENT for all. Raises what the
    CLINC150 loader raises (no data file, a bad checksum)."""
    from clinc150 import load_domains, load_rows
    chosen = [m for name in OFFTOPIC_LISTS for m in load_rows(name)]
    domains = load_domains()
    train = load_rows("train")
    for domain in OFFTOPIC_DOMAINS:
        intents = set(domains[domain])
        chosen += seeded_sample([m for m in train if m.intent in intents], per_domain, seed)
    return [Message(f"{OFFTOPIC}-{m.id}", m.text, OUT_OF_SCOPE_INTENT) for m in chosen]


def set_messages(path: Path) -> list[Message]:
    """The messages of a committed set (JSONL: "text", and "intent" for an ordinary message or "target" for a
    hostile one), ids "<file stem>-<line number from 1>". A hostile message gets OUT_OF_SCOPE_INTENT. Raises
    ValueError naming the file and line of a line without a text."""
    messages = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        item = json.loads(line)
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise ValueError(f"{path} line {number}: no \"text\": not a message set's line")
        messages.append(Message(f"{path.stem}-{number}", item["text"], item.get("intent") or OUT_OF_SCOPE_INTENT))
    return messages


def set_name(path: Path | None) -> str:
    """The set's name in results file names: OFFTOPIC for the off-topic set (path None), else the file's stem
    without the dataset's prefix ("banking77-third.jsonl" -> "third")."""
    if path is None:
        return OFFTOPIC
    return path.stem.split("-", 1)[1] if "-" in path.stem else path.stem
