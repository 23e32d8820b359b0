"""A combined decision: the model's renormalized probabilities and the retriever's scores, weighed on calib.

    python3 08-routes/beyond/combined/combined.py                               # BANKING77, shortlist of 5: fit on calib, report on test
    python3 08-routes/beyond/combined/combined.py --dataset clinc150            # CLINC150, its out-of-scope code with a term of its own
    python3 08-routes/beyond/guarantees/certified_routes.py --variant combined5   # post 08's routes on the combined decisions

A shortlist run (08-routes/beyond/combined/shortlist.py --shortlist K) asks the model to
choose among the K intents that the TF-IDF retriever of post 01's baseline
ranks first, with the same cached system prompt and a grammar that allows
only those K codes. Each line then holds two opinions about the same K codes:

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

CLINC150's out-of-scope code K-A, on every shortlist, is a candidate of
another kind: the retriever has no opinion about it (its nearest neighbours
seldom carry that label, so its score is mostly 0), but how close the
nearest intent is says something. Its term in the product is its own:

    exp(u + v x best) x model(K-A)^w

with best the highest retriever score among the shortlist's intents (raw:
for the nearest neighbours a sum of up to 10 cosine similarities, so in
[0, 10]; for the logistic regression of --source linear or examples a
probability, in [0, 1]) and u, v, w fitted on
calib with a and b in the same likelihood. A message that resembles no
training message (best low) leans to out of scope when v < 0. Datasets without an out-of-scope code
(BANKING77) have only a and b.

It prints the accuracy of each decision on calib and test, and what the
model adds: the combined decision's test accuracy minus that of the same
product without the model (a = 0 and, for CLINC150, w = 0; the other
weights fitted on calib the same way: the retriever's scores renormalized
over the shortlist with a fitted exponent), on the same messages, with the
paired 95% interval of oos_cost.py (Agresti, Categorical Data Analysis,
11.1). On BANKING77 that decision picks the retriever's first code; its
confidence is what the model's is compared with (08-routes/beyond/regimes/regimes.py).

combined.py writes the decision into results lines with the fields of
post 03 (code, correct, confidence = p_group x p_intent_given_group, the
distributions), next to post 03's answers (<dataset>-combinedK-<split>.jsonl
in 03-where-confidence-comes-from/results/), so posts 04-08 read them
unchanged through variants.py with --variant combinedK. Only answers with a code are combined:
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

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from labels import split_code
from oos_cost import paired_cost
from prompt import load_prompt
from registry import DATASETS, add_dataset_argument
from results_file import relative, replace_lines
from results_record import ResultsLine, is_number
from saved_answers import describe, read_split
from variants import own_results_path, reading

FLOOR = 1e-6
MAX_NEWTON_STEPS = 100


SOURCE_PREFIX = {"knn": "", "linear": "linear", "examples": "example"}


def source_messages(dataset, source: str) -> list:
    """The labelled messages the ranking of a shortlist --source (a key of SOURCE_PREFIX) is fitted on, for
    dataset (registry.Dataset): every training message but the calib split for knn and linear, the label
    file's examples for examples."""
    from linear import regime_messages
    return regime_messages(dataset, "examples" if source == "examples" else "full")


def labelled_messages(dataset, fitted: list) -> int:
    """How many labelled messages a decision used: the texts it was fitted on (`fitted`, anything with a .text)
    together with the calib split's of dataset (registry.Dataset), on which its weights or calibration are
    fitted, each text once."""
    return len({m.text for m in fitted} | {m.text for m in dataset.load_split("calib")})


def shortlist_variant(k: int, source: str = "knn") -> str:
    """The results-file variant of shortlist.py's runs with shortlists of k from `source`: "shortlist5" for
    post 01's retriever, "linearshortlist5" and "exampleshortlist5" for the logistic regression."""
    return f"{SOURCE_PREFIX[source]}shortlist{k}"


def combined_variant(k: int, source: str = "knn") -> str:
    """The variant combined.py writes from those runs: "combined5", "linearcombined5", "examplecombined5"."""
    return f"{SOURCE_PREFIX[source]}combined{k}"


def line_shortlist(line: ResultsLine, where: str = "") -> tuple[tuple[str, float], ...]:
    """The (code, retriever score) pairs of a shortlist line (its "shortlist" field), best first.

    Raises ValueError naming `where` when the line has no shortlist or one
    that is not a non-empty list of [code, score] pairs.
    """
    pairs = line.extra.get("shortlist")
    if not (isinstance(pairs, list) and pairs and all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and len(p[0]) == 3 and p[0][1] == "-"
            and is_number(p[1]) for p in pairs)):
        raise ValueError(f"{where or line.id}: field 'shortlist' is {pairs!r}: not a list of [code, score] pairs; "
                         "not a line written by 08-routes/beyond/combined/shortlist.py")
    return tuple((code, score) for code, score in pairs)



