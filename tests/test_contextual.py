"""Contextual calibration (08's beyond/contextual.py, letter_prior.py): the division by the prior, the corrected
lines, the prior file, and the prior's requests against a stand-in server."""
import json
import math
from types import SimpleNamespace

import pytest
from contextual import (GroupMove, LetterPrior, contextual_line, divide_by_prior, find_prior, group_move, mean_distribution,
                        measures, most_probable, prior_name)
from letter_prior import measure_prior
from prompt import build_prompt
from result_lines import lines, partial_line, result_line
from results_record import ResultsLine

SHA = "0" * 64


def prior(group=None, intent=None) -> LetterPrior:
    return LetterPrior("banking77", "hand-made", "b0", SHA, ("N/A", ""), 30, group or {"A": 0.5, "B": 0.5},
                       intent or {"A": {"B": 0.5, "C": 0.5}, "B": {"A": 1.0}}, {"group": 0.1, "intent": 0.2})


def test_dividing_by_the_prior_is_p_over_prior_renormalized():
    # p = (0.6, 0.3, 0.1), prior = (0.5, 0.25, 0.25): 1.2, 1.2, 0.4 over 2.8
    got = divide_by_prior({"A": 0.6, "B": 0.3, "C": 0.1}, {"A": 0.5, "B": 0.25, "C": 0.25})
    assert got == pytest.approx({"A": 1.2 / 2.8, "B": 1.2 / 2.8, "C": 0.4 / 2.8})
    assert math.isclose(sum(got.values()), 1.0)


def test_a_uniform_prior_changes_nothing_and_a_scaled_prior_gives_the_same():
    p = {"A": 0.7, "B": 0.2, "C": 0.1}
    assert divide_by_prior(p, {"A": 1 / 3, "B": 1 / 3, "C": 1 / 3}) == pytest.approx(p)
    # only the prior's ratios count: dividing by (0.2, 0.4, 0.4) or by (0.1, 0.2, 0.2) is the same
    assert divide_by_prior(p, {"A": 0.2, "B": 0.4, "C": 0.4}) == pytest.approx(
        divide_by_prior(p, {"A": 0.1, "B": 0.2, "C": 0.2}))


def test_a_letter_with_zero_prior_takes_the_smallest_prior_above_zero():
    # C's prior 0 -> 0.2 (B's, the smallest above 0): 0.4 / 0.8 = 0.5, 0.4 / 0.2 = 2, 0.2 / 0.2 = 1, over 3.5
    got = divide_by_prior({"A": 0.4, "B": 0.4, "C": 0.2}, {"A": 0.8, "B": 0.2, "C": 0.0})
    assert got == pytest.approx({"A": 0.5 / 3.5, "B": 2 / 3.5, "C": 1 / 3.5})


def test_a_letter_missing_from_the_distribution_counts_as_zero_and_is_added():
    # C missing from p: p = (0.5, 0.5, 0); prior (0.25, 0.5, 0.25): 2, 1, 0 over 3
    got = divide_by_prior({"A": 0.5, "B": 0.5}, {"A": 0.25, "B": 0.5, "C": 0.25})
    assert got == pytest.approx({"A": 2 / 3, "B": 1 / 3, "C": 0.0})
    assert list(got) == ["A", "B", "C"]


def test_a_distribution_of_zeros_stays_zeros():
    assert divide_by_prior({"A": 0.0, "B": 0.0}, {"A": 0.5, "B": 0.5}) == {"A": 0.0, "B": 0.0}


def test_a_letter_without_prior_or_an_all_zero_prior_is_refused():
    with pytest.raises(ValueError, match="letters C have no prior"):
        divide_by_prior({"A": 0.5, "C": 0.5}, {"A": 1.0, "B": 0.0})
    with pytest.raises(ValueError, match="0 for every letter"):
        divide_by_prior({"A": 0.5, "B": 0.5}, {"A": 0.0, "B": 0.0})


