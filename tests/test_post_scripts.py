"""The scripts of posts 01-03 print what their posts show, against the real test server.

The test server runs the 0.5B model, so the answers differ from the READMEs'
(1.5B); what is checked is the shape of each printout and the arithmetic in
it, never a model's answer.
"""
import json
import re

import pytest
from customer_messages import FREE_TEXT, ROUTED, TYPED


def test_free_text_asks_three_customer_messages_and_shows_each_reply_with_its_cost(client, run_script):
    result = run_script("01-why-typed-decisions/free_text.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    for message in FREE_TEXT:
        assert f"Customer: {message}\nModel:    " in result.stdout
    assert len(re.findall(r"\(\d+ tokens(, cut at the limit)?, \d+ ms on the server\)", result.stdout)) == 3


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


def test_logprobs_prints_both_steps_and_a_confidence_that_is_their_product(client, run_script):
    result = run_script("03-where-confidence-comes-from/logprobs.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Token 1: " in out and "Top candidates, before the grammar:" in out
    assert re.search(r"logprob +-?\d+\.\d{3}   p = \d\.\d{4}", out)
    assert "P(group), over the 8 group letters (" in out and "% off-label):" in out
    product = re.search(r"= (\d\.\d{4}) x (\d\.\d{4}) = (\d\.\d{4})", out)
    p_group, p_intent, confidence = map(float, product.groups())
    assert confidence == pytest.approx(p_group * p_intent, abs=2e-4)


def test_pitfalls_shows_the_four_and_says_plainly_that_this_model_has_no_thinking_mode(client, run_script):
    result = run_script("03-where-confidence-comes-from/pitfalls.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for heading in ("1. candidates with and without the grammar", "2. post_sampling_probs", "3. top_logprobs 3, 30 and 100",
                    "4. thinking"):
        assert heading in out
    compared = re.search(r"the same 30 tokens: (True|False); in the same order: (?:True|False); "
                         r"largest difference in a token's probability: ([0-9.]+)", out)
    assert compared and compared[1] == "True" and float(compared[2]) < 0.01
    assert "So the grammar did not change the reported candidates" in out
    assert re.search(r"top_logprobs 100: [A-H]-[A-N]", out)
    assert "has no thinking mode" in out and "GB10 reference" in out


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
    assert "some allowed letter missing:                  1  (50.0%)" in result.stdout
    assert "asked again with 100 candidates (1 answers), each reply read with its first 30 and all 100:" in result.stdout
    assert "largest change in confidence from 30 to 100 candidates: " in result.stdout


def test_route_routes_post_01s_three_messages_by_default(client, run_script):
    result = run_script("08-routes/route.py", "--other-model", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    for message in ROUTED:
        assert f"message: {message}" in result.stdout
    assert len([line for line in result.stdout.splitlines() if line.startswith("route: ")]) == 3


def test_compare_matches_messages_by_id_and_counts_codes_rights_and_confidence_moves(tmp_path, run_script):
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
    out = result.stdout
    assert "3 messages in both:" in out
    assert "  same code                     2   66.7%" in out  # a and c
    assert "  right in both                 2   66.7%" in out
    assert "  right only in the second      1" in out           # b
    # |0.5 - 0.5|, |0.25 - 0.3125|, |0.75 - 0.875| = 0, 0.0625, 0.125: median 0.0625, max 0.125, two above 0.01
    assert "median 0.0625" in out and "max 0.1250" in out and "more than 0.01: 2" in out
    assert "messages with different codes (1):" in out and "B-B vs B-C" in out


def test_compare_without_common_messages_is_one_clear_line(tmp_path, run_script):
    for name, id_ in (("x", "a"), ("y", "b")):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": id_, "status": "ok", "code": "A-A"}) + "\n")
    result = run_script("02-forcing-a-valid-answer/compare.py", tmp_path / "x.jsonl", tmp_path / "y.jsonl")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "no message in common" in result.stderr


def test_tokens_shows_how_the_candidates_split_and_that_every_code_piece_is_one_token(client, run_script):
    result = run_script("02-forcing-a-valid-answer/tokens.py", env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^'A' +1 token +\['A'\]$", out, re.MULTILINE)
    assert re.search(r"^'76' +2 tokens +\['7', '6'\]$", out, re.MULTILINE)
    assert re.search(r"^'C-B' +2 tokens +\['C', '-B'\]$", out, re.MULTILINE)
    assert out.rstrip().endswith("Every letter A-Z and every '-A' to '-Z' is a single token: True")
