"""Confidence from token probabilities (03's confidence.py), on hand-built responses.

The candidates carry made-up token ids; the letters are read from their
text, as the post does (letter_of). The integration tests check the same
code on server replies, and test_typed_preview.py holds post 01's preview to it.
"""
import math
import random

import numpy as np
import pytest
from confidence import NoConfidence, letter_of, renormalize, typed_answer
from decision import CodeReply
from logprob_format import ServerUnfit
from module_loads import import_modules, setup_modules
from scipy.special import softmax
from typed_lines import answer_fields, answer_of, read_answer

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def candidate(token: str, probability: float, token_id: int = 999) -> dict:
    return {"id": token_id, "token": token, "logprob": math.log(probability)}


def response(content: str, steps: list[tuple[str, list[dict]]]) -> dict:
    """A chat completion body shaped like llama-server's, with logprobs."""
    return {"choices": [{"message": {"content": content}, "finish_reason": "length", "logprobs": {"content": [
        {**candidate(token, 0.5), "top_logprobs": tops} for token, tops in steps]}}]}


GROUP_STEP = [candidate("C", 0.6), candidate("A", 0.2), candidate(" C", 0.1, token_id=402), candidate("Hello", 0.05)]


def test_two_token_code_renormalizes_by_hand(prompt):
    # Group step: valid letters present are C (0.6) and A (0.2): P(C) = 0.6 / 0.8 = 0.75,
    # off-label = 1 - 0.8 = 0.2 (' C', 'Hello' and the tail), 6 of A..H missing.
    # Intent step: '-F' 0.5 and '-A' 0.3 are valid for group C (A..J); '-' and '-Z' are not:
    # P(F | C) = 0.5 / 0.8 = 0.625. Confidence = 0.75 * 0.625 = 0.46875.
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3), candidate("-", 0.1), candidate("-Z", 0.05)]
    answer = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), prompt, 4)
    assert answer.code == "C-F" and answer.intent == prompt.codes["C-F"].intent
    assert answer.p_group == pytest.approx(0.75)
    assert answer.group_step.off_label_mass == pytest.approx(0.2)
    assert answer.group_step.missing == 6
    assert answer.p_intent_given_group == pytest.approx(0.625)
    assert answer.intent_step.off_label_mass == pytest.approx(0.2)
    assert answer.intent_step.missing == 8  # B..E and G..J
    assert answer.confidence == pytest.approx(0.46875)
    assert answer.tokens_in_code == 2 and answer.missing_letters == 14
    assert sum(answer.group_step.distribution.values()) == pytest.approx(1.0)
    assert set(answer.intent_step.distribution) == set(prompt.intent_letters["C"])


def test_three_token_code_reads_the_intent_from_the_letter_after_the_hyphen(prompt):
    # 'C', '-', 'F': the intent step is the third token, whose candidates are plain letters.
    hyphen_step = [candidate("-", 0.9), candidate("-F", 0.05)]
    intent_step = [candidate("F", 0.4), candidate("B", 0.4), candidate("Z", 0.2)]
    answer = typed_answer(response("C-F", [("C", GROUP_STEP), ("-", hyphen_step), ("F", intent_step)]), prompt, 2)
    assert answer.tokens_in_code == 3
    assert answer.p_intent_given_group == pytest.approx(0.5)  # 0.4 / (0.4 + 0.4); Z is not in group C
    assert answer.confidence == pytest.approx(0.75 * 0.5)


def test_leading_space_variant_is_not_the_letter(prompt):
    # ' C' carries 0.1 but writes a space before the letter: it must not be added to 'C'.
    step = renormalize(GROUP_STEP, "", prompt, "C")
    assert step.distribution["C"] == pytest.approx(0.75)
    assert step.off_label_mass == pytest.approx(1 - 0.8)


