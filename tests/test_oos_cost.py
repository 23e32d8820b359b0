"""08's oos_cost.py: BANKING77's answers with and without the out-of-scope code I-A, paired by message."""
import numpy as np
import pytest
from scipy.stats import norm

from oos_cost import WITH, WITHOUT, Z_95, paired_cost, read_run
from out_of_scope import out_of_scope_codes
from result_lines import partial_line

OUTSIDE = frozenset({"I-A"})


def line(number: int, code: str, gold: str = "A-B"):
    return partial_line(id=f"test-{number}", code=code, gold_code=gold, correct=code == gold)


def test_hand_counted_pairs():
    # message: without -> with; right code A-B everywhere
    without = [line(0, "A-B"), line(1, "A-B"), line(2, "A-C"), line(3, "A-B"), line(4, "A-C"), line(5, "A-C")]
    with_code = [line(0, "A-B"), line(1, "I-A"), line(2, "A-B"), line(3, "A-D"), line(4, "I-A"), line(5, "A-C")]
    cost = paired_cost(without, with_code, OUTSIDE)
    assert (cost.n, cost.right_without, cost.right_with) == (6, 3, 2)
    assert (cost.only_without, cost.only_with) == (2, 1)
    assert (cost.out_of_scope, cost.out_of_scope_right_without, cost.other_changes) == (2, 1, 2)
    assert cost.difference == pytest.approx(-1 / 6)
    # se = sqrt(b + c - (b - c)^2 / n) / n = sqrt(3 - 1/6) / 6
    se = (3 - 1 / 6) ** 0.5 / 6
    assert cost.interval() == pytest.approx((-1 / 6 - Z_95 * se, -1 / 6 + Z_95 * se))


def test_the_interval_is_the_normal_interval_of_the_per_message_differences():
    rng = np.random.default_rng(7)
    gold = "A-B"
    first = rng.random(500) < 0.3
    second = rng.random(500) < 0.25
    without = [line(k, gold if right else "A-C") for k, right in enumerate(first)]
    with_code = [line(k, gold if right else "I-A") for k, right in enumerate(second)]
    d = second.astype(float) - first.astype(float)
    half = norm.ppf(0.975) * d.std() / np.sqrt(len(d))  # the population std: the Wald interval
    assert paired_cost(without, with_code, OUTSIDE).interval() == pytest.approx((d.mean() - half, d.mean() + half))
    assert Z_95 == pytest.approx(norm.ppf(0.975), abs=1e-12)


def test_only_the_messages_in_both_runs_count_in_either_order():
    without = [line(0, "A-B"), line(1, "A-B"), line(2, "A-B")]
    with_code = [line(2, "I-A"), line(9, "A-B")]
    cost = paired_cost(without, with_code, OUTSIDE)
    assert (cost.n, cost.right_without, cost.right_with, cost.out_of_scope) == (1, 1, 0, 1)


def test_no_discordant_pair_gives_the_point_and_identical_runs_differ_by_zero():
    runs = [line(0, "A-B"), line(1, "A-C")]
    cost = paired_cost(runs, runs, OUTSIDE)
    assert cost.difference == 0.0 and cost.interval() == (0.0, 0.0) and cost.other_changes == 0


def test_all_right_without_and_all_out_of_scope_with_is_minus_one_and_stays_in_range():
    without = [line(k, "A-B") for k in range(3)]
    with_code = [line(k, "I-A") for k in range(3)]
    cost = paired_cost(without, with_code, OUTSIDE)
    assert cost.difference == -1.0 and cost.interval() == (-1.0, -1.0) and cost.out_of_scope_right_without == 3


def test_runs_without_a_shared_message_are_refused():
    with pytest.raises(ValueError, match="share no message id"):
        paired_cost([line(0, "A-B")], [line(1, "A-B")], OUTSIDE)
    with pytest.raises(ValueError, match="share no message id"):
        paired_cost([], [], OUTSIDE)


def test_a_message_with_two_right_codes_is_refused():
    with pytest.raises(ValueError, match="test-0 has the right code A-B in one run and A-C in the other"):
        paired_cost([line(0, "A-B")], [line(0, "A-B", gold="A-C")], OUTSIDE)


def test_the_committed_calib_runs_give_the_readmes_figures(run_script):
    with_code = read_run("calib", None, WITH, "--results")
    without = read_run("calib", None, WITHOUT, "--without")
    cost = paired_cost(without.records, with_code.records, out_of_scope_codes(WITH))
    assert out_of_scope_codes(WITH) == {"I-A"} and cost.n == 770    # every calib message answered in both runs
    assert cost.out_of_scope == sum(r.code == "I-A" for r in with_code.records if r.id in {w.id for w in without.records})
    result = run_script("08-routes/beyond/gate/oos_cost.py", "--split", "calib")
    assert result.returncode == 0, result.stderr


def test_a_banking77_file_given_as_the_run_with_the_code_is_refused_in_one_line(run_script):
    from saved_answers import reference_path
    result = run_script("08-routes/beyond/gate/oos_cost.py", "--split", "calib", "--results", str(reference_path("banking77-calib.jsonl")))
    assert result.returncode == 2
    with pytest.raises(ValueError, match="not a banking77oos file.*the banking77 ones with --without") as refused:
        read_run("calib", reference_path("banking77-calib.jsonl"), WITH, "--results")
    assert "--dataset" not in str(refused.value)          # read_split's own advice names an option oos_cost.py has not
    assert result.stderr.strip() == f"error: {refused.value}"    # that sentence, alone on one line


def test_a_banking77oos_file_given_as_the_run_without_the_code_is_refused_in_one_line(run_script):
    from saved_answers import reference_path
    result = run_script("08-routes/beyond/gate/oos_cost.py", "--split", "calib", "--without",
                        str(reference_path("banking77oos-calib.jsonl")))
    assert result.returncode == 2
    with pytest.raises(ValueError, match="not a banking77 file.*takes the banking77oos answers with --results"):
        read_run("calib", reference_path("banking77oos-calib.jsonl"), WITHOUT, "--without")
