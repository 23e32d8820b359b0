"""A combined decision: the model's renormalized probabilities and the retriever's scores, weighed on calib.

    python3 08-routes/combined.py                      # BANKING77, shortlist of 5: fit on calib, report on test
    python3 08-routes/combined.py --dataset clinc150    # once run.py --dataset clinc150 --shortlist 5 has run
    python3 08-routes/routes.py --variant combined5    # post 08's routes on the combined decisions

A shortlist run of post 03 (run.py --shortlist K) asks the model to choose
among the K intents that the TF-IDF retriever of post 01's baseline ranks
first, with the same cached system prompt and a grammar that allows only
those K codes. Each line then holds two opinions about the same K codes:

- model(c): P(group of c) x P(intent of c | group of c), the series'
  confidence of code c. The model wrote one group letter and was asked for
  the intent only inside that group, so for a code of another group
  P(intent | group) is not known; it is estimated by that code's share of
  its group's retriever score in the shortlist (a stated stand-in: it keeps
  P(group) as the model said, and splits it the way the retriever would).
- retriever(c): the code's retriever score over the shortlist's total.

The combined probability of a candidate is a weighted product of the two,
renormalized over the candidates:

    P(c) = model(c)^a x retriever(c)^b / sum over candidates d of model(d)^a x retriever(d)^b

a product of experts (Hinton 2002) that is also a conditional logit in the
log-probabilities (McFadden 1974). The weights a and b are fitted on the
calibration split only, by maximizing the likelihood of the right code among
the candidates (Newton's method on a concave log-likelihood); a = 1, b = 0 is
the model alone, a = 0, b = 1 the retriever alone. Zeros are floored at
FLOOR so that a code one side rules out is not ruled out by the product.
The decision is the most probable candidate, and its confidence is its P.

combined.py writes the decision into results lines with the fields of
post 03 (code, correct, confidence = p_group x p_intent_given_group, the
distributions), next to post 03's answers (<dataset>-combinedK-<split>.jsonl
in 03-where-confidence-comes-from/results/), so posts 04-08 read them
unchanged with --variant combinedK. Only answers with a code are combined:
a line whose model answer failed (status invalid or too_long) stays as it is,
and a failed request (status error) is left out, as everywhere.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from labels import split_code
from registry import DATASETS
from results_file import relative, replace_lines
from results_record import ResultsLine
from saved_answers import add_dataset_argument, describe, own_results_path, read_split

FLOOR = 1e-6
MAX_NEWTON_STEPS = 100


@dataclass(frozen=True)
class Candidate:
    """One code of a message's shortlist: model and retriever probabilities in [0, 1]."""

    code: str
    model: float
    retriever: float


@dataclass(frozen=True)
class Weights:
    """The exponents of the product: model^model x retriever^retriever (dimensionless).

    log_likelihood: of the right codes among the candidates on the split the
    weights were fitted on (natural log, summed); fitted_on: how many
    messages had their right code among the candidates and entered the fit.
    """

    model: float
    retriever: float
    log_likelihood: float = 0.0
    fitted_on: int = 0


def candidates_of(record: ResultsLine) -> list[Candidate]:
    """The candidates of one shortlist results line (run.py --shortlist K).

    record: a line with a shortlist ((code, score) pairs, best first, scores
    >= 0), code (the model's answer or None), group_distribution (group
    letter -> P, over the shortlist's groups) and intent_distribution
    (intent letter -> P, over the chosen group's shortlisted letters).
    A line whose model answer failed (no code) gets model(c) = 1/K for every
    candidate, so the retriever decides. Raises ValueError on a line without
    a shortlist or with a negative score.
    """
    shortlist = record.shortlist
    if not shortlist:
        raise ValueError(f"line {record.id!r} has no shortlist: write it with 03's run.py --shortlist K")
    if any(score < 0 for _, score in shortlist):
        raise ValueError(f"line {record.id!r} has a negative retriever score")
    total = sum(score for _, score in shortlist)
    retriever = {code: (score / total if total > 0 else 1 / len(shortlist)) for code, score in shortlist}
    if record.code is None:
        return [Candidate(code, 1 / len(shortlist), retriever[code]) for code, _ in shortlist]
    group_score: dict[str, float] = {}
    for code, _ in shortlist:
        group = split_code(code)[0]
        group_score[group] = group_score.get(group, 0.0) + retriever[code]
    candidates = []
    for code, _ in shortlist:
        group, letter = split_code(code)
        p_group = record.group_distribution.get(group, 0.0)
        if group == record.group_letter:
            p_intent = record.intent_distribution.get(letter, 0.0)
        else:  # the model never scored this group's intents: split P(group) the retriever's way
            p_intent = retriever[code] / group_score[group] if group_score[group] > 0 else 0.0
        candidates.append(Candidate(code, p_group * p_intent, retriever[code]))
    return candidates