@pytest.mark.parametrize("text, letter", [("C", "C"), ("H", "H"), ("C-F", "F"), ("G-D", "D"), (" C", None), ("The", None),
                                          ("C-", None), ("C-Z", None), ("G-E", None), ("Z", None), ("", None),
                                          ("C--F", None), ("CF", None)])
def test_letter_of_names_the_letter_a_text_writes_at_its_step(prompt, text, letter):
    # BANKING77: groups A-H; group C has A-J, group G only A-D
    assert letter_of(text, prompt) == letter


def test_two_tokens_with_the_same_text_are_summed_into_one_letter(prompt):
    # the grammar allows any token that writes "C", so both count: (0.3 + 0.2) / (0.3 + 0.2 + 0.25) = 2/3
    step = renormalize([candidate("C", 0.3, 100), candidate("C", 0.2, 777), candidate("A", 0.25, 101)], "", prompt, "C")
    assert step.distribution["C"] == pytest.approx(2 / 3) and step.distribution["A"] == pytest.approx(1 / 3)
    assert step.off_label_mass == pytest.approx(0.25) and step.missing == 6


def test_chosen_letter_missing_from_top_logprobs_gives_confidence_zero(prompt):
    # The model wrote 'D' (grammar-forced) but 'D' is not among the candidates.
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3)]
    answer = typed_answer(response("D-F", [("D", GROUP_STEP), ("-F", intent_step)]), prompt, 2)
    assert answer.p_group == 0.0
    assert answer.confidence == 0.0
    assert answer.group_step.distribution["C"] == pytest.approx(0.75)


def test_no_valid_letter_among_candidates_gives_all_zero_without_nan(prompt):
    only_off_label = [candidate("Hello", 0.7), candidate(" C", 0.2, token_id=402)]
    step = renormalize(only_off_label, "", prompt, "C")
    assert all(p == 0.0 for p in step.distribution.values())
    assert step.chosen_probability == 0.0 and step.missing == 8
    assert step.off_label_mass == pytest.approx(1.0)


def test_a_certain_letter_gives_confidence_one(prompt):
    # exp(0) + exp(ln 1e-30) rounds to 1.0: every other letter is (nearly) impossible
    certain_group = [candidate("C", 1.0), candidate("A", 1e-30)]
    certain_intent = [candidate("-F", 1.0), candidate("-A", 1e-30)]
    answer = typed_answer(response("C-F", [("C", certain_group), ("-F", certain_intent)]), prompt, 2)
    assert answer.confidence == 1.0 and answer.group_step.off_label_mass == 0.0


def test_truncated_code_is_refused(prompt):
    with pytest.raises(ValueError, match="not a full code"):
        typed_answer(response("C-", [("C", GROUP_STEP), ("-", [candidate("-", 1.0)])]), prompt, 1)


def test_the_end_token_after_a_two_token_code_is_not_part_of_it(prompt):
    # A retry with room for 3 tokens can write 'C', '-F' and then the end-of-generation token, listed with
    # empty text (seen on a BANKING77 test message with a narrower grammar): the answer is the 2-token one.
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3), candidate("-", 0.1), candidate("-Z", 0.05)]
    end = [candidate("", 0.9, token_id=151645), candidate("C", 0.05)]
    two = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), prompt, 2)
    three = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step), ("", end)]), prompt, 2)
    assert three == two and three.tokens_in_code == 2
    # a third token that writes something is still refused
    with pytest.raises(ValueError, match="do not spell"):
        typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step), ("x", end)]), prompt, 2)


def test_tokens_that_do_not_spell_the_code_are_refused(prompt):
    with pytest.raises(ValueError, match="do not spell"):
        typed_answer(response("C-F", [("C", GROUP_STEP), ("-G", [candidate("-G", 0.9)])]), prompt, 1)


