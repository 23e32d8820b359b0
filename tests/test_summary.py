"""Post 03's summary block: confidence ranges, the 95th percentile, the printout."""
import json
import random
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path

import numpy as np
import pytest
from ece import ece, outcomes
from result_lines import EIGHT_AND_TWO_ERRORS, lines, partial_line, result_line, write_lines
from results_record import FIELDS, OPTIONAL, ResultsLine, check_record
from saved_answers import describe, read_split
from summary import RANGES, ConfidenceRange, OffLabelMass, in_range, percentile, summarize

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("confidence, expected", [
    (0.0, (0.0, 0.5)),     # 0 goes to the first range
    (0.5, (0.5, 0.7)),     # an edge goes to the range above
    (0.9, (0.9, 0.99)),
    (0.99, (0.99, 1.0)),
    (1.0, (0.99, 1.0)),    # 1 goes to the last range
])
def test_every_confidence_falls_in_exactly_one_range(confidence, expected):
    assert [r for r in RANGES if in_range(confidence, *r)] == [expected]


def test_95th_percentile_matches_numpy_linear_interpolation():
    rng = random.Random(7)
    for size in (1, 2, 3, 20, 101):
        values = [rng.random() for _ in range(size)]
        assert percentile(values, 0.95) == pytest.approx(float(np.percentile(values, 95)), abs=1e-12)


def record(correct, confidence, status="ok", group_mass=0.1, intent_mass=0.2):
    return partial_line(correct=correct, right_group=correct, confidence=confidence, status=status,
                        wall_ms=500.0, off_label_group=group_mass if status == "ok" else None,
                        off_label_intent=intent_mass if status == "ok" else None)


def test_summary_gives_counts_medians_off_label_masses_and_ranges_by_hand():
    records = [record(True, 1.0), record(True, 0.6), record(False, 0.3), record(False, 0.0, status="invalid")]
    summary = summarize(records)
    assert (summary.messages, summary.failed, summary.seconds) == (4, 0, 2.0)  # 4 x 500 ms
    assert (summary.valid, summary.no_code) == (3, {"invalid": 1, "too_long": 0})
    assert (summary.correct, summary.right_group) == (2, 2)
    assert summary.median_right == pytest.approx(0.8)    # (1.0 + 0.6) / 2
    assert summary.median_wrong == pytest.approx(0.15)   # (0.3 + 0.0) / 2
    # over the 3 answers with a code only: 10% and 20% on each, the invalid line's None masses left out
    assert summary.off_label == (OffLabelMass("group", 10.0, 10.0, 10.0), OffLabelMass("intent", 20.0, 20.0, 20.0))
    assert summary.ranges == (ConfidenceRange(0.0, 0.5, 2, 0.0),     # 0.3 wrong, 0.0 invalid
                              ConfidenceRange(0.5, 0.7, 1, 100.0),   # 0.6 right
                              ConfidenceRange(0.7, 0.9, 0, None),
                              ConfidenceRange(0.9, 0.99, 0, None),
                              ConfidenceRange(0.99, 1.0, 1, 100.0))  # 1.0 right, in the last range


def test_summary_of_nothing_has_no_messages_and_no_medians():
    summary = summarize([])
    assert (summary.messages, summary.failed, summary.median_right, summary.median_wrong) == (0, 0, None, None)
    assert summary.off_label == () and [row.messages for row in summary.ranges] == [0] * len(RANGES)


def test_summary_script_reads_the_reference_calibration_split_without_a_server():
    result = subprocess.run([sys.executable, str(ROOT / "03-where-confidence-comes-from/summary.py"), "--split", "calib"],
                            capture_output=True, text=True, timeout=120, env={"PATH": "", "LLAMA_URL": "http://127.0.0.1:9"})
    assert result.returncode == 0, result.stderr
    # what it prints is the README's block; here the figures of the same file: every answer in exactly one range
    summary = summarize(read_split("calib").records)
    assert summary.messages == sum(row.messages for row in summary.ranges) == 770
    assert [(row.low, row.high) for row in summary.ranges] == list(RANGES)


def test_summary_script_names_the_command_when_the_results_file_is_missing(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "03-where-confidence-comes-from/summary.py"),
                             "--results", str(tmp_path / "none.jsonl")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "run.py --split test" in result.stderr


GOOD = json.dumps(result_line(1, True, 0.7))


