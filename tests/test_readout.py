"""03's readout.py: the softmax over the letter tokens, the results lines, and the readout on the real server.

The hand-made candidate lists use BANKING77's prompt (group letters A-H);
their token ids are made up, the letters are read from the text.
"""
import json
import math
import random

import numpy as np
import pytest
from banking77 import load_split
from labels import Message
from confidence import renormalize
from readout import Readout, read_code, readout_record
from scipy.special import softmax
from results_record import check_record


def candidate(token: str, probability: float, token_id: int = 90) -> dict:
    return {"id": token_id, "token": token, "logprob": math.log(probability)}


def test_readout_takes_the_most_probable_letter_and_renormalizes_over_the_letters(prompt):
    # A 0.5, B 0.2, C 0.1 among the candidates, D-H missing; 'x' (0.15) is not a letter.
    # Sum over the letters: 0.5 + 0.2 + 0.1 = 0.8, so A = 0.5 / 0.8 = 0.625, B = 0.25, C = 0.125, the rest 0.
    top = [candidate("A", 0.5), candidate("x", 0.15), candidate("B", 0.2), candidate("C", 0.1)]
    step = renormalize(top, "", prompt)
    assert step.chosen == "A"
    assert step.distribution == pytest.approx({"A": 0.625, "B": 0.25, "C": 0.125, **dict.fromkeys("DEFGH", 0.0)})
    assert step.chosen_probability == pytest.approx(0.625)
    assert step.off_label_mass == pytest.approx(0.2)  # 1 - 0.8
    assert step.missing == 5


def test_the_answer_is_the_argmax_even_when_it_is_not_the_first_candidate(prompt):
    # 'x' is the most likely token overall, B the most likely letter: B = 0.3 / (0.3 + 0.1) = 0.75.
    step = renormalize([candidate("x", 0.5), candidate("B", 0.3), candidate("D", 0.1)], "", prompt)
    assert (step.chosen, step.chosen_probability, step.missing) == ("B", pytest.approx(0.75), 6)


def test_a_tie_goes_to_the_first_letter_and_no_letter_at_all_gives_the_first_at_zero(prompt):
    tied = renormalize([candidate("C", 0.2), candidate("B", 0.2)], "", prompt)
    assert (tied.chosen, tied.chosen_probability) == ("B", pytest.approx(0.5))  # B comes before C in the grammar
    none = renormalize([candidate("x", 0.9)], "", prompt)
    assert (none.chosen, none.chosen_probability, none.missing) == ("A", 0.0, 8)
    assert none.off_label_mass == pytest.approx(1.0)


def test_a_letter_after_a_space_is_not_the_letter(prompt):
    # ' A' is another token with another text: it is not the letter A.
    step = renormalize([candidate(" A", 0.6), candidate("B", 0.2), candidate("C", 0.1)], "", prompt)
    assert step.chosen == "B" and step.distribution["A"] == 0.0


def test_renormalizing_logprobs_is_a_softmax_over_the_letters_logits(prompt):
    # logprob = logit - logsumexp(all logits), so exp(logprob) renormalized over a subset
    # equals scipy's softmax over the subset's logits.
    rng = random.Random(7)
    for _ in range(20):
        logits = np.array([rng.uniform(-5, 5) for _ in range(40)])
        logprobs = logits - np.log(np.exp(logits).sum())
        letter_rows = rng.sample(range(40), 4)
        text = {row: letter for letter, row in zip("ABCD", letter_rows)}
        top = [{"id": row, "token": text.get(row, f"w{row}"), "logprob": float(logprobs[row])} for row in range(40)]
        step = renormalize(top, "", prompt)
        expected = softmax(logits[letter_rows])
        assert [step.distribution[x] for x in "ABCD"] == pytest.approx(list(expected), abs=1e-12)
        assert step.chosen == "ABCD"[int(np.argmax(expected))]


def test_a_readout_line_has_run_pys_fields_and_its_confidence_is_the_product(prompt):
    group = renormalize([candidate("C", 0.6), candidate("A", 0.2)], "", prompt)
    # group C (0.75); after 'C', '-F' and '-E' write intent letters of C: '-F' is the argmax, 0.5 / 0.75
    intent = renormalize([candidate("-F", 0.5), candidate("-E", 0.25)], "C", prompt)
    readout = Readout("C-F", prompt.codes["C-F"].intent, group, intent, 12.5)
    assert readout.confidence == pytest.approx(0.75 * (0.5 / 0.75))
    message = Message("train-1", "charged twice", "transaction_charged_twice")
    record = readout_record(message, readout, prompt, "a-model", 30)
    check_record(record, "the readout line")  # the fields every later post reads
    assert (record["code"], record["correct"], record["right_group"]) == ("C-F", True, True)
    assert record["confidence"] == pytest.approx(0.5)
    assert record["group_distribution"]["C"] == pytest.approx(0.75)


def test_the_readout_on_the_real_server_reads_a_code_of_the_table(client, prompt, letter_ids):
    readout = read_code(client, prompt, letter_ids, "I was charged twice for the same coffee this morning")
    assert readout.code in prompt.codes and readout.intent == prompt.codes[readout.code].intent
    assert set(readout.group_step.distribution) == set(prompt.group_letters)
    assert set(readout.intent_step.distribution) == set(prompt.intent_letters[readout.code[0]])
    assert sum(readout.group_step.distribution.values()) == pytest.approx(1.0)
    assert 0.0 < readout.confidence <= 1.0


def test_readout_writes_both_routes_answers_to_the_same_messages(client, run_script, tmp_path, prompt):
    out = tmp_path / "readout-test.jsonl"
    result = run_script("03-where-confidence-comes-from/beyond/readout.py", "--limit", "2", "--out", out,
                        env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    readouts = [json.loads(line) for line in out.read_text().splitlines()]
    grammars = [json.loads(line) for line in (tmp_path / "readout-test-grammar.jsonl").read_text().splitlines()]
    first_two = [message.id for message in load_split("calib")[:2]]
    assert [r["id"] for r in readouts] == [g["id"] for g in grammars] == first_two
    # the readout always reads a code of the table, with its confidence
    assert all(r["status"] == "ok" and r["code"] in prompt.codes and 0.0 < r["confidence"] <= 1.0 for r in readouts)
    assert all(not g["grammar"] for g in readouts) and all(g["grammar"] for g in grammars)


@pytest.mark.parametrize("args, said", [
    (["--limit", "0"], "--limit must be 1 or more"),
    (["--n-probs", "0"], "--n-probs must be 1 or more"),
])
def test_readout_refuses_bad_options_in_one_line_before_asking_the_server(run_script, args, said):
    result = run_script("03-where-confidence-comes-from/beyond/readout.py", *args, env={"LLAMA_URL": "http://127.0.0.1:9"})
    # nothing printed, and argparse's last line names the option (nothing listens on port 9: no server error)
    assert (result.returncode, result.stdout, said in result.stderr.splitlines()[-1]) == (2, "", True)
