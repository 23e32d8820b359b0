"""Beyond post 08: the certified act rule beside the point rule (08-routes/beyond/guarantees/certified_routes.py)."""
import argparse
import random

import pytest
from calib_split import add_fit_arguments
from certified_routes import (CertifiedThresholds, act_rule_lines, add_rule_arguments, fit_both, fit_certified, fit_rule,
                              rule_closing_line, thresholds_of_rule)
from guarantee import lower_bound
from certified_separation import certified_coverage
from routes import add_threshold_arguments, closing_line, fit_from, report, route_all, route_of, fit_thresholds
from saved_answers import load_results
from separation import accuracy_coverage, coverage_at_accuracy
from test_routes import IDENTITY, SIX, answer

SCRIPT = "08-routes/beyond/guarantees/certified_routes.py"


# The certified rule: an exact lower bound, thresholds tried from the top (post 07's certified_coverage).

def three_of_three_then_a_crowd() -> list[dict]:
    """3 right answers at 0.99, then 300 answers from 0.89 down to 0.10: 3 wrong, 2 right, 3 wrong, 2 right, ..."""
    return ([answer(0.99, True) for _ in range(3)]
            + [answer(0.89 - 0.79 * i / 299, i % 5 >= 3) for i in range(300)])


def test_the_certified_rule_refuses_where_the_point_rule_acts_on_3_of_3():
    calib = three_of_three_then_a_crowd()
    point = fit_thresholds(calib, IDENTITY, target=0.985)
    assert point.t_act == 0.99 and (point.act.kept, point.act.hits) == (3, 3)   # 3/3 = 100% >= 98.5%
    # ... although three right answers support only 0.05 ** (1 / 3) = 0.368 at 95% confidence
    assert lower_bound(3, 3, 0.05) == pytest.approx(0.3684, abs=1e-4)
    sure = fit_certified(calib, IDENTITY, target=0.985)
    assert sure.act is None and sure.t_act is None
    # 98.5% needs 199 answers, all right (0.05 ** (1 / 199) = 0.98506); the grid's first threshold with that many
    # keeps 70% of the 303 answers (213: the 3, then 210 of which 84 right): it fails and the testing stops there.
    c = sure.certification
    assert c.needed == 199 and c.first is c.failed and (c.first.kept, c.first.hits) == (213, 87)
    assert "act" not in route_all(calib, IDENTITY, sure)


def test_the_certified_rule_acts_on_the_raw_confidence_and_asks_below_it():
    # 60 answers: raw confidence 0.99 .. 0.40; all right above 0.70, then 1 in 3 right.
    records = [answer(round(0.99 - i / 100, 2), i < 30 or i % 3 == 0) for i in range(60)]
    sure = fit_certified(records, IDENTITY, target=0.6)
    # needed for 60%: ceil(ln 0.05 / ln 0.6) = 6; the grid keeps 6, 12, ..., 60 answers; all right down to 30,
    # 36: 32 right (bound 0.76), 42: 34 (0.68), 48: 36 (0.63), 54: 38 (0.59 < 0.6) -> certified at 48 answers
    assert (sure.act.kept, sure.act.hits) == (48, 36) and sure.act_condition().startswith("raw >= ")
    assert lower_bound(36, 48) >= 0.6 > lower_bound(38, 54)
    assert sure.t_act == certified_coverage(accuracy_coverage([r.confidence for r in records],
                                                               [r.correct for r in records]), 0.6).point.threshold
    # the act route compares the raw confidence: a calibrated value that says otherwise does not matter
    assert route_of(answer(sure.t_act, True), 0.0, sure) == "act"
    assert route_of(answer(sure.t_act - 0.01, True), 1.0, sure) != "act"
    # ask is fitted on the answers not acted on only (raw below t_act): the 12 at 0.51 .. 0.40
    assert sure.ask is None or sure.ask.kept <= 12


def test_certified_threshold_keeps_its_promise_in_at_least_95_percent_of_200_synthetic_calib_splits():
    # Known precision: the confidence c is uniform on [0, 1] and the answer is right with probability c, so the
    # precision of "act when c >= t" on new messages is exactly E[c | c >= t] = (1 + t) / 2: 90% needs t >= 0.8.
    # 200 calib splits of 2,000 answers (fixed seed); each fits both rules and is scored by that exact precision.
    rng = random.Random(14)
    target, kept, point_kept, acted = 0.90, 0, 0, 0
    for _ in range(200):
        confidences = [rng.random() for _ in range(2000)]
        corrects = [rng.random() < c for c in confidences]
        curve = accuracy_coverage(confidences, corrects)
        sure = certified_coverage(curve, target).point               # the certified rule's act threshold
        point = coverage_at_accuracy(curve, target)                  # the point rule's (lowest_cut on the same answers)
        acted += sure is not None
        kept += sure is None or (1 + sure.threshold) / 2 >= target   # acting on nothing breaks no promise
        point_kept += point is None or (1 + point.threshold) / 2 >= target
    assert kept >= 190               # at least 95% of the 200 splits (delta 0.05)
    assert acted >= 150              # and not by refusing to act: it acts in most splits
    assert point_kept < 190          # the point rule on the same splits misses the promise far more often


