"""The route of a message with fields: act only where every gating field says a safe option, sure enough.

    gates = fit_field_gates("banking77fields")                  # each gating field, calibrated and thresholded on calib
    route, why = route_with_fields("act", line, gates, kinds)    # post 08's route, then the fields' say
    shown = served_fields(line, gates)                           # each field's option and calibrated confidence

Post 08 routes on the intent's calibrated confidence. A field with a
"safe" option (fields.py) stands before act: the route of a message is act
only where its thresholds act on the intent and every gating field that
applies to the intent's kind of action (gates "all", or "change" for a
change or an irreversible intent, harm.py's kinds) says a safe option with
a calibrated confidence at or above the field's own threshold. A field that
says an unsafe option hands the message over ("scope: other"); one that
says a safe option too unsure turns the act into a question; each reason
names the field.

A field's calibration and threshold are post 06's and post 08's, fitted on
the field's calib view (view_line: the field's answers where the message set
gives its right option, from the calibration split, the off-topic set and
the requester set's calib half): isotonic regression on its confidence, and t_field, the lowest
calibrated confidence at which the answers that say a safe option are right
(a safe option indeed) at least `target` of the time (routes.lowest_cut,
ties entering together).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ece import outcomes
from fields import Field, fields_of
from isotonic import IsotonicFit, fit_isotonic
from results_record import ResultsLine, parse_lines
from routes import TARGET, lowest_cut
from saved_answers import OWN_RESULTS, later_reference_folders, reference_path


@dataclass(frozen=True)
class FieldGate:
    """One gating field ready to route: its isotonic map (fitted on its calib view), its threshold (None: no
    calibrated confidence reaches the target, so the field never lets an act through), and the calib answers
    behind it."""

    field: Field
    calibration: IsotonicFit
    threshold: float | None
    answers: int

    def applies(self, kind: str) -> bool:
        """Whether the field stands before an act on an intent of this kind of action."""
        return self.field.gates == "all" or kind != "inform"

    def why(self, option: str, confidence: float) -> tuple[str, str] | None:
        """(the route instead of act, the reason) for an answer of this field, or None to let the act through."""
        calibrated = self.calibration(confidence)
        key = self.field.key
        if option not in self.field.safe:
            return "hand_over", f"{key}: {option} ({calibrated:.3f} sure), not {' or '.join(self.field.safe)}"
        if self.threshold is None or calibrated < self.threshold:
            bar = "no threshold reaches the target" if self.threshold is None else f"below {self.threshold:.3f}"
            return "ask", f"{key}: {option} but only {calibrated:.3f} sure ({bar})"
        return None


# which fields runs (fields_run.py's file names after the dataset's) make the calib split of a field's view; the
# test split's are test_sources(dataset)
VIEW_SOURCES = {"calib": ("calib", "offtopic", "requester-calib")}


def fields_sample_runs(dataset: str, split: str) -> list[str]:
    """The names (after "<dataset>-") of the seeded samples of a split (fields_run.py --split test, or --set
    oos-test, with --sample N) run for the dataset, yours or committed, the biggest sample first: a sample's
    messages are those of a smaller one with the same seed and more, so readers take the first."""
    found = {path.stem.removeprefix(f"{dataset}-")
             for folder in (OWN_RESULTS, *later_reference_folders())
             for path in folder.glob(f"{dataset}-{split}-sample*-seed*.jsonl")}
    return sorted(found, key=lambda name: -int(name.split("-sample")[1].split("-")[0]))


def test_sources(dataset: str) -> tuple[str, ...]:
    """The fields runs of the test side of a field's view: the biggest seeded test sample, the biggest of
    CLINC150's out-of-scope test messages, and the requester set's test half."""
    return tuple(names[0] for split in ("test", "oos-test") if (names := fields_sample_runs(dataset, split))) + \
        ("requester-test",)


def fields_answers(dataset: str, name: str) -> list[ResultsLine]:
    """The answers of one fields run (error lines left out): your own (fields_run.py writes them in
    03-where-confidence-comes-from/results/), else the committed reference run of that name; [] when neither is
    there."""
    path = OWN_RESULTS / f"{dataset}-{name}.jsonl"
    if not path.exists():
        path = reference_path(path.name)
    if not path.exists():
        return []
    lines = parse_lines([json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()],
                        str(path))
    return [line for line in lines if line.status != "error"]


def view_line(line: ResultsLine, field: Field) -> dict | None:
    """The results line of one field's answer, or None when the message set gives no right option for it or the
    line has no answer: the option as the code A-<letter>, confidence = 1 x P(option) (module docstring)."""
    gold = (line.extra.get("gold_fields") or {}).get(field.key)
    answers = line.extra.get("fields")
    if gold is None or line.status != "ok" or not answers:
        return None
    answer = answers[field.key]
    letter, gold_letter = field.letter_of(answer["option"]), field.letter_of(gold)
    return {"id": line.id, "text": line.text, "gold_intent": gold, "gold_code": f"A-{gold_letter}", "status": "ok",
            "code": f"A-{letter}", "intent": answer["option"], "correct": letter == gold_letter, "right_group": True,
            "retried": line.retried, "content": line.content, "error": None, "wall_ms": line.wall_ms,
            "timings": line.timings, "model": line.model, "build": line.build, "settings": line.settings,
            "confidence": answer["confidence"], "p_group": 1.0, "p_intent_given_group": answer["confidence"],
            "group_distribution": {"A": 1.0}, "intent_distribution": answer["distribution"], "off_label_group": 0.0,
            "off_label_intent": answer["off_label"], "missing_letters": 0, "tokens_in_code": 2}


def calib_view(dataset: str, field: Field) -> list[ResultsLine]:
    """The field's calib view (view_line of every calib-side fields run, VIEW_SOURCES), in memory."""
    return parse_lines([view for name in VIEW_SOURCES["calib"] for line in fields_answers(dataset, name)
                        if (view := view_line(line, field)) is not None], f"{dataset}'s {field.key} calib view")


