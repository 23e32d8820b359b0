"""The route of a message with fields: act only where every gating field says a safe option, sure enough.

    gates = fit_field_gates("banking77fields")                  # each gating field, calibrated and thresholded on calib
    route, why = route_with_fields("act", line, gates, kinds)    # post 08's route, then the fields' say

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
the field's calib view (field_report.py: the field's answers with a right
option): isotonic regression on its confidence, and t_field, the lowest
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
from saved_answers import OWN_RESULTS


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


def view_lines(dataset: str, key: str, split: str) -> list[ResultsLine]:
    """The field's view lines of a split (field_report.py writes them); ValueError naming the command when absent."""
    path = OWN_RESULTS / f"{dataset}-field{key}-{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no {path.name}: python3 08-routes/beyond/fields/field_report.py --dataset {dataset}")
    return parse_lines([json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()],
                       str(path))


def fit_field_gate(field: Field, calib: list[ResultsLine], target: float = TARGET) -> FieldGate:
    """A field's gate from its calib view: isotonic regression on its confidence, then t_field (module docstring).
    Raises ValueError for no calib answers."""
    if not calib:
        raise ValueError(f"no calib answers of field {field.key!r}")
    calibration = fit_isotonic(*outcomes(calib))
    said_safe = [(calibration(line.confidence), line.gold_intent in field.safe) for line in calib
                 if line.intent in field.safe]
    cut = lowest_cut(said_safe, target) if said_safe else None
    return FieldGate(field, calibration, None if cut is None else cut.threshold, len(calib))


def fit_field_gates(dataset: str, target: float = TARGET) -> list[FieldGate]:
    """The gate of every field of the dataset that has a safe option, each from its calib view."""
    return [fit_field_gate(field, view_lines(dataset, field.key, "calib"), target)
            for field in fields_of(dataset) if field.safe]


def route_with_fields(route: str, line: ResultsLine, gates: list[FieldGate], kinds: dict[str, str]) -> tuple[str, str | None]:
    """(the route, the reason or None): post 08's route (and what stood before act) as it is unless it is act;
    an act stays one only where every applicable gate lets it through (FieldGate.why), else the first gate's
    route instead, a hand-over before a question. A line without its fields' answers hands over."""
    if route != "act":
        return route, None
    answers = line.extra.get("fields")
    if not answers:
        return "hand_over", "the fields gave no answer"
    kind = kinds.get(line.intent or "", "change")
    stops = [stop for gate in gates if gate.applies(kind)
             and (stop := gate.why(answers[gate.field.key]["option"], answers[gate.field.key]["confidence"]))]
    if not stops:
        return "act", None
    stops.sort(key=lambda stop: stop[0] != "hand_over")
    return stops[0][0], "; ".join(reason for _, reason in stops)
