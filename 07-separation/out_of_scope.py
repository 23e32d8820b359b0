"""Out-of-scope detection on CLINC150: can the answers tell a message no intent fits from one that fits?

    python3 07-separation/out_of_scope.py               # CLINC150: fit on calib, report on test
    python3 07-separation/out_of_scope.py --split calib
    python3 07-separation/out_of_scope.py --results my-clinc150-test.jsonl --calib my-clinc150-calib.jsonl

CLINC150's test split has 4,500 messages of its 150 intents and 1,000 that
fit none of them (out of scope). Our CLINC150 grammar has one code for them,
K-A ("oos"), so there are two ways to catch such a message:

(a) the explicit code: the model answers K-A. As a score, its probability
    P(K-A) = P(group K), since group K holds only that intent. Where the
    out-of-scope code shares its group with intents (a task of up to 26
    labels, all in group A, whose letter the grammar writes), the group
    step says nothing about it: the score is then read at the intent step,
    P(group) x P(its letter | group) (out_of_scope_step);
(b) low confidence: whatever the model answered, it was unsure of it. As a
    score, 1 - confidence (raw, or after post 05's temperature scaling or
    post 06's isotonic regression, both fitted on the calibration split).

and (a) or (b): an answer of K-A is flagged first, then the rest by low
confidence, as a rule that hands a message over would do.

For each score the script prints AUROC (out-of-scope messages are the
positives) and the false-positive rate at 95% recall: the share of in-scope
messages that are flagged when the threshold is set so that 95% of the
out-of-scope ones are. No server needed.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from calib_split import add_fit_arguments, load_fit_and_report
from ece import check_inputs
from isotonic import confidence_variants
from labels import split_code
from registry import dataset_named
from compare import percent
from separation import SingleClassError, SweepPoint, auroc, sweep
from results_record import ResultsLine

RECALL = 0.95


def out_of_scope_codes(dataset: str) -> frozenset[str]:
    """The codes that mean "no intent fits" in a dataset's label set: {"K-A"} for CLINC150, none for BANKING77.

    Read from the label file through the dataset registry, so a relabelled
    file keeps working. Raises ValueError for an unknown dataset.
    """
    return dataset_named(dataset).out_of_scope_codes()


def out_of_scope_step(codes: frozenset[str], all_codes: frozenset[str]) -> str:
    """Where the answers decide the out-of-scope codes: "group" when their group holds nothing else (CLINC150's
    K, whose only code is K-A: P(K-A) = P(group K)), "intent" when it holds other codes too (a one-group task:
    the group letter is always A, so its P(group) is 1 and says nothing). all_codes: every code of the label
    set. Raises ValueError when the codes do not share one group letter or are not among all_codes."""
    letters = {split_code(code)[0] for code in codes}
    if len(letters) != 1:
        raise ValueError(f"out-of-scope codes {sorted(codes)} must share one group letter")
    if not codes <= all_codes:
        raise ValueError(f"out-of-scope codes {sorted(codes - all_codes)} are not codes of the label set")
    (letter,) = letters
    return "intent" if any(split_code(code)[0] == letter for code in all_codes - codes) else "group"


def out_of_scope_probability(record: ResultsLine, codes: frozenset[str], step: str) -> float:
    """P(an out-of-scope code) for one answer, read at `step` (out_of_scope_step), in [0, 1]; 0.0 without a code.

    "group": P(their group). "intent": P(their group) x the sum of their
    letters' P(intent | group) when the model chose their group; when it
    chose another, the intent step was asked inside that other group only,
    so P(their group) is all that is known: an upper bound.
    """
    if record.status != "ok":
        return 0.0
    letter = split_code(next(iter(codes)))[0]
    p_group = record.group_distribution.get(letter, 0.0)
    if step == "group" or record.group_letter != letter:
        return p_group
    return min(1.0, p_group * sum(record.intent_distribution.get(split_code(code)[1], 0.0) for code in codes))


def code_list(codes: frozenset[str]) -> str:
    """Codes as the scripts print them: sorted, joined by "/" (e.g. "K-A"); "" for none."""
    return "/".join(sorted(codes))


def roc_points(scores: list[float], positives: list[bool]) -> list[SweepPoint]:
    """The ROC curve: separation.sweep() of the scores with the positives as hits, highest threshold first.

    scores: one per message, in [0, 1], higher = more likely positive.
    positives: whether each message is a positive (here: out of scope). A
    point's recall (true-positive rate) and fpr (false-positive rate) are the
    ROC coordinates; messages tied at a score are flagged together. Raises
    SingleClassError when there are no positives or no negatives (a rate would
    divide by zero) and ValueError on other bad input (ece.check_inputs).
    """
    check_inputs(scores, positives)
    n_positive = sum(bool(p) for p in positives)
    if n_positive == 0 or n_positive == len(positives):
        which = "negatives" if n_positive else "positives"
        raise SingleClassError(f"a ROC curve needs positives and negatives, and these {len(positives)} messages "
                               f"have no {which}")
    return sweep(scores, positives)


def fpr_at_recall(points: list[SweepPoint], recall: float = RECALL) -> SweepPoint:
    """The highest threshold whose recall reaches `recall` (in (0, 1]): its false-positive rate is "FPR at 95% TPR".

    points: roc_points(...) output. The measure of Hendrycks and Gimpel 2017,
    "A baseline for detecting misclassified and out-of-distribution examples
    in neural networks". Ties can make the recall reached larger than asked;
    the point says how much. The last point flags everything (recall 1), so
    there is always an answer. Raises ValueError for a recall outside (0, 1]
    or no points.
    """
    if not 0.0 < recall <= 1.0:
        raise ValueError(f"recall {recall!r} is outside (0, 1]")
    if not points:
        raise ValueError("no points: the ROC curve is empty")
    return next(p for p in points if p.recall >= recall)


@dataclass(frozen=True)
class Detector:
    """An out-of-scope score for every message, and how to say its threshold in the reader's terms.

    scores: one per message, in [0, 1], higher = more likely out of scope.
    rule: threshold on the score -> the flagging rule as text, e.g.
    "raw <= 0.380" for the score 1 - raw at threshold 0.620.
    """

    name: str
    scores: list[float]
    rule: Callable[[float], str]


@dataclass(frozen=True)
class CodeDecision:
    """The explicit out-of-scope code taken as the decision, counted in messages.

    out_of_scope / in_scope: messages out of scope (gold code among the codes) and in
    scope. answered: messages answered with one of the codes; caught: those of
    them out of scope; false_alarms: those in scope. Recall = caught / out_of_scope.
    """

    out_of_scope: int
    in_scope: int
    answered: int
    caught: int
    false_alarms: int


def code_decision(records: list[ResultsLine], codes: frozenset[str]) -> CodeDecision:
    """How the answers' own out-of-scope code sorts `records` (see CodeDecision)."""
    positives = [r.gold_code in codes for r in records]
    answered = [r.code in codes for r in records]
    return CodeDecision(out_of_scope=sum(positives), in_scope=len(records) - sum(positives), answered=sum(answered),
                        caught=sum(a and p for a, p in zip(answered, positives)),
                        false_alarms=sum(a and not p for a, p in zip(answered, positives)))


