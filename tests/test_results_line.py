"""03's ResultsLine: the one type every later post reads a results line as (parsed once, checked whole)."""
import json
from dataclasses import FrozenInstanceError, replace

import pytest
from result_lines import GOLD, partial_line, result_line
from results_record import ResultsLine, answers_and_errors, parse_lines
from saved_answers import REFERENCE


def test_a_line_is_read_with_its_fields_and_the_codes_letters():
    line = ResultsLine.from_json(result_line(1, False, 0.7), "x.jsonl line 1")
    assert (line.id, line.code, line.gold_code, line.correct, line.confidence) == ("test-1", "A-C", GOLD, False, 0.7)
    assert (line.group_letter, line.intent_letter) == ("A", "C")
    assert (line.gold_group_letter, line.gold_intent_letter) == ("A", "B")
    assert line.distribution("intent") == pytest.approx({"B": 0.3, "C": 0.7})
    assert (line.letter("group"), line.letter("intent"), line.gold_letter("intent")) == ("A", "C", "B")
    assert line.is_answer and line.extra == {}


def test_a_line_without_an_answer_has_no_letters_and_an_error_line_is_no_answer():
    invalid = ResultsLine.from_json(result_line(1, False, status="invalid"), "x")
    error = ResultsLine.from_json(result_line(2, False, status="error"), "x")
    assert invalid.code is None and invalid.group_letter is None and invalid.letter("intent") is None
    assert invalid.is_answer and not error.is_answer
    assert answers_and_errors([error, invalid]) == ([invalid], [error])


def test_a_step_other_than_group_or_intent_is_refused():
    with pytest.raises(ValueError, match="step must be one of"):
        partial_line().distribution("letter")


def test_a_line_is_frozen():
    with pytest.raises(FrozenInstanceError):
        partial_line().confidence = 1.0


def test_fields_beyond_run_pys_are_kept_unread_in_file_order_and_written_back_last():
    record = {**result_line(1, True), "note": "kept", "score": [1, 2]}
    line = ResultsLine.from_json(record, "x.jsonl line 4")
    assert line.extra == {"note": "kept", "score": [1, 2]} and list(line.extra) == ["note", "score"]
    assert json.dumps(line.to_json()) == json.dumps(record)


def test_a_line_missing_a_field_of_run_pys_is_refused_whatever_else_it_has():
    record = {**result_line(1, True), "note": "kept"}
    del record["confidence"]
    with pytest.raises(ValueError, match="x.jsonl line 4: field 'confidence' is missing"):
        ResultsLine.from_json(record, "x.jsonl line 4")
    with pytest.raises(ValueError, match="line 2: not a JSON object"):
        ResultsLine.from_json(["not", "an", "object"], "line 2")


def test_a_wrong_field_is_named_as_check_record_names_it():
    with pytest.raises(ValueError, match="y, the line of id 'test-1': field 'confidence' is 1.5: not a probability"):
        parse_lines([{**result_line(1, True), "confidence": 1.5}], "y")


def test_replace_takes_the_code_apart_again():
    line = replace(partial_line(code="A-B"), code="C-D")
    assert (line.group_letter, line.intent_letter) == ("C", "D")


def test_a_live_line_has_no_gold_letters():
    live = partial_line(gold_code=None, gold_intent=None, correct=False, right_group=False)
    assert live.gold_group_letter is None and live.gold_letter("group") is None


@pytest.mark.parametrize("name", ["banking77-calib.jsonl", "banking77-test.jsonl"])
def test_every_reference_line_is_written_back_exactly_as_read(name):
    # The same text, byte for byte: run.py's order of fields, the optional fields a file lacks (older files have
    # no prompt_sha256 or flagged_logprobs) still absent, nothing rounded.
    with open(REFERENCE / name, encoding="utf-8") as handle:
        texts = handle.read().splitlines()
    lines = parse_lines([json.loads(text) for text in texts], name)
    assert [json.dumps(line.to_json(), ensure_ascii=False) for line in lines] == texts


@pytest.mark.parametrize("status", ["ok", "invalid", "too_long", "error"])
def test_a_line_of_each_status_is_written_back_as_read_null_fields_included(status):
    # run.py writes "flagged_logprobs": null on a line without an answer: written back, not dropped.
    record = {**result_line(3, False, 0.6, status=status), "later": [["A-C", 2], ["A-B", 0.5]]}
    line = ResultsLine.from_json(record, "s")
    assert json.dumps(line.to_json()) == json.dumps(record)
    if status != "ok":
        assert "flagged_logprobs" in line.to_json() and line.to_json()["flagged_logprobs"] is None


def test_a_line_made_without_a_file_writes_no_optional_field_it_does_not_have():
    written = partial_line().to_json()
    assert not {"grammar", "prompt_sha256", "flagged_logprobs"} & set(written)
    assert list(written)[:3] == ["id", "text", "gold_intent"]
