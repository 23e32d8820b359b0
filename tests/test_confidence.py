"""Confidence from token probabilities, on hand-built responses.

Token ids are made up here: letters 'A'..'Z' are ids 100..125, '-A'..'-Z'
are 200..225, '-' is 300 and ' C' (with a leading space) is 402. Real ids come
from /tokenize; the integration tests check the same code on server replies.
"""
import math
import random

import numpy as np
import pytest
from confidence import LetterTokens, NoConfidence, answer_fields, answer_of, read_answer, renormalize, typed_answer
from decision import CodeReply
from llama_http import ServerUnfit
from scipy.special import softmax

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
TOKENS = LetterTokens(
    letter={x: 100 + i for i, x in enumerate(LETTERS)},
    hyphen_letter={x: 200 + i for i, x in enumerate(LETTERS)},
    hyphen=300,
)


def candidate(token: str, probability: float, token_id: int | None = None) -> dict:
    if token_id is None:
        token_id = TOKENS.letter[token] if len(token) == 1 and token.isupper() else (
            TOKENS.hyphen_letter[token[1]] if len(token) == 2 and token[0] == "-" else
            TOKENS.hyphen if token == "-" else 999)
    return {"id": token_id, "token": token, "logprob": math.log(probability)}


def response(content: str, steps: list[tuple[str, list[dict]]]) -> dict:
    """A chat completion body shaped like llama-server's, with logprobs."""
    return {"choices": [{"message": {"content": content}, "finish_reason": "length", "logprobs": {"content": [
        {**candidate(token, 0.5), "top_logprobs": tops} for token, tops in steps]}}]}


GROUP_STEP = [candidate("C", 0.6), candidate("A", 0.2), candidate(" C", 0.1, token_id=402), candidate("Hello", 0.05)]


def test_two_token_code_renormalizes_by_hand(built):
    # Group step: valid letters present are C (0.6) and A (0.2): P(C) = 0.6 / 0.8 = 0.75,
    # off-label = 1 - 0.8 = 0.2 (' C', 'Hello' and the tail), 6 of A..H missing.
    # Intent step: '-F' 0.5 and '-A' 0.3 are valid for group C (A..J); '-' and '-Z' are not:
    # P(F | C) = 0.5 / 0.8 = 0.625. Confidence = 0.75 * 0.625 = 0.46875.
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3), candidate("-", 0.1), candidate("-Z", 0.05)]
    answer = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), built, TOKENS, 4)
    assert answer.code == "C-F" and answer.intent == built.codes["C-F"].intent
    assert answer.p_group == pytest.approx(0.75)
    assert answer.group_step.off_label_mass == pytest.approx(0.2)
    assert answer.group_step.missing == 6
    assert answer.p_intent_given_group == pytest.approx(0.625)
    assert answer.intent_step.off_label_mass == pytest.approx(0.2)
    assert answer.intent_step.missing == 8  # B..E and G..J
    assert answer.confidence == pytest.approx(0.46875)
    assert answer.tokens_in_code == 2 and answer.missing_letters == 14
    assert sum(answer.group_step.distribution.values()) == pytest.approx(1.0)
    assert set(answer.intent_step.distribution) == set(built.intent_letters["C"])


def test_three_token_code_reads_the_intent_from_the_letter_after_the_hyphen(built):
    # 'C', '-', 'F': the intent step is the third token, whose candidates are plain letters.
    hyphen_step = [candidate("-", 0.9), candidate("-F", 0.05)]
    intent_step = [candidate("F", 0.4), candidate("B", 0.4), candidate("Z", 0.2)]
    answer = typed_answer(response("C-F", [("C", GROUP_STEP), ("-", hyphen_step), ("F", intent_step)]), built, TOKENS, 2)
    assert answer.tokens_in_code == 3
    assert answer.p_intent_given_group == pytest.approx(0.5)  # 0.4 / (0.4 + 0.4); Z is not in group C
    assert answer.confidence == pytest.approx(0.75 * 0.5)


def test_leading_space_variant_is_not_the_letter(built):
    # ' C' carries 0.1 but is another token: it must not be added to 'C'.
    step = renormalize(GROUP_STEP, {x: TOKENS.letter[x] for x in built.group_letters}, "C")
    assert step.distribution["C"] == pytest.approx(0.75)
    assert step.off_label_mass == pytest.approx(1 - 0.8)


def test_chosen_letter_missing_from_top_logprobs_gives_confidence_zero(built):
    # The model wrote 'D' (grammar-forced) but 'D' is not among the candidates.
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3)]
    answer = typed_answer(response("D-F", [("D", GROUP_STEP), ("-F", intent_step)]), built, TOKENS, 2)
    assert answer.p_group == 0.0
    assert answer.confidence == 0.0
    assert answer.group_step.distribution["C"] == pytest.approx(0.75)