@dataclass(frozen=True)
class Candidate:
    """One code of a message's shortlist: model and retriever probabilities in [0, 1].

    best_score: set on an out-of-scope code only (CLINC150's K-A): the
    retriever's highest raw score among the in-scope codes of the shortlist
    (in [0, 10] for the nearest neighbours' summed similarities, in [0, 1]
    for a classifier's probabilities). The retriever has no
    opinion about "no intent fits" (its neighbours seldom carry that label),
    but how close the nearest intent is tells something about it.
    """

    code: str
    model: float
    retriever: float
    best_score: float | None = None

    @property
    def out_of_scope(self) -> bool:
        return self.best_score is not None


@dataclass(frozen=True)
class Weights:
    """The weights of the product (dimensionless): model^model x retriever^retriever for an intent's code.

    out_of_scope: for datasets with an out-of-scope code, the three weights
    (bias, best_score, model) of that code's own term,
    exp(bias + best_score x candidate.best_score) x model^model; None where the
    dataset has no such code. log_likelihood: of the right codes among the
    candidates on the split the weights were fitted on (natural log, summed);
    fitted_on: how many messages had their right code among the candidates
    and entered the fit.
    """

    model: float
    retriever: float
    out_of_scope: tuple[float, float, float] | None = None
    log_likelihood: float = 0.0
    fitted_on: int = 0

    def values(self) -> tuple[float, ...]:
        """The weights as results lines store them (combined_weights): 2 numbers, or 5 with out_of_scope."""
        return (self.model, self.retriever) + (self.out_of_scope or ())

    @classmethod
    def of_line(cls, line: ResultsLine) -> "Weights | None":
        """The weights a line of combined.py's files was combined with (its combined_weights), None for a line
        without them. Raises ValueError naming the line when they are not 2 or 5 numbers."""
        values = line.extra.get("combined_weights")
        if values is None:
            return None
        if not (isinstance(values, list) and all(is_number(v) for v in values)):
            raise ValueError(f"line {line.id!r}: field 'combined_weights' is {values!r}: not a list of 2 or 5 numbers")
        return cls.from_values(tuple(values))

    @classmethod
    def from_values(cls, values: tuple[float, ...]) -> "Weights":
        """The inverse of values(). Raises ValueError unless there are 2 or 5 numbers."""
        if len(values) not in (2, 5):
            raise ValueError(f"combined weights are 2 or 5 numbers, not {len(values)}")
        return cls(values[0], values[1], tuple(values[2:]) if len(values) == 5 else None)

    def describe(self) -> str:
        """The formula with the weights, as the scripts print it (3 decimals)."""
        text = f"model^{self.model:.3f} x retriever^{self.retriever:.3f}"
        if self.out_of_scope:
            bias, best, model = self.out_of_scope
            text += (f"; out of scope: exp({bias:.3f} {'+' if best >= 0 else '-'} {abs(best):.3f} x best retriever score)"
                     f" x model^{model:.3f}")
        return text


def candidates_of(record: ResultsLine, out_of_scope: frozenset[str] = frozenset()) -> list[Candidate]:
    """The candidates of one shortlist results line (run.py --shortlist K).

    record: a line with a shortlist ((code, score) pairs, best first, scores
    >= 0), code (the model's answer or None), group_distribution (group
    letter -> P, over the shortlist's groups) and intent_distribution
    (intent letter -> P, over the chosen group's shortlisted letters).
    out_of_scope: the dataset's out-of-scope codes; such a candidate gets
    best_score (see Candidate). A line whose model answer failed (no code)
    gets model(c) = 1/K for every candidate, so the retriever decides.
    Raises ValueError on a line without a shortlist or with a negative score.
    """
    shortlist = line_shortlist(record)
    if any(score < 0 for _, score in shortlist):
        raise ValueError(f"line {record.id!r} has a negative retriever score")
    best_score = max((score for code, score in shortlist if code not in out_of_scope), default=0.0)
    total = sum(score for _, score in shortlist)
    retriever = {code: (score / total if total > 0 else 1 / len(shortlist)) for code, score in shortlist}
    if record.code is None:
        model = {code: 1 / len(shortlist) for code, _ in shortlist}
    else:
        group_score: dict[str, float] = {}
        group_size: dict[str, int] = {}
        for code, _ in shortlist:
            group = split_code(code)[0]
            group_score[group] = group_score.get(group, 0.0) + retriever[code]
            group_size[group] = group_size.get(group, 0) + 1
        model = {}
        for code, _ in shortlist:
            group, letter = split_code(code)
            p_group = record.group_distribution.get(group, 0.0)
            if group == record.group_letter:
                p_intent = record.intent_distribution.get(letter, 0.0)
            elif group_score[group] > 0:  # the model never scored this group's intents: split P(group) the retriever's way
                p_intent = retriever[code] / group_score[group]
            else:  # nor did the retriever (CLINC150's K-A, alone in group K, mostly scores 0): split it evenly
                p_intent = 1 / group_size[group]
            model[code] = p_group * p_intent
    return [Candidate(code, model[code], retriever[code], best_score if code in out_of_scope else None)
            for code, _ in shortlist]