def test_renormalization_equals_softmax_over_the_valid_logprobs(prompt):
    # Renormalizing exp(logprob) over a subset is softmax over that subset's logprobs.
    rng = random.Random(3)
    for _ in range(50):
        raw = np.array([rng.random() for _ in range(30)])
        raw /= raw.sum() * 1.25  # leave 20% of the mass outside the 30 candidates
        ids = list(range(30))
        rng.shuffle(ids)
        # the first 8 candidates write the 8 group letters A-H, the rest other text
        texts = [LETTERS[k] if k < 8 else f"x{k}" for k in range(30)]
        tops = [{"id": i, "token": text, "logprob": math.log(p)} for i, text, p in zip(ids, texts, raw)]
        step = renormalize(tops, "", prompt, "A")
        expected = softmax(np.log(raw[:8]))
        assert [step.distribution[x] for x in LETTERS[:8]] == pytest.approx(expected.tolist(), abs=1e-12)
        assert step.off_label_mass == pytest.approx(1 - raw[:8].sum(), abs=1e-12)


# ---------------------------------------------------------------- what a server should not send (issue 12)

def raw(token: str, logprob, **fields) -> dict:
    """A candidate with a logprob exactly as given (None is JSON null)."""
    return {"id": 999, "token": token, "logprob": logprob, **fields}


def test_a_null_logprob_is_probability_zero_and_flagged_the_worked_example_of_issue_12(prompt):
    # C ln 0.6, A ln 0.3, B null: 0.6 / 0.9 = 0.6667, 0.3 / 0.9 = 0.3333, B 0; one flagged entry;
    # B is among the candidates (with nothing), D..H are missing
    step = renormalize([raw("C", math.log(0.6)), raw("A", math.log(0.3)), raw("B", None)], "", prompt, "C")
    assert {x: step.distribution[x] for x in "ABC"} == pytest.approx({"C": 2 / 3, "A": 1 / 3, "B": 0.0})
    assert round(step.distribution["C"], 4) == 0.6667 and round(step.distribution["A"], 4) == 0.3333
    assert step.flagged == 1 and step.missing == 5
    assert step.off_label_mass == pytest.approx(0.1)  # 1 - (0.6 + 0.3 + 0)


