"""One line of run.py's results file, checked whole and read as a ResultsLine: how every later post reads answers.

    line = ResultsLine.from_json(json.loads(text), "results/x.jsonl line 12")
    line.confidence, line.code, line.group_letter, line.to_json()

The later posts trust these lines, so the loader (saved_answers.py) checks each
one here before any figure is computed: a line with a missing or wrong field
stops the script with one sentence naming the file, the line and the field,
instead of an AttributeError (or a wrong number) somewhere later. The fields
are the ones run.py writes (README.md lists them; FIELDS is the one table of
their checks); the committed reference files load unchanged. The code string
is taken apart once, here (group_letter, intent_letter). typed_lines.py
makes the lines; this module only reads them and needs no server.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from results_file import FINAL_STATUSES, STATUSES

CODE = re.compile(r"[A-Z]-[A-Z]")
# The two steps of a code: the group letter, then the intent letter (post 03 reads a distribution at each).
STEPS = ("group", "intent")
SHA256 = re.compile(r"[0-9a-f]{64}")
# How far a distribution's sum may be from 1, and a confidence from p_group x p_intent_given_group.
TOLERANCE = 1e-9


def letters(code: str) -> tuple[str, str]:
    """The group letter and the intent letter of a code: "C-F" -> ("C", "F")."""
    return code[0], code[2]


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
    field of FIELDS (type, range; the optional ones may be absent: "grammar",
    "prompt_sha256" and "flagged_logprobs" from older files), that a line without
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
    if record["right_group"] != (answered and letters(code)[0] == letters(gold)[0]):
        raise bad("right_group", f"is {record['right_group']!r}, but the code is {code!r} and the right one {gold!r}")
    if not answered:
        if record["confidence"] != 0.0:
            raise bad("confidence", f"is {record['confidence']!r}, but a line without an answer has confidence 0")
        return
    product = record["p_group"] * record["p_intent_given_group"]
    if abs(record["confidence"] - product) > TOLERANCE:
        raise bad("confidence", f"is {record['confidence']!r}, not p_group x p_intent_given_group = {product!r}")
    for name, letter in zip(("group_distribution", "intent_distribution"), letters(code)):
        if letter not in record[name]:
            raise bad(name, f"has no letter {letter!r} of the code {code}")


# Fields some lines have and others not (FIELDS says which): older files lack grammar, prompt_sha256 and
# flagged_logprobs.
OPTIONAL = tuple(name for name, (_, optional, _) in FIELDS.items() if optional)


@dataclass(frozen=True)
class ResultsLine:
    """One message's line of a results file, as every reader of one (post 03's scripts and the later posts') has it.

    The fields are run.py's (README.md of post 03 lists them): probabilities
    in [0, 1], wall_ms in milliseconds, distributions letter -> probability.
    An answer (status ok) has a code and every answer field; a line without
    one (invalid, too_long, error) has code None, confidence 0.0 and None in
    every other answer field. extra: the fields of the line that are not
    run.py's, in file order: a later script of the series may add its own
    (and checks them where it reads them); the readers here carry them along
    unread, and to_json writes them back. Derived once, not stored:
    group_letter and intent_letter of the code (None without one), and
    gold_group_letter, gold_intent_letter of gold_code. gold_intent and
    gold_code are None only for a line made directly for a message that has
    no right answer; every line of a file has them (from_json checks).
    written: the optional fields the line had in its file, null ones
    included, so that to_json writes it back as it was read.

    Made by from_json, which checks the line whole. Made directly (a live
    message, tests) or by dataclasses.replace, a line is not checked: its
    maker answers for it.
    """

    id: str
    text: str
    gold_intent: str | None
    gold_code: str | None
    status: str
    code: str | None
    intent: str | None
    correct: bool
    right_group: bool
    retried: bool
    content: str
    error: str | None
    wall_ms: float
    timings: Mapping
    model: str
    build: str | None
    settings: Mapping
    confidence: float
    p_group: float | None
    p_intent_given_group: float | None
    group_distribution: Mapping[str, float] | None
    intent_distribution: Mapping[str, float] | None
    off_label_group: float | None
    off_label_intent: float | None
    missing_letters: int | None
    tokens_in_code: int | None
    grammar: bool | None = None
    prompt_sha256: str | None = None
    flagged_logprobs: int | None = None
    extra: Mapping[str, object] = field(default_factory=dict, compare=False)
    written: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    group_letter: str | None = field(init=False, repr=False, compare=False)
    intent_letter: str | None = field(init=False, repr=False, compare=False)
    gold_group_letter: str | None = field(init=False, repr=False, compare=False)
    gold_intent_letter: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        answer = letters(self.code) if self.code is not None else (None, None)
        gold = letters(self.gold_code) if self.gold_code is not None else (None, None)
        for name, value in zip(("group_letter", "intent_letter", "gold_group_letter", "gold_intent_letter"),
                               (*answer, *gold)):
            object.__setattr__(self, name, value)  # a frozen dataclass sets derived fields this way

    def distribution(self, step: str) -> Mapping[str, float] | None:
        """group_distribution for step "group", intent_distribution for "intent"; ValueError for another step."""
        return getattr(self, f"{_step(step)}_distribution")

    def off_label(self, step: str) -> float | None:
        """off_label_group for step "group", off_label_intent for "intent" (None without an answer)."""
        return getattr(self, f"off_label_{_step(step)}")

    def letter(self, step: str) -> str | None:
        """The letter the answer wrote at step "group" or "intent" (None without an answer)."""
        return getattr(self, f"{_step(step)}_letter")

    def gold_letter(self, step: str) -> str | None:
        """The right letter at step "group" or "intent", from gold_code (None for a live message)."""
        return getattr(self, f"gold_{_step(step)}_letter")

    @property
    def is_answer(self) -> bool:
        """True for a final outcome (status ok, invalid or too_long), False for a failed request (status error)."""
        return self.status in FINAL_STATUSES

    @classmethod
    def from_json(cls, record: dict, where: str) -> ResultsLine:
        """The line of a JSON object, checked whole first (check_record; ValueError naming `where` and the field).

        Every field of run.py's must be there and right, so a line of some
        other script's file does not pass for an answer; the fields beyond
        them go into extra, unread.
        """
        if not isinstance(record, dict):
            raise ValueError(f"{where}: not a JSON object; not a line written by 03's run.py")
        check_record(record, where)
        values = {name: value for name, value in record.items() if name in FIELDS}
        extra = {name: value for name, value in record.items() if name not in FIELDS}
        return cls(**values, extra=extra, written=frozenset(set(record) & set(OPTIONAL)))

    def to_json(self) -> dict:
        """The JSON object of the line: run.py's fields in run.py's order (FIELDS), then extra in its order, so
        json.dumps of it gives back the line from_json read. An optional field is written when it is set or was
        in the line read (written)."""
        record = {}
        for name in FIELDS:
            value = getattr(self, name)
            if value is None and name in OPTIONAL and name not in self.written:
                continue
            record[name] = value
        return {**record, **self.extra}


def _step(step: str) -> str:
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, not {step!r}")
    return step



def answers_and_errors(lines: list[ResultsLine]) -> tuple[list[ResultsLine], list[ResultsLine]]:
    """(the answers: status ok, invalid or too_long; the failed requests: status error), each in file order.

    Every figure a script computes (accuracy, confidence...) is taken over the answers;
    the failed requests are reported as their own count.
    """
    return [r for r in lines if r.is_answer], [r for r in lines if not r.is_answer]


def parse_lines(records: list[dict], where: str) -> list[ResultsLine]:
    """ResultsLine.from_json of each record (the records of a run, each with its "id"); an error names
    "<where>, the line of id <id>", and raises ValueError as from_json does."""
    lines = []
    for record in records:
        name = record.get("id") if isinstance(record, dict) else None
        lines.append(ResultsLine.from_json(record, f"{where}, the line of id {name!r}"))
    return lines