def _features(candidate: Candidate, size: int) -> tuple[float, ...]:
    """The candidate's features for weights of `size` (2 or 5) numbers, in Weights.values() order."""
    log_model = math.log(max(candidate.model, FLOOR))
    if not candidate.out_of_scope:
        return (log_model, math.log(max(candidate.retriever, FLOOR)), 0.0, 0.0, 0.0)[:size]
    if size == 2:
        raise ValueError(f"{candidate.code} is an out-of-scope code, and these weights have no term for one: "
                         "fit them with its dataset's out-of-scope codes")
    return (0.0, 0.0, 1.0, candidate.best_score, log_model)


def _scores(rows: list[tuple[float, ...]], values: tuple[float, ...]) -> list[float]:
    """Each candidate's log-score: its feature row (_features) dotted with the weights."""
    return [sum(w * x for w, x in zip(values, row)) for row in rows]


def _softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]  # shifted by the maximum: no overflow
    total = sum(exps)
    return [e / total for e in exps]


def combine(candidates: list[Candidate], weights: Weights) -> dict[str, float]:
    """code -> combined probability in [0, 1], summing to 1 over the candidates (see the module docstring).

    Raises ValueError on no candidates, or on an out-of-scope candidate when
    the weights have no out-of-scope term.
    """
    if not candidates:
        raise ValueError("no candidates to combine")
    values = weights.values()
    rows = [_features(c, len(values)) for c in candidates]
    return {c.code: p for c, p in zip(candidates, _softmax(_scores(rows, values)))}


def log_likelihood_and_derivatives(examples: list[tuple[list[Candidate], str]], values: tuple[float, ...]):
    """L(w) = sum over examples of log P(right code), with its gradient (n) and Hessian (n x n), n = len(values).

    For a conditional logit, dL/dw = sum (x_right - E[x]) and d2L/dw2 = -sum Cov[x]
    (McFadden 1974), with x the candidate's features (_features) and expectations under P.
    """
    n = len(values)
    value, grad, hess = 0.0, [0.0] * n, [[0.0] * n for _ in range(n)]
    for candidates, right in examples:
        xs = [_features(c, n) for c in candidates]
        probs = _softmax(_scores(xs, values))
        index = next(i for i, c in enumerate(candidates) if c.code == right)
        value += math.log(max(probs[index], sys.float_info.min))
        mean = [sum(p * x[k] for p, x in zip(probs, xs)) for k in range(n)]
        for k in range(n):
            grad[k] += xs[index][k] - mean[k]
            for j in range(k, n):
                hess[k][j] -= sum(p * (x[k] - mean[k]) * (x[j] - mean[j]) for p, x in zip(probs, xs))
                hess[j][k] = hess[k][j]
    return value, grad, hess


def newton_step(hess: list[list[float]], grad: list[float]) -> list[float]:
    """The Newton step s with hess s = -grad, for a negative definite hess (n x n), by Cholesky of -hess.

    Raises ValueError when -hess is not positive definite (to a relative 1e-12):
    a flat direction, i.e. features that do not separate the candidates.
    """
    n = len(grad)
    lower = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            total = -hess[i][j] - sum(lower[i][k] * lower[j][k] for k in range(j))
            if i == j:
                if total <= 1e-12 * max(1.0, abs(hess[i][i])):
                    raise ValueError("the candidates' features do not vary: the weights cannot be fitted")
                lower[i][i] = math.sqrt(total)
            else:
                lower[i][j] = total / lower[j][j]
    forward = [0.0] * n  # lower y = grad, then lower^T s = y: (-hess) s = grad, so hess s = -grad
    for i in range(n):
        forward[i] = (grad[i] - sum(lower[i][k] * forward[k] for k in range(i))) / lower[i][i]
    step = [0.0] * n
    for i in reversed(range(n)):
        step[i] = (forward[i] - sum(lower[k][i] * step[k] for k in range(i + 1, n))) / lower[i][i]
    return step


