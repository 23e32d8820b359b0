"""Post 08: conformal ask sets (LAC score, split conformal), by hand, against numpy and scipy, and on the reference files."""
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ask_sets import (ConformalFit, beta_binomial_pmf, code_probability, conformal_quantile, coverage_range, covers,
                      fit_conformal, groups_of, label_groups, prediction_set, report_sets, score, set_route)
from out_of_scope import out_of_scope_codes
from result_lines import partial_line
from scipy.stats import betabinom
from saved_answers import load_results

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "08-routes" / "beyond" / "guarantees" / "ask_sets.py"

GROUPS = {"A": ("A", "B", "C"), "B": ("A", "B"), "C": ("A",)}


def record(code="A-B", gold="A-B", groups=None, intents=None, status="ok"):
    """A post 03 line with the fields the sets read: the model chose group A, letter B."""
    return partial_line(status=status, code=code if status == "ok" else None, gold_code=gold,
                        group_distribution=groups or {"A": 0.6, "B": 0.3, "C": 0.1},
                        intent_distribution=intents or {"A": 0.2, "B": 0.7, "C": 0.1})


def test_code_probability_by_hand():
    r = record()
    # chosen group A: P(A) x P(intent | A) = 0.6 x 0.7 = 0.42 for A-B, 0.6 x 0.2 = 0.12 for A-A, 0.06 for A-C
    assert code_probability(r, "A-B") == pytest.approx(0.42)
    assert code_probability(r, "A-A") == pytest.approx(0.12)
    # another group: P(group) x 1, the most any of its intents could get, since P(intent | B) <= 1
    assert code_probability(r, "B-A") == code_probability(r, "B-B") == 0.3
    assert code_probability(r, "C-A") == 0.1
    # a letter or group missing from the distributions counts 0; an answer without a code says nothing
    assert code_probability(record(intents={"B": 1.0}), "A-C") == 0.0
    assert code_probability(record(groups={"A": 1.0}), "B-A") == 0.0
    assert code_probability(record(status="invalid"), "C-A") == 1.0
    assert score(r, "A-B") == pytest.approx(0.58)


def test_the_bound_is_exact_for_a_group_of_one_intent():
    # CLINC150's K holds only K-A: P(K-A) = P(K) whether the model chose K or not
    chose_k = record(code="C-A", intents={"A": 1.0})
    assert code_probability(chose_k, "C-A") == code_probability(record(), "C-A") == 0.1


def test_conformal_quantile_is_the_ceil_n_plus_1_times_1_minus_alpha_smallest_score():
    scores = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6]            # n = 9
    # alpha 0.1: ceil(10 x 0.9) = 9 -> the 9th smallest, 0.9; alpha 0.2: ceil(8) = 8 -> 0.8;
    # alpha 0.25: ceil(7.5) = 8 -> 0.8; alpha 0.35: ceil(6.5) = 7 -> 0.7
    assert [conformal_quantile(scores, a).quantile for a in (0.1, 0.2, 0.25, 0.35)] == [0.9, 0.8, 0.8, 0.7]
    assert conformal_quantile(scores, 0.25).rank == 8
    # n = 5 at alpha 0.1: ceil(6 x 0.9) = ceil(5.4) = 6 > 5: no calib score is high enough, every code enters
    few = conformal_quantile(scores[:5], 0.1)
    assert few.quantile == math.inf and few.floor == 0.0


def test_conformal_quantile_matches_numpy_inverted_cdf_quantile():
    # the k-th smallest score is numpy's inverted-CDF quantile (the smallest score whose empirical distribution
    # function reaches the level; Hyndman and Fan 1996, definition 1) at any level in ((k - 1) / n, k / n]:
    # (k - 0.5) / n keeps clear of rounding at the edges
    rng = np.random.default_rng(21)
    for n in (10, 77, 770, 850):
        scores = rng.random(n)
        for alpha in (0.05, 0.1, 0.2, 0.3):
            level = (math.ceil((n + 1) * (1 - alpha)) - 0.5) / n
            expected = math.inf if level > 1 else np.quantile(scores, level, method="inverted_cdf")  # n = 10, a = 0.05
            assert conformal_quantile(scores.tolist(), alpha).quantile == expected


def test_prediction_set_by_hand_most_probable_first():
    r = record()
    # P: A-B 0.42, B-A 0.3, B-B 0.3, A-A 0.12, C-A 0.1, A-C 0.06
    at = lambda floor: prediction_set(r, ConformalFit(0.1, 9, 9, 1 - floor), GROUPS)  # noqa: E731
    assert at(0.4) == ("A-B",)
    assert at(0.25) == ("A-B", "B-A", "B-B")            # a code of another group enters with its whole group
    assert at(0.1) == ("A-B", "B-A", "B-B", "A-A", "C-A")
    assert at(0.5) == ()                                 # LAC sets can be empty
    assert prediction_set(record(status="invalid"), ConformalFit(0.1, 9, 9, 0.0), GROUPS) == (
        "A-A", "A-B", "A-C", "B-A", "B-B", "C-A")        # no code: every code


def test_covers_is_membership_of_the_gold_code():
    fit = ConformalFit(0.1, 9, 9, 0.75)                  # floor 0.25
    for gold in ("A-B", "B-A", "A-A", "C-A"):
        r = record(gold=gold)
        assert covers(r, fit) == (gold in prediction_set(r, fit, GROUPS))


