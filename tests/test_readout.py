"""03's readout.py: the softmax over the letter tokens, the results lines, and the readout on the real server.

Token ids are made up in the hand-made lists: 'A'..'D' are 10..13, other
tokens 90+. Real ids come from /tokenize (the server tests).
"""
import math
import random
import re

import numpy as np
import pytest
from labels import Message
from confidence import renormalize
from readout import Readout, read_code, readout_record
from scipy.special import softmax
from results_record import check_record

VALID = {"A": 10, "B": 11, "C": 12, "D": 13}


def candidate(token_id: int, probability: float, token: str = "?") -> dict:
    return {"id": token_id, "token": token, "logprob": math.log(probability)}


def test_readout_takes_the_most_probable_letter_and_renormalizes_over_the_letters():
    # A 0.5, B 0.2, C 0.1 among the candidates, D missing; 'x' (0.15) is not a letter.
    # Sum over the letters: 0.5 + 0.2 + 0.1 = 0.8, so A = 0.5 / 0.8 = 0.625, B = 0.25, C = 0.125, D = 0.
    top = [candidate(10, 0.5), candidate(90, 0.15, "x"), candidate(11, 0.2), candidate(12, 0.1)]
    step = renormalize(top, VALID, None)
    assert step.chosen == "A"
    assert step.distribution == pytest.approx({"A": 0.625, "B": 0.25, "C": 0.125, "D": 0.0})
    assert step.chosen_probability == pytest.approx(0.625)
    assert step.off_label_mass == pytest.approx(0.2)  # 1 - 0.8
    assert step.missing == 1


def test_the_answer_is_the_argmax_even_when_it_is_not_the_first_candidate():
    # 'x' is the most likely token overall, B the most likely letter: B = 0.3 / (0.3 + 0.1) = 0.75.
    step = renormalize([candidate(90, 0.5, "x"), candidate(11, 0.3), candidate(13, 0.1)], VALID, None)
    assert (step.chosen, step.chosen_probability, step.missing) == ("B", pytest.approx(0.75), 2)


def test_a_tie_goes_to_the_first_letter_and_no_letter_at_all_gives_the_first_at_zero():
    tied = renormalize([candidate(12, 0.2), candidate(11, 0.2)], VALID, None)
    assert (tied.chosen, tied.chosen_probability) == ("B", pytest.approx(0.5))  # B comes before C in VALID
    none = renormalize([candidate(90, 0.9, "x")], VALID, None)
    assert (none.chosen, none.chosen_probability, none.missing) == ("A", 0.0, 4)
    assert none.off_label_mass == pytest.approx(1.0)


def test_the_letters_are_found_by_id_not_by_text():
    # A candidate that prints as 'A' but has another id (a leading space, say) is not the letter A.
    step = renormalize([candidate(91, 0.6, "A"), candidate(11, 0.2), candidate(12, 0.1)], VALID, None)
    assert step.chosen == "B" and step.distribution["A"] == 0.0


def test_renormalizing_logprobs_is_a_softmax_over_the_letters_logits():
    # logprob = logit - logsumexp(all logits), so exp(logprob) renormalized over a subset
    # equals scipy's softmax over the subset's logits.
    rng = random.Random(7)
    for _ in range(20):
        logits = np.array([rng.uniform(-5, 5) for _ in range(40)])
        logprobs = logits - np.log(np.exp(logits).sum())
        letter_rows = rng.sample(range(40), 4)
        valid = {letter: 1000 + row for letter, row in zip("ABCD", letter_rows)}
        top = [{"id": 1000 + row, "token": "?", "logprob": float(logprobs[row])} for row in range(40)]
        step = renormalize(top, valid, None)
        expected = softmax(logits[letter_rows])
        assert [step.distribution[x] for x in "ABCD"] == pytest.approx(list(expected), abs=1e-12)
        assert step.chosen == "ABCD"[int(np.argmax(expected))]


def test_a_readout_line_has_run_pys_fields_and_its_confidence_is_the_product(built):
    group = renormalize([candidate(12, 0.6), candidate(10, 0.2)], {g: 10 + i for i, g in enumerate("ABC")}, None)
    # group C (0.75); intent letters of C: read '-F' as the argmax
    intent_valid = {x: 200 + i for i, x in enumerate(built.intent_letters["C"])}
    intent = renormalize([candidate(205, 0.5), candidate(204, 0.25)], intent_valid, None)
    readout = Readout("C-F", built.codes["C-F"].intent, group, intent, 12.5)
    assert readout.confidence == pytest.approx(0.75 * (0.5 / 0.75))
    message = Message("train-1", "charged twice", "transaction_charged_twice")
    record = readout_record(message, readout, built, "a-model", 30)
    check_record(record, "the readout line")  # the fields every later post reads
    assert (record["code"], record["correct"], record["right_group"]) == ("C-F", True, True)
    assert record["confidence"] == pytest.approx(0.5)
    assert record["group_distribution"]["C"] == pytest.approx(0.75)


def test_the_readout_on_the_real_server_reads_a_code_of_the_table(client, built, letter_ids):
    readout = read_code(client, built, letter_ids, "I was charged twice for the same coffee this morning")
    assert readout.code in built.codes and readout.intent == built.codes[readout.code].intent
    assert set(readout.group_step.distribution) == set(built.group_letters)
    assert set(readout.intent_step.distribution) == set(built.intent_letters[readout.code[0]])
    assert sum(readout.group_step.distribution.values()) == pytest.approx(1.0)
    assert 0.0 < readout.confidence <= 1.0


def test_readout_prints_both_routes_side_by_side(client, run_script, tmp_path):
    out = tmp_path / "readout-test.jsonl"
    result = run_script("03-where-confidence-comes-from/readout.py", "--limit", "2", "--out", out,
                        env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert re.search(r"^correct +\d+\.\d% +\d+\.\d%$", text, re.M)
    assert re.search(r"^mean confidence +\d\.\d{3} +\d\.\d{3}$", text, re.M)
    assert re.search(r"^  same group letter: \d, same code: \d \(\d+\.\d%\)$", text, re.M)
    assert re.search(r"^same answer as the grammar for \d+\.\d% of the messages, confidence \d\.\d{4} apart on average$",
                     text, re.M)
    assert len(out.read_text().splitlines()) == 2
    assert len((tmp_path / "readout-test-grammar.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("args, said", [
    (["--limit", "0"], "--limit must be 1 or more"),
    (["--n-probs", "0"], "--n-probs must be 1 or more"),
])
def test_readout_refuses_bad_options_in_one_line_before_asking_the_server(run_script, args, said):
    result = run_script("03-where-confidence-comes-from/readout.py", *args, env={"LLAMA_URL": "http://127.0.0.1:9"})
    assert (result.returncode, result.stdout) == (2, "")
    assert said in result.stderr.splitlines()[-1]