MODEL_WEIGHTS = (0, 4)  # the places in Weights.values() of the model's exponents: intents' and out of scope's


def fit_weights(examples: list[tuple[list[Candidate], str]], with_model: bool = True) -> Weights:
    """The weights that maximize the likelihood of the right codes among their candidates.

    examples: (candidates, right code) pairs; pairs whose right code is not
    among the candidates are left out (no weight can make them right). With
    an out-of-scope candidate in any example, the out-of-scope term is fitted
    too (5 weights), else 2. with_model=False keeps the model's exponents at
    0 and fits the others: the same decision without the model, the
    retriever's scores renormalized over the shortlist with a fitted
    exponent (and CLINC150's out-of-scope term from the best score alone).
    Newton's method with step halving from all free weights 1 (the
    out-of-scope bias and best-score weight from 0), to a gradient below
    1e-9 per example. Raises ValueError when no example has its right code
    among the candidates, or when a weight has nothing to tell it apart
    (features that never vary among the candidates).
    """
    usable = [(c, right) for c, right in examples if any(x.code == right for x in c)]
    if not usable:
        raise ValueError("no message has its right code in the shortlist: nothing to fit the weights on")
    with_out_of_scope = any(x.out_of_scope for c, _ in usable for x in c)
    values = (1.0, 1.0, 0.0, 0.0, 1.0) if with_out_of_scope else (1.0, 1.0)
    free = [k for k in range(len(values)) if with_model or k not in MODEL_WEIGHTS]
    values = tuple(w if k in free else 0.0 for k, w in enumerate(values))
    value, grad, hess = log_likelihood_and_derivatives(usable, values)
    for _ in range(MAX_NEWTON_STEPS):
        # Newton's step in the free weights only: a concave L, so it goes uphill
        free_step = newton_step([[hess[k][j] for j in free] for k in free], [grad[k] for k in free])
        step = [0.0] * len(values)
        for k, s in zip(free, free_step):
            step[k] = s
        if max(abs(grad[k]) for k in free) < 1e-9 * len(usable):
            break
        size = 1.0
        while True:
            trial_values = tuple(w + size * s for w, s in zip(values, step))
            trial = log_likelihood_and_derivatives(usable, trial_values)
            if trial[0] >= value or size < 1e-8:
                break
            size /= 2
        values = trial_values
        value, grad, hess = trial
    fitted = Weights.from_values(values)
    return replace(fitted, log_likelihood=value, fitted_on=len(usable))


def step_distributions(probabilities: dict[str, float], code: str) -> tuple[dict[str, float], dict[str, float]]:
    """A distribution over codes (code -> P, summing to 1) as the two steps of a results line: group letter ->
    P(group), the mass of its codes; and, within code's group, intent letter -> P(intent | group). So that
    P(group of code) x P(intent of code | group) = P(code), the series' confidence. Raises KeyError when code
    has no probability."""
    group = split_code(code)[0]
    groups: dict[str, float] = {}
    for candidate, p in probabilities.items():
        groups[split_code(candidate)[0]] = groups.get(split_code(candidate)[0], 0.0) + p
    # sums of floats can pass 1 by an ulp (1.0000000000000002): probabilities stay in [0, 1]
    groups = {g: min(p, 1.0) for g, p in groups.items()}
    intents = {split_code(c)[1]: min(p / groups[group], 1.0) if groups[group] else 0.0
               for c, p in probabilities.items() if split_code(c)[0] == group}
    return groups, intents