def test_groups_are_read_from_the_answers_and_mixed_label_sets_refused():
    records = [record(), record(code="B-A", intents={"A": 0.5, "B": 0.5}), record(code="C-A", intents={"A": 1.0})]
    assert groups_of(records) == GROUPS
    with pytest.raises(ValueError, match="different label sets"):
        groups_of(records + [record(intents={"A": 0.5, "B": 0.5})])
    with pytest.raises(ValueError, match="no answer chose group C"):
        groups_of(records[:2])
    with pytest.raises(ValueError, match="no answer with a code"):
        groups_of([record(status="error")])
    assert label_groups(["B-B", "A-A", "B-A"]) == {"A": ("A",), "B": ("A", "B")}


def test_set_routes():
    assert set_route(("A-B",)) == "act"
    assert set_route(("K-A",), frozenset({"K-A"})) == "hand_over"          # out of scope alone
    assert set_route(("A-B", "B-A")) == set_route(("A-B", "B-A", "B-B")) == "ask"
    assert set_route(()) == set_route(("A-A", "A-B", "A-C", "B-A")) == "hand_over"


def test_beta_binomial_and_the_coverage_range_equal_scipy():
    for n, a, b in ((10, 2.0, 3.0), (3080, 694, 77), (5500, 681, 170)):
        ours = beta_binomial_pmf(n, a, b)
        assert max(abs(p - q) for p, q in zip(ours, betabinom.pmf(range(n + 1), n, a, b))) < 1e-12
    # n calib 770, alpha 0.1: k = ceil(771 x 0.9) = 694, so Beta(694, 77); 3080 test messages
    low, high = coverage_range(770, 3080, 0.1)
    assert low == betabinom.ppf(0.025, 3080, 694, 77) / 3080 and high == betabinom.ppf(0.975, 3080, 694, 77) / 3080
    assert low < 0.9 < high
    assert coverage_range(5, 100, 0.1) == (1.0, 1.0)                          # k > n: every set is everything


def synthetic_record(rng: random.Random) -> dict:
    """A model that is wrong in its own way: group and intent probabilities drawn at random, the gold code
    drawn from a mix of them and of a uniform choice. Any model keeps the guarantee; the set sizes differ."""
    group_weights = [rng.random() ** 3 for _ in GROUPS]
    group_distribution = {g: w / sum(group_weights) for g, w in zip(GROUPS, group_weights)}
    chosen = max(group_distribution, key=group_distribution.get)
    intent_weights = [rng.random() for _ in GROUPS[chosen]]
    intents = {x: w / sum(intent_weights) for x, w in zip(GROUPS[chosen], intent_weights)}
    codes = [f"{g}-{x}" for g, letters in GROUPS.items() for x in letters]
    if rng.random() < 0.5:
        gold = rng.choice(codes)
    else:
        gold_group = rng.choices(list(group_distribution), weights=list(group_distribution.values()))[0]
        gold = f"{gold_group}-{rng.choice(GROUPS[gold_group])}"
    return partial_line(status="ok", code=f"{chosen}-{max(intents, key=intents.get)}", gold_code=gold,
                        group_distribution=group_distribution, intent_distribution=intents)


def test_split_conformal_coverage_averages_k_over_n_plus_1_on_synthetic_splits():
    # With 50 exchangeable calib answers and no ties among the right codes' scores, the coverage of a new
    # message is exactly k / (n + 1) on average: k = ceil(51 x 0.9) = 46, 46 / 51 = 0.902. Over 1,000 splits of
    # 50 calib + 50 test messages (fixed seed) the mean is within 0.008 (about 4 standard errors) of it.
    # The rank one lower, ceil(50 x 0.9) = 45, would average 45 / 51 = 0.882 and fail.
    rng = random.Random(7)
    shares = []
    for _ in range(1000):
        messages = [synthetic_record(rng) for _ in range(100)]
        fit = fit_conformal(messages[:50], 0.1)
        shares.append(sum(covers(r, fit) for r in messages[50:]) / 50)
    assert abs(sum(shares) / len(shares) - 46 / 51) < 0.008


@pytest.mark.parametrize("dataset", ["banking77", "clinc150"])
@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_sets_reach_their_coverage_on_the_reference_test_files_within_the_exact_interval(dataset, alpha):
    _, calib = load_results("calib", dataset=dataset)
    _, test = load_results("test", dataset=dataset)
    fit = fit_conformal(calib, alpha)
    result = report_sets(test, fit, groups_of(calib + test), out_of_scope_codes(dataset))
    low, high = result.expected
    # The exact interval of the guarantee for this many calib and test messages (calib luck included):
    # coverage at least its lower end; ties and a calib split easier than the test one can only raise it.
    assert result.coverage.estimate >= low, (result.coverage, result.expected)
    assert low < 1 - alpha < high
    # and the exact (Clopper-Pearson) interval of the test coverage is the one the script prints
    assert result.coverage.k == sum(result.covered) and result.coverage.n == len(test)
    assert result.coverage.low <= result.coverage.estimate <= result.coverage.high


def test_script_reports_coverage_sizes_and_routes_for_an_alpha():
    result = subprocess.run([sys.executable, str(SCRIPT), "--dataset", "clinc150", "--alpha", "0.3"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    # what it reports, from the functions it calls: 151 codes in 11 groups, 5,500 test answers, sets that act
    # (one candidate) and sets that ask
    _, calib = load_results("calib", dataset="clinc150")
    _, test = load_results("test", dataset="clinc150")
    groups = groups_of(calib + test)
    assert (sum(len(letters) for letters in groups.values()), len(groups)) == (151, 11)
    sets = report_sets(test, fit_conformal(calib, 0.3), groups, out_of_scope_codes("clinc150"))
    assert len(sets.routes) == len(sets.sizes) == 5500 and {"act", "ask"} <= set(sets.routes)


def test_script_refuses_an_alpha_outside_0_1():
    result = subprocess.run([sys.executable, str(SCRIPT), "--alpha", "1.2"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "alpha must be in (0, 1)" in result.stderr.splitlines()[-1]