def fit_field_gate(field: Field, calib: list[ResultsLine], target: float = TARGET) -> FieldGate:
    """A field's gate from its calib view: isotonic regression on its confidence, then t_field (module docstring).
    Raises ValueError for no calib answers."""
    if not calib:
        raise ValueError(f"no calib answers of field {field.key!r} (its right option is known in none of the "
                         f"calib-side runs: {', '.join(VIEW_SOURCES['calib'])}): write them with python3 "
                         f"08-routes/beyond/fields/fields_run.py --split calib, or --set offtopic / requester-calib")
    calibration = fit_isotonic(*outcomes(calib))
    said_safe = [(calibration(line.confidence), line.gold_intent in field.safe) for line in calib
                 if line.intent in field.safe]
    cut = lowest_cut(said_safe, target) if said_safe else None
    return FieldGate(field, calibration, None if cut is None else cut.threshold, len(calib))


def fit_field_gates(dataset: str, target: float = TARGET) -> list[FieldGate]:
    """The gate of every field of the dataset that has a safe option, each from its calib view (calib_view).
    Raises ValueError when a gating field has no calib answers (no fields run of the calib split yet)."""
    return [fit_field_gate(field, calib_view(dataset, field), target)
            for field in fields_of(dataset) if field.safe]


def route_with_fields(route: str, line: ResultsLine, gates: list[FieldGate], kinds: dict[str, str]) -> tuple[str, str | None]:
    """(the route, the reason or None): post 08's route (and what stood before act) as it is unless it is act
    or confirm (safety.py's act held back for an irreversible intent); those stay only where every applicable
    gate lets them through (FieldGate.why), else the first gate's route instead, a hand-over before a question.
    A line without its fields' answers hands over."""
    if route not in ("act", "confirm"):
        return route, None
    answers = line.extra.get("fields")
    if not answers:
        return "hand_over", "the fields gave no answer"
    kind = kinds.get(line.intent or "", "change")
    stops = [stop for gate in gates if gate.applies(kind)
             and (stop := gate.why(answers[gate.field.key]["option"], answers[gate.field.key]["confidence"]))]
    if not stops:
        return route, None
    stops.sort(key=lambda stop: stop[0] != "hand_over")
    return stops[0][0], "; ".join(reason for _, reason in stops)


def served_fields(line: ResultsLine, gates: list[FieldGate]) -> dict | None:
    """What a route object says of each field: {key: {"option", "confidence", "calibrated"}} in answer order,
    calibrated by the field's gate (None for a field that gates nothing); None for a line without fields."""
    answers = line.extra.get("fields")
    if not answers:
        return None
    calibration = {gate.field.key: gate.calibration for gate in gates}
    return {key: {"option": answer["option"], "confidence": answer["confidence"],
                  "calibrated": calibration[key](answer["confidence"]) if key in calibration else None}
            for key, answer in answers.items()}
