"""Post 07: AUROC, accuracy-coverage, AURC and coverage at a target accuracy, by hand and against scikit-learn."""
import json
import random
from pathlib import Path

import numpy as np
import pytest
from separation import (SweepPoint, SingleClassError, accuracy_coverage, aurc, auroc, coverage_at_accuracy,
                        optimal_aurc, order_change, point_at_coverage, print_measures)
from isotonic import confidence_variants
from sklearn.metrics import roc_auc_score
from saved_answers import load_results

ROOT = Path(__file__).resolve().parents[1]
SEPARATION = ROOT / "07-separation" / "separation.py"
COVERAGE_PLOT = ROOT / "07-separation" / "coverage_plot.py"

# Seven answers, ties at 0.8 (three answers) and at 0.5 (two answers).
CONFIDENCES = [0.5, 0.8, 0.2, 0.9, 0.8, 0.5, 0.8]
CORRECTS = [False, True, False, True, False, True, True]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_auroc_equals_scikit_learn_with_many_ties(seed):
    rng = np.random.default_rng(seed)
    # one decimal: 11 distinct values for 500 answers, so almost every answer is tied
    confidences = np.round(rng.random(500), 1)
    corrects = rng.random(500) < confidences
    assert abs(auroc(confidences.tolist(), corrects.tolist()) - roc_auc_score(corrects, confidences)) < 1e-12


def test_auroc_by_hand_with_ties():
    # right: 0.9, 0.8, 0.8, 0.5; wrong: 0.8, 0.5, 0.2 -> 4 x 3 = 12 pairs
    # 0.9 beats all 3 wrongs: 3; each 0.8 beats 0.5 and 0.2 and ties 0.8: 2.5, twice = 5;
    # 0.5 beats 0.2 and ties 0.5: 1.5  ->  (3 + 5 + 1.5) / 12 = 9.5 / 12
    assert auroc(CONFIDENCES, CORRECTS) == pytest.approx(9.5 / 12)


def test_auroc_extremes():
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert auroc([0.5] * 4, [True, False, True, False]) == 0.5   # every pair tied


@pytest.mark.parametrize("corrects, which", [([True, True, True], "right"), ([False, False], "wrong")])
def test_auroc_of_a_single_class_raises_a_clear_value_error(corrects, which):
    with pytest.raises(SingleClassError, match=f"all {len(corrects)} answers are {which}: there is no pair"):
        auroc([0.3, 0.7, 0.9][:len(corrects)], corrects)
    assert issubclass(SingleClassError, ValueError)


def test_bad_input_is_refused_by_the_shared_guard():
    with pytest.raises(ValueError, match="empty"):
        auroc([], [])
    with pytest.raises(ValueError, match="lengths differ"):
        accuracy_coverage([0.5], [True, False])
    with pytest.raises(ValueError, match="outside"):
        aurc([1.5], [True])


def test_accuracy_coverage_keeps_tied_answers_together():
    # sorted high to low: 0.9 R | 0.8 R, 0.8 W, 0.8 R | 0.5 W, 0.5 R | 0.2 W
    # 0.9: kept 1, right 1 -> coverage 1/7, accuracy 1
    # 0.8: kept 1 + 3 = 4, right 1 + 2 = 3 -> coverage 4/7, accuracy 3/4
    # 0.5: kept 4 + 2 = 6, right 3 + 1 = 4 -> coverage 6/7, accuracy 4/6
    # 0.2: kept 7, right 4 -> coverage 1, accuracy 4/7 (the overall accuracy)
    points = accuracy_coverage(CONFIDENCES, CORRECTS)
    assert points == [SweepPoint(0.9, 1, 1, 7, 4), SweepPoint(0.8, 4, 3, 7, 4), SweepPoint(0.5, 6, 4, 7, 4),
                      SweepPoint(0.2, 7, 4, 7, 4)]
    assert [(p.coverage, p.accuracy) for p in points] == [(1 / 7, 1.0), (4 / 7, 3 / 4), (6 / 7, 4 / 6), (1.0, 4 / 7)]