def test_on_a_tie_the_decoded_letter_stays_else_the_first_in_order():
    tied = {"A": 0.4, "B": 0.4, "C": 0.2}
    assert most_probable(tied, keep="B") == "B"
    assert most_probable(tied, keep="C") == "A"
    assert most_probable(tied) == "A"
    with pytest.raises(ValueError):
        most_probable({})


def test_mean_distribution_counts_a_missing_letter_as_zero():
    assert mean_distribution([{"A": 1.0}, {"A": 0.5, "B": 0.5}]) == {"A": 0.75, "B": 0.25}
    with pytest.raises(ValueError):
        mean_distribution([])


INTENT_OF = {"A-A": "card_arrival", "A-B": "card_linking", "A-C": "card_delivery_estimate", "B-A": "other"}


def test_the_corrected_line_takes_the_new_intent_letter_and_its_confidence():
    # decoded A-C at p(C) = 0.6, group 0.8; intent prior B 0.2, C 0.8: B 0.4 / 0.2 = 2, C 0.6 / 0.8 = 0.75 over 2.75
    record = lines([result_line(1, right=False, confidence=0.6)])[0]
    record = ResultsLine.from_json({**record.to_json(), "p_group": 0.8, "confidence": 0.48,
                                    "group_distribution": {"A": 0.8, "B": 0.2}}, "hand-made")
    got = contextual_line(record, prior(intent={"A": {"B": 0.2, "C": 0.8}}), INTENT_OF)
    assert got.code == "A-B" and got.intent == "card_linking" and got.correct
    assert got.p_intent_given_group == pytest.approx(2 / 2.75)
    assert got.confidence == pytest.approx(0.8 * 2 / 2.75)
    assert got.p_group == 0.8 and got.group_distribution == {"A": 0.8, "B": 0.2}
    assert got.off_label_intent == record.off_label_intent
    assert got.extra["model_code"] == "A-C" and got.extra["model_confidence"] == 0.48
    ResultsLine.from_json(got.to_json(), "the corrected line")  # still a line every post reads


def test_a_line_without_a_code_is_kept_and_a_group_without_prior_is_refused():
    failed = lines([result_line(1, right=False, status="invalid")])[0]
    kept = contextual_line(failed, prior(), INTENT_OF)
    assert kept == failed and kept.extra == {"model_code": None, "model_confidence": 0.0}
    with pytest.raises(ValueError, match="no intent step for group A"):
        contextual_line(lines([result_line(1, right=True)])[0], prior(intent={"B": {"A": 1.0}}), INTENT_OF)


def test_group_move_says_whether_the_corrected_group_leaves_or_reaches_the_right_one():
    # group A at 0.6, B at 0.4; prior A 0.75, B 0.25: 0.8 against 1.6, so B leads
    line = partial_line(code="A-B", gold_code="A-B", group_distribution={"A": 0.6, "B": 0.4})
    assert group_move(line, prior(group={"A": 0.75, "B": 0.25})) == GroupMove(True, False, True)
    wrong = partial_line(code="A-B", gold_code="B-A", group_distribution={"A": 0.6, "B": 0.4})
    assert group_move(wrong, prior(group={"A": 0.75, "B": 0.25})) == GroupMove(True, True, False)
    # a uniform prior moves nothing; a tie keeps the decoded group
    assert group_move(line, prior(group={"A": 0.5, "B": 0.5})).moves is False
    assert group_move(line, prior(group={"A": 0.6, "B": 0.4})).moves is False


def test_measures_count_accuracy_and_ece_on_calib():
    records = lines([result_line(1, True, 0.9), result_line(2, False, 0.8)])
    got = measures(records, records, frozenset(), fitted=False)
    # accuracy 1 / 2; ECE 15 bins: 0.9 in bin 13 (gap 0.1), 0.8 in bin 12 (gap 0.8): (0.1 + 0.8) / 2 = 0.45
    assert (got.answers, got.accuracy, got.ece_isotonic) == (2, 0.5, None)
    assert got.ece_raw == pytest.approx(0.45)