def combined_record(record: ResultsLine, weights: Weights, intent_of: dict[str, str],
                    out_of_scope: frozenset[str] = frozenset(), decide_failed: bool = False) -> ResultsLine:
    """A results line of post 03's fields whose decision and confidence are the combined ones.

    The model's own answer moves to the extra fields model_code and
    model_confidence, next to the weights (combined_weights); the
    combined distribution is written as group_distribution (mass per group)
    and intent_distribution (within the chosen group), so that
    confidence = p_group x p_intent_given_group as everywhere in the series.
    intent_of: code -> intent name (prompt.codes of the dataset). A line
    without a code (status not ok) is returned as it is, unless
    decide_failed (for weights without the model, which need no answer of
    it: candidates_of gives such a line model(c) = 1/K); one without a
    shortlist raises ValueError (line_shortlist).
    """
    if record.status != "ok" and not decide_failed:
        return record
    probabilities = combine(candidates_of(record, out_of_scope), weights)
    code = max(probabilities, key=lambda c: (probabilities[c], c == record.code))
    groups, intents = step_distributions(probabilities, code)
    group, letter = split_code(code)
    return replace(
        record, status="ok", code=code, intent=intent_of[code],
        correct=code == record.gold_code, right_group=group == record.gold_group_letter,  # False without gold
        confidence=probabilities[code], p_group=groups[group], p_intent_given_group=intents[letter],
        group_distribution=groups, intent_distribution=intents,
        extra={**record.extra, "model_code": record.code, "model_confidence": record.confidence,
               "combined_weights": list(weights.values())})


def combined_decisions(calib: list[ResultsLine], test: list[ResultsLine], dataset,
                       with_model: bool = True) -> tuple[Weights, dict[str, list[ResultsLine]]]:
    """The weights fitted on calib's shortlist lines (shortlist.py's, error lines left out) and every line of
    both splits as combined_record makes it: (weights, {"calib": [...], "test": [...]}), the lines in their
    order. dataset: registry.Dataset (its out-of-scope codes and prompt). with_model=False: the same decision
    without the model (fit_weights), which decides the lines whose model answer failed too. Raises ValueError
    as fit_weights and combined_record do."""
    out_of_scope = dataset.out_of_scope_codes()
    weights = fit_weights([(candidates_of(r, out_of_scope), r.gold_code) for r in calib if r.status == "ok"],
                          with_model=with_model)
    intent_of = {code: meaning.intent for code, meaning in load_prompt(dataset.name).codes.items()}
    return weights, {split: [combined_record(r, weights, intent_of, out_of_scope, decide_failed=not with_model)
                             for r in records]
                     for split, records in (("calib", calib), ("test", test))}


def accuracy_text(records: list[ResultsLine]) -> str:
    """The share of right answers as a percentage with one decimal ("-" for none)."""
    return f"{100 * sum(r.correct for r in records) / len(records):5.1f}%" if records else "    -"


def as_retriever_first(record: ResultsLine) -> ResultsLine:
    """The line as if the retriever's first code were the answer (for the comparison only)."""
    code = line_shortlist(record)[0][0]
    return replace(record, code=code, correct=code == record.gold_code)


def as_on_shortlist(record: ResultsLine) -> ResultsLine:
    """The line counted right when the right code is anywhere on the shortlist (the best any choice can do)."""
    return replace(record, correct=any(code == record.gold_code for code, _ in line_shortlist(record)))


def print_decisions(rows: list[tuple[str, list[ResultsLine], list[ResultsLine]]], out_of_scope: frozenset[str]) -> None:
    """One line per decision: accuracy on calib and test; with out-of-scope codes also the in-scope accuracy on
    test and the share of out-of-scope test messages whose decision is an out-of-scope code (its recall)."""
    header = f"{'decision':<32} {'calib':>7} {'test':>7}"
    if out_of_scope:
        header += f" {'test, in scope':>15} {'out of scope found':>19}"
    print(header)
    for name, calib, test in rows:
        line = f"{name:<32} {accuracy_text(calib):>7} {accuracy_text(test):>7}"
        outside = [r for r in test if r.gold_code in out_of_scope]
        if out_of_scope and outside:
            inside = [r for r in test if r.gold_code not in out_of_scope]
            found = sum(r.correct for r in outside)  # right = an out-of-scope code: K-A is on every shortlist
            line += f" {accuracy_text(inside):>15} {100 * found / len(outside):18.1f}%"
        print(line)


