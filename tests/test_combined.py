"""The combined decision: candidates from a shortlist line, the weighted product, and its fit on calib."""
import json
import math
import random
import re
from dataclasses import replace

import numpy as np
import pytest
import saved_answers
from result_lines import partial_line, result_line, write_lines
from variants import read_variant
from combined import (FLOOR, SOURCE_PREFIX, Candidate, Weights, candidates_of, combine, combined_decisions,
                      combined_record, fit_weights, line_shortlist, log_likelihood_and_derivatives, newton_step)
from decision_router import fit_decision_router, ready_router, write_decision_router
from decisions import DECISIONS, ask_live
from oos_cost import paired_cost
from routes import route_of
from registry import DATASETS
from results_record import ResultsLine
from scipy.optimize import minimize


def line(shortlist, code="A-B", groups=None, intents=None, gold="A-B"):
    return partial_line(id="x", status="ok", extra={"shortlist": [list(pair) for pair in shortlist]}, code=code, gold_code=gold,
                        group_distribution=groups or {"A": 0.8, "B": 0.2},
                        intent_distribution=intents or {"A": 0.25, "B": 0.75}, confidence=0.6, intent="two")


def test_candidates_take_the_model_inside_its_group_and_split_other_groups_the_retrievers_way():
    record = line([["A-B", 3.0], ["A-A", 1.0], ["B-C", 0.6], ["B-D", 0.4]])
    got = {c.code: c for c in candidates_of(record)}
    # model: A-B 0.8 x 0.75 = 0.6, A-A 0.8 x 0.25 = 0.2; group B (never scored by the model) splits
    # its 0.2 by the retriever: B-C 0.6 / 1.0 -> 0.12, B-D 0.08. Retriever: score / 5.0.
    assert got["A-B"].model == pytest.approx(0.6) and got["A-A"].model == pytest.approx(0.2)
    assert got["B-C"].model == pytest.approx(0.12) and got["B-D"].model == pytest.approx(0.08)
    assert [round(c.retriever, 2) for c in candidates_of(record)] == [0.6, 0.2, 0.12, 0.08]


def test_a_failed_answer_leaves_the_decision_to_the_retriever():
    record = replace(line([["A-A", 1.0], ["B-B", 3.0]]), code=None, status="invalid")
    assert [c.model for c in candidates_of(record)] == [0.5, 0.5]
    probabilities = combine(candidates_of(record), Weights(1.0, 1.0))
    assert probabilities["B-B"] == pytest.approx(0.75)


def test_a_line_without_shortlist_is_refused():
    with pytest.raises(ValueError, match="y: field 'shortlist' is None: not a list of \\[code, score\\] pairs"):
        candidates_of(partial_line(id="y", code="A-A"))


@pytest.mark.parametrize("shortlist", [[], [["A-B"]], [["A-B", "high"]], [["AB", 1.0]], "A-B"])
def test_a_bad_shortlist_is_refused(shortlist):
    record = ResultsLine.from_json({**result_line(1, True), "shortlist": shortlist}, "z line 1")
    with pytest.raises(ValueError, match="field 'shortlist' is .*: not a list of \\[code, score\\] pairs"):
        line_shortlist(record)


def test_a_shortlist_is_read_as_pairs_and_written_back_as_lists():
    record = {**result_line(1, True), "shortlist": [["A-B", 2.5], ["A-C", 1]]}
    line = ResultsLine.from_json(record, "z")
    assert line_shortlist(line) == (("A-B", 2.5), ("A-C", 1))
    assert line.to_json()["shortlist"] == [["A-B", 2.5], ["A-C", 1]]


@pytest.mark.parametrize("value", [[1.0], [1.0, 2.0, 3.0], [1.0, "b"], "1, 2"])
def test_weights_of_a_line_are_2_or_5_numbers(value):
    record = ResultsLine.from_json({**result_line(1, True), "combined_weights": value}, "c line 1")
    with pytest.raises(ValueError, match="2 or 5 numbers"):
        Weights.of_line(record)
    assert Weights.of_line(ResultsLine.from_json(result_line(1, True), "plain")) is None


