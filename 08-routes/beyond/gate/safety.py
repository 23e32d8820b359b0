"""What stands before act: the gate, the guard's kept marks and the harm rule, fitted once on a decision's calib answers.

    safety = fit_safety(dataset, calib_answers, calibrate, target, retriever)      # once
    why = safety.why(message, line, calibrated)          # None: act; else the reason
    route = route_before_act(why)                        # act, confirm, ask or hand_over

Post 08 acts on any answer whose calibrated confidence reaches t_act. The
work of this folder puts checks before that act, in this order
(before_act): a change or an irreversible intent asked for someone else is
handed over (harm.py); an irreversible intent is confirmed (route
"confirm"); a message unlike the calib messages (typicality.py's gate) or
carrying a mark guard.py keeps is handed over; a change below t_change is
asked about (harm.py). route_beyond.py, adversarial.py and the service use
this one definition.

A decision without the model (decisions.py) has no off-label mass, so its
gate keeps the two signals of the text alone (similarity and unknown words).
"""
from __future__ import annotations

from dataclasses import dataclass

from guard import KEPT, guard_verdict
from harm import CHANGE_TARGET, HarmRule, fit_harm_rule
from results_record import ResultsLine
from typicality import SIGNALS, Gate, fit_gate, signals

TEXT_SIGNALS = ("similarity", "unknown words")  # the gate's signals that need no model answer


def before_act(message: str, record: ResultsLine, values: dict[str, float], gate: Gate, harm: HarmRule,
               calibrated: float, check: str = "gate") -> str | None:
    """Why an answer the thresholds would act on is not acted on, or None to act.

    check "gate" (what this folder does), in this order: a change or an
    irreversible intent asked for someone else is handed over ("someone
    else: ...", harm.for_someone_else); an irreversible intent is confirmed
    ("irreversible: ..."); a message unlike the calib
    messages (typicality.py's gate, on its signals `values`) or carrying a
    mark that guard.KEPT keeps is handed over; a change below t_change (harm.py,
    on `calibrated`, the answer's calibrated confidence) is asked instead
    ("change: ..."). check "guard": guard.py's whole pattern list alone (the
    earlier guard, for comparison); "none": post 08's routes.
    """
    if check == "none":
        return None
    if check == "guard":
        return guard_verdict(message)
    why = harm.why_not_act(record.intent, calibrated, message)
    if why and why.startswith(("irreversible", "someone else")):
        return why
    return gate.why(values) or guard_verdict(message, KEPT) or why


def route_before_act(why: str | None) -> str:
    """The route an act becomes when before_act gives `why`: "act" (None), "confirm" (irreversible), "ask" (a
    change below t_change), else "hand_over"."""
    if why is None:
        return "act"
    return "confirm" if why.startswith("irreversible") else "ask" if why.startswith("change") else "hand_over"


@dataclass(frozen=True)
class Safety:
    """The checks before act of one decision: the gate fitted on its calib answers, the retriever its signals
    read (post 01's nearest neighbours), and the harm rule (harm.py: the intents always confirmed, t_change)."""

    gate: Gate
    retriever: object
    harm: HarmRule

    def why(self, message: str, line: ResultsLine, calibrated: float) -> str | None:
        """before_act of one answer the thresholds would act on: None to act, else the reason."""
        values = signals(line, self.retriever)
        return before_act(message, line, values, self.gate, self.harm, calibrated)

    def describe(self) -> str:
        """One line: the cut-offs, the guard's marks, then the harm rule."""
        return f"before act: {self.gate.describe()}; guard marks {', '.join(KEPT)}; {self.harm.describe()}"


def gate_signals(with_model: bool) -> tuple[str, ...]:
    """The gate's signals of a decision: all of typicality.SIGNALS when the model answers, else TEXT_SIGNALS."""
    return tuple(SIGNALS) if with_model else TEXT_SIGNALS


def fit_safety(dataset: str, calib: list[ResultsLine], calibrate, target: float, retriever,
               change_target: float = CHANGE_TARGET, out_of_scope: frozenset[str] = frozenset(),
               with_model: bool = True, also: list[ResultsLine] = ()) -> Safety:
    """The Safety of a decision, fitted on its calib answers: the gate on their signals (gate_signals), the harm
    rule's t_change at change_target on the calibrated confidences (`calibrate`: line -> [0, 1]) of calib and
    `also` (off-topic answers, each wrong, that join the thresholds' fit: decision_router.py). retriever: a
    fitted neighbours.Retriever. Raises ValueError when change_target is below target (harm.check_change_target)
    and as the fits do."""
    gate = fit_gate([signals(r, retriever) for r in calib], kept=gate_signals(with_model))
    harm = fit_harm_rule(dataset, list(calib) + list(also), calibrate, change_target, target, out_of_scope)
    return Safety(gate, retriever, harm)