def test_accuracy_coverage_does_not_depend_on_the_order_of_the_answers():
    pairs = list(zip(CONFIDENCES, CORRECTS))
    random.Random(3).shuffle(pairs)
    confidences, corrects = zip(*pairs)
    assert accuracy_coverage(list(confidences), list(corrects)) == accuracy_coverage(CONFIDENCES, CORRECTS)


def test_aurc_by_hand_without_ties():
    # 0.9 R, 0.8 W, 0.7 R, 0.6 R: risk of the top 1, 2, 3, 4 = 0, 1/2, 1/3, 1/4
    # mean = (0 + 6/12 + 4/12 + 3/12) / 4 = 13/48
    assert aurc([0.9, 0.8, 0.7, 0.6], [True, False, True, True]) == pytest.approx(13 / 48)


def test_aurc_by_hand_with_ties():
    # each answer gets the risk of its whole tie group (points above):
    # 1 answer x 0 + 3 answers x 1/4 + 2 answers x 2/6 + 1 answer x 3/7
    # = 3/4 + 2/3 + 3/7 = (63 + 56 + 36) / 84 = 155/84, divided by 7 answers = 155/588
    assert aurc(CONFIDENCES, CORRECTS) == pytest.approx(155 / 588)


def test_aurc_without_ties_is_the_mean_risk_of_the_top_k():
    rng = np.random.default_rng(7)
    confidences = rng.random(300)          # continuous: no ties
    corrects = rng.random(300) < confidences
    ranked = corrects[np.argsort(-confidences)]
    top_k_risk = 1 - np.cumsum(ranked) / np.arange(1, 301)
    assert aurc(confidences.tolist(), corrects.tolist()) == pytest.approx(top_k_risk.mean(), abs=1e-12)


def test_optimal_aurc_by_hand():
    # 2 right of 4, right first: risk of the top 1..4 = 0, 0, 1/3, 2/4 -> (1/3 + 1/2) / 4 = 5/24
    assert optimal_aurc([False, True, False, True]) == pytest.approx(5 / 24)
    assert optimal_aurc([False, True, False, True]) == pytest.approx(aurc([0.1, 0.9, 0.2, 0.8],
                                                                          [False, True, False, True]))


def test_coverage_at_accuracy_by_hand():
    points = accuracy_coverage(CONFIDENCES, CORRECTS)   # accuracies 1, 3/4, 4/6, 4/7 at coverage 1/7 .. 1
    assert coverage_at_accuracy(points, 0.95).coverage == 1 / 7
    assert coverage_at_accuracy(points, 0.75).coverage == 4 / 7   # 3/4 reaches 0.75 exactly
    assert coverage_at_accuracy(points, 0.6).threshold == 0.5     # 4/6 = 0.667 >= 0.6, 4/7 = 0.571 is not
    assert coverage_at_accuracy(points, 0.5).coverage == 1.0


def test_coverage_at_accuracy_takes_the_largest_coverage_not_the_first_crossing():
    # 0.9 R, 0.8 W, 0.7 R, 0.6 R: accuracy 1, 1/2, 2/3, 3/4 -> for 0.7, coverage 1/4 and 4/4 qualify
    points = accuracy_coverage([0.9, 0.8, 0.7, 0.6], [True, False, True, True])
    assert coverage_at_accuracy(points, 0.7).coverage == 1.0


def test_coverage_at_accuracy_is_none_when_unreachable():
    # the most confident answer is wrong: accuracy 0 at coverage 1/2, then 1/2 at coverage 1
    points = accuracy_coverage([0.9, 0.5], [False, True])
    assert coverage_at_accuracy(points, 0.95) is None
    with pytest.raises(ValueError, match="outside"):
        coverage_at_accuracy(points, 0.0)


def test_point_at_coverage_may_keep_more_than_asked_because_of_ties():
    points = accuracy_coverage(CONFIDENCES, CORRECTS)
    assert point_at_coverage(points, 0.1).kept == 1      # 1/7 = 14% >= 10%
    assert point_at_coverage(points, 0.2).kept == 4      # the three answers at 0.8 come in together
    assert point_at_coverage(points, 1.0).kept == 7


