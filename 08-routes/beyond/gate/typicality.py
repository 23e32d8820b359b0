"""A typicality gate before act (beyond the series): act only on a message like the calibration split's.

    python3 08-routes/beyond/gate/typicality.py                        # the gate's cut-offs and its cost on BANKING77 test
    python3 08-routes/beyond/gate/typicality.py --dataset clinc150
    python3 08-routes/beyond/gate/typicality.py --target 0.80 --ask-target 0.75
    python3 08-routes/beyond/gate/typicality.py --variant combined5       # the combined decision's answers

Post 08 fits its thresholds on calib answers, so they say something only
about messages like the calib messages: isotonic regression maps a raw 0.9
to 1.000 when every calib answer that sure was right, whoever wrote it and
why. This gate asks, before act, whether a message is like them, by signals
the repository already has for every answer:

- similarity: the best cosine similarity of the message to a training
  message (post 01's TF-IDF retriever, fitted on fit_messages(), never on the
  calibration split). A message in words no customer of the data used
  (leetspeak, homoglyphs, base64, another language) finds no close neighbour;
- unknown words: the share of the message's words that no training
  message has (the same retriever's vocabulary): base64, hex, leetspeak;
- off-label mass at the group step and at the intent step (post 03): how
  much of the model's probability went to tokens the grammar forbids. A
  message that pulls the model away from the list of codes shows it there.

Each cut-off is fitted on calib, never on test: the gate lets through all
calib messages but a share SHARE (2.5%) on each signal, at the low end of
the similarity and the high end of each off-label mass. A message past a
cut-off is not acted on (route_beyond.py hands it over and says which signal
stopped it). This script prints the cut-offs, how well each signal tells the
calib messages from the test messages (an AUROC near 0.5: test messages are
as typical as calib ones), and the gate's cost on the act route of the test
split: acts lost, how many of them were right, act precision before and
after. adversarial.py prints how each signal separates hostile messages.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from neighbours import Retriever, tokens
from results_record import ResultsLine

SHARE = 0.025  # of calib messages that each cut-off turns away
# signal -> which end is atypical: "low" (a similarity) or "high" (an off-label mass)
SIGNALS = {"similarity": "low", "unknown words": "high", "off-label group": "high", "off-label intent": "high"}


def similarity(retriever: Retriever, text: str) -> float:
    """The best cosine similarity of text to a message the retriever was fitted on, in [0, 1]; 0.0 when the text
    shares no word with any of them."""
    best = retriever.neighbours(text, k=1)
    return best[0].similarity if best else 0.0


def unknown_words(retriever: Retriever, text: str) -> float:
    """The share of the text's words (post 01's tokens: runs of a-z, 0-9 and ') that no training message has,
    in [0, 1]; 1.0 for a text with no such word at all (only other letters or symbols)."""
    words = tokens(text)
    return sum(word not in retriever.idf for word in words) / len(words) if words else 1.0


def signals(record: ResultsLine, retriever: Retriever) -> dict[str, float]:
    """The gate's signals of one answer: similarity and unknown words of its text, and its off-label mass at each
    step (probabilities; 1.0 for an answer without a code, whose steps were never read)."""
    return {"similarity": similarity(retriever, record.text), "unknown words": unknown_words(retriever, record.text),
            "off-label group": 1.0 if record.off_label_group is None else record.off_label_group,
            "off-label intent": 1.0 if record.off_label_intent is None else record.off_label_intent}


@dataclass(frozen=True)
class Gate:
    """Cut-offs fitted on calib: signal -> the value past which a message is not like the calib messages.

    A similarity below its cut, or an off-label mass above its cut, stops act.
    share: the share of calib messages each cut-off turns away; n: how many calib messages it was fitted on.
    """

    cuts: dict[str, float]
    share: float
    n: int

    def past(self, values: dict[str, float]) -> list[str]:
        """The signals of values (signals()) past their cut-off, in the order of cuts."""
        return [name for name, cut in self.cuts.items()
                if (values[name] < cut if SIGNALS[name] == "low" else values[name] > cut)]

    def why(self, values: dict[str, float]) -> str | None:
        """One clause naming every signal past its cut-off, with both values, or None when the message passes."""
        past = [f"{name} {values[name]:.3f} {'<' if SIGNALS[name] == 'low' else '>'} {self.cuts[name]:.3f}"
                for name in self.past(values)]
        return None if not past else f"not like the calib messages ({'; '.join(past)})"

    def describe(self) -> str:
        """The cut-offs in one line."""
        ends = ", ".join(f"{name} {'>=' if SIGNALS[name] == 'low' else '<='} {cut:.3f}"
                         for name, cut in self.cuts.items())
        return f"act only where {ends} (each lets through all but {self.share:.1%} of {self.n} calib messages)"


def cut_off(values: list[float], share: float, end: str) -> float:
    """The value that turns away at most `share` of values at `end` ("low" or "high"): the k-th smallest (or
    largest), k = floor(share * n), so the values beyond it number at most k (ties all pass).

    ValueError for no values or a share outside [0, 1).
    """
    if not values:
        raise ValueError("no values to fit a cut-off on")
    if not 0 <= share < 1:
        raise ValueError(f"share must be in [0, 1), not {share}")
    ordered = sorted(values, reverse=end == "high")
    return ordered[math.floor(share * len(values))]


def fit_gate(calib_signals: list[dict[str, float]], share: float = SHARE, kept=tuple(SIGNALS)) -> Gate:
    """The gate fitted on the signals of the calib answers (one dict per answer, signals()), one cut per kept signal."""
    return Gate({name: cut_off([v[name] for v in calib_signals], share, SIGNALS[name]) for name in kept},
                share, len(calib_signals))


def typicality_auroc(typical: list[float], other: list[float], end: str) -> float:
    """P(a random typical message looks more typical on this signal than a random other one), ties one half:
    post 07's AUROC with the typical messages as the "right" ones (end "low": typical is high)."""
    from separation import auroc
    # auroc takes confidences in [0, 1] and reads only their order: a mass m as 1 - m, a similarity clamped
    # (a text equal to a training message scores 1 plus rounding)
    scores = [min(1.0, max(0.0, v if end == "low" else 1.0 - v)) for v in typical + other]
    return auroc(scores, [True] * len(typical) + [False] * len(other))


