"""07's letter_order.py: the orders, the letters handed out again, the mapping back by intent name, the mean.

Hand-made label sets and results lines; the script runs against the real
test server with one message and two orders, and its files are checked.
"""
import json

import pytest
from banking77 import load_labels, load_split
from labels import Group, Intent, LabelSet
from letter_order import (debiased, flip_rate, intent_probabilities, mean_by_intent, order_of, prefill, reordered,
                          scores)
from result_lines import partial_line
from prompt import build_prompt, load_prompt


def small_labels() -> LabelSet:
    """Two groups: A CARDS (a, b, c) and B MONEY (d, e)."""
    def intent(group, letter, name):
        return Intent(group, letter, name, f"about {name}", (f"an example of {name}",))
    cards = Group("A", "CARDS", (intent("A", "A", "a"), intent("A", "B", "b"), intent("A", "C", "c")))
    money = Group("B", "MONEY", (intent("B", "A", "d"), intent("B", "B", "e")))
    return LabelSet((cards, money), (1, 2))


def test_the_orders_are_fixed():
    assert order_of(5, 0) == [0, 1, 2, 3, 4]
    assert order_of(5, 1) == [4, 3, 2, 1, 0]
    assert order_of(5, 2) == [2, 3, 4, 0, 1]  # the second half (from 5 // 2 = 2) first
    assert sorted(order_of(5, 3)) == [0, 1, 2, 3, 4] and order_of(5, 3) == order_of(5, 3)
    with pytest.raises(ValueError, match="start at 0"):
        order_of(5, -1)


def test_reversing_hands_the_letters_out_again_in_the_new_order():
    labels = reordered(small_labels(), 1)
    # MONEY is listed first now, so it is group A; its intents reversed: e is A-A, d is A-B.
    assert [(g.letter, g.name) for g in labels.groups] == [("A", "MONEY"), ("B", "CARDS")]
    assert {i.name: i.code for i in labels.intents} == {"e": "A-A", "d": "A-B", "c": "B-A", "b": "B-B", "a": "B-C"}
    assert labels.calibration_rows == (1, 2)
    prompt = build_prompt(labels)
    assert prompt.grammar == 'root ::= ("A-" [A-B]) | ("B-" [A-C])\n'
    assert "A-A e: about e" in prompt.system and "B-C a: about a" in prompt.system


def test_order_0_is_exactly_the_series_prompt_and_every_order_keeps_the_intents_and_their_groups():
    labels = load_labels()
    assert build_prompt(reordered(labels, 0)).sha256 == load_prompt().sha256
    members = {g.name: {i.name for i in g.intents} for g in labels.groups}
    for k in range(1, 5):
        other = reordered(labels, k)
        assert {g.name: {i.name for i in g.intents} for g in other.groups} == members
        assert build_prompt(other).sha256 != load_prompt().sha256


def test_answers_are_mapped_back_to_intent_names_under_a_permutation():
    labels = small_labels()
    built0, built1 = build_prompt(reordered(labels, 0)), build_prompt(reordered(labels, 1))
    # The same answer, intent c, in both orders: A-C in order 0, B-A in order 1.
    order0 = partial_line(status="ok", code="A-C", group_distribution={"A": 0.5, "B": 0.5},
                          intent_distribution={"A": 0.2, "B": 0.2, "C": 0.6})
    order1 = partial_line(status="ok", code="B-A", group_distribution={"A": 0.25, "B": 0.75},
                          intent_distribution={"A": 0.6, "B": 0.3, "C": 0.1})
    # order 0: a = 0.5 x 0.2 = 0.1, b = 0.1, c = 0.5 x 0.6 = 0.3
    assert intent_probabilities(order0, built0) == pytest.approx({"a": 0.1, "b": 0.1, "c": 0.3})
    # order 1, group B = CARDS listed c, b, a: c = 0.75 x 0.6 = 0.45, b = 0.75 x 0.3 = 0.225, a = 0.75 x 0.1 = 0.075
    assert intent_probabilities(order1, built1) == pytest.approx({"c": 0.45, "b": 0.225, "a": 0.075})
    # The same letters name other intents in the other order: B-A is d in order 0, c in order 1.
    assert (built0.codes["B-A"].intent, built1.codes["B-A"].intent) == ("d", "c")
    # mean: c = (0.3 + 0.45) / 2 = 0.375, b = (0.1 + 0.225) / 2 = 0.1625, a = (0.1 + 0.075) / 2 = 0.0875
    per_order = [intent_probabilities(order0, built0), intent_probabilities(order1, built1)]
    assert mean_by_intent(per_order) == pytest.approx({"a": 0.0875, "b": 0.1625, "c": 0.375})
    answer, confidence = debiased(per_order)
    assert answer == "c" and confidence == pytest.approx(0.375)