def _features(candidate: Candidate) -> tuple[float, float]:
    return math.log(max(candidate.model, FLOOR)), math.log(max(candidate.retriever, FLOOR))


def combine(candidates: list[Candidate], weights: Weights) -> dict[str, float]:
    """code -> combined probability in [0, 1], summing to 1 over the candidates (see the module docstring).

    Raises ValueError on no candidates.
    """
    if not candidates:
        raise ValueError("no candidates to combine")
    scores = [weights.model * x + weights.retriever * y for x, y in map(_features, candidates)]
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]  # shifted by the maximum: no overflow
    total = sum(exps)
    return {c.code: e / total for c, e in zip(candidates, exps)}


def log_likelihood_and_derivatives(examples: list[tuple[list[Candidate], str]], a: float, b: float):
    """L(a, b) = sum over examples of log P(right code), with its gradient (2) and Hessian (2 x 2).

    For a conditional logit, dL/dw = sum (x_right - E[x]) and d2L/dw2 = -sum Cov[x]
    (McFadden 1974), with x = (log model, log retriever) and expectations under P.
    """
    value, grad, hess = 0.0, [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]
    for candidates, right in examples:
        xs = [_features(c) for c in candidates]
        scores = [a * x + b * y for x, y in xs]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        probs = [e / total for e in exps]
        index = next(i for i, c in enumerate(candidates) if c.code == right)
        value += scores[index] - top - math.log(total)
        mean = [sum(p * x[k] for p, x in zip(probs, xs)) for k in (0, 1)]
        for k in (0, 1):
            grad[k] += xs[index][k] - mean[k]
            for j in (0, 1):
                hess[k][j] -= sum(p * (x[k] - mean[k]) * (x[j] - mean[j]) for p, x in zip(probs, xs))
    return value, grad, hess


def fit_weights(examples: list[tuple[list[Candidate], str]]) -> Weights:
    """The weights that maximize the likelihood of the right codes among their candidates.

    examples: (candidates, right code) pairs; pairs whose right code is not
    among the candidates are left out (no weight can make them right).
    Newton's method with step halving from (1, 1), to a gradient below 1e-9
    per example. Raises ValueError when no example has its right code among
    the candidates, or when every candidate ties on both features in every
    example (nothing to fit).
    """
    usable = [(c, right) for c, right in examples if any(x.code == right for x in c)]
    if not usable:
        raise ValueError("no message has its right code in the shortlist: nothing to fit the weights on")
    a, b = 1.0, 1.0
    value, grad, hess = log_likelihood_and_derivatives(usable, a, b)
    for _ in range(MAX_NEWTON_STEPS):
        det = hess[0][0] * hess[1][1] - hess[0][1] * hess[1][0]
        # A concave L has a negative definite Hessian (H00 < 0, det > 0); a flat direction means
        # the features do not separate the candidates, and no weights are better than others.
        if hess[0][0] >= 0 or det <= 1e-12 * abs(hess[0][0] * hess[1][1]):
            raise ValueError("the candidates' features do not vary: the weights cannot be fitted")
        if max(map(abs, grad)) < 1e-9 * len(usable):
            break
        step = [-(hess[1][1] * grad[0] - hess[0][1] * grad[1]) / det, -(-hess[1][0] * grad[0] + hess[0][0] * grad[1]) / det]
        size = 1.0
        while True:
            trial = log_likelihood_and_derivatives(usable, a + size * step[0], b + size * step[1])
            if trial[0] >= value or size < 1e-8:
                break
            size /= 2
        a, b = a + size * step[0], b + size * step[1]
        value, grad, hess = trial
    return Weights(a, b, value, len(usable))


def combined_record(record: ResultsLine, weights: Weights, intent_of: dict[str, str]) -> ResultsLine:
    """A results line of post 03's fields whose decision and confidence are the combined ones.

    The model's own answer moves to model_code / model_confidence; the
    combined distribution is written as group_distribution (mass per group)
    and intent_distribution (within the chosen group), so that
    confidence = p_group x p_intent_given_group as everywhere in the series.
    intent_of: code -> intent name (prompt.codes of the dataset). A line
    without a shortlist or without a code (status not ok) is returned as it is.
    """
    if not record.shortlist or record.status != "ok":
        return record
    probabilities = combine(candidates_of(record), weights)
    code = max(probabilities, key=lambda c: (probabilities[c], c == record.code))
    group, letter = split_code(code)
    groups: dict[str, float] = {}
    for candidate, p in probabilities.items():
        groups[split_code(candidate)[0]] = groups.get(split_code(candidate)[0], 0.0) + p
    # sums of floats can pass 1 by an ulp (1.0000000000000002): probabilities stay in [0, 1]
    groups = {g: min(p, 1.0) for g, p in groups.items()}
    intents = {split_code(c)[1]: min(p / groups[group], 1.0) for c, p in probabilities.items()
               if split_code(c)[0] == group}
    return replace(
        record, status="ok", code=code, intent=intent_of[code],
        correct=code == record.gold_code, right_group=group == record.gold_group_letter,  # False without gold
        confidence=probabilities[code], p_group=groups[group], p_intent_given_group=intents[letter],
        group_distribution=groups, intent_distribution=intents,
        model_code=record.code, model_confidence=record.confidence,
        combined_weights=(weights.model, weights.retriever))


