"""The scripts of posts 01-03 print what their posts show, against the real test server.

The test server runs the 0.5B model, so the answers differ from the READMEs'
(1.5B); what is checked is the shape of each printout and the arithmetic in
it, never a model's answer.
"""
import json
import re
import string

import free_text
import pytest
from confidence import typed_answer
from candidates import coverage, reask
from compare import compare
from customer_messages import FREE_TEXT, TYPED
from decision import ask_code
from labels import split_code
from logprobs import COFFEE
from pitfalls import MOST, first_n_candidates, has_thinking_mode, same_candidates
from prompt import load_prompt
from same_numbers import confidence_moves
from route_beyond import ROUTED
from saved_answers import read_split
from tokens import letter_tokens, token_pieces
from typed_request import TOP_LOGPROBS


def test_free_text_asks_three_customer_messages_and_shows_each_reply_with_its_cost(client, run_script):
    result = run_script("01-why-typed-decisions/free_text.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    # each reply as the script reads it: a limit of 8 tokens cuts the model's sentence, with " ..." shown
    replies = [free_text.ask_free_text(message, client, max_tokens=8) for message in FREE_TEXT]
    assert [(reply.cut, reply.tokens) for reply in replies] == [(True, 8)] * 3
    assert all(reply.content.endswith(" ...") and len(reply.content) > 4 and reply.server_ms > 0 for reply in replies)


def test_typed_gives_each_of_post_01s_four_messages_an_intent_code_confidence_and_time(client, run_script):
    result = run_script("01-why-typed-decisions/typed.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for message in TYPED:
        answer = lines[lines.index(message) + 1]
        assert re.fullmatch(r"  -> \w+\??  \(code [A-H]-[A-N], confidence [01]\.\d\d, \d+ ms\)", answer), answer


def test_classify_shows_every_strange_message_both_ways_and_the_grammar_always_gives_a_code(client, run_script):
    result = run_script("02-forcing-a-valid-answer/classify.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    free = [line for line in result.stdout.splitlines() if line.startswith("  no grammar  ")]
    forced = [line for line in result.stdout.splitlines() if line.startswith("  grammar     ")]
    assert len(free) == len(forced) == 5
    assert all(re.match(r"  grammar     '[A-H]-[A-N]'  -> \w+", line) and "NOT A VALID" not in line for line in forced)


def test_logprobs_reads_both_steps_and_a_confidence_that_is_their_product(client, run_script):
    result = run_script("03-where-confidence-comes-from/logprobs.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr  # 1 when the reply has no code
    # the reading it prints, step by step: the same request and reader as the script's
    prompt = load_prompt()
    reply = ask_code(client, prompt, COFFEE, top_logprobs=TOP_LOGPROBS)
    answer = typed_answer(reply.response, prompt, TOP_LOGPROBS)
    group, _ = split_code(answer.code)
    for step, letters in ((answer.group_step, prompt.group_letters), (answer.intent_step, prompt.intent_letters[group])):
        assert len(step.candidates) == TOP_LOGPROBS and all(logprob <= 0 for _, logprob in step.candidates)
        assert set(step.distribution) == set(letters) and sum(step.distribution.values()) == pytest.approx(1.0)
        assert 0.0 <= step.off_label_mass <= 1.0
    assert (answer.p_group, answer.p_intent_given_group) == (answer.group_step.chosen_probability,
                                                            answer.intent_step.chosen_probability)
    assert answer.confidence == pytest.approx(answer.p_group * answer.p_intent_given_group, rel=1e-12)


def test_pitfalls_finds_the_same_candidates_both_ways_and_that_this_model_has_no_thinking_mode(client, run_script):
    result = run_script("03-where-confidence-comes-from/pitfalls.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    prompt = load_prompt()
    # pitfall 1 as the script asks it: one request first, so the two compared both find the message in the cache
    ask_code(client, prompt, COFFEE, grammar=True, top_logprobs=TOP_LOGPROBS)
    with_grammar = ask_code(client, prompt, COFFEE, grammar=True, top_logprobs=TOP_LOGPROBS).response
    without = ask_code(client, prompt, COFFEE, grammar=False, top_logprobs=TOP_LOGPROBS).response
    same = same_candidates(with_grammar, without, prompt)
    assert same.count == TOP_LOGPROBS and same.same_tokens and same.gap < 0.01
    assert same.forbidden  # the grammar's forbidden tokens are among the candidates: probabilities before it
    # pitfall 3: one 100-candidate reply read with its first 3, 30 and 100
    response = ask_code(client, prompt, COFFEE, top_logprobs=MOST).response
    answers = [typed_answer(first_n_candidates(response, top), prompt, top) for top in (3, TOP_LOGPROBS, MOST)]
    assert answers[2].code in prompt.codes and len({answer.code for answer in answers}) == 1
    assert answers[0].missing_letters >= answers[1].missing_letters >= answers[2].missing_letters
    # pitfall 4: the test model's template has no thinking mode
    assert not has_thinking_mode(client.get("/props").get("chat_template", ""))


def test_a_chat_template_has_a_thinking_mode_when_it_reads_enable_thinking_or_writes_think():
    assert has_thinking_mode("{%- if enable_thinking is defined and enable_thinking is false %}")
    assert has_thinking_mode("<|im_start|>assistant\n<think>\n")
    assert not has_thinking_mode("{%- for message in messages %}<|im_start|>{{ message.role }}")


def test_first_n_candidates_keeps_the_n_most_likely_of_every_step():
    steps = [{"token": t, "top_logprobs": [{"token": c, "logprob": -k} for k, c in enumerate("ABCD")]} for t in "C-F"]
    response = {"choices": [{"message": {"content": "C-F"}, "logprobs": {"content": steps}}]}
    cut = first_n_candidates(response, 2)["choices"][0]["logprobs"]["content"]
    assert [[c["token"] for c in step["top_logprobs"]] for step in cut] == [["A", "B"]] * 3
    assert [step["token"] for step in cut] == ["C", "-", "F"]
    assert len(steps[0]["top_logprobs"]) == 4  # a copy: the response read is left whole


def test_candidates_counts_missing_letters_and_reasks_with_100(client, run_script, tmp_path):
    # Two answers of the reference calib file, one with a missing letter marked by hand.
    from saved_answers import load_results
    _, records = load_results("calib")
    picked = [dict(records[0].to_json(), missing_letters=0), dict(records[1].to_json(), missing_letters=1)]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    result = run_script("03-where-confidence-comes-from/beyond/candidates.py", "--split", "calib", "--results", path,
                        env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    # what it counts and asks again, read off the same functions
    covered = coverage(read_split("calib", path).records)
    assert covered.answers == 2 and [r.id for r in covered.missed] == [records[1].id]
    read = reask(client, load_prompt(), records[1].text)
    assert read.status == "ok" and read.with_30.code == read.with_100.code
    assert read.with_100.missing_letters <= read.with_30.missing_letters


def test_route_routes_post_01s_three_messages(client, run_script):
    result = run_script("08-routes/route.py", "--other-model", *ROUTED, env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    for message in ROUTED:
        assert f"message: {message}" in result.stdout
    assert len([line for line in result.stdout.splitlines() if line.startswith("route: ")]) == 3


def test_compare_matches_messages_by_id_and_same_numbers_measures_the_confidence_moves(tmp_path, run_script):
    def record(id_, code, gold, confidence):
        return {"id": id_, "text": f"message {id_}", "status": "ok", "code": code, "gold_code": gold,
                "correct": code == gold, "confidence": confidence}
    # Confidences that are exact in binary, so the differences are exact: 0, 0.0625, 0.125.
    first = [record("a", "A-A", "A-A", 0.5), record("b", "B-B", "B-C", 0.25), record("c", "C-C", "C-C", 0.75),
             record("only-first", "A-A", "A-A", 0.1)]
    second = [record("c", "C-C", "C-C", 0.875), record("a", "A-A", "A-A", 0.5), record("b", "B-C", "B-C", 0.3125)]
    paths = []
    for name, records in (("first", first), ("second", second)):
        paths.append(tmp_path / f"{name}.jsonl")
        paths[-1].write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run_script("02-forcing-a-valid-answer/compare.py", *paths)
    assert result.returncode == 0, result.stderr
    # what compare.py prints is read off compare()'s Comparison of the two files' answers
    comparison = compare(first, second)
    assert comparison.messages == 3                                        # a, b, c; only-first left out
    assert (comparison.valid_first, comparison.valid_second, comparison.same_code) == (3, 3, 2)  # a and c
    assert (comparison.right_both, comparison.right_only_first, comparison.right_only_second) == (2, 0, 1)  # b
    assert [(x["id"], x["code"], y["code"]) for x, y in comparison.differing] == [("b", "B-B", "B-C")]
    # post 03's same_numbers.py: the same messages, and in the first file's order a, b, c how far the confidence
    # moved: |0.5 - 0.5|, |0.25 - 0.3125|, |0.75 - 0.875|
    result = run_script("03-where-confidence-comes-from/same_numbers.py", *paths)
    assert result.returncode == 0, result.stderr
    assert confidence_moves(first, second) == [0.0, 0.0625, 0.125]
    # post 02's own runs carry no confidence: nothing moved to measure
    assert confidence_moves([{k: v for k, v in r.items() if k != "confidence"} for r in first], second) == []


def test_compare_without_common_messages_is_one_clear_line(tmp_path, run_script):
    for name, id_ in (("x", "a"), ("y", "b")):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": id_, "status": "ok", "code": "A-A"}) + "\n")
    result = run_script("02-forcing-a-valid-answer/compare.py", tmp_path / "x.jsonl", tmp_path / "y.jsonl")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "no message in common" in result.stderr


def test_tokens_shows_how_the_candidates_split_and_that_every_code_piece_is_one_token(client, run_script):
    result = run_script("02-forcing-a-valid-answer/tokens.py", env={"LLAMA_URL": client.url})
    # exit code 1 when some letter or '-' + letter is not a single token (letter_tokens raises)
    assert result.returncode == 0, result.stdout + result.stderr
    assert token_pieces(client, "A") == ["A"]
    assert token_pieces(client, "76") == ["7", "6"]
    assert token_pieces(client, "C-B") == ["C", "-B"]
    pieces = letter_tokens(client)
    assert sorted(pieces.letter) == sorted(pieces.hyphen_letter) == list(string.ascii_uppercase)
    assert len(set(pieces.letter.values()) | set(pieces.hyphen_letter.values()) | {pieces.hyphen}) == 26 + 26 + 1
