"""Post 08's exact binomial intervals (intervals.py) and, beyond it, fixed-sequence certification (beyond/guarantee.py), by hand and against scipy."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from certified_separation import certified_cell, certified_coverage
from guarantee import Certification, binomial_tail, certified, certify, lower_bound, minimum_answers
from intervals import beta_quantile, clopper_pearson, percent_down, percent_up, regularized_beta
from scipy.special import betainc
from scipy.stats import beta, binom, binomtest
from separation import SweepPoint, accuracy_coverage

ROOT = Path(__file__).resolve().parents[1]

# Counts from a single trial to the size of the largest reference split (CLINC150 test: 5,500).
SIZES = (1, 2, 3, 5, 20, 77, 770, 3080, 5500)


def counts():
    """(k, n) pairs including k = 0 and k = n for every size."""
    for n in SIZES:
        for k in sorted({0, 1, 2, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
            yield k, n


@pytest.mark.parametrize("k, n", list(counts()))
def test_clopper_pearson_equals_scipy_beta_quantiles_to_1e_9(k, n):
    interval = clopper_pearson(k, n, 0.95)
    low = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)       # Clopper and Pearson 1934 in beta form
    high = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    assert abs(interval.low - low) < 1e-9 and abs(interval.high - high) < 1e-9
    assert (interval.k, interval.n, interval.estimate) == (k, n, k / n)


@pytest.mark.parametrize("k, n", list(counts()))
def test_clopper_pearson_equals_scipy_binomtest(k, n):
    # scipy's own Clopper-Pearson, computed from binomial tails rather than from beta quantiles
    interval = clopper_pearson(k, n, 0.9)
    exact = binomtest(k, n).proportion_ci(0.9, method="exact")
    assert abs(interval.low - exact.low) < 1e-9 and abs(interval.high - exact.high) < 1e-9


def test_twenty_right_of_twenty_is_not_certainty():
    # 0.025 ** (1 / 20) = exp(ln 0.025 / 20) = exp(-3.6889 / 20) = exp(-0.18444) = 0.8316
    interval = clopper_pearson(20, 20)
    assert round(interval.low, 4) == 0.8316 and interval.high == 1.0
    assert interval.low == pytest.approx(0.025 ** (1 / 20), abs=1e-12)


def test_the_edges_by_hand():
    # k = 0: high = 1 - 0.025 ** (1 / n); k = n: low = 0.025 ** (1 / n); n = 1, k = 0: [0, 0.975]
    assert clopper_pearson(0, 10).high == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-12)
    assert clopper_pearson(0, 10).low == 0.0
    assert (clopper_pearson(0, 1).low, clopper_pearson(0, 1).high) == (0.0, pytest.approx(0.975, abs=1e-12))
    # one-sided: 3 of 3 at delta 0.05 -> 0.05 ** (1 / 3) = 0.3684, the figure of issue 14
    assert lower_bound(3, 3, 0.05) == pytest.approx(0.05 ** (1 / 3), abs=1e-12)
    assert round(lower_bound(3, 3, 0.05), 3) == 0.368
    assert lower_bound(0, 50, 0.05) == 0.0


def test_one_sided_bound_equals_the_lower_end_of_a_two_sided_interval_at_twice_delta():
    for k, n in ((17, 21), (59, 77), (1, 5500)):
        assert lower_bound(k, n, 0.05) == pytest.approx(clopper_pearson(k, n, 0.90).low, abs=1e-12)
        assert lower_bound(k, n, 0.05) == pytest.approx(beta.ppf(0.05, k, n - k + 1), abs=1e-9)


def test_regularized_beta_and_binomial_tail_equal_scipy():
    rng = np.random.default_rng(11)
    for _ in range(300):
        a, b = rng.integers(1, 6000, size=2)
        x = rng.random()
        assert abs(regularized_beta(x, a, b) - betainc(a, b, x)) < 1e-11
    for k, n in counts():
        for p in (0.0, 1e-4, 0.3, 0.55, 0.9, 0.985, 1.0):
            assert abs(binomial_tail(k, n, p) - binom.sf(k - 1, n, p)) < 1e-11
    assert binomial_tail(0, 5, 0.3) == 1.0 and binomial_tail(6, 5, 0.3) == 0.0


def test_beta_quantile_inverts_the_distribution():
    for q, a, b in ((0.025, 1, 20), (0.5, 3, 3), (0.975, 600, 5), (0.05, 2000, 3500)):
        assert abs(beta_quantile(q, a, b) - beta.ppf(q, a, b)) < 1e-9
        assert abs(regularized_beta(beta_quantile(q, a, b), a, b) - q) < 1e-9


def test_certified_is_the_same_decision_as_the_lower_bound_reaching_the_target():
    rng = np.random.default_rng(12)
    for _ in range(300):
        n = int(rng.integers(1, 400))
        k = int(rng.integers(0, n + 1))
        target, delta = float(rng.uniform(0.05, 0.99)), float(rng.choice([0.01, 0.05, 0.1]))
        assert certified(k, n, target, delta) == (lower_bound(k, n, delta) >= target)


def test_minimum_answers_by_hand():
    # all right, n of n: the bound is delta ** (1 / n) >= target when n >= ln(delta) / ln(target)
    # 98.5%: ln 0.05 / ln 0.985 = -2.9957 / -0.015114 = 198.2 -> 199; 90%: 2.9957 / 0.10536 = 28.4 -> 29
    assert minimum_answers(0.985, 0.05) == 199
    assert minimum_answers(0.90, 0.05) == 29
    assert minimum_answers(0.05, 0.05) == 1            # one right answer: bound 0.05
    for target in (0.3, 0.6, 0.95, 0.99):
        n = minimum_answers(target)
        assert n > 1 and certified(n, n, target) and not certified(n - 1, n - 1, target)


def point(kept: int, right: int, threshold: float) -> SweepPoint:
    return SweepPoint(threshold, kept, right, 1000, 500)  # 1,000 answers, 500 of them right in all


def test_fixed_sequence_stops_at_the_first_failure_even_when_a_later_threshold_would_pass():
    # target 0.6, delta 0.05: needed = ceil(ln 0.05 / ln 0.6) = ceil(5.86) = 6
    # 40 of 50: bound 0.684 passes; 60 of 100: bound 0.513 fails -> stop; 160 of 200 would pass (0.748) but is never tried
    points = [point(3, 3, 0.9), point(50, 40, 0.8), point(100, 60, 0.7), point(200, 160, 0.6)]
    result = certify(points, 0.6)
    assert result.point == points[1] and result.failed == points[2]
    assert result.first == points[1]                   # 3 answers cannot reach 60%: passed over, not a failure
    assert result.lower == pytest.approx(lower_bound(40, 50), abs=1e-15) and result.lower >= 0.6
    assert result.failed_lower == pytest.approx(lower_bound(60, 100), abs=1e-15) and result.failed_lower < 0.6
    assert certified(160, 200, 0.6)                    # the threshold the fixed sequence never reaches


def test_when_the_first_tested_threshold_fails_nothing_is_certified():
    result = certify([point(10, 6, 0.9), point(50, 45, 0.5)], 0.6)
    assert result.point is None and result.first == result.failed == point(10, 6, 0.9)


def test_too_few_answers_or_a_target_of_one_certify_nothing():
    few = certify([point(5, 5, 0.9), point(100, 100, 0.1)], 0.985)     # needs 199
    assert few == Certification(0.985, 0.05, None, None, None, None, None) and few.needed == 199
    perfect = certify([point(5000, 5000, 0.1)], 1.0)
    assert perfect.point is None and perfect.needed is None


def test_certified_coverage_tries_the_thresholds_of_the_table_only():
    # 100 answers at 100 distinct confidences 0.99, 0.98, ...: the grid is the point keeping 10, 20, ..., 100.
    # All right from the top down to 10 answers, then the 11th answer is wrong, then right again down to 60.
    confidences = [1 - i / 100 for i in range(1, 101)]
    corrects = [i != 10 and i < 60 for i in range(100)]
    curve = accuracy_coverage(confidences, corrects)
    result = certified_coverage(curve, 0.75)
    # needed for 75%: ceil(ln 0.05 / ln 0.75) = ceil(10.4) = 11 -> first tested is 20 (19 right)
    # kept:  20 19/20 bound 0.784 pass | 30 29/30 0.851 | 40 39/40 0.887 | 50 49/50 0.909 | 60 59/60 0.923
    #        70 59/70 0.753 pass | 80 59/80 0.644 fail -> certified at 70 answers
    assert result.first.kept == 20 and result.point.kept == 70 and result.failed.kept == 80
    assert result.point.threshold == confidences[69]
    # Every threshold as a step instead: the first with 11 answers has 10 right, bound 0.636 < 0.75: nothing.
    fine = certify(curve, 0.75)
    assert fine.point is None and (fine.failed.kept, fine.failed.hits) == (11, 10)


def test_certify_guards():
    with pytest.raises(ValueError, match="no points"):
        certify([], 0.9)
    with pytest.raises(ValueError, match="delta"):
        certify([point(10, 10, 0.5)], 0.9, delta=0.0)
    with pytest.raises(ValueError, match="target"):
        certify([point(10, 10, 0.5)], 1.5)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(5, 3)
    with pytest.raises(ValueError, match="whole numbers"):
        lower_bound(2.5, 3)
    with pytest.raises(ValueError, match="level"):
        clopper_pearson(1, 3, level=1.0)


def test_certified_separation_refuses_a_bad_delta_in_one_line():
    script = ROOT / "08-routes" / "beyond" / "guarantees" / "certified_separation.py"
    bad = subprocess.run([sys.executable, str(script), "--delta", "1.5"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "delta must be in (0, 1)" in bad.stderr.splitlines()[-1]


def test_certified_cell_says_why_there_is_no_certified_point():
    curve = accuracy_coverage([0.9] * 59 + [0.5] * 41, [True] * 56 + [False] * 3 + [True] * 41)
    failed = certified_coverage(curve, 0.95)
    assert failed.point is None and (failed.failed.hits, failed.failed.kept) == (56, 59)
    assert certified_cell(failed) == f"none (56 of 59 right, bound {percent_down(lower_bound(56, 59))})"
    assert certified_cell(certified_coverage(accuracy_coverage([0.9] * 10, [True] * 10), 0.95)) == "none (needs 59 kept)"
    assert certified_cell(certified_coverage(curve, 1.0)) == "none (never certified)"


@pytest.mark.parametrize(("value", "down", "up"), [
    (0.98467, "98.4%", "98.5%"), (0.98412, "98.4%", "98.5%"), (0.985, "98.5%", "98.5%"),
    (0.0, "0.0%", "0.0%"), (1.0, "100.0%", "100.0%"), (0.99947, "99.9%", "100.0%")])
def test_bounds_are_printed_rounded_outwards(value, down, up):
    assert (percent_down(value), percent_up(value)) == (down, up)
