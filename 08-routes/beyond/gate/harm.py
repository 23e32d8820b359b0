"""Harm per intent (beyond post 08): what acting on an intent does, and the stricter target a change must reach.

    from harm import fit_harm_rule
    harm = fit_harm_rule("banking77", calib_records, calibrate)       # kinds from the label file, change at 99.9%
    harm.why_not_act(record.intent, calibrated)                       # None: act; else "irreversible: ..." / "change: ..."

Post 08 acts on any intent whose calibrated confidence reaches t_act. An
action's cost depends on the intent, so the label file marks each intent's
kind of action ("action" in its intents):

- inform: acting answers a question and changes nothing (card_arrival: where
  is my card). Acted on at the act target, as in post 08.
- change: acting changes something that can be changed back (a PIN, an
  address, an automatic top-up). Acted on only where the calibrated
  confidence also reaches t_change, the act threshold fitted on calib at a
  stricter target of its own (CHANGE_TARGET, 99.9%); otherwise asked.
- irreversible: acting cannot be undone (closing the account). Never acted
  on: confirmed first, whatever the confidence (route "confirm").

An intent without a mark is a change (SAFE_KIND): a label file written before
the marks, CLINC150's, or your own task's without a `kind` column. The older
mark `"irreversible": true` still means irreversible.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from routes import ASK_TARGET, TARGET, Calibrator, Thresholds, fit_thresholds
from results_record import ResultsLine
from compare import percent

from task import ACTION_KINDS as KINDS, SAFE_ACTION as SAFE_KIND  # defined with the task files that carry them

CHANGE_TARGET = 0.999

# A request about another person's card or account, or passed on from someone else, is not the customer's own
# need (issue 45: "a relative asking to change another person's passcode" was acted on). Possessives of a
# person ("my son's", "my landlord's"), "on behalf of", "asked me to", and a forwarded note's header.
PEOPLE = (r"son|daughter|kid|child|husband|wife|partner|boyfriend|girlfriend|fianc[ée]e?|mum|mom|mother|dad|father|"
          r"parent|grand\w*|gran|granny|nan|brother|sister|sibling|friend|flatmate|roommate|housemate|landlord|"
          r"landlady|tenant|boss|manager|colleague|co-?worker|employer|employee|client|aunt|uncle|nephew|niece|"
          r"cousin|neighbou?r|\w+-in-law|in-laws")
SOMEONE_ELSE = re.compile(
    rf"\b(?:my|our)\s+(?:\w+\s+)?(?:{PEOPLE})(?:'s|\u2019s|s')(?!\w)"
    r"|\bon behalf of\b|\b(?:asked|told|wants?|instructed)\s+me\s+to\b"
    r"|\b(?:note|message|email|text)\s+from\b|^\s*(?:from|fwd?|forwarded)\s*:",
    re.IGNORECASE | re.MULTILINE)


def for_someone_else(message: str) -> str | None:
    """The words that make a message a request for, or from, someone other than the customer ("my son's",
    "on behalf of", "asked me to", "note from", a "From:" line), or None."""
    found = SOMEONE_ELSE.search(message)
    return found.group(0).strip() if found else None


def kinds_in_label_file(path: Path) -> dict[str, str]:
    """Intent name -> kind of action, as the label file at `path` marks them (the marks of the dataset it
    extends first).

    An intent's "action" is one of KINDS; `"irreversible": true` (the older
    mark) is "irreversible"; an intent with neither is left out (it is
    SAFE_KIND). Raises ValueError naming the file and the intent for another
    action, OSError when a file cannot be read.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    kinds = intent_kinds(data["extends"]) if "extends" in data else {}
    for group in data["groups"]:
        for intent in group["intents"]:
            kind = intent.get("action", "irreversible" if intent.get("irreversible") else None)
            if kind is None:
                continue
            if kind not in KINDS:
                raise ValueError(f"{path}: intent {intent['intent']!r} has the action {kind!r}; expected "
                                 f"{', '.join(KINDS)}")
            kinds[intent["intent"]] = kind
    return kinds


def intent_kinds(dataset: str) -> dict[str, str]:
    """kinds_in_label_file of the dataset's label file (registry.DATASETS). Raises as that does."""
    from registry import DATASETS
    return kinds_in_label_file(DATASETS[dataset].label_file)


