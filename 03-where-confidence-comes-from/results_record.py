"""One line of run.py's results file: made for one message (typed_line), and checked whole: every field a
later post reads, its type and its range.

Posts 04-08 trust these lines, so summary.py's loader checks each one here
before any figure is computed: a line with a missing or wrong field stops the
script with one sentence naming the file, the line and the field, instead of
a KeyError (or a wrong number) somewhere later. The fields are the ones
run.py writes today (README.md lists them); the committed reference files
load unchanged. FIELDS is the one table of them, for the day a line becomes a
frozen dataclass.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable

from batch import base_record
from confidence import LetterTokens, answer_fields, read_answer
from decision import STATUSES, ask_code
from labels import Message, split_code
from llama_http import Client
from typed_prompt import BuiltPrompt

CODE = re.compile(r"[A-Z]-[A-Z]")
SHA256 = re.compile(r"[0-9a-f]{64}")
# How far a distribution's sum may be from 1, and a confidence from p_group x p_intent_given_group.
TOLERANCE = 1e-9


def typed_line(client: Client, built: BuiltPrompt, tokens: LetterTokens, message: Message, model: str,
               settings: dict, top_logprobs: int, asked: BuiltPrompt | None = None) -> dict:
    """run.py's results line for one message: the typed request (the grammar, 2 tokens, top_logprobs
    candidates per token), its confidence, and the fields of batch.base_record.

    asked: the prompt the request sends (default: built); run.py --shortlist
    sends a narrowed one while the line keeps built's gold code and sha256.
    Failed requests give a line with status error (confidence 0), as
    confidence.read_answer makes them. Raises what ask_code raises (server
    unreachable, grammar refused).
    """
    asked = asked or built
    reply, answer = read_answer(ask_code(client, asked, message.text, top_logprobs=top_logprobs), asked, tokens)
    return {**base_record(message, reply, built, model, settings), **answer_fields(answer)}


def is_number(value) -> bool:
    """A JSON number that is finite (not a bool, NaN or an infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value):
    return None if isinstance(value, str) and value else "not a non-empty string"


def _string(value):
    return None if isinstance(value, str) else "not a string"


def _string_or_null(value):
    return None if value is None or isinstance(value, str) else "not a string or null"


def _boolean(value):
    return None if isinstance(value, bool) else "not true or false"


def _mapping(value):
    return None if isinstance(value, dict) else "not an object"


def _status(value):
    return None if value in STATUSES else f"not one of {', '.join(STATUSES)}"


def _code(value):
    return None if isinstance(value, str) and CODE.fullmatch(value) else "not a code like C-F"


def _probability(value):
    return None if is_number(value) and 0.0 <= value <= 1.0 else "not a probability in [0, 1]"


def _milliseconds(value):
    return None if is_number(value) and value >= 0.0 else "not a number of milliseconds >= 0"


def _count(value):
    return None if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else "not a count >= 0"


def _tokens(value):
    return None if value in (2, 3) and not isinstance(value, bool) else "not 2 or 3"


def _sha256(value):
    return None if isinstance(value, str) and SHA256.fullmatch(value) else "not a hex sha256"


def _distribution(value):
    if not isinstance(value, dict) or not value:
        return "not an object of letters and probabilities"
    if any(not re.fullmatch(r"[A-Z]", letter) or _probability(p) for letter, p in value.items()):
        return "not an object of letters and probabilities"
    total = sum(value.values())
    if total != 0.0 and abs(total - 1.0) > TOLERANCE:
        return f"a distribution that sums to {total!r}, not 1 (or 0 when no letter was among the candidates)"
    return None


# name -> (check, the field may be absent, what a line without an answer holds: "null" or "any").
# A check returns None for a good value, else the words that say what is wrong.
Check = Callable[[object], str | None]
FIELDS: dict[str, tuple[Check, bool, str]] = {
    "id": (_text, False, "any"),
    "text": (_string, False, "any"),
    "gold_intent": (_text, False, "any"),
    "gold_code": (_code, False, "any"),
    "status": (_status, False, "any"),
    "code": (_code, False, "null"),
    "intent": (_text, False, "null"),
    "correct": (_boolean, False, "any"),
    "right_group": (_boolean, False, "any"),
    "retried": (_boolean, False, "any"),
    "content": (_string, False, "any"),
    "error": (_string_or_null, False, "any"),
    "wall_ms": (_milliseconds, False, "any"),
    "timings": (_mapping, False, "any"),
    "model": (_text, False, "any"),
    "build": (_string_or_null, False, "any"),
    "grammar": (_boolean, True, "any"),
    "settings": (_mapping, False, "any"),
    "prompt_sha256": (_sha256, True, "any"),
    "confidence": (_probability, False, "any"),
    "p_group": (_probability, False, "null"),
    "p_intent_given_group": (_probability, False, "null"),
    "group_distribution": (_distribution, False, "null"),
    "intent_distribution": (_distribution, False, "null"),
    "off_label_group": (_probability, False, "null"),
    "off_label_intent": (_probability, False, "null"),
    "missing_letters": (_count, False, "null"),
    "tokens_in_code": (_tokens, False, "null"),
    "flagged_logprobs": (_count, True, "null"),
}


def check_record(record: dict, where: str) -> None:
    """Raise ValueError "<where>: field 'name' ..." for the first field of a results line that is wrong.

    where: the file and line, e.g. "results/x.jsonl line 12". Checks every
    field of FIELDS (type, range; "grammar", "prompt_sha256" and
    "flagged_logprobs" may be absent, as in older files), that a line without
    an answer (status not ok) has a null code and null answer fields and
    confidence 0, and that the fields agree with each other: correct and
    right_group with code and gold_code, confidence = p_group x
    p_intent_given_group, the code's letters among its distributions' letters.
    """
    def bad(name: str, problem: str) -> ValueError:
        return ValueError(f"{where}: field {name!r} {problem}; not a line written by 03's run.py")

    answered = record.get("status") == "ok"
    for name, (check, optional, without_answer) in FIELDS.items():
        if name not in record:
            if optional:
                continue
            raise bad(name, "is missing")
        value = record[name]
        if not answered and without_answer == "null":
            if value is not None:
                raise bad(name, f"is {value!r}, but a line with status {record.get('status')!r} has no answer: null")
            continue
        problem = check(value)
        if problem:
            raise bad(name, f"is {value!r}: {problem}")
    code, gold = record["code"], record["gold_code"]
    if record["correct"] != (answered and code == gold):
        raise bad("correct", f"is {record['correct']!r}, but the code is {code!r} and the right one {gold!r}")
    if record["right_group"] != (answered and split_code(code)[0] == split_code(gold)[0]):
        raise bad("right_group", f"is {record['right_group']!r}, but the code is {code!r} and the right one {gold!r}")
    if not answered:
        if record["confidence"] != 0.0:
            raise bad("confidence", f"is {record['confidence']!r}, but a line without an answer has confidence 0")
        return
    product = record["p_group"] * record["p_intent_given_group"]
    if abs(record["confidence"] - product) > TOLERANCE:
        raise bad("confidence", f"is {record['confidence']!r}, not p_group x p_intent_given_group = {product!r}")
    for name, letter in zip(("group_distribution", "intent_distribution"), split_code(code)):
        if letter not in record[name]:
            raise bad(name, f"has no letter {letter!r} of the code {code}")