def test_combine_by_hand():
    candidates = [Candidate("A-A", 0.5, 0.2), Candidate("A-B", 0.25, 0.8)]
    # a = 1, b = 1: 0.5 x 0.2 = 0.1 against 0.25 x 0.8 = 0.2 -> 1/3, 2/3
    assert combine(candidates, Weights(1, 1)) == pytest.approx({"A-A": 1 / 3, "A-B": 2 / 3})
    # a = 1, b = 0 is the model alone: 0.5 / 0.75, 0.25 / 0.75
    assert combine(candidates, Weights(1, 0)) == pytest.approx({"A-A": 2 / 3, "A-B": 1 / 3})
    # a zero is floored, not fatal: 0 x 0.9 against 1 x 0.1
    floored = combine([Candidate("A", 0.0, 0.9), Candidate("B", 1.0, 0.1)], Weights(1, 1))
    assert floored["A"] == pytest.approx(FLOOR * 0.9 / (FLOOR * 0.9 + 0.1))


def synthetic(n, a, b, seed):
    """Messages of 5 candidates whose right code is drawn with P proportional to model^a x retriever^b."""
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        model = [rng.random() for _ in range(5)]
        retriever = [rng.random() for _ in range(5)]
        candidates = [Candidate(f"C{i}", m / sum(model), r / sum(retriever)) for i, (m, r) in enumerate(zip(model, retriever))]
        weights = combine(candidates, Weights(a, b))
        right = rng.choices(list(weights), weights=list(weights.values()))[0]
        examples.append((candidates, right))
    return examples


def test_the_fit_recovers_the_weights_that_drew_the_data():
    fitted = fit_weights(synthetic(4000, 2.0, 0.5, seed=3))
    assert fitted.model == pytest.approx(2.0, abs=0.2) and fitted.retriever == pytest.approx(0.5, abs=0.15)
    assert fitted.fitted_on == 4000


def test_the_fit_is_the_maximum_scipy_finds():
    examples = synthetic(300, 1.5, 1.0, seed=5)

    def negative(w):
        total = 0.0
        for candidates, right in examples:
            p = combine(candidates, Weights(*w))
            total -= math.log(p[right])
        return total

    best = minimize(negative, x0=np.array([0.0, 0.0]), method="BFGS", options={"gtol": 1e-10})
    fitted = fit_weights(examples)
    assert [fitted.model, fitted.retriever] == pytest.approx(list(best.x), abs=1e-4)
    assert fitted.log_likelihood == pytest.approx(-best.fun, abs=1e-6)


def test_messages_whose_right_code_is_not_on_the_shortlist_stay_out_of_the_fit():
    examples = synthetic(50, 1.0, 1.0, seed=8) + [([Candidate("X", 0.5, 0.5), Candidate("Y", 0.5, 0.5)], "Z")]
    assert fit_weights(examples).fitted_on == 50
    with pytest.raises(ValueError, match="nothing to fit"):
        fit_weights([([Candidate("X", 0.5, 0.5)], "Z")])


def test_features_that_never_vary_cannot_be_fitted():
    same = [([Candidate("X", 0.5, 0.5), Candidate("Y", 0.5, 0.5)], "X")] * 10
    with pytest.raises(ValueError, match="do not vary"):
        fit_weights(same)


def test_an_out_of_scope_code_gets_the_best_in_scope_score_and_its_own_term():
    record = line([["A-B", 3.0], ["A-A", 1.0], ["K-A", 0.0]],
                  groups={"A": 0.7, "K": 0.3}, intents={"A": 0.4, "B": 0.6})
    got = {c.code: c for c in candidates_of(record, frozenset({"K-A"}))}
    assert got["K-A"].out_of_scope and got["K-A"].best_score == 3.0 and got["K-A"].model == pytest.approx(0.3)
    assert not got["A-B"].out_of_scope and got["A-B"].best_score is None
    # K-A: the model chose group A, so P(A | K) is unknown; the retriever gave group K nothing either,
    # so its P(K) = 0.3 is split evenly among K's shortlisted codes: K-A alone gets it all.
    # a = 1, b = 1 for the intents: A-B 0.42 x 0.75 = 0.315, A-A 0.28 x 0.25 = 0.07;
    # K-A: exp(u + v x 3) x 0.3^w with u = ln 2, v = -0.5, w = 1: 2 x e^-1.5 x 0.3
    weights = Weights(1.0, 1.0, (math.log(2), -0.5, 1.0))
    k = 2 * math.exp(-1.5) * 0.3
    assert combine(list(got.values()), weights) == pytest.approx(
        {"A-B": 0.315 / (0.385 + k), "A-A": 0.07 / (0.385 + k), "K-A": k / (0.385 + k)})
    # without the out-of-scope codes it is an intent like the others (score 0, floored)
    assert not any(c.out_of_scope for c in candidates_of(record))


