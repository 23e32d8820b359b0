"""08-routes/beyond/prompt-price/prompt_price.py: the report's numbers on hand-made runs, and the paired comparison of
a shorter prompt against the post's on the same test messages."""
from __future__ import annotations

import prompt_price
import pytest
from oos_cost import PairedCost
from result_lines import result_line, write_lines


@pytest.fixture
def results(tmp_path, monkeypatch):
    """prompt_price's results folder, emptied into tmp_path."""
    monkeypatch.setattr(prompt_price, "OWN_RESULTS", tmp_path)
    return tmp_path


def calib_run() -> list[dict]:
    """10 right answers at 0.9 and 10 wrong at 0.3: isotonic maps 0.9 to 1.0 and 0.3 to 0.0, so t_act is 1.0."""
    return ([result_line(n, True, 0.9) for n in range(10)] + [result_line(n, False, 0.3) for n in range(10, 20)])


# test messages 1-4: (right, confidence) with the post's 5 examples and with 0
WITH_5 = [(True, 0.9), (True, 0.9), (False, 0.3), (True, 0.3)]
WITH_0 = [(True, 0.9), (False, 0.3), (False, 0.3), (True, 0.9)]


def test_a_shorter_prompt_is_paired_with_the_post_s_on_the_same_test_messages(results):
    for examples, answers in ((5, WITH_5), (0, WITH_0)):
        write_lines(results / f"banking77-prompt{examples}-calib.jsonl", calib_run())
        write_lines(results / f"banking77-prompt{examples}-test-sample4-seed0.jsonl",
                    [result_line(n, right, c) for n, (right, c) in enumerate(answers, start=1)])
    five = prompt_price.acted_on("banking77", 5, prompt_price.read_answers(
        results / "banking77-prompt5-test-sample4-seed0.jsonl"))
    zero = prompt_price.acted_on("banking77", 0, prompt_price.read_answers(
        results / "banking77-prompt0-test-sample4-seed0.jsonl"))
    # acted on: the answers at 0.9 (calibrated 1.0): 1 and 2 with 5 examples, 1 and 4 with 0
    assert [i for i, v in five.items() if v[1]] == ["test-1", "test-2"] and [i for i, v in zero.items() if v[1]] == [
        "test-1", "test-4"]
    # accuracy: 3 of 4 against 2 of 4, message 2 right only with 5: -25 points, one discordant pair
    accuracy = prompt_price.paired_prompts(five, zero, 0)
    assert accuracy == PairedCost(4, 3, 2, 1, 0, 0, 0, 0) and accuracy.difference == -0.25
    # acts: 2 each, message 2 only with 5, message 4 only with 0: 0 points, se = sqrt(2 - 0) / 4
    acts = prompt_price.paired_prompts(five, zero, 1)
    assert acts.difference == 0.0 and acts.interval() == pytest.approx((-1.96 * 2 ** 0.5 / 4, 1.96 * 2 ** 0.5 / 4),
                                                                        abs=1e-3)
    rows = prompt_price.paired_rows("banking77")
    assert rows[0].startswith("test sample4-seed0, against the post's 5 examples per intent")
    assert rows[1].startswith("  5 examples: accuracy 75.0%") and rows[2].startswith("  0 examples: accuracy 50.0%")
    assert "accuracy -25.0 points" in rows[2] and "acts +0.0 points" in rows[2]


def test_a_test_run_without_its_calib_run_names_the_command(results):
    write_lines(results / "banking77-prompt1-test-sample4-seed0.jsonl", [result_line(1, True, 0.9)])
    with pytest.raises(FileNotFoundError, match="prompt_price.py --dataset banking77 --examples 1"):
        prompt_price.acted_on("banking77", 1, prompt_price.read_answers(
            results / "banking77-prompt1-test-sample4-seed0.jsonl"))


def test_a_calib_sample_is_paired_with_thresholds_fitted_on_the_sample_itself(results):
    # no full calib run: each sample's acts come from a fit on its own 20 answers (0.9 -> 1.0 acted on, 0.3 not)
    five = calib_run()
    zero = [result_line(n, n < 5, 0.9 if n < 5 else 0.3) for n in range(20)]   # right only on the first 5
    write_lines(results / "banking77-prompt5-calib-sample20-seed0.jsonl", five)
    write_lines(results / "banking77-prompt0-calib-sample20-seed0.jsonl", zero)
    rows = prompt_price.paired_rows("banking77")
    assert rows[0] == ("calib sample20-seed0, against the post's 5 examples per intent (acts: thresholds fitted on "
                       "the sample itself, point rule at 98.5%):")
    # accuracy 10 of 20 against 5 of 20: -25 points, 5 discordant pairs all one way: se = sqrt(5 - 25/20) / 20
    half = 1.959963984540054 * (5 - 25 / 20) ** 0.5 / 20
    assert f"accuracy -25.0 points ({100 * (-0.25 - half):+.1f} to {100 * (-0.25 + half):+.1f}, 20 paired)" in rows[2]
    assert rows[1].startswith("  5 examples: accuracy 50.0%") and "acted on 50.0%" in rows[1]


def test_a_report_row_gives_accuracy_cross_fitted_ece_auroc_and_act_coverage(results, monkeypatch):
    # 20 answers, right at 0.9 and wrong at 0.3 two by two, so both halves (even and odd places) hold both: each
    # half's isotonic fit maps 0.9 to 1.0 and 0.3 to 0.0, the cross-fitted ECE is 0, AUROC 1.0, and the point
    # rule acts on the 10 at 0.9
    monkeypatch.setattr(prompt_price, "prompt_tokens", lambda dataset, examples: "~100")
    lines = [result_line(n, n % 4 < 2, 0.9 if n % 4 < 2 else 0.3) for n in range(20)]
    write_lines(results / "banking77-prompt0-calib.jsonl", lines)
    (row,) = prompt_price.report_rows("banking77")
    cells = row.split()
    assert cells[:6] == ["prompt0-calib.jsonl", "0", "~100", "20", "50.0%", "0.000"]
    assert cells[6:8] == ["1.000", "50.0%"]
    # all the right answers in one half: each is calibrated by a fit on the other half, which saw only wrong ones
    apart = write_lines(results / "apart.jsonl", [result_line(n, n % 2 == 0, 0.9 if n % 2 == 0 else 0.3)
                                                  for n in range(20)])
    assert prompt_price.cross_fitted_ece(prompt_price.read_answers(apart)) == pytest.approx(1.0)