def detectors(records: list[ResultsLine], variants: dict[str, list[float]], codes: frozenset[str],
              step: str = "group") -> list[Detector]:
    """The detectors of this post for the records (post 03's fields), in the order they are printed.

    variants: 06's confidence_variants of the same records; codes: the
    out-of-scope codes, which must share one group letter; step: where their
    probability is read (out_of_scope_step: "group" when their group holds
    only them). Detectors: (a) P(code), out_of_scope_probability (0 without
    a code); (b) 1 - confidence for each variant; (a) or
    (b) for each variant: an out-of-scope answer scores 1, any other
    (1 - confidence) / 2, so every out-of-scope answer ranks above every
    in-scope one and the rest keep the order of their confidence. Raises
    ValueError when the codes do not share one group letter.
    """
    if len({split_code(code)[0] for code in codes}) != 1:
        raise ValueError(f"out-of-scope codes {sorted(codes)} must share one group letter")
    code_text = code_list(codes)
    found = [Detector(f"P({code_text})", [out_of_scope_probability(r, codes, step) for r in records],
                      lambda t: f"P({code_text}) >= {t:.3f}")]
    for name, confidences in variants.items():
        found.append(Detector(f"1 - {name}", [1.0 - c for c in confidences],
                              lambda t, name=name: f"{name} <= {1.0 - t:.3f}"))
    for name, confidences in variants.items():
        found.append(Detector(f"{code_text}, then 1 - {name}",
                              [1.0 if r.code in codes else (1.0 - c) / 2 for r, c in zip(records, confidences)],
                              lambda t, name=name: (f"{code_text} only" if t > 0.5
                                                    else f"{code_text} or {name} <= {1.0 - 2 * t:.3f}")))
    return found


