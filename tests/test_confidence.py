"""Confidence from token probabilities, on hand-built responses.

Token ids are made up here: letters 'A'..'Z' are ids 100..125, '-A'..'-Z'
are 200..225, '-' is 300 and ' C' (with a leading space) is 402. Real ids come
from /tokenize; the integration tests check the same code on server replies.
"""
import math
import random

import numpy as np
import pytest
from confidence import LetterTokens, renormalize, typed_answer
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
    answer = typed_answer(response("C-F", [("C", GROUP_STEP), ("-F", intent_step)]), built, TOKENS)
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
    answer = typed_answer(response("C-F", [("C", GROUP_STEP), ("-", hyphen_step), ("F", intent_step)]), built, TOKENS)
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
    answer = typed_answer(response("D-F", [("D", GROUP_STEP), ("-F", intent_step)]), built, TOKENS)
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
    certain_group = [candidate("C", 1.0)]
    certain_intent = [candidate("-F", 1.0)]
    answer = typed_answer(response("C-F", [("C", certain_group), ("-F", certain_intent)]), built, TOKENS)
    assert answer.confidence == 1.0 and answer.group_step.off_label_mass == 0.0


def test_truncated_code_is_refused(built):
    with pytest.raises(ValueError, match="not a full code"):
        typed_answer(response("C-", [("C", GROUP_STEP), ("-", [candidate("-", 1.0)])]), built, TOKENS)


def test_tokens_that_do_not_spell_the_code_are_refused(built):
    with pytest.raises(ValueError, match="do not spell"):
        typed_answer(response("C-F", [("C", GROUP_STEP), ("-G", [candidate("-G", 1.0)])]), built, TOKENS)


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
