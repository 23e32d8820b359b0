"""banking77fields (08-routes/beyond/fields): fields declared in the label file, one grammar for the code and every
field, each field's confidence renormalized at its own token, the refusals of a bad field, and a real three-field
request."""
from __future__ import annotations

import json
import math
import re

import pytest
from fields import fields_of, fields_prompt, parse_field, parse_fields
from fields_readout import field_letter, read_fields
from fields_run import answer_pattern_ok, ask_fields, fields_line, gold_fields_of, read_reply
from labels import Message

SCOPE = {"key": "scope", "question": "A request to this bank?", "options": [
    {"id": "bank", "description": "yes"}, {"id": "other", "description": "no"}], "safe": "bank", "out_of_scope": "other"}


def entry(token: str, candidates: list[tuple[str, float]]) -> dict:
    """One logprobs.content entry: the generated token and its candidates (text, probability)."""
    return {"token": token, "logprob": math.log(dict(candidates)[token]) if token in dict(candidates) else -9.0,
            "top_logprobs": [{"token": text, "logprob": math.log(p)} for text, p in candidates]}


def response(content: str, entries: list[dict]) -> dict:
    return {"choices": [{"message": {"content": content}, "finish_reason": "stop", "logprobs": {"content": entries}}]}


@pytest.fixture(scope="module")
def banking():
    return fields_prompt("banking77fields")


def test_the_label_file_s_fields_make_one_grammar_of_the_code_and_a_letter_each(banking):
    assert [f.key for f in banking.fields] == ["scope", "requester"]
    assert banking.fields[1].letters == "ABC" and banking.fields[1].safe == ("holder", "unclear")
    grammar = banking.prompt.grammar
    assert grammar.startswith('root ::= (("A-" [A-K]) | ') and grammar.endswith(') "-" [AB] "-" [ABC]\n')
    assert "2. requester: Whose card or account is the message about?" in banking.prompt.system
    assert banking.prompt.system.endswith("Answer with the code and the letters only, for example C-F-A-A.")
    assert answer_pattern_ok("C-F-A-B", banking) and answer_pattern_ok(" C-F-B-C\n", banking)
    for bad in ("C-F", "C-F-A", "C-F-C-A", "C-Z-A-A", "C-F-A-D", "C-FAB"):
        assert not answer_pattern_ok(bad, banking), bad


def test_the_saved_prompt_is_the_fields_prompt(banking):
    from registry import DATASETS
    saved = DATASETS["banking77fields"].saved_prompt()
    assert (saved.system, saved.grammar) == (banking.prompt.system, banking.prompt.grammar)


@pytest.mark.parametrize("change, words", [
    ({"options": [{"id": "bank", "description": "yes"}]}, "has 1 option; a field needs at least two"),
    ({"options": [{"id": "bank", "description": "yes"}, {"id": "bank", "description": "no"}]}, "option id 'bank' twice"),
    ({"options": [{"id": "Bank!", "description": "yes"}, {"id": "x", "description": "no"}]}, "not {\"id\": a lower-case"),
    ({"key": "intent"}, "not a lower-case word other than 'intent'"),
    ({"safe": "maybe"}, "names a safe or out_of_scope option that is not one of its options"),
    ({"gates": "some"}, "gates 'some'; one of all, change"),
    ({"colour": "red"}, "unknown entry colour"),
    ({"question": " "}, "has no question"),
])
def test_a_bad_field_is_refused_in_one_line(change, words):
    with pytest.raises(ValueError, match=re.escape(words)) as raised:
        parse_field({**SCOPE, **change}, "x.json field 1")
    assert "\n" not in str(raised.value) and str(raised.value).startswith("x.json field 1: ")


def test_two_fields_of_one_key_are_refused():
    with pytest.raises(ValueError, match="the field key 'scope' is used twice"):
        parse_fields([SCOPE, SCOPE], "x.json")
    assert fields_of("banking77") == ()  # a label file without fields has none


def test_each_field_is_renormalized_over_its_own_letters_at_its_own_token(banking):
    # C-F-A-C: group C, intent F, scope A (bank), requester C (unclear). The requester's token has candidates
    # -A 0.2, -C 0.5, -B 0.1 (0.8 on its letters) and "hello" 0.2 (off label); -D is no letter of requester.
    entries = [entry("C", [("C", 0.9), ("A", 0.1)]), entry("-F", [("-F", 0.6), ("-A", 0.3), ("-Q", 0.1)]),
               entry("-A", [("-A", 0.7), ("-B", 0.2), ("x", 0.1)]),
               entry("-C", [("-C", 0.5), ("-A", 0.2), ("hello", 0.1), ("-B", 0.1), ("-D", 0.1)])]
    answer = read_fields(response("C-F-A-C", entries), banking, 2)
    assert answer.code.code == "C-F" and answer.code.tokens_in_code == 2
    scope, requester = answer.fields["scope"], answer.fields["requester"]
    # scope: A 0.7, B 0.2 over 0.9 -> A 0.7778, off label 0.1
    assert scope.option == "bank" and scope.confidence == pytest.approx(0.7 / 0.9)
    assert sum(scope.step.distribution.values()) == pytest.approx(1.0) and scope.step.off_label_mass == pytest.approx(0.1)
    # requester: C 0.5, A 0.2, B 0.1 over 0.8 -> C 0.625; -D writes no letter of requester: off label with hello
    assert requester.option == "unclear" and requester.confidence == pytest.approx(0.5 / 0.8)
    assert requester.step.distribution == pytest.approx({"A": 0.25, "B": 0.125, "C": 0.625})
    assert requester.step.off_label_mass == pytest.approx(0.2) and requester.step.before == "C-F-A"
    # post 03's code confidence is untouched: P(C) x P(F | C) over the letters each step allows (-Q is no letter
    # of group C, which has A-J)
    assert answer.code.p_group == pytest.approx(0.9 / 1.0) and answer.code.p_intent_given_group == pytest.approx(0.6 / 0.9)