def print_detectors(found: list[Detector], positives: list[bool]) -> dict[str, float]:
    """AUROC and FPR at 95% recall of each detector; returns the AUROCs by detector name."""
    print(f"{'score':<26} {'AUROC':>6} {'FPR at 95% recall':>18}  {'recall':>6}  flag when")
    aurocs = {}
    for detector in found:
        aurocs[detector.name] = auroc(detector.scores, positives)
        point = fpr_at_recall(roc_points(detector.scores, positives))
        print(f"{detector.name:<26} {aurocs[detector.name]:6.3f} {percent(point.fpr):>18}  "
              f"{percent(point.recall):>6}  {detector.rule(point.threshold)}")
    return aurocs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser, dataset="clinc150")
    args = parser.parse_args()
    codes = out_of_scope_codes(args.dataset)
    if not codes:
        parser.error(f"{args.dataset} has no out-of-scope code: use --dataset clinc150")

    calib_path, calib, path, records = load_fit_and_report(args)
    if calib_path.resolve() == path.resolve():
        print("note: fitted and scored on the same answers, so temperature and isotonic look better than they are")
    positives = [r.gold_code in codes for r in records]
    decision = code_decision(records, codes)
    n_out, n_in = decision.out_of_scope, decision.in_scope
    if n_out in (0, len(records)):
        raise ValueError(f"{path} has {n_out} out-of-scope messages of {len(records)}: detection needs both kinds")
    code_text = code_list(codes)
    print(f"\n{args.split}: {len(records)} messages, {n_out} out of scope, {n_in} in scope; "
          f"{decision.answered} answered {code_text}\n")
    print(f"(a) the explicit code as a decision: answer {code_text}")
    print(f"    recall {decision.caught} of {n_out} ({percent(decision.caught / n_out)}), "
          f"false-positive rate {decision.false_alarms} of {n_in} ({percent(decision.false_alarms / n_in)}), "
          f"precision {percent(decision.caught / decision.answered) if decision.answered else '-'}\n")

    step = out_of_scope_step(codes, dataset_named(args.dataset).codes())
    letter = split_code(next(iter(codes)))[0]
    print(f"P({code_text}) read at the {step} step: " + (
        f"P(group {letter}), since group {letter} holds only {code_text}" if step == "group" else
        f"P(group {letter}) x P({'/'.join(sorted(split_code(c)[1] for c in codes))} | {letter}), since group {letter} "
        f"holds other labels too (P(group {letter}) alone where the model chose another group)") + "\n")
    variants = confidence_variants(calib, records)
    aurocs = print_detectors(detectors(records, variants, codes, step), positives)
    print("out of scope = positive. FPR at 95% recall: share of in-scope messages flagged when 95% of the\n"
          "out-of-scope ones are; ties at the threshold are flagged together, so the recall reached can exceed 95%.\n"
          "flag when: the rule at that threshold (no code counts as confidence 0, so it is always flagged)")
    best = max(aurocs, key=aurocs.get)
    print(f"\nbest AUROC on {args.split}: {best} {aurocs[best]:.3f}")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