def test_the_best_score_ignores_the_out_of_scope_codes_own_score():
    record = line([["K-A", 4.0], ["A-B", 1.5], ["A-A", 0.5]])
    got = {c.code: c for c in candidates_of(record, frozenset({"K-A"}))}
    assert got["K-A"].best_score == 1.5


def test_weights_without_an_out_of_scope_term_refuse_an_out_of_scope_candidate():
    candidates = [Candidate("A-A", 0.5, 0.5), Candidate("K-A", 0.5, 0.5, best_score=1.0)]
    with pytest.raises(ValueError, match="out-of-scope code"):
        combine(candidates, Weights(1.0, 1.0))


def test_weights_are_stored_as_2_or_5_numbers_and_read_back():
    assert Weights(0.5, 2.0).values() == (0.5, 2.0)
    five = Weights(0.5, 2.0, (-1.0, -0.5, 0.1))
    assert five.values() == (0.5, 2.0, -1.0, -0.5, 0.1) and Weights.from_values(five.values()) == five
    assert five.describe() == ("model^0.500 x retriever^2.000; out of scope: exp(-1.000 - 0.500 x best retriever "
                               "score) x model^0.100")
    with pytest.raises(ValueError, match="2 or 5"):
        Weights.from_values((1.0, 2.0, 3.0))


def test_newton_step_solves_the_linear_system_numpy_solves():
    rng = np.random.default_rng(4)
    for n in (1, 2, 5):
        m = rng.normal(size=(n, n))
        hess = -(m @ m.T + n * np.eye(n))   # negative definite
        grad = rng.normal(size=n)
        assert newton_step(hess.tolist(), grad.tolist()) == pytest.approx(list(np.linalg.solve(hess, -grad)), abs=1e-10)
    with pytest.raises(ValueError, match="do not vary"):
        newton_step([[-1.0, -1.0], [-1.0, -1.0]], [0.0, 1.0])   # singular: a flat direction


def synthetic_out_of_scope(n, values, seed):
    """Messages of 4 intent candidates and K-A, the right code drawn from combine() with the 5 weights."""
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        model = [rng.random() for _ in range(5)]
        retriever = [rng.random() for _ in range(4)]
        best = rng.uniform(0, 4)
        candidates = [Candidate(f"A-{x}", m / sum(model), r / sum(retriever)) for x, m, r in zip("ABCD", model, retriever)]
        candidates.append(Candidate("K-A", model[4] / sum(model), 0.0, best_score=best))
        p = combine(candidates, Weights.from_values(values))
        examples.append((candidates, rng.choices(list(p), weights=list(p.values()))[0]))
    return examples


def test_the_fit_with_an_out_of_scope_term_is_the_maximum_scipy_finds_and_recovers_the_weights():
    truth = (0.8, 1.5, 1.0, -1.2, 0.5)
    examples = synthetic_out_of_scope(3000, truth, seed=12)
    fitted = fit_weights(examples)
    assert fitted.out_of_scope is not None and fitted.fitted_on == 3000
    assert list(fitted.values()) == pytest.approx(list(truth), abs=0.3)
    best = minimize(lambda w: -log_likelihood_and_derivatives(examples, tuple(w))[0], x0=np.zeros(5),
                    jac=lambda w: -np.array(log_likelihood_and_derivatives(examples, tuple(w))[1]),
                    method="BFGS", options={"gtol": 1e-8})
    assert list(fitted.values()) == pytest.approx(list(best.x), abs=1e-4)
    assert fitted.log_likelihood == pytest.approx(-best.fun, abs=1e-6)