def irreversible_of(kinds: dict[str, str]) -> frozenset[str]:
    """The intents of `kinds` (intent name -> kind of action) whose action cannot be undone."""
    return frozenset(intent for intent, kind in kinds.items() if kind == "irreversible")


def check_change_target(change_target: float, act_target: float) -> None:
    """Raise ValueError unless act_target <= change_target <= 1: a change must be at least as sure as an answer."""
    if not act_target <= change_target <= 1.0:  # also rejects NaN
        raise ValueError(f"the change target must lie between the act target ({act_target}) and 1, like 0.999, "
                         f"not {change_target!r}: a change is acted on only when it is surer than an answer")


@dataclass(frozen=True)
class HarmRule:
    """The kinds of action of a dataset's intents and the act threshold a change must reach.

    kinds: intent name -> kind (KINDS); an intent not in it is SAFE_KIND.
    change: the Thresholds fitted on calib at the change target (routes.fit_thresholds; its t_act is
    t_change, None when no threshold of calib reaches the target: then no change is acted on).
    """

    kinds: dict[str, str] = field(hash=False)
    change: Thresholds

    def kind(self, intent: str | None) -> str:
        """The kind of action of an intent; SAFE_KIND when the label file does not mark it."""
        return self.kinds.get(intent or "", SAFE_KIND)

    def irreversible(self) -> frozenset[str]:
        """The intents that are always confirmed."""
        return irreversible_of(self.kinds)

    def change_condition(self) -> str:
        """When a change is acted on: 'calibrated >= 0.998 (99.9% on calib)', or 'never (...)'."""
        c = self.change
        if c.t_act is None:
            return f"never ({c.why_no_act()})"
        return f"calibrated >= {c.t_act:.3f} ({percent(c.act.accuracy)} of {c.act.kept} calib answers right)"

    def why_not_act(self, intent: str | None, calibrated: float, message: str = "") -> str | None:
        """Why an answer the thresholds would act on is not acted on for its kind of action, or None to act.

        "someone else: ..." (hand it over: a change or an irreversible intent
        asked for, or passed on from, another person: for_someone_else),
        "irreversible: ..." (confirm it), "change: ..." (ask instead: below
        t_change, or no t_change), None (inform, or a change at or above
        t_change). calibrated: the answer's calibrated confidence, in [0, 1].
        """
        kind = self.kind(intent)
        if kind != "inform" and (words := for_someone_else(message)):
            return (f"someone else: {intent} would change an account, and the message ({words!r}) is about or from "
                    "another person than the customer, so a person checks it")
        if kind == "irreversible":
            return f"irreversible: {intent} cannot be undone, so it is confirmed whatever the confidence"
        if kind == "change" and (self.change.t_act is None or calibrated < self.change.t_act):
            return (f"change: {intent} changes the account, so it is acted on only at "
                    f"{percent(self.change.target)} precision on calib, {self.change_condition()}; asked instead")
        return None

    def describe(self) -> str:
        """One line: the confirmed intents, and when a change is acted on."""
        irreversible = ", ".join(sorted(self.irreversible())) or "no intent"
        counts = {kind: sum(1 for k in self.kinds.values() if k == kind) for kind in KINDS}
        return (f"kinds of action: {counts['inform']} inform, {counts['change']} change (and every unmarked intent), "
                f"{counts['irreversible']} irreversible; confirm {irreversible}; act on a change only at "
                f"{percent(self.change.target)}: {self.change_condition()}")


def fit_harm_rule(dataset: str, calib: list[ResultsLine], calibrate: Calibrator, change_target: float = CHANGE_TARGET,
                  act_target: float = TARGET, out_of_scope: frozenset[str] | set[str] = frozenset()) -> HarmRule:
    """The HarmRule of a dataset: its label file's kinds and t_change, the act threshold of routes.fit_thresholds
    on the calib answers at change_target (with post 08's rules: ties enter together, no threshold at the floor).

    Raises ValueError when change_target is below act_target (check_change_target), on a label file with an
    unknown action, and as fit_thresholds does.
    """
    check_change_target(change_target, act_target)
    return HarmRule(intent_kinds(dataset), fit_thresholds(calib, calibrate, change_target, ASK_TARGET, out_of_scope))