def accuracy(records: list[ResultsLine]) -> str:
    """The share of right answers as a percentage with one decimal ("-" for none)."""
    return f"{100 * sum(r.correct for r in records) / len(records):5.1f}%" if records else "    -"


def as_retriever_first(record: ResultsLine) -> ResultsLine:
    """The line as if the retriever's first code were the answer (for the comparison only)."""
    code = record.shortlist[0][0]
    return replace(record, code=code, correct=code == record.gold_code)


def as_on_shortlist(record: ResultsLine) -> ResultsLine:
    """The line counted right when the right code is anywhere on the shortlist (the best any choice can do)."""
    return replace(record, correct=any(code == record.gold_code for code, _ in record.shortlist))


def print_comparison(rows: list[tuple[str, list[ResultsLine], list[ResultsLine]]], out_of_scope: frozenset[str]) -> None:
    """One line per decision: accuracy on calib and test; with out-of-scope codes also the in-scope accuracy on
    test and the share of out-of-scope test messages whose decision is an out-of-scope code (its recall)."""
    header = f"{'decision':<32} {'calib':>7} {'test':>7}"
    if out_of_scope:
        header += f" {'test, in scope':>15} {'out of scope found':>19}"
    print(header)
    for name, calib, test in rows:
        line = f"{name:<32} {accuracy(calib):>7} {accuracy(test):>7}"
        outside = [r for r in test if r.gold_code in out_of_scope]
        if out_of_scope and outside:
            inside = [r for r in test if r.gold_code not in out_of_scope]
            found = sum(r.code in out_of_scope for r in outside)
            line += f" {accuracy(inside):>15} {100 * found / len(outside):18.1f}%"
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--shortlist", type=int, default=5, metavar="K",
                        help="the shortlist run to combine: run.py --shortlist K (default: 5)")
    args = parser.parse_args()
    if args.shortlist < 1:
        parser.error("--shortlist must be 1 or more")
    variant = f"shortlist{args.shortlist}"
    calib = read_split("calib", None, args.dataset, variant)
    test = read_split("test", None, args.dataset, variant)
    print(f"fit on    {describe(calib.path, calib.records, len(calib.errors))}")
    print(f"report on {describe(test.path, test.records, len(test.errors))}")
    weights = fit_weights([(candidates_of(r), r.gold_code) for r in calib.records if r.status == "ok"])
    print(f"\nweights fitted on the {weights.fitted_on} calib answers whose right code is on the shortlist: "
          f"P(code) proportional to model^{weights.model:.3f} x retriever^{weights.retriever:.3f}\n")
    dataset = DATASETS[args.dataset]
    intent_of = {code: meaning.intent for code, meaning in dataset.load_prompt().codes.items()}
    combined = {split: [combined_record(r, weights, intent_of) for r in loaded.records]
                for split, loaded in (("calib", calib), ("test", test))}
    rows = [("retriever alone (its first code)", [as_retriever_first(r) for r in calib.records],
             [as_retriever_first(r) for r in test.records]),
            (f"model, shortlist of {args.shortlist}", calib.records, test.records),
            ("combined", combined["calib"], combined["test"]),
            ("right code on the shortlist", [as_on_shortlist(r) for r in calib.records],
             [as_on_shortlist(r) for r in test.records])]
    try:
        rows.insert(0, ("model alone, all codes", *(read_split(split, None, args.dataset).records
                                                   for split in ("calib", "test"))))
    except (OSError, ValueError):
        pass  # no plain run of post 03 to compare with
    print_comparison(rows, dataset.out_of_scope_codes())
    print()
    for split, records in combined.items():
        path = own_results_path(args.dataset, split, f"combined{args.shortlist}")
        path.parent.mkdir(parents=True, exist_ok=True)
        errors = calib.errors if split == "calib" else test.errors
        replace_lines(path, [json.dumps(r.to_json(), ensure_ascii=False).encode() for r in records + errors])
        print(f"wrote {relative(path)} ({len(records)} answers)")
    return 0


if __name__ == "__main__":
    from llama_http import exit_on_server_errors
    sys.exit(exit_on_server_errors(main))