@pytest.mark.parametrize("out_of_scope", [False, True])
def test_the_fit_without_the_model_keeps_its_exponents_0_and_is_the_maximum_scipy_finds_over_the_rest(out_of_scope):
    if out_of_scope:
        examples, free = synthetic_out_of_scope(2000, (0.8, 1.5, 1.0, -1.2, 0.5), seed=5), [1, 2, 3]
    else:
        examples, free = synthetic(2000, 1.2, 0.7, seed=5), [1]
    fitted = fit_weights(examples, with_model=False)
    values = fitted.values()
    assert values[0] == 0.0 and (values[4] == 0.0 if out_of_scope else len(values) == 2)

    def full(w):  # the free weights in their places, the model's at 0
        out = [0.0] * len(values)
        for k, x in zip(free, w):
            out[k] = x
        return tuple(out)
    best = minimize(lambda w: -log_likelihood_and_derivatives(examples, full(w))[0], x0=np.zeros(len(free)),
                    jac=lambda w: -np.array(log_likelihood_and_derivatives(examples, full(w))[1])[free],
                    method="BFGS", options={"gtol": 1e-8})
    assert [values[k] for k in free] == pytest.approx(list(best.x), abs=1e-4)
    assert fitted.log_likelihood == pytest.approx(-best.fun, abs=1e-6)
    assert fitted.log_likelihood < fit_weights(examples).log_likelihood  # the model's exponents carry information


def test_the_decision_without_the_model_decides_a_line_whose_model_answer_failed():
    record = replace(line([["A-A", 1.0], ["A-B", 3.0]]), code=None, status="invalid", confidence=None)
    intent_of = {"A-A": "one", "A-B": "two"}
    assert combined_record(record, Weights(1.0, 1.0), intent_of) is record  # the combined decision keeps it failed
    decided = combined_record(record, Weights(0.0, 2.0), intent_of, decide_failed=True)
    # retriever 0.25 and 0.75, squared: 0.0625 against 0.5625 -> A-B at 0.9
    assert decided.status == "ok" and decided.code == "A-B" and decided.correct
    assert decided.confidence == pytest.approx(0.9) and decided.extra["model_code"] is None


def test_a_combined_line_with_an_out_of_scope_term_stores_its_5_weights_and_loads():
    record = line([["A-B", 0.2], ["A-A", 0.1], ["K-A", 0.0]], gold="K-A",
                  groups={"A": 0.6, "K": 0.4}, intents={"A": 0.5, "B": 0.5})
    # little resemblance to any intent (best 0.2) and v < 0: out of scope wins,
    # K-A: exp(2 - 5 x 0.2) x 0.4 = 1.09 against A-B: 0.6 x 0.5 x 2/3 = 0.2 and A-A: 0.1
    weights = Weights(1.0, 1.0, (2.0, -5.0, 1.0))
    combined = combined_record(record, weights, {"A-A": "one", "A-B": "two", "K-A": "oos"}, frozenset({"K-A"}))
    assert combined.code == "K-A" and combined.correct and combined.extra["combined_weights"] == list(weights.values())
    assert combined.confidence == pytest.approx(combined.p_group * combined.p_intent_given_group)
    assert Weights.of_line(ResultsLine.from_json(combined.to_json(), "combined")).values() == weights.values()


def test_a_combined_line_keeps_post_03s_fields_with_the_combined_decision():
    record = line([["A-B", 1.0], ["A-A", 3.0]], gold="A-A")
    # model: A-B 0.8 x 0.75 = 0.6, A-A 0.8 x 0.25 = 0.2; retriever 0.25, 0.75;
    # a = b = 1: 0.15 against 0.15 -> tie, broken for the model's own answer A-B
    tied = combined_record(record, Weights(1, 1), {"A-A": "one", "A-B": "two"})
    assert tied.code == "A-B" and tied.confidence == pytest.approx(0.5)
    # the retriever alone picks A-A, which is right
    alone = combined_record(record, Weights(0, 1), {"A-A": "one", "A-B": "two"})
    assert alone.code == "A-A" and alone.intent == "one" and alone.correct
    assert alone.confidence == pytest.approx(alone.p_group * alone.p_intent_given_group)
    assert alone.extra["model_code"] == "A-B" and alone.extra["model_confidence"] == 0.6
    assert list(alone.extra) == ["shortlist", "model_code", "model_confidence", "combined_weights"]
    assert sum(alone.group_distribution.values()) == pytest.approx(1.0)