@pytest.mark.parametrize("nothing", [float("-inf"), -1e30, -3.4028234663852886e38])
def test_minus_infinity_and_logprobs_at_or_below_minus_1e30_are_probability_zero_and_flagged(prompt, nothing):
    # -3.4e38 is the lowest float, which llama-server writes for a probability of exactly 0
    step = renormalize([raw("C", math.log(0.6)), raw("A", math.log(0.3)), raw("B", nothing)], "", prompt, "C")
    assert step.distribution["B"] == 0.0 and step.flagged == 1
    assert step.distribution["C"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("value, words", [(0.5, "logprob 0.5 .*above 1"), (float("nan"), "logprob nan"),
                                          ("high", "logprob 'high' .*not a number"), (True, "logprob True .*not a number")])
def test_a_logprob_above_0_or_not_a_number_is_an_error_naming_the_server(prompt, value, words):
    with pytest.raises(ServerUnfit, match=f"the server sent {words}"):
        renormalize([raw("C", math.log(0.6)), raw("A", value)], "", prompt, "C")


SPECULATIVE_GROUP = [candidate(x, p) for x, p in zip("CABDEFGH", (0.6, 0.1, 0.1, 0.05, 0.05, 0.04, 0.03, 0.02))]


def test_a_drafted_token_with_no_candidates_is_no_confidence(prompt):
    # speculative decoding: step 1 with its 8 candidates, step 2 '-F' accepted from the draft with none
    body = response("C-F", [("C", SPECULATIVE_GROUP), ("-F", [])])
    with pytest.raises(NoConfidence, match="token 2 \\('-F'\\) has 0 candidates where 8 were asked"):
        typed_answer(body, prompt, 8)


@pytest.mark.parametrize("asked", [8, 1])
def test_a_lone_candidate_at_logprob_exactly_0_is_no_confidence(prompt, asked):
    # the list holds only the drafted '-F' at logprob 0 (read naively: confidence 0.8586 with these numbers)
    lone = [{"id": 205, "token": "-F", "logprob": 0.0}]
    with pytest.raises(NoConfidence, match="token 2"):
        typed_answer(response("C-F", [("C", SPECULATIVE_GROUP), ("-F", lone)]), prompt, asked)


def test_no_confidence_makes_the_line_an_error_and_never_a_number(prompt):
    body = response("C-F", [("C", SPECULATIVE_GROUP), ("-F", [])])
    reply = CodeReply("ok", "C-F", "C-F", False, body, {}, 12.0, None, 8)
    failed, answer = read_answer(reply, prompt)
    assert answer is None and failed.status == "error" and failed.code is None
    assert "0 candidates where 8 were asked" in failed.error
    assert answer_fields(answer)["confidence"] == 0.0 and answer_fields(answer)["p_group"] is None


def test_a_reply_asked_without_candidates_has_no_answer_to_read(prompt):
    with pytest.raises(ValueError, match="without top_logprobs"):
        answer_of(CodeReply("ok", "C-F", "C-F", False, {}, {}, 1.0), prompt)


def without_ids(tops: list[dict]) -> list[dict]:
    """The candidates as a backend without token ids sends them: text, bytes and logprob."""
    return [{"token": c["token"], "bytes": list(c["token"].encode()), "logprob": c["logprob"]} for c in tops]


def test_candidates_without_ids_give_the_same_numbers(prompt):
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3), candidate("-", 0.1), candidate("-Z", 0.05)]
    with_ids = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), prompt, 4)
    body = response("C-F", [("C", without_ids(GROUP_STEP)), ("-F", without_ids(intent_step))])
    for step in body["choices"][0]["logprobs"]["content"]:
        del step["id"]
    by_text = typed_answer(body, prompt, 4)
    # ' C' is still not 'C'
    assert by_text.confidence == pytest.approx(with_ids.confidence) == pytest.approx(0.46875)
    assert by_text.group_step.distribution == pytest.approx(with_ids.group_step.distribution)


def test_a_candidate_without_token_text_names_the_missing_feature(prompt):
    bare = [{"id": 102, "logprob": math.log(0.6)}]
    with pytest.raises(ServerUnfit, match="has no token text"):
        renormalize(bare, "", prompt, "C")


def test_logprobs_null_names_the_missing_feature_not_the_tokens(prompt):
    body = {"choices": [{"message": {"content": "C-F"}, "finish_reason": "length", "logprobs": None}]}
    with pytest.raises(ServerUnfit, match='"logprobs": null.*does not return token logprobs'):
        typed_answer(body, prompt, 30)


def test_the_end_token_among_the_candidates_is_no_letter(prompt):
    # At the intent step of group C the server lists '' (end of generation) too: "C" + "" must not read as the
    # group letter C again, which is also an intent letter of group C (C-C). -F 0.5, -C 0.2, '' 0.2:
    # P(F | C) = 0.5 / 0.7, P(C | C) = 0.2 / 0.7, off-label 0.3.
    step = renormalize([candidate("-F", 0.5), candidate("-C", 0.2), candidate("", 0.2)], "C", prompt, "F")
    assert step.distribution["F"] == pytest.approx(5 / 7) and step.distribution["C"] == pytest.approx(2 / 7)
    assert step.off_label_mass == pytest.approx(0.3)
    assert sum(step.distribution.values()) == pytest.approx(1.0)


def test_confidence_py_reads_a_reply_with_no_http_code():
    # the idea and the reply's format rules, nothing of the server's floor (00-setup): measured in a fresh
    # interpreter that runs `import series; import confidence`
    modules = import_modules("confidence")
    assert setup_modules(modules) == []
    assert modules == ["00-setup/toolbox/logprob_format.py", "02-forcing-a-valid-answer/prompt.py",
                       "03-where-confidence-comes-from/confidence.py", "datasets/labels.py", "datasets/registry.py",
                       "series.py"]