def test_no_valid_letter_among_candidates_gives_all_zero_without_nan(built):
    only_off_label = [candidate("Hello", 0.7), candidate(" C", 0.2, token_id=402)]
    step = renormalize(only_off_label, {x: TOKENS.letter[x] for x in built.group_letters}, "C")
    assert all(p == 0.0 for p in step.distribution.values())
    assert step.chosen_probability == 0.0 and step.missing == 8
    assert step.off_label_mass == pytest.approx(1.0)


def test_a_certain_letter_gives_confidence_one(built):
    # exp(0) + exp(ln 1e-30) rounds to 1.0: every other letter is (nearly) impossible
    certain_group = [candidate("C", 1.0), candidate("A", 1e-30)]
    certain_intent = [candidate("-F", 1.0), candidate("-A", 1e-30)]
    answer = typed_answer(response("C-F", [("C", certain_group), ("-F", certain_intent)]), built, TOKENS, 2)
    assert answer.confidence == 1.0 and answer.group_step.off_label_mass == 0.0


def test_truncated_code_is_refused(built):
    with pytest.raises(ValueError, match="not a full code"):
        typed_answer(response("C-", [("C", GROUP_STEP), ("-", [candidate("-", 1.0)])]), built, TOKENS, 1)


def test_the_end_token_after_a_two_token_code_is_not_part_of_it(built):
    # A retry with room for 3 tokens can write 'C', '-F' and then the end-of-generation token, listed with
    # empty text (seen on BANKING77 test-974 with a shortlist grammar): the answer is the 2-token one.
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3), candidate("-", 0.1), candidate("-Z", 0.05)]
    end = [candidate("", 0.9, token_id=151645), candidate("C", 0.05)]
    two = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), built, TOKENS, 2)
    three = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step), ("", end)]), built, TOKENS, 2)
    assert three == two and three.tokens_in_code == 2
    # a third token that writes something is still refused
    with pytest.raises(ValueError, match="do not spell"):
        typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step), ("x", end)]), built, TOKENS, 2)


def test_tokens_that_do_not_spell_the_code_are_refused(built):
    with pytest.raises(ValueError, match="do not spell"):
        typed_answer(response("C-F", [("C", GROUP_STEP), ("-G", [candidate("-G", 0.9)])]), built, TOKENS, 1)


def test_renormalization_equals_softmax_over_the_valid_logprobs():
    # Renormalizing exp(logprob) over a subset is softmax over that subset's logprobs.
    rng = random.Random(3)
    for _ in range(50):
        raw = np.array([rng.random() for _ in range(30)])
        raw /= raw.sum() * 1.25  # leave 20% of the mass outside the 30 candidates
        ids = list(range(30))
        rng.shuffle(ids)
        tops = [{"id": i, "token": str(i), "logprob": math.log(p)} for i, p in zip(ids, raw)]
        valid = {LETTERS[k]: ids[k] for k in range(8)}
        step = renormalize(tops, valid, "A")
        expected = softmax(np.log(raw[:8]))
        assert [step.distribution[x] for x in LETTERS[:8]] == pytest.approx(expected.tolist(), abs=1e-12)
        assert step.off_label_mass == pytest.approx(1 - raw[:8].sum(), abs=1e-12)


# ---------------------------------------------------------------- what a server should not send (issue 12)

ABC = {x: TOKENS.letter[x] for x in "ABC"}


def raw(token: str, logprob, **fields) -> dict:
    """A candidate with a logprob exactly as given (None is JSON null)."""
    return {"id": TOKENS.letter.get(token, 999), "token": token, "logprob": logprob, **fields}


def test_a_null_logprob_is_probability_zero_and_flagged_the_worked_example_of_issue_12():
    # allowed {A, B, C}; C ln 0.6, A ln 0.3, B null: 0.6 / 0.9 = 0.6667, 0.3 / 0.9 = 0.3333, B 0; one flagged entry
    step = renormalize([raw("C", math.log(0.6)), raw("A", math.log(0.3)), raw("B", None)], ABC, "C")
    assert step.distribution == pytest.approx({"C": 2 / 3, "A": 1 / 3, "B": 0.0})
    assert round(step.distribution["C"], 4) == 0.6667 and round(step.distribution["A"], 4) == 0.3333
    assert step.flagged == 1 and step.missing == 0
    assert step.off_label_mass == pytest.approx(0.1)  # 1 - (0.6 + 0.3 + 0)


