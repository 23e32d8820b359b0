"""Post 06: pool adjacent violators, checked by hand and against scikit-learn's IsotonicRegression."""
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ece import ece, outcomes
from isotonic import confidence_variants, fit_isotonic, pool_adjacent_violators
from saved_answers import load_results
from sklearn.isotonic import IsotonicRegression

ROOT = Path(__file__).resolve().parents[1]


def test_pav_by_hand():
    # 1, 3, 2 -> the violating pair (3, 2) pools to 2.5
    assert pool_adjacent_violators([1, 3, 2], [1, 1, 1]) == [1, 2.5, 2.5]
    # a late low value pulls back everything before it: (4, 3, 2) then with 1 -> mean (4+3+2+1)/4 = 2.5
    assert pool_adjacent_violators([4, 3, 2, 1], [1, 1, 1, 1]) == [2.5, 2.5, 2.5, 2.5]
    # weights: (3 with weight 3, 1 with weight 1) -> (9 + 1) / 4 = 2.5
    assert pool_adjacent_violators([0, 3, 1], [1, 3, 1]) == [0, 2.5, 2.5]
    assert pool_adjacent_violators([], []) == []


def test_ties_in_confidence_are_pooled_whatever_their_order():
    # confidence 0.5 twice: one right, one wrong -> 0.5 at 0.5
    one = fit_isotonic([0.2, 0.5, 0.5, 0.9], [False, True, False, True])
    other = fit_isotonic([0.5, 0.9, 0.2, 0.5], [False, True, False, True])
    assert one == other
    assert one.thresholds == (0.2, 0.5, 0.9)
    assert one.values == (0.0, 0.5, 1.0)


def test_interpolation_is_linear_between_thresholds_and_clipped_outside():
    fit = fit_isotonic([0.2, 0.5, 0.5, 0.9], [False, True, False, True])
    assert fit(0.35) == pytest.approx(0.25)      # halfway from (0.2, 0) to (0.5, 0.5)
    assert fit(0.7) == pytest.approx(0.75)       # halfway from (0.5, 0.5) to (0.9, 1)
    assert fit(0.0) == 0.0 and fit(0.1) == 0.0   # below the fitted range: the first value
    assert fit(1.0) == 1.0                       # above: the last value
    assert fit(0.5) == 0.5


def test_blocks_list_the_flat_stretches():
    fit = fit_isotonic([0.1, 0.2, 0.3, 0.4], [True, False, True, True])
    # 1, 0 violate -> pooled 0.5 over 0.1-0.2; then 1 over 0.3-0.4
    assert fit.blocks() == [(0.1, 0.2, 0.5), (0.3, 0.4, 1.0)]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pav_equals_scikit_learn_with_ties_on_random_data(seed):
    rng = np.random.default_rng(seed)
    # rounding to 2 decimals makes many ties
    confidences = np.round(rng.random(400), 2)
    corrects = rng.random(400) < confidences ** 2
    fit = fit_isotonic(confidences.tolist(), corrects.tolist())
    oracle = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(confidences, corrects.astype(float))
    queries = np.concatenate([confidences, rng.random(300), [0.0, 1.0, -0.5, 1.5]])
    ours = np.array([fit(float(q)) for q in queries])
    assert np.max(np.abs(ours - oracle.predict(queries))) < 1e-9


def test_fitted_values_never_decrease_and_stay_in_0_1():
    rng = random.Random(8)
    confidences = [rng.random() for _ in range(300)]
    fit = fit_isotonic(confidences, [rng.random() < 0.5 for _ in confidences])
    assert all(a <= b for a, b in zip(fit.values, fit.values[1:]))
    assert all(0.0 <= v <= 1.0 for v in fit.values)


def test_a_single_answer_fits_a_constant():
    fit = fit_isotonic([0.7], [True])
    assert fit(0.1) == fit(0.7) == fit(0.99) == 1.0


def test_the_map_refuses_nan_with_a_value_error():
    # issue 12, case 9: NaN raised IndexError from deep inside bisect
    fit = fit_isotonic([0.2, 0.5, 0.9], [False, True, True])
    with pytest.raises(ValueError, match="confidence nan is not a number"):
        fit(float("nan"))


def test_empty_input_raises():
    with pytest.raises(ValueError, match="empty"):
        fit_isotonic([], [])


def test_the_isotonic_map_fitted_on_calib_lowers_the_ece_on_the_reference_test_split():
    # what the script's last line reports (its printout is pinned by 06's README block)
    _, calib = load_results("calib")
    _, test = load_results("test")
    variants = confidence_variants(calib, test, fit_isotonic(*outcomes(calib)))
    _, corrects = outcomes(test)
    assert list(variants) == ["raw", "temperature", "isotonic"]
    assert all(len(values) == len(corrects) for values in variants.values())
    # more than halved (06's README: raw 0.0849, isotonic 0.0234)
    assert ece(variants["isotonic"], corrects) < 0.5 * ece(variants["raw"], corrects)


def test_isotonic_script_runs_on_the_reference_files_and_saves_its_figure(tmp_path):
    png = tmp_path / "i.png"
    result = subprocess.run([sys.executable, str(ROOT / "06-isotonic/isotonic.py"), "--png", str(png), "--no-show"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
