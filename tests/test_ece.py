"""Post 04: reliability bins, ECE, Brier score and NLL, by hand and against scikit-learn."""
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ece import bin_index, brier_score, check_inputs, ece, nll, outcomes, reliability_bins, signed
from saved_answers import load_results
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("confidence, expected", [
    (0.0, 0),          # 0 goes to the first bin
    (0.2, 3),          # 3/15 is an edge: it goes to the bin above, [0.2, 0.2667)
    (7 / 15, 7),       # 7/15 * 15 rounds to 7.000000000000001 or not; the edge rule decides, not the rounding
    (0.19999, 2),
    (14 / 15, 14),
    (1.0, 14),         # 1 goes to the last bin
])
def test_edge_confidence_goes_to_upper_bin(confidence, expected):
    assert bin_index(confidence, 15) == expected


def test_every_edge_k_over_n_opens_bin_k():
    for n in (5, 10, 15, 20, 30):
        assert [bin_index(k / n, n) for k in range(n)] == list(range(n))


def test_hand_computed_ece_with_zero_one_and_empty_bins():
    # 4 bins [0, .25) [.25, .5) [.5, .75) [.75, 1]
    confidences = [0.0, 0.1, 1.0, 0.8, 0.75]
    corrects = [False, True, True, False, True]
    bins = reliability_bins(confidences, corrects, n_bins=4)
    assert [b.count for b in bins] == [2, 0, 0, 3]            # two empty bins in the middle
    assert bins[0].mean_confidence == pytest.approx(0.05)    # (0 + 0.1) / 2, accuracy 1/2
    assert bins[0].accuracy == 0.5
    assert bins[1].mean_confidence is None and bins[1].contribution == 0.0
    assert bins[3].mean_confidence == pytest.approx(0.85)    # (1 + .8 + .75) / 3, accuracy 2/3
    assert bins[3].gap == pytest.approx(2 / 3 - 0.85)
    # ECE = 2/5 * |0.5 - 0.05| + 3/5 * |2/3 - 0.85| = 0.18 + 0.11 = 0.29
    assert ece(confidences, corrects, n_bins=4) == pytest.approx(0.29)


def test_all_answers_in_one_bin():
    # all in [0.6, 0.6667) of 15 bins: mean 0.62, accuracy 2/3 -> ECE |0.62 - 0.6667| = 0.04667
    assert ece([0.61, 0.62, 0.63], [True, True, False]) == pytest.approx(abs(0.62 - 2 / 3))


def test_one_bin_ece_is_mean_confidence_minus_accuracy():
    rng = random.Random(3)
    confidences = [rng.random() for _ in range(200)]
    corrects = [rng.random() < 0.4 for _ in range(200)]
    expected = abs(sum(confidences) / 200 - sum(corrects) / 200)
    assert ece(confidences, corrects, n_bins=1) == pytest.approx(expected, abs=1e-12)


def test_perfect_and_worst_confidence():
    assert ece([1.0, 1.0, 0.0], [True, True, False]) == 0.0
    assert ece([1.0, 0.0], [False, True]) == 1.0


def test_constant_confidence_at_the_accuracy_scores_zero():
    corrects = [True, False, False, True, False]
    assert ece([0.4] * 5, corrects) == pytest.approx(0.0, abs=1e-15)


def test_ece_matches_scikit_learn_calibration_curve_on_random_data():
    # scikit-learn puts a confidence on an edge in the bin below; random floats never land on one.
    rng = np.random.default_rng(11)
    for n_bins in (5, 10, 15, 20, 30):
        confidences = rng.random(1000)
        corrects = rng.random(1000) < confidences ** 1.5     # overconfident on purpose
        accuracy, mean_confidence = calibration_curve(corrects, confidences, n_bins=n_bins, strategy="uniform")
        counts = np.histogram(confidences, bins=np.linspace(0, 1, n_bins + 1))[0]
        counts = counts[counts > 0]
        expected = float(np.sum(counts / 1000 * np.abs(accuracy - mean_confidence)))
        assert ece(confidences.tolist(), corrects.tolist(), n_bins) == pytest.approx(expected, abs=1e-12)