def test_the_simulated_rule_is_the_one_fit_thresholds_uses():
    rng = random.Random(15)
    records = [answer(c, rng.random() < c) for c in (rng.random() for _ in range(2000))]
    sure = fit_certified(records, IDENTITY, target=0.9)
    curve = accuracy_coverage([r.confidence for r in records], [r.correct for r in records])
    certified_point = certified_coverage(curve, 0.9).point
    assert sure.t_act == (None if certified_point is None else certified_point.threshold)
    assert fit_thresholds(records, IDENTITY, target=0.9).t_act == coverage_at_accuracy(curve, 0.9).threshold


def test_both_rules_side_by_side_with_their_calib_support():
    calib = three_of_three_then_a_crowd()
    lines = act_rule_lines(fit_thresholds(calib, IDENTITY, target=0.985), fit_certified(calib, IDENTITY, target=0.985))
    assert lines[1].split()[-3:] == ["95%", "lower", "bound"]
    # point: 3 answers, 3 right, 100.0%, lower bound 0.05 ** (1 / 3) = 0.368 -> "36.8%"
    assert lines[2].split() == ["point", "calibrated", ">=", "0.990", "3", "3", "100.0%", "36.8%"]
    # certified: none, and why (the first threshold tried keeps 213 answers, 87 right)
    assert lines[3].startswith("certified  none: the first threshold tested, raw >= ") and "keeps 213 answers, 87 right" in lines[3]
    assert "exchangeable" in lines[4] and "at least 199" in lines[4]


def test_rule_guard():
    with pytest.raises(ValueError, match="unknown rule"):
        fit_rule(SIX, IDENTITY, rule="lucky")


def test_the_certified_rule_routes_where_routes_py_does_not_look():
    # the subclass only changes what act compares: a post module needs no branch for it
    records = [answer(round(0.99 - i / 100, 2), i < 30 or i % 3 == 0) for i in range(60)]
    sure = fit_certified(records, IDENTITY, 0.6)
    assert isinstance(sure, CertifiedThresholds) and fit_rule(records, IDENTITY, 0.6, rule="certified") == sure
    assert type(fit_rule(records, IDENTITY, 0.6)) is type(fit_thresholds(records, IDENTITY, 0.6))


def rule_args(*argv: str) -> argparse.Namespace:
    """certified_routes.py's arguments as its parser reads argv."""
    parser = argparse.ArgumentParser()
    add_fit_arguments(parser)
    add_threshold_arguments(parser)
    add_rule_arguments(parser)
    return parser.parse_args(argv)


def test_with_the_point_rule_the_script_routes_as_routes_py_does(run_script):
    args = rule_args()
    _, calibrate, ours = thresholds_of_rule(args)
    _, test = load_results("test")
    calib = load_results("calib")[1]
    post_calibrate, post = fit_from(calib, args)
    assert ours == post
    ours_report = report(test, route_all(test, calibrate, ours))
    assert ours_report == report(test, route_all(test, post_calibrate, post))
    assert rule_closing_line(ours, ours_report, "test", args.delta) == closing_line(post, ours_report, "test") + " (point rule)"
    assert run_script(SCRIPT).returncode == 0


def test_routes_script_with_both_rules_and_exact_intervals_on_clinc150_test(run_script):
    args = rule_args("--dataset", "clinc150", "--target", "0.4", "--rule", "certified", "--delta", "0.1")
    _, calib = load_results("calib", dataset="clinc150")
    _, test = load_results("test", dataset="clinc150")
    calibrate, point, sure = fit_both(calib, args)
    assert sure.certification.delta == 0.1 and thresholds_of_rule(args)[2] == sure
    lines = act_rule_lines(point, sure)
    assert "90% lower bound" in lines[1] and [line.split()[0] for line in lines[2:4]] == ["point", "certified"]
    result = report(test, route_all(test, calibrate, sure), sure.out_of_scope)
    assert result.total == 5500
    assert rule_closing_line(sure, result, "test", 0.1).endswith("(certified rule)")
    assert run_script(SCRIPT, *["--dataset", "clinc150", "--target", "0.4", "--rule", "certified", "--delta", "0.1"]
                      ).returncode == 0