def test_combined_py_fits_on_calib_writes_both_splits_and_later_posts_read_them(tmp_path, monkeypatch):
    import combined

    # Shortlist lines (as many as the splits hold, so they count as complete runs): the right code A-B is
    # on every shortlist of 2 with A-C; the model picks it when the line's number is even, the retriever
    # ranks it first when the number is a multiple of 3.
    def shortlist_line(number, split):
        line = result_line(number, right=number % 2 == 0, confidence=0.6)
        first, second = ("A-B", "A-C") if number % 3 == 0 else ("A-C", "A-B")
        return {**line, "id": f"{split}-{number}", "shortlist": [[first, 2.0], [second, 1.0]]}

    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path)
    for split in ("calib", "test"):
        lines = [shortlist_line(n, split) for n in range(770 if split == "calib" else 3080)]
        (tmp_path / f"banking77-shortlist2-{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    monkeypatch.setattr("sys.argv", ["combined.py", "--shortlist", "2"])
    assert combined.main() == 0
    test = read_variant("test", None, "banking77", "combined2")   # checked whole on reading
    assert test.path == tmp_path / "banking77-combined2-test.jsonl" and len(test.records) == 3080
    assert all(r.confidence == pytest.approx(r.p_group * r.p_intent_given_group) for r in test.records)
    # the written lines are combined_decisions' on the shortlist runs, its weights fitted on all 770 calib
    # answers (the right code is on every shortlist)
    shortlists = {split: read_variant(split, None, "banking77", "shortlist2").records
                  for split in ("calib", "test")}
    weights, decided = combined_decisions(shortlists["calib"], shortlists["test"], DATASETS["banking77"])
    assert weights.fitted_on == 770 and {Weights.of_line(r) for r in test.records} == {Weights.from_values(weights.values())}
    assert [r.code for r in test.records] == [r.code for r in decided["test"]]
    # Without the model, the right code is the retriever's second on 2 lines in 3, so its fitted exponent is
    # negative and that decision takes the second code: right when n % 3 != 0, on 513 of 770 and 2,053 of 3,080.
    alone_weights, alone = combined_decisions(shortlists["calib"], shortlists["test"], DATASETS["banking77"],
                                              with_model=False)
    assert alone_weights.model == 0.0 and alone_weights.retriever < 0
    assert [sum(r.correct for r in alone[split]) for split in ("calib", "test")] == [513, 2053]
    # what the model adds: the combined answers against that decision's, message by message
    number = {r.id: int(r.id.split("-")[1]) for r in test.records}
    only_with = sum(r.correct and number[r.id] % 3 == 0 for r in test.records)
    only_without = sum(not r.correct and number[r.id] % 3 != 0 for r in test.records)
    added = paired_cost(alone["test"], test.records, frozenset())
    assert (added.n, added.only_with, added.only_without) == (3080, only_with, only_without)
    assert added.difference == pytest.approx((only_with - only_without) / 3080)


def test_shortlist_py_lets_the_model_choose_only_among_the_retrievers_codes(client, tmp_path, run_script):
    out = tmp_path / "banking77-shortlist3-calib.jsonl"
    result = run_script("08-routes/beyond/combined/shortlist.py", "--split", "calib", "--limit", "4", "--shortlist", "3",
                        "--out", out, env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    loaded = saved_answers.read_split("calib", out)  # post 03's fields checked whole
    assert len(loaded.records) == 4
    for line in loaded.records:
        shortlist = line_shortlist(line)
        assert len(shortlist) == 3 and line.code in {code for code, _ in shortlist}
        scores = [score for _, score in shortlist]
        assert scores == sorted(scores, reverse=True)
        # the confidence keeps its definition, renormalized over the letters this grammar allows
        allowed_groups = {code[0] for code, _ in shortlist}
        assert set(line.group_distribution) == allowed_groups
        assert set(line.intent_distribution) == {code[2] for code, _ in shortlist if code[0] == line.group_letter}


def combined_router(dataset: str, folder):
    """(the Ready router of the combined decision on the nearest neighbours' shortlists, fitted on the committed runs
    of dataset, and its file in folder)."""
    router, _ = fit_decision_router(dataset, DECISIONS["model+neighbours"], offtopic_share=0)
    path = write_decision_router(router, folder / f"{dataset}-model+neighbours-decision-router.json")
    return ready_router(router, path), path


def test_route_beyond_routes_the_combined_decision_with_the_real_server(client, tmp_path, run_script):
    # the combined decision of a live message: the neighbours' shortlist, one request with its grammar, the product
    # with the router's weights; route_beyond.py serves the same router
    ready, path = combined_router("banking77", tmp_path)
    message = "I was charged twice for one coffee"
    model = client.model_info()["model"]
    record = ready.decider.line(message, lambda prompt, text: ask_live(client, prompt, text, model))
    assert Weights.of_line(record) == ready.router.weights         # the decision combined with the router's weights
    assert record.status == "ok" and record.code in {code for code, _ in line_shortlist(record)}
    assert route_of(record, ready.calibrated(record), ready.router.router) in ("act", "ask", "hand_over")
    result = run_script("08-routes/beyond/service/route_beyond.py", "--other-model", "--router", path, message,
                        env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    assert "decision: model+neighbours" in result.stdout and "\nroute: act\n" not in result.stdout


def test_a_combined_line_stays_a_valid_results_line_when_its_sums_pass_1_by_an_ulp():
    # Five candidates in one group: the group's mass is a sum of five floats, which can come out as
    # 1.0000000000000002 (it did on BANKING77 test); the line must still load (probabilities in [0, 1]).
    rng = random.Random(11)
    overshoots = 0
    for _ in range(200):
        shortlist = [[f"A-{x}", rng.random()] for x in "ABCDE"]
        intents = {x: rng.random() for x in "ABCDE"}
        total = sum(intents.values())
        record = replace(line(shortlist, code="A-A", groups={"A": 1.0}, intents={x: p / total for x, p in intents.items()}),
                         confidence=intents["A"] / total, p_intent_given_group=intents["A"] / total, p_group=1.0)
        combined = combined_record(record, Weights(0.5, 2.0), {f"A-{x}": x for x in "ABCDE"})
        mass = 0.0
        for p in combine(candidates_of(record), Weights(0.5, 2.0)).values():
            mass += p  # added up as combined_record does
        overshoots += mass > 1.0
        assert combined.p_group <= 1.0 and all(p <= 1.0 for p in combined.intent_distribution.values())
        ResultsLine.from_json(combined.to_json(), "combined")  # checked whole
    assert overshoots > 0  # the case happened at least once


# The committed shortlist and combined runs of 08-routes/reference/ (combined.py's sources: knn, linear, examples).
REFERENCE_RUNS = sorted(path.name for path in (saved_answers.ROOT / "08-routes" / "reference").glob("*/*.jsonl")
                        if re.search(r"-(?:example|linear)?(?:shortlist|combined)5-(?:calib|test)\.jsonl$", path.name))
COMBINED_RUNS = [(name.split("-")[0], source) for name in REFERENCE_RUNS for source, prefix in SOURCE_PREFIX.items()
                 if name.endswith("-calib.jsonl") and name.split("-")[1] == f"{prefix}combined5"]


def test_the_reference_runs_of_every_source_are_found():
    assert {("banking77", "knn"), ("banking77", "examples"), ("banking77", "linear"), ("clinc150", "knn")} <= set(
        COMBINED_RUNS)
    assert len(REFERENCE_RUNS) == 4 * len(COMBINED_RUNS)  # shortlist and combined, calib and test


@pytest.mark.parametrize("dataset,source", COMBINED_RUNS)
def test_combined_py_on_the_committed_shortlist_runs_writes_the_committed_combined_files(dataset, source, tmp_path,
                                                                                        monkeypatch):
    # The reference combined files are combined.py's output, not hand-made: refitting on the committed
    # shortlist runs writes them again (a change to the fit or the features shows here). Equal field by
    # field, floats to 1e-9: another platform's libm may differ in the last bits of exp and log.
    import combined
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path)
    monkeypatch.setattr("sys.argv", ["combined.py", "--dataset", dataset, "--source", source])
    assert combined.main() == 0
    for split in ("calib", "test"):
        name = f"{dataset}-{SOURCE_PREFIX[source]}combined5-{split}.jsonl"
        written = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        # the out-of-scope term (5 weights) on CLINC150 only
        assert {len(line["combined_weights"]) for line in written if "combined_weights" in line} == {
            5 if dataset == "clinc150" else 2}
        committed = [json.loads(line) for line in saved_answers.reference_path(name).read_text().splitlines()]
        assert len(written) == len(committed)
        for mine, theirs in zip(written, committed):
            assert mine.keys() == theirs.keys()
            for field, value in theirs.items():
                assert approx_equal(mine[field], value), (theirs["id"], field)


def approx_equal(a, b):
    """Equal JSON values, numbers to a relative 1e-9 (absolute 1e-12 near 0)."""
    if isinstance(b, float) or isinstance(a, float):
        return isinstance(a, (int, float)) and not isinstance(a, bool) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(approx_equal(a[k], b[k]) for k in b)
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(map(approx_equal, a, b))
    return a == b


def test_the_combined_decision_on_clinc150_uses_the_out_of_scope_term(client, tmp_path):
    # Integration: the committed CLINC150 shortlist calib run (5 weights), the retriever, one request with the
    # shortlist grammar (K-A always allowed) to the real server. The 0.5B test model may answer anything
    # on the shortlist; an out-of-scope decision must hand over.
    ready, _ = combined_router("clinc150", tmp_path)
    message = "how many moons does jupiter have"
    assert ready.router.weights.out_of_scope is not None and ready.router.router.out_of_scope == ("K-A",)
    model = client.model_info()["model"]
    record = ready.decider.line(message, lambda prompt, text: ask_live(client, prompt, text, model))
    assert record.status == "ok" and re.fullmatch(r"[A-K]-[A-Z]", record.code)
    assert "K-A" in {code for code, _ in line_shortlist(record)}
    if record.code == "K-A":
        assert route_of(record, ready.calibrated(record), ready.router.router) == "hand_over"


@pytest.mark.parametrize("name", REFERENCE_RUNS)
def test_every_shortlist_and_combined_reference_line_loads_and_is_written_back_as_read(name):
    # post 03's fields checked whole, the shortlist and the weights by post 08's readers, the text byte for byte
    path = saved_answers.reference_path(name)
    assert path.parent.parent.parent.name == "08-routes"
    texts = path.read_text(encoding="utf-8").splitlines()
    lines = [ResultsLine.from_json(json.loads(text), f"{name} line {n}") for n, text in enumerate(texts, 1)]
    assert [json.dumps(line.to_json(), ensure_ascii=False) for line in lines] == texts
    for line in lines:
        line_shortlist(line)
        assert (Weights.of_line(line) is None) == ("shortlist" in name)


def test_combined_py_compares_on_the_messages_of_a_partial_shortlist_run_given_with_results(tmp_path, monkeypatch,
                                                                                            capsys):
    # A test run of 40 messages only (shortlist.py --limit 40): not read by default, so given with --results, and
    # the row of the model alone counts the plain run's answers to those 40 messages only. The plain test run
    # answers 3,080 messages: right on ids below 40 only when even, so 20 of 40 (50.0%); on all, 20 of 3,080.
    import combined

    def shortlist_line(number, split):
        line = result_line(number, right=number % 2 == 0, confidence=0.6)
        return {**line, "id": f"{split}-{number}", "shortlist": [["A-B", 2.0], ["A-C", 1.0]]}
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path)
    calib = write_lines(tmp_path / "banking77-shortlist2-calib.jsonl", [shortlist_line(n, "calib") for n in range(770)])
    part = write_lines(tmp_path / "part.jsonl", [shortlist_line(n, "test") for n in range(40)])
    plain_calib = write_lines(tmp_path / "plain-calib.jsonl",
                              [{**result_line(n, n % 2 == 0), "id": f"calib-{n}"} for n in range(770)])
    plain_test = write_lines(tmp_path / "plain-test.jsonl",
                             [{**result_line(n, n % 2 == 0 and n < 40), "id": f"test-{n}"} for n in range(3080)])
    monkeypatch.setattr("sys.argv", ["combined.py", "--shortlist", "2", "--calib", str(calib), "--results", str(part),
                                     "--plain-calib", str(plain_calib), "--plain-results", str(plain_test)])
    assert combined.main() == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("model alone"))
    assert row.split()[-2:] == ["50.0%", "50.0%"]
    assert len(read_variant("test", tmp_path / "banking77-combined2-test.jsonl", "banking77", "combined2").records) == 40