def irreversible_intents(dataset: str) -> frozenset[str]:
    """The intents a dataset's label file marks irreversible (an action that cannot be undone, such as closing
    the account): harm.py's kinds of action, read from the JSON (post 02's types carry no such field)."""
    from harm import intent_kinds, irreversible_of
    return irreversible_of(intent_kinds(dataset))


def confirmation_question(intent) -> str:
    """What the confirm route asks instead of acting on an irreversible intent (labels.Intent), in post 08's
    plain words: "... is it terminate account (closing or deleting the account)? ..."."""
    from route import plain_words
    return (f"This cannot be undone, so we ask before doing anything: is your request {plain_words(intent)}? "
            f"Reply yes to go ahead.")


def main() -> int:
    from calib_split import add_fit_arguments, load_fit_and_report
    from guard import act_table, lost_acts
    from registry import DATASETS
    from routes import add_threshold_arguments, fit_from, route_all
    from variants import add_variant_argument, reading

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_variant_argument(parser)
    add_threshold_arguments(parser)
    parser.add_argument("--share", type=float, default=SHARE,
                        help=f"share of calib messages each cut-off turns away (default: {SHARE})")
    args = parser.parse_args()
    with reading(args.variant):
        _, calib, _, records = load_fit_and_report(args)
    retriever = DATASETS[args.dataset].fit_retriever()
    calib_values = [signals(r, retriever) for r in calib]
    values = [signals(r, retriever) for r in records]
    gate = fit_gate(calib_values, args.share)
    print(f"\ngate: {gate.describe()}")
    print(f"\n{'signal':<17} {'cut-off':>8}  {'AUROC calib vs ' + args.split:>20}  {args.split + ' turned away':>16}")
    for name, cut in gate.cuts.items():
        end = SIGNALS[name]
        away = sum(name in gate.past(v) for v in values)
        score = typicality_auroc([v[name] for v in calib_values], [v[name] for v in values], end)
        print(f"{name:<17} {cut:8.3f}  {score:20.3f}  {away:10d} ({100 * away / len(values):.1f}%)")
    calibrate, thresholds = fit_from(calib, args)
    routes = route_all(records, calibrate, thresholds)
    gated = ["hand_over" if route == "act" and gate.why(v) else route for route, v in zip(routes, values)]
    print(f"\nthe act route at {args.target:.1%} precision (thresholds fitted on calib), {args.dataset} {args.split}:")
    print("\n".join(act_table(records, {"without gate": routes, "with gate": gated})))
    lost = lost_acts(records, routes, gated)
    acts = routes.count("act")
    print(f"\nthe gate stops {len(lost)} of {acts} acts ({100 * len(lost) / acts if acts else 0:.1f}%)"
          + (f", {sum(r.correct for r in lost)} of them right" if lost else ""))
    irreversible = irreversible_intents(args.dataset)
    confirmed = [r for r, route in zip(records, gated) if route == "act" and r.intent in irreversible]
    print(f"of the acts it leaves, {len(confirmed)} are on intents the label file marks irreversible "
          f"({', '.join(sorted(irreversible)) or 'none'}): route_beyond.py asks to confirm them instead")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
