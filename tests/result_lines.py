"""Hand-made lines of 03's results file, complete and consistent, for tests of the readers of posts 03-08.

Every line has all the fields run.py writes (results_record.FIELDS), so the
loader's check passes; the numbers are chosen so that expected values can be
worked out by hand: P(group) is 1, so the confidence is P(intent | group).
"""
import json
from pathlib import Path

from results_record import ResultsLine

GOLD = "A-B"
# Every field of a results line: a right answer A-B at confidence 0.5, as a default for partial_line.
DEFAULTS = {
    "id": "test-0", "text": "message 0", "gold_intent": "card_linking", "gold_code": GOLD, "status": "ok",
    "code": GOLD, "intent": "card_linking", "correct": True, "right_group": True, "retried": False, "content": GOLD,
    "error": None, "wall_ms": 1000.0, "timings": {}, "model": "hand-made", "build": "b0", "settings": {},
    "confidence": 0.5, "p_group": 1.0, "p_intent_given_group": 0.5, "group_distribution": {"A": 1.0},
    "intent_distribution": {"B": 0.5, "C": 0.5}, "off_label_group": 0.0, "off_label_intent": 0.0,
    "missing_letters": 0, "tokens_in_code": 2,
}


def partial_line(**fields) -> ResultsLine:
    """A ResultsLine with the given fields and DEFAULTS for the rest, not checked against each other: for tests
    of a function that reads a few fields (the others must not matter to it)."""
    return ResultsLine(**{**DEFAULTS, **fields})


def lines(records: list[dict]) -> list[ResultsLine]:
    """Complete hand-made lines (result_line) as the loader gives them: each checked whole."""
    return [ResultsLine.from_json(record, f"hand-made line {n}") for n, record in enumerate(records, 1)]


def result_line(number: int, right: bool, confidence: float = 0.5, status: str = "ok") -> dict:
    """Line `number` (id "test-<number>") whose true code is A-B; an answer (A-B if right, else A-C) at
    `confidence` when status is ok, else no answer and confidence 0, as run.py writes it."""
    answered = status == "ok"
    code = (GOLD if right else "A-C") if answered else None
    other = 1.0 - confidence
    line = {
        "id": f"test-{number}", "text": f"message {number}", "gold_intent": "card_linking", "gold_code": GOLD,
        "status": status, "code": code, "intent": ("card_linking" if right else "card_delivery_estimate") if code else None,
        "correct": answered and right, "right_group": answered, "retried": False, "content": code or "",
        "error": "HTTP 500: the server broke" if status == "error" else None, "wall_ms": 1000.0,
        "timings": {}, "model": "hand-made", "build": "b0", "grammar": True,
        "settings": {"temperature": 0.0, "max_tokens": 2, "logprobs": True, "top_logprobs": 30},
        "confidence": confidence if answered else 0.0,
    }
    if not answered:
        return {**line, **dict.fromkeys(("p_group", "p_intent_given_group", "group_distribution", "intent_distribution",
                                         "off_label_group", "off_label_intent", "missing_letters", "tokens_in_code",
                                         "flagged_logprobs"))}
    intent = {"B": confidence, "C": other} if right else {"B": other, "C": confidence}
    return {**line, "p_group": 1.0, "p_intent_given_group": confidence, "group_distribution": {"A": 1.0, "B": 0.0},
            "intent_distribution": intent, "off_label_group": 0.0, "off_label_intent": 0.0, "missing_letters": 0,
            "tokens_in_code": 2, "flagged_logprobs": 0}


def write_lines(path: Path, lines: list[dict]) -> Path:
    """Write the lines as a JSONL results file at path; return path."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


# Issue 12, case 2: 8 answers, 4 of them right, and 2 failed requests. Accuracy is 4 / 8, with "2" errors.
RIGHT = (0.9, 0.8, 0.7, 0.6)
WRONG = (0.6, 0.5, 0.4, 0.3)
EIGHT_AND_TWO_ERRORS = ([result_line(k, True, c) for k, c in enumerate(RIGHT)]
                        + [result_line(4, False, WRONG[0]), result_line(5, False, 0.0, "error")]
                        + [result_line(6 + k, False, c) for k, c in enumerate(WRONG[1:])]
                        + [result_line(9, False, 0.0, "error")])