@pytest.mark.parametrize("content, message", [
    ("", "holds no answers"),
    ('{"id": "x"}\n', "line 1: field 'text' is missing"),
    (GOOD.replace('"confidence": 0.7', '"confidence": 1.7') + "\n", "line 1: field 'confidence' is 1.7: not a probability"),
    (GOOD.replace('"confidence": 0.7', '"confidence": "high"') + "\n", "line 1: field 'confidence' is 'high'"),
    ('{"id": "a"}\n{"id": "b"}\n{not json\n', "line 3 is not JSON"),
])
def test_a_bad_results_file_gives_one_line_naming_the_problem(tmp_path, content, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    for script in ("03-where-confidence-comes-from/summary.py", "06-isotonic/isotonic.py", "08-routes/routes.py"):
        result = subprocess.run([sys.executable, str(ROOT / script), "--results", str(bad)],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, (script, result.stderr)
        assert result.stderr.count("\n") == 1 and message in result.stderr and str(bad) in result.stderr, script


# ---------------------------------------------------------------- a line checked whole (issue 12, case 7)

def checked(line: dict) -> str:
    """The message check_record gives for line as line 2 of x.jsonl."""
    with pytest.raises(ValueError) as bad:
        check_record(line, "x.jsonl line 2")
    return str(bad.value)


# The fields a line may lack, written out here so that a field marked optional by mistake fails the test below.
MAY_BE_ABSENT = {"grammar", "prompt_sha256", "flagged_logprobs"}


def test_the_optional_fields_are_these_and_have_defaults_in_the_line_type():
    assert {name for name, (_, optional, _) in FIELDS.items() if optional} == set(OPTIONAL) == MAY_BE_ABSENT
    kept = {"written", "extra"}  # how the line was read, not fields of run.py's
    defaults = {f.name for f in fields(ResultsLine) if f.init and f.default is not MISSING and f.name not in kept}
    assert defaults == MAY_BE_ABSENT
    assert {f.name for f in fields(ResultsLine) if f.init and f.name not in kept} == set(FIELDS)


@pytest.mark.parametrize("field", sorted(set(FIELDS) - MAY_BE_ABSENT))
def test_every_field_a_later_script_reads_must_be_there(field):
    line = result_line(1, True, 0.7)
    del line[field]
    assert checked(line) == f"x.jsonl line 2: field {field!r} is missing; not a line written by 03's run.py"


@pytest.mark.parametrize("field, value, words", [
    ("id", "", "is '': not a non-empty string"),
    ("status", "maybe", "not one of ok, invalid, too_long, error"),
    ("gold_code", "AB", "not a code like C-F"),
    ("correct", 1, "not true or false"),
    ("wall_ms", -3.0, "not a number of milliseconds"),
    ("confidence", float("nan"), "not a probability in [0, 1]"),
    ("p_group", True, "not a probability"),
    ("group_distribution", {"A": 0.5, "B": 0.2}, "sums to 0.7"),
    ("intent_distribution", {"b": 1.0}, "not an object of letters and probabilities"),
    ("missing_letters", 1.5, "not a count"),
    ("tokens_in_code", 4, "not 2 or 3"),
    ("timings", [], "not an object"),
    ("prompt_sha256", "abc", "not a hex sha256"),
])
def test_a_field_of_the_wrong_type_or_range_is_named(field, value, words):
    message = checked({**result_line(1, True, 0.7), field: value})
    assert message.startswith(f"x.jsonl line 2: field {field!r} is ") and words in message


@pytest.mark.parametrize("changes, words", [
    ({"correct": False}, "field 'correct' is False, but the code is 'A-B' and the right one 'A-B'"),
    ({"right_group": False}, "field 'right_group' is False"),
    ({"confidence": 0.5}, "field 'confidence' is 0.5, not p_group x p_intent_given_group = 0.7"),
    ({"intent_distribution": {"C": 1.0}}, "field 'intent_distribution' has no letter 'B' of the code A-B"),
])
def test_fields_that_disagree_with_each_other_are_named(changes, words):
    assert words in checked({**result_line(1, True, 0.7), **changes})


def test_a_line_without_an_answer_has_null_answer_fields_and_confidence_0():
    assert "field 'code' is 'A-B', but a line with status 'error' has no answer: null" in \
        checked({**result_line(1, False, status="error"), "code": "A-B"})
    assert "field 'confidence' is 0.3, but a line without an answer has confidence 0" in \
        checked({**result_line(1, False, status="invalid"), "confidence": 0.3})
    for status in ("invalid", "too_long", "error"):
        check_record(result_line(1, False, status=status), "x.jsonl line 2")


def test_a_message_on_two_lines_is_named_with_both(tmp_path):
    path = write_lines(tmp_path / "twice.jsonl", [result_line(1, True), result_line(2, False), result_line(1, True)])
    with pytest.raises(ValueError, match="twice.jsonl line 3: field 'id' is 'test-1', already on line 1"):
        read_split("test", path)


# ---------------------------------------------------------------- error lines are counted apart (issue 12, case 2)

def test_the_loader_keeps_error_lines_apart_from_the_answers(tmp_path):
    loaded = read_split("test", write_lines(tmp_path / "r.jsonl", EIGHT_AND_TWO_ERRORS))
    assert len(loaded.records) == 8 and sum(r.correct for r in loaded.records) == 4
    assert [r.id for r in loaded.errors] == ["test-5", "test-9"]
    assert describe(loaded.path, loaded.records, len(loaded.errors)).endswith(
        "(given on the command line); 2 failed requests left out (run.py asks them again)")


def test_the_summary_block_is_over_the_8_answers_and_counts_the_2_errors_apart():
    summary = summarize(lines(EIGHT_AND_TWO_ERRORS))
    assert (summary.messages, summary.failed, summary.seconds) == (8, 2, 8.0)  # 8 x 1000 ms
    assert (summary.valid, summary.no_code, summary.correct) == (8, {"invalid": 0, "too_long": 0}, 4)
    assert summary.median_right == pytest.approx(0.75)  # (0.8 + 0.7) / 2
    assert summary.median_wrong == pytest.approx(0.45)  # (0.5 + 0.4) / 2
    assert sum(row.messages for row in summary.ranges) == 8


def test_a_file_of_error_lines_only_holds_no_answers(tmp_path):
    path = write_lines(tmp_path / "r.jsonl", [result_line(1, False, status="error"), result_line(2, False, status="error")])
    with pytest.raises(ValueError, match="holds no answers \\(2 lines are failed requests, which the same command asks again\\)"):
        read_split("test", path)


def test_ece_reports_accuracy_4_of_8_and_the_ece_of_the_8_answers(tmp_path, run_script):
    path = write_lines(tmp_path / "r.jsonl", EIGHT_AND_TWO_ERRORS)
    result = run_script("04-is-the-confidence-honest/ece.py", "--results", path)
    assert result.returncode == 0, result.stderr
    # what ece.py computes from the file, read as it reads it (its printout is the README's block)
    confidences, corrects = outcomes(read_split("test", path).records)
    assert (len(corrects), sum(corrects)) == (8, 4)
    # 15 bins of width 1/15: 0.3, 0.4, 0.5 wrong, 0.6 right and 0.6 wrong, 0.7, 0.8, 0.9 right, each range its own
    # bin but the two 0.6; gaps 0.3 + 0.4 + 0.5 + 2 x |0.6 - 0.5| + 0.3 + 0.2 + 0.1 = 2.0 over 8 answers
    assert ece(confidences, corrects) == pytest.approx(0.25)


@pytest.mark.parametrize("script", ["03-where-confidence-comes-from/summary.py", "04-is-the-confidence-honest/ece.py",
                                    "05-fixing-the-confidence/temperature.py", "06-isotonic/isotonic.py",
                                    "07-separation/separation.py", "08-routes/routes.py"])
def test_error_lines_change_no_figure_of_any_reader(tmp_path, script, run_script):
    # The same answers with and without the 2 error lines: every line printed is the same, except the ones naming
    # the file (which count the errors) and summary.py's line of errors.
    with_errors = write_lines(tmp_path / "with.jsonl", EIGHT_AND_TWO_ERRORS)
    without = write_lines(tmp_path / "without.jsonl", [r for r in EIGHT_AND_TWO_ERRORS if r["status"] != "error"])
    # the calibration split: the same answers as other messages (a fit judged on its own answers is refused)
    calib = write_lines(tmp_path / "calib.jsonl", [{**r, "id": "train-" + r["id"]} for r in EIGHT_AND_TWO_ERRORS])
    fits = ("--calib", str(calib)) if "summary" not in script and "ece" not in script else ()
    plots = ("--no-show", "--png", str(tmp_path / "p.png")) if "temperature" in script or "isotonic" in script else ()
    first = run_script(script, "--results", with_errors, *fits, *plots)
    second = run_script(script, "--results", without, *fits, *plots)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    named = [line for line in first.stdout.splitlines() if "with.jsonl" in line]
    assert named and all("2 failed requests left out" in line for line in named)
    assert [line for line in first.stdout.splitlines() if "with.jsonl" not in line and "requests failed" not in line] \
        == [line for line in second.stdout.splitlines() if "without.jsonl" not in line]


def test_a_missing_own_file_names_the_command_with_out(tmp_path):
    # summary.py's one line when --results names no file (its exit code: the test above)
    with pytest.raises(FileNotFoundError) as missing:
        read_split("test", tmp_path / "mine.jsonl", "banking77", "--results")
    assert str(missing.value).endswith(f"run.py --split test --out {tmp_path / 'mine.jsonl'}")


def test_a_missing_reference_file_names_the_run_py_command_that_writes_one(tmp_path, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "REFERENCE", tmp_path / "reference")
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    with pytest.raises(FileNotFoundError) as missing:
        saved_answers.load_results("test")
    assert str(missing.value).endswith("write it with: python3 03-where-confidence-comes-from/run.py --split test (or "
                                       "a seeded sample of it: python3 03-where-confidence-comes-from/run.py --split "
                                       "test --sample N)")


def copy_lines(path, count):
    """A results file of `count` lines copied from the reference calib file (enough for the loader)."""
    import saved_answers
    source = (saved_answers.REFERENCE / "banking77-calib.jsonl").read_text().splitlines(keepends=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(source[:count]))
    return path


def test_scripts_read_the_reference_when_the_reader_has_no_run_and_say_so(tmp_path, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    path, records = saved_answers.load_results("calib")
    assert path == saved_answers.REFERENCE / "banking77-calib.jsonl" and len(records) == 770
    assert saved_answers.describe(path, records).endswith(
        f"(the committed reference run; no run of yours at {tmp_path / 'own' / 'banking77-calib.jsonl'})")


def test_a_partial_own_run_is_named_with_its_count_and_not_mixed_with_the_reference(tmp_path, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    copy_lines(tmp_path / "own" / "banking77-calib.jsonl", 120)
    path, records = saved_answers.load_results("calib")
    assert path == saved_answers.REFERENCE / "banking77-calib.jsonl" and len(records) == 770
    assert "has 120 of 770 messages (finish it with: python3 03-where-confidence-comes-from/run.py --split calib; " \
        in saved_answers.describe(path, records)


def test_a_complete_own_run_is_read_instead_of_the_reference(tmp_path, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    own = copy_lines(tmp_path / "own" / "banking77-calib.jsonl", 770)
    path, records = saved_answers.load_results("calib")
    assert path == own and len(records) == 770
    assert saved_answers.describe(path, records).endswith("(your own run, all 770 messages)")


def test_a_file_given_with_results_is_read_as_given(tmp_path, monkeypatch):
    import saved_answers
    given = copy_lines(tmp_path / "mine.jsonl", 5)
    path, records = saved_answers.load_results("test", given)
    assert path == given and len(records) == 5
    assert saved_answers.describe(path, records).endswith("(given on the command line)")


@pytest.mark.parametrize("split", ["calib", "test"])
def test_the_split_sizes_of_the_label_files_header_are_the_splits_the_loader_gives(split):
    from registry import DATASETS
    for dataset in DATASETS.values():
        assert dataset.split_size(split) == len(dataset.load_split(split)), (dataset.name, split)


def test_an_own_run_with_error_lines_is_not_complete_and_says_how_many_answers_it_has(tmp_path, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    own = copy_lines(tmp_path / "own" / "banking77-calib.jsonl", 770)
    lines = own.read_text().splitlines(keepends=True)
    for k in (5, 6, 7):
        record = json.loads(lines[k])
        lines[k] = json.dumps({**record, **result_line(0, False, status="error"), "id": record["id"]}) + "\n"
    own.write_text("".join(lines))
    path, records = saved_answers.load_results("calib")
    assert path == saved_answers.REFERENCE / "banking77-calib.jsonl"
    assert "has 767 of 770 messages (finish it with: python3 03-where-confidence-comes-from/run.py --split calib; " \
        in saved_answers.describe(path, records)


def test_a_split_with_no_run_anywhere_names_where_the_readers_run_goes(tmp_path, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    monkeypatch.setattr(saved_answers, "REFERENCE", tmp_path / "reference")
    monkeypatch.setattr(saved_answers, "later_reference_folders", lambda: [])
    with pytest.raises(FileNotFoundError) as missing:
        saved_answers.read_split("calib")
    command = "python3 03-where-confidence-comes-from/run.py --split calib"
    assert str(missing.value) == (f"no banking77 calib answers: no reference run, and no run of yours at "
                                  f"{tmp_path / 'own' / 'banking77-calib.jsonl'}; write it with: {command} (or a "
                                  f"seeded sample of it: {command} --sample N)")
    # a partial run of the reader's is named with its count, not as missing
    (tmp_path / "own").mkdir()
    write_lines(tmp_path / "own" / "banking77-calib.jsonl", [result_line(n, True, 0.9) for n in range(5)])
    with pytest.raises(FileNotFoundError) as partial:
        saved_answers.read_split("calib")
    own = tmp_path / "own" / "banking77-calib.jsonl"
    assert str(partial.value) == (f"no banking77 calib answers: no reference run, and yours at {own} has 5 of 770 "
                                  f"messages (finish it with: {command}; or read it as it is with --calib (--results "
                                  f"with --split calib) {own}; or answer a seeded sample instead: {command} --sample N)")
    # plain answers: run.py's command
    with pytest.raises(FileNotFoundError) as plain:
        saved_answers.read_split("calib", tmp_path / "none.jsonl")
    assert str(plain.value).endswith("write it with: python3 03-where-confidence-comes-from/run.py --split calib "
                                     f"--out {tmp_path / 'none.jsonl'}")