def test_an_intent_outside_the_group_an_order_chose_counts_zero_in_that_order():
    # order 0 chose d (0.4); order 1 chose a group without d: d's mean is 0.4 / 2.
    assert mean_by_intent([{"d": 0.4}, {"a": 0.6}]) == pytest.approx({"d": 0.2, "a": 0.3})
    assert debiased([{"d": 0.4}, {"a": 0.6}]) == ("a", pytest.approx(0.3))


def test_a_line_without_a_code_gives_nothing_and_ties_go_to_the_first_name():
    assert intent_probabilities(partial_line(status="invalid", code=None), load_prompt()) == {}
    assert debiased([{}, {}]) == (None, 0.0)
    assert debiased([{"b": 0.5, "a": 0.5}]) == ("a", 0.5)
    with pytest.raises(ValueError, match="no orders"):
        mean_by_intent([])


def test_flip_rate_counts_answers_that_differ():
    assert flip_rate(["a", "b", "c", None], ["a", "c", "c", "d"]) == 0.5  # 2 of 4 differ
    with pytest.raises(ValueError, match="same length"):
        flip_rate(["a"], ["a", "b"])


def test_scores_give_no_auroc_when_every_answer_is_wrong():
    accuracy, error, area = scores([0.2, 0.4], [False, False])
    # ECE: one bin each, |0 - 0.2| / 2 + |0 - 0.4| / 2 = 0.3
    assert (accuracy, area) == (0.0, None) and error == pytest.approx(0.3)
    assert scores([0.9, 0.2], [True, False])[2] == 1.0


def test_prefill_is_the_request_that_processed_the_most_prompt():
    records = [partial_line(timings={"prompt_n": 12, "prompt_ms": 900.0}),
               partial_line(timings={"prompt_n": 7025, "prompt_ms": 210000.0}), partial_line(timings={})]
    assert prefill(records) == (7025, 210.0)
    assert prefill([]) == (0, 0.0)


def test_letter_order_asks_the_same_message_under_each_order_and_keeps_a_file_per_order(client, run_script, tmp_path):
    result = run_script("07-separation/beyond/letter_order.py", "--limit", "1", "--permutations", "2", "--results-dir", tmp_path,
                        env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    names = ["letter-order-banking77-calib-order0.jsonl", "letter-order-banking77-calib-order1.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == names
    lines = [[json.loads(line) for line in (tmp_path / name).read_text().splitlines()] for name in names]
    labels = load_labels()
    first = load_split("calib", labels)[0]
    assert [[r["id"] for r in order] for order in lines] == [[first.id], [first.id]]
    # each order's answer comes from its own prompt: the series' list, then the reversed one
    assert [order[0]["prompt_sha256"] for order in lines] == [build_prompt(reordered(labels, k)).sha256 for k in (0, 1)]


def test_letter_order_refuses_a_single_order_in_one_line(run_script):
    result = run_script("07-separation/beyond/letter_order.py", "--permutations", "1")
    assert result.returncode == 2 and "--permutations must be from 2 to 12" in result.stderr
