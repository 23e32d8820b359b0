"""The resumable JSONL results file: finished lines survive, a cut line is dropped, another run is not mixed in."""
import json

import pytest
from batch import check_resumable
from results_file import ResultsFile, read_results


def test_appended_lines_are_read_back_and_their_ids_are_done(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        results.append({"id": "a", "x": 1})
        results.append({"id": "b", "x": 2})
    again = ResultsFile(path)
    assert again.done == {"a", "b"} and [r["x"] for r in again.records] == [1, 2]
    again.close()


def test_a_line_cut_short_by_a_kill_is_dropped_and_rewritten(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "a"}) + "\n" + '{"id": "b", "x":')  # no newline: the write was cut
    with ResultsFile(path) as results:
        assert results.done == {"a"}
        results.append({"id": "b", "x": 2})
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a", "b"]


def test_a_broken_line_in_the_middle_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a"}\nnot json\n{"id": "c"}\n')
    with pytest.raises(ValueError, match="line 2"):
        ResultsFile(path)


def test_an_empty_file_has_nothing_done(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("")
    with ResultsFile(path) as results:
        assert results.done == set() and results.records == []


def test_a_missing_results_file_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="run.py --split test"):
        read_results(tmp_path / "nope.jsonl", "python3 03-where-confidence-comes-from/run.py --split test")


def test_resuming_a_file_of_another_model_or_prompt_is_refused_by_name(tmp_path):
    path = tmp_path / "run.jsonl"
    check_resumable(path, model="m1")  # no file yet: nothing to mix
    with ResultsFile(path) as results:
        results.append({"id": "a", "model": "m1", "prompt_sha256": "abc"})
        results.append({"id": "b", "model": "m2", "prompt_sha256": "abc"})
    check_resumable(path, prompt_sha256="abc")
    with pytest.raises(ValueError, match=r"run.jsonl holds answers with model m2, not m1; move it away"):
        check_resumable(path, model="m1", prompt_sha256="abc")