def test_the_prior_file_goes_through_json_and_is_refused_for_another_prompt(tmp_path):
    path = tmp_path / prior_name("banking77", "hand-made", SHA)
    path.write_text(json.dumps(prior().to_json()), encoding="utf-8")
    assert find_prior("banking77", "hand-made", SHA, path)[1] == prior()
    with pytest.raises(ValueError, match="not of banking77, model hand-made, prompt 1111"):
        find_prior("banking77", "hand-made", "1" * 64, path)
    path.write_text(json.dumps({**prior().to_json(), "group": {"A": 2.0}}), encoding="utf-8")
    with pytest.raises(ValueError, match="group is not an object of letters and probabilities"):
        find_prior("banking77", "hand-made", SHA, path)
    with pytest.raises(FileNotFoundError, match="letter_prior.py --dataset clinc150"):
        find_prior("clinc150", "hand-made", SHA, tmp_path / "none.json")


def candidates(first: str, mass: dict[str, float], prefix: str = "") -> list[dict]:
    """30 candidates: the letters' logprobs, then filler tokens of tiny probability."""
    listed = [{"token": prefix + letter, "logprob": math.log(p), "id": n} for n, (letter, p) in enumerate(mass.items())]
    filler = [{"token": f"w{n}", "logprob": -30.0, "id": 100 + n} for n in range(30 - len(listed))]
    return listed + filler


class StandIn:
    """A client whose chat answers from the grammar: with the whole grammar group A (A 0.75, B 0.25) then A's
    intent step; with a grammar of group B only, B then B's intent step. The intent steps depend on the message."""

    def __init__(self):
        self.asked = []

    def chat(self, messages, **settings):
        text = messages[1]["content"]
        group = "B" if settings["grammar"].count("(") == 1 and '"B-"' in settings["grammar"] else "A"
        self.asked.append((text, group))
        intents = {"A": {"A": 0.6, "B": 0.2} if text == "N/A" else {"A": 0.2, "B": 0.6}, "B": {"A": 0.9}}[group]
        letter = max(intents, key=intents.get)
        body = {"choices": [{"message": {"content": f"{group}-{letter}"}, "logprobs": {"content": [
            {"token": group, "logprob": -0.1, "id": 1, "top_logprobs": candidates(group, {"A": 0.75, "B": 0.25})},
            {"token": f"-{letter}", "logprob": -0.1, "id": 2,
             "top_logprobs": candidates(letter, intents, prefix="-")}]}}]}
        return SimpleNamespace(body=body)


def test_the_prior_averages_the_inputs_and_forces_every_other_group():
    from labels import Group, Intent, LabelSet
    labels = LabelSet((Group("A", "G1", (Intent("A", "A", "a", "d", ()), Intent("A", "B", "b", "d", ()))),
                       Group("B", "G2", (Intent("B", "A", "c", "d", ()),))), ())
    hand_prompt = build_prompt(labels, 0)
    client = StandIn()
    run = SimpleNamespace(client=client, prompt=hand_prompt, model="hand-made", build="b0", top_logprobs=30)
    got = measure_prior(run, "hand", ("N/A", ""), report=lambda line: None)
    # two inputs x two groups: the whole grammar chose A, so B was forced for each input
    assert client.asked == [("N/A", "A"), ("N/A", "B"), ("", "A"), ("", "B")]
    assert got.group == pytest.approx({"A": 0.75, "B": 0.25})
    # A's intent step: (0.75, 0.25) for N/A and (0.25, 0.75) for "": mean (0.5, 0.5); B's: A alone
    assert got.intent["A"] == pytest.approx({"A": 0.5, "B": 0.5}) and got.intent["B"] == pytest.approx({"A": 1.0})
    # off-label: group step 1 - 1.0 (+ 28 x e^-30, negligible); intent A 1 - 0.8, intent B 1 - 0.9
    assert got.off_label["group"] == pytest.approx(0.0, abs=1e-9)
    assert got.off_label["intent"] == pytest.approx((0.2 + 0.1 + 0.2 + 0.1) / 4, abs=1e-9)