@pytest.mark.parametrize("nothing", [float("-inf"), -1e30, -3.4028234663852886e38])
def test_minus_infinity_and_logprobs_at_or_below_minus_1e30_are_probability_zero_and_flagged(nothing):
    # -3.4e38 is the lowest float, which llama-server writes for a probability of exactly 0
    step = renormalize([raw("C", math.log(0.6)), raw("A", math.log(0.3)), raw("B", nothing)], ABC, "C")
    assert step.distribution["B"] == 0.0 and step.flagged == 1
    assert step.distribution["C"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("value, words", [(0.5, "logprob 0.5 .*above 1"), (float("nan"), "logprob nan"),
                                          ("high", "logprob 'high' .*not a number"), (True, "logprob True .*not a number")])
def test_a_logprob_above_0_or_not_a_number_is_an_error_naming_the_server(value, words):
    with pytest.raises(ServerUnfit, match=f"the server sent {words}"):
        renormalize([raw("C", math.log(0.6)), raw("A", value)], ABC, "C")


SPECULATIVE_GROUP = [candidate(x, p) for x, p in zip("CABDEFGH", (0.6, 0.1, 0.1, 0.05, 0.05, 0.04, 0.03, 0.02))]


def test_a_drafted_token_with_no_candidates_is_no_confidence(built):
    # speculative decoding: step 1 with its 8 candidates, step 2 '-F' accepted from the draft with none
    body = response("C-F", [("C", SPECULATIVE_GROUP), ("-F", [])])
    with pytest.raises(NoConfidence, match="token 2 \\('-F'\\) has 0 candidates where 8 were asked"):
        typed_answer(body, built, TOKENS, 8)


@pytest.mark.parametrize("asked", [8, 1])
def test_a_lone_candidate_at_logprob_exactly_0_is_no_confidence(built, asked):
    # the list holds only the drafted '-F' at logprob 0 (read naively: confidence 0.8586 with these numbers)
    lone = [{"id": TOKENS.hyphen_letter["F"], "token": "-F", "logprob": 0.0}]
    with pytest.raises(NoConfidence, match="token 2"):
        typed_answer(response("C-F", [("C", SPECULATIVE_GROUP), ("-F", lone)]), built, TOKENS, asked)


def test_no_confidence_makes_the_line_an_error_and_never_a_number(built):
    body = response("C-F", [("C", SPECULATIVE_GROUP), ("-F", [])])
    reply = CodeReply("ok", "C-F", "C-F", False, body, {}, 12.0, None, 8)
    failed, answer = read_answer(reply, built, TOKENS)
    assert answer is None and failed.status == "error" and failed.code is None
    assert "0 candidates where 8 were asked" in failed.error
    assert answer_fields(answer)["confidence"] == 0.0 and answer_fields(answer)["p_group"] is None


def test_a_reply_asked_without_candidates_has_no_answer_to_read(built):
    with pytest.raises(ValueError, match="without top_logprobs"):
        answer_of(CodeReply("ok", "C-F", "C-F", False, {}, {}, 1.0), built, TOKENS)


def without_ids(tops: list[dict]) -> list[dict]:
    """The candidates as a backend without token ids sends them: the bytes of the text instead."""
    return [{"token": c["token"], "bytes": list(c["token"].encode()), "logprob": c["logprob"]} for c in tops]


def test_candidates_without_ids_are_matched_by_their_exact_bytes(built):
    intent_step = [candidate("-F", 0.5), candidate("-A", 0.3), candidate("-", 0.1), candidate("-Z", 0.05)]
    with_ids = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), built, TOKENS, 4)
    body = response("C-F", [("C", without_ids(GROUP_STEP)), ("-F", without_ids(intent_step))])
    for step in body["choices"][0]["logprobs"]["content"]:
        del step["id"]
        step["bytes"] = list(step["token"].encode())
    by_bytes = typed_answer(body, built, TOKENS, 4)
    # the same numbers as by id: ' C' (bytes 32, 67) is still not 'C'
    assert by_bytes.confidence == pytest.approx(with_ids.confidence) == pytest.approx(0.46875)
    assert by_bytes.group_step.distribution == pytest.approx(with_ids.group_step.distribution)


def test_a_candidate_with_neither_id_nor_bytes_names_the_missing_feature(built):
    bare = [{"token": "C", "logprob": math.log(0.6)}]
    with pytest.raises(ServerUnfit, match="neither a token id nor its bytes"):
        renormalize(bare, ABC, "C")


def test_logprobs_null_names_the_missing_feature_not_the_tokens(built):
    body = {"choices": [{"message": {"content": "C-F"}, "finish_reason": "length", "logprobs": None}]}
    with pytest.raises(ServerUnfit, match='"logprobs": null.*does not return token logprobs'):
        typed_answer(body, built, TOKENS, 30)