def test_brier_and_nll_match_scikit_learn():
    rng = np.random.default_rng(5)
    confidences = rng.uniform(0.01, 0.99, 500)
    corrects = rng.random(500) < confidences
    assert brier_score(confidences.tolist(), corrects.tolist()) == pytest.approx(
        brier_score_loss(corrects, confidences), abs=1e-12)
    assert nll(confidences.tolist(), corrects.tolist()) == pytest.approx(
        log_loss(corrects, confidences, labels=[False, True]), abs=1e-12)


def test_brier_and_nll_by_hand_including_zero_and_one():
    # Brier: ((0.8-1)^2 + (0.3-0)^2) / 2 = (0.04 + 0.09) / 2 = 0.065
    assert brier_score([0.8, 0.3], [True, False]) == pytest.approx(0.065)
    # NLL: -(log 0.8 + log 0.7) / 2
    assert nll([0.8, 0.3], [True, False]) == pytest.approx(-(math.log(0.8) + math.log(0.7)) / 2)
    assert nll([1.0, 0.0], [True, False]) == pytest.approx(0.0, abs=1e-14)   # certain and right costs nothing
    assert nll([0.0], [True]) == pytest.approx(-math.log(1e-15))              # clipped, not infinite
    assert math.isfinite(nll([1.0], [False]))


@pytest.mark.parametrize("confidences, corrects, message", [
    ([], [], "empty"),
    ([0.5], [True, False], "lengths differ"),
    ([1.2], [True], "outside"),
    ([-0.1], [True], "outside"),
    ([float("nan")], [True], "outside"),
])
def test_bad_input_raises_a_value_error_naming_it(confidences, corrects, message):
    with pytest.raises(ValueError, match=message):
        check_inputs(confidences, corrects)
    with pytest.raises(ValueError, match=message):
        ece(confidences, corrects)


def test_the_reference_calibration_split_table_adds_up_to_its_ece():
    # the numbers ece.py --split calib prints (its printout is pinned by 04's README block)
    _, records = load_results("calib")
    confidences, corrects = outcomes(records)
    bins = reliability_bins(confidences, corrects)
    assert len(records) == 770 and sum(b.count for b in bins) == 770
    assert sum(b.contribution for b in bins) == pytest.approx(ece(confidences, corrects), abs=1e-12)
    assert 0.0 < ece(confidences, corrects) < 1.0
    # the constant-confidence trick: every answer at the accuracy lands in one bin with no gap
    accuracy = sum(corrects) / len(corrects)
    assert ece([accuracy] * len(corrects), corrects) == pytest.approx(0.0, abs=1e-12)


def test_ece_script_runs_on_the_reference_calibration_split():
    result = subprocess.run([sys.executable, str(ROOT / "04-is-the-confidence-honest/ece.py"), "--split", "calib"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_ece_script_names_the_command_for_a_missing_file(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "04-is-the-confidence-honest/ece.py"),
                             "--results", str(tmp_path / "none.jsonl")], capture_output=True, text=True)
    assert result.returncode == 2
    assert "run.py --split test" in result.stderr


def test_plot_script_saves_a_png(tmp_path):
    png = tmp_path / "reliability.png"
    result = subprocess.run([sys.executable, str(ROOT / "04-is-the-confidence-honest/plot.py"), "--split", "calib",
                             "--png", str(png), "--no-show"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("names, says_other_datasets", [(["banking77"], False), (["banking77", "alpha"], True)])
def test_png_help_names_other_datasets_only_when_there_are_some(monkeypatch, names, says_other_datasets):
    import argparse

    import plot
    monkeypatch.setattr(plot, "DATASETS", dict.fromkeys(names))
    parser = argparse.ArgumentParser()
    plot.add_plot_arguments(parser, "reliability")
    png_help = next(action.help for action in parser._actions if "--png" in action.option_strings)
    assert png_help.startswith("where to save the figure (default: results/reliability-<split>.png")
    assert ("<dataset>" in png_help) == says_other_datasets


def test_a_gap_that_rounds_to_zero_is_printed_without_a_sign():
    assert [signed(v) for v in (-0.0004, 0.0, 0.0004, -0.0132, 0.0214)] == ["0.000", "0.000", "0.000", "-0.013",
                                                                              "+0.021"]