def test_a_letter_missing_from_top_logprobs_counts_as_zero_and_a_chosen_missing_letter_gives_zero(banking):
    entries = [entry("C", [("C", 0.999), ("x", 0.001)]), entry("-F", [("-F", 0.999), ("x", 0.001)]), entry("-B", [("-A", 0.6), ("x", 0.4)]),
               entry("-A", [("-A", 0.5), ("-B", 0.5)])]
    answer = read_fields(response("C-F-B-A", entries), banking, 2)
    scope = answer.fields["scope"]
    assert scope.option == "other" and scope.confidence == 0.0 and scope.step.missing == 1
    assert answer.fields["requester"].step.missing == 1  # C was not among the candidates


def test_a_three_token_hyphen_reads_the_letter_on_the_next_token(banking):
    entries = [entry("C", [("C", 0.999), ("x", 0.001)]), entry("-F", [("-F", 0.999), ("x", 0.001)]), entry("-", [("-", 0.9), ("-A", 0.1)]),
               entry("B", [("B", 0.75), ("A", 0.25)]), entry("-A", [("-A", 0.999), ("x", 0.001)])]
    answer = read_fields(response("C-F-B-A", entries), banking, 2)
    assert answer.fields["scope"].confidence == pytest.approx(0.75) and answer.fields["scope"].step.before == "C-F-"
    assert field_letter("C-F-B", banking) == (0, "B") and field_letter("C-F-B-C", banking) == (1, "C")
    assert field_letter("C-F-", banking) is None and field_letter("C-F-Z", banking) is None


def test_a_reply_that_is_not_a_code_and_a_letter_per_field_is_refused(banking):
    with pytest.raises(ValueError, match="not a code and one letter per field"):
        read_fields(response("C-F-A", []), banking, 1)


def test_the_right_options_come_from_the_message_set(banking):
    calib = Message("train-1", "where is my card", "card_arrival")
    offtopic = Message("offtopic-oos_train-0", "what is the weather", "out_of_scope")
    assert gold_fields_of(calib, banking, "split", {}) == {"scope": "bank"}
    assert gold_fields_of(offtopic, banking, "offtopic", {}) == {"scope": "other"}
    assert gold_fields_of(calib, banking, "requester", {"train-1": {"requester": "holder"}}) == {
        "requester": "holder", "scope": "bank"}


def test_a_line_of_code_and_fields_is_a_results_line_with_its_fields(banking):
    from fields_readout import FieldsReply
    from results_record import ResultsLine
    entries = [entry("C", [("C", 0.999), ("x", 0.001)]), entry("-F", [("-F", 0.999), ("x", 0.001)]), entry("-A", [("-A", 0.8), ("-B", 0.2)]),
               entry("-A", [("-A", 0.999), ("x", 0.001)])]
    reply = FieldsReply("ok", "C-F-A-A", response("C-F-A-A", entries), {}, 12.5)
    reply, answer = read_reply(reply, banking, 2)
    message = Message("x", "charged twice", banking.prompt.codes["C-F"].intent)
    line = fields_line(reply, answer, message, banking, "m", {}, {"scope": "bank"}, 2)
    parsed = ResultsLine.from_json(json.loads(json.dumps(line)), "a fields line")
    assert parsed.code == "C-F" and parsed.correct and parsed.confidence == 1.0  # 0.999 / 0.999: over C alone
    assert line["fields"]["scope"] == {"option": "bank", "confidence": pytest.approx(0.8),
                                       "distribution": pytest.approx({"A": 0.8, "B": 0.2}), "off_label": pytest.approx(0.0)}
    assert line["gold_fields"] == {"scope": "bank"}


def test_a_real_three_field_request_gives_a_code_and_each_field_s_confidence(client, banking):
    # the test server (0.5B model) with the fields grammar; the warm-up is not needed for one request
    reply, answer = read_reply(ask_fields(client, banking, "My mum's card was stolen, please block it now"), banking, 30)
    assert reply.status in ("ok", "invalid", "error")
    if reply.status == "ok":
        assert answer.code.code in banking.prompt.codes and set(answer.fields) == {"scope", "requester"}
        for key, field in zip(("scope", "requester"), banking.fields):
            got = answer.fields[key]
            assert got.option in {o.id for o in field.options} and 0.0 <= got.confidence <= 1.0
            assert sum(got.step.distribution.values()) == pytest.approx(1.0) or got.step.missing == len(field.letters)