def plain_rows(args: argparse.Namespace, shortlisted: dict[str, list[ResultsLine]]) -> dict[str, list[ResultsLine]]:
    """run.py's answers of each split ({"calib": [...], "test": [...]}), on the messages of that split's shortlist
    run only (`shortlisted`, by split), so that the table compares the decisions on the same messages; {} when
    there is no plain run to compare with (a note says why when one was given or when it lacks messages)."""
    given = {"calib": args.plain_calib, "test": args.plain_results}
    found = {}
    for split, records in shortlisted.items():
        try:
            loaded = read_split(split, given[split], args.dataset, "--plain-" + ("calib" if split == "calib" else "results"))
        except (OSError, ValueError) as error:
            if given[split]:
                raise
            print(f"note: no row for the model alone: {error}")
            return {}
        by_id = {r.id: r for r in loaded.records}
        found[split] = [by_id[r.id] for r in records if r.id in by_id]
        if not found[split]:
            print(f"note: no row for the model alone: {relative(loaded.path)} answers none of the {split} messages of "
                  "the shortlist run")
            return {}
        if len(found[split]) < len(records):
            print(f"note: the model alone, {split}: {len(found[split])} of the {len(records)} messages of the shortlist "
                  f"run have an answer in {relative(loaded.path)}; its row counts those")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--shortlist", type=int, default=5, metavar="K",
                        help="the shortlist run to combine: shortlist.py --shortlist K (default: 5)")
    parser.add_argument("--source", choices=sorted(SOURCE_PREFIX), default="knn",
                        help="whose shortlists (shortlist.py --source): knn (default), linear or examples")
    parser.add_argument("--calib", type=Path, help="the shortlist run of the calibration split to fit on (default: "
                        "your own complete run, else the committed reference run)")
    parser.add_argument("--results", type=Path, help="the shortlist run to report on, e.g. of a part of the test split "
                        "(shortlist.py --limit N --spread); default: your own complete run, else the reference run")
    parser.add_argument("--plain-calib", type=Path, help="run.py's answers of the calib split, for the row of the "
                        "model alone (default: your own complete run, else the reference run)")
    parser.add_argument("--plain-results", type=Path, help="run.py's answers to compare on test (default as "
                        "--plain-calib); only the messages of --results count")
    args = parser.parse_args()
    if args.shortlist < 1:
        parser.error("--shortlist must be 1 or more")
    variant = shortlist_variant(args.shortlist, args.source)
    with reading(variant):  # the shortlist run's files, and their describe() lines
        calib = read_split("calib", args.calib, args.dataset, "--calib")
        test = read_split("test", args.results, args.dataset, "--results")
        print(f"fit on    {describe(calib.path, calib.records, len(calib.errors))}")
        print(f"report on {describe(test.path, test.records, len(test.errors))}")
    dataset = DATASETS[args.dataset]
    weights, combined = combined_decisions(calib.records, test.records, dataset)
    print(f"\nweights fitted on the {weights.fitted_on} calib answers whose right code is on the shortlist: "
          f"P(code) proportional to {weights.describe()}")
    alone_weights, alone = combined_decisions(calib.records, test.records, dataset, with_model=False)
    print(f"without the model (its exponents 0), fitted the same way: P(code) proportional to {alone_weights.describe()}")
    fitted = source_messages(dataset, args.source)
    print(f"labelled messages: {len({m.text for m in fitted}):,} for the shortlists ({args.source}), the calib split's "
          f"for the weights: {labelled_messages(dataset, fitted):,} in all\n")
    retriever_first = {split: [as_retriever_first(r) for r in loaded.records]
                       for split, loaded in (("calib", calib), ("test", test))}
    rows = [("retriever alone (its first code)", retriever_first["calib"], retriever_first["test"]),
            (f"model, shortlist of {args.shortlist}", calib.records, test.records),
            ("combined", combined["calib"], combined["test"]),
            ("combined without the model", alone["calib"], alone["test"]),
            ("right code on the shortlist", [as_on_shortlist(r) for r in calib.records],
             [as_on_shortlist(r) for r in test.records])]
    plain = plain_rows(args, {"calib": calib.records, "test": test.records})
    if plain:
        rows.insert(0, ("model alone, all codes", plain["calib"], plain["test"]))
    print_decisions(rows, dataset.out_of_scope_codes())
    added = paired_cost(alone["test"], combined["test"], frozenset())
    low, high = added.interval()
    print(f"\nwhat the model adds on test: combined minus combined without the model, over the same {added.n:,} "
          f"messages: {100 * added.difference:+.1f} points (95% interval {100 * low:+.1f} to {100 * high:+.1f}; right "
          f"only with the model {added.only_with}, only without it {added.only_without})\n")
    for split, records in combined.items():
        path = own_results_path(args.dataset, split, combined_variant(args.shortlist, args.source))
        path.parent.mkdir(parents=True, exist_ok=True)
        errors = calib.errors if split == "calib" else test.errors
        replace_lines(path, [json.dumps(r.to_json(), ensure_ascii=False).encode() for r in records + errors])
        print(f"wrote {relative(path)} ({len(records)} answers)")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