def test_order_change_counts_reversed_and_newly_tied_pairs():
    # raw 0.1 < 0.2 < 0.3 < 0.4; the other keeps (1, 2) apart but swaps them, ties 3 and 4
    # pairs: 6; reversed: (0.1, 0.2); tied: (0.3, 0.4)
    change = order_change([0.1, 0.2, 0.3, 0.4], [0.5, 0.4, 0.9, 0.9])
    assert (change.pairs, change.reversed, change.tied, change.split) == (6, 1, 1, 0)
    # a tie in the first split by the second
    assert order_change([0.5, 0.5], [0.1, 0.2]).split == 1


def test_order_change_equals_brute_force():
    rng = random.Random(5)
    first = [round(rng.random(), 1) for _ in range(120)]
    second = [round(rng.random(), 1) for _ in range(120)]
    pairs = [(i, j) for i in range(120) for j in range(i + 1, 120)]
    change = order_change(first, second)
    assert change.reversed == sum((first[i] - first[j]) * (second[i] - second[j]) < 0 for i, j in pairs)
    assert change.tied == sum(first[i] != first[j] and second[i] == second[j] for i, j in pairs)
    assert change.split == sum(first[i] == first[j] and second[i] != second[j] for i, j in pairs)


def test_the_aurocs_the_script_ends_with_match_scikit_learn_on_the_reference_files():
    # separation.py's printout on these files is pinned by 07's README block
    _, calib = load_results("calib")
    _, test = load_results("test")
    variants = confidence_variants(calib, test)
    corrects = [r.correct for r in test]
    aurocs = print_measures(variants, corrects)
    assert list(aurocs) == ["raw", "temperature", "isotonic"]
    for name, confidences in variants.items():
        assert aurocs[name] == pytest.approx(roc_auc_score(corrects, confidences))


def test_separation_script_runs_on_the_reference_files(run_script):
    assert run_script(SEPARATION).returncode == 0


def test_every_auroc_is_undefined_when_every_answer_is_right(tmp_path, run_script):
    _, records = load_results("test")
    right = [r for r in records if r.correct][:20]
    with pytest.raises(SingleClassError, match="all 20 answers are right"):
        auroc([r.confidence for r in right], [True] * 20)
    _, calib = load_results("calib")
    assert print_measures(confidence_variants(calib, right), [True] * 20) == dict.fromkeys(
        ["raw", "temperature", "isotonic"])
    # the script reports it and goes on to the end instead of failing
    path = tmp_path / "all-right.jsonl"
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in right), encoding="utf-8")
    assert run_script(SEPARATION, "--results", path).returncode == 0


def test_coverage_plot_saves_a_png(tmp_path, run_script):
    png = tmp_path / "coverage.png"
    result = run_script(COVERAGE_PLOT, "--png", png, "--no-show")
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("script, extra", [(SEPARATION, []), (COVERAGE_PLOT, ["--no-show"])])
def test_a_missing_results_file_exits_2_with_one_line(script, extra, tmp_path, run_script):
    result = run_script(script, "--results", tmp_path / "none.jsonl", *extra)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "run.py --split test" in result.stderr


def test_default_png_names_carry_the_dataset_except_for_banking77(tmp_path):
    from argparse import Namespace

    from plot import png_path
    script = ROOT / "07-separation" / "coverage_plot.py"
    folder = ROOT / "07-separation" / "results"
    assert (png_path(Namespace(png=None, dataset="banking77", split="test"), "coverage", script)
            == folder / "coverage-test.png")
    assert (png_path(Namespace(png=None, dataset="clinc150", split="calib"), "coverage", script)
            == folder / "coverage-clinc150-calib.png")
    assert (png_path(Namespace(png=tmp_path / "mine.png", dataset="clinc150", split="test"), "x", script)
            == tmp_path / "mine.png")
