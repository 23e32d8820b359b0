"""The resumable JSONL results file: finished lines survive, a cut line is dropped, error lines are asked again,
another run is not mixed in."""
import json

import pytest
from batch import RunStopped, check_resumable, run_messages
from results_file import ResultsFile, read_results


def test_appended_lines_are_read_back_and_their_ids_are_done(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        results.append({"id": "a", "status": "ok", "x": 1})
        results.append({"id": "b", "status": "ok", "x": 2})
    again = ResultsFile(path)
    assert again.done == {"a", "b"} and [r["x"] for r in again.records] == [1, 2]
    again.close()


def test_a_line_cut_short_by_a_kill_is_dropped_and_rewritten(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "a", "status": "ok"}) + "\n" + '{"id": "b", "x":')  # no newline: the write was cut
    with ResultsFile(path) as results:
        assert results.done == {"a"}
        results.append({"id": "b", "status": "ok", "x": 2})
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


# ---------------------------------------------------------------- error lines are asked again (issue 12, case 2)

def lines_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_error_lines_are_not_done_and_are_taken_out_when_the_file_is_opened_again(tmp_path):
    path = tmp_path / "r.jsonl"
    kept = [{"id": "a", "status": "ok"}, {"id": "c", "status": "invalid"}, {"id": "e", "status": "too_long"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in
                            [kept[0], {"id": "b", "status": "error"}, kept[1], {"id": "d", "status": "error"}, kept[2]]))
    before = path.read_bytes()
    with ResultsFile(path) as results:
        assert results.done == {"a", "c", "e"} and results.dropped == 2 and results.records == kept
        results.append({"id": "b", "status": "ok"})
        results.append({"id": "d", "status": "error"})  # failed again: written, still not done
        assert results.done == {"a", "c", "e", "b"}
    # one line per message at every moment: the kept lines byte for byte, then the new ones
    assert path.read_bytes().startswith(b"".join(line + b"\n" for line in before.split(b"\n")[0:5:2]))
    assert [(r["id"], r["status"]) for r in lines_of(path)] == [("a", "ok"), ("c", "invalid"), ("e", "too_long"),
                                                                 ("b", "ok"), ("d", "error")]


def test_a_file_without_error_lines_is_left_as_it_is(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "status": "ok"}\n')
    inode = path.stat().st_ino
    with ResultsFile(path) as results:
        assert results.dropped == 0
    assert path.stat().st_ino == inode and path.read_text() == '{"id": "a", "status": "ok"}\n'


def test_a_cut_line_and_error_lines_go_together(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "status": "error"}\n{"id": "b", "status": "ok"}\n{"id": "c", "sta')
    with ResultsFile(path) as results:
        assert results.done == {"b"} and results.dropped == 1
    assert path.read_text() == '{"id": "b", "status": "ok"}\n'


def messages(count):
    from labels import Message
    return [Message(f"m{k}", f"text {k}", "card_arrival") for k in range(count)]


def test_a_rerun_asks_the_three_error_lines_again_and_replaces_them(tmp_path):
    # Issue 12, case 2: 3 error rows, rerun with a server that works: 3 of 3 asked again.
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"id": f"m{k}", "status": "error"}) + "\n" for k in range(3)))
    asked = []

    def working(message):
        asked.append(message.id)
        return {"id": message.id, "status": "ok"}

    records = run_messages(messages(3), path, working, "test")
    # the error lines count as not done: all three are asked again, none is kept
    assert asked == ["m0", "m1", "m2"] and [r["status"] for r in records] == ["ok"] * 3
    assert [(r["id"], r["status"]) for r in lines_of(path)] == [("m0", "ok"), ("m1", "ok"), ("m2", "ok")]


def test_three_errors_in_a_row_stop_the_run_with_the_last_error(tmp_path):
    path = tmp_path / "r.jsonl"

    def broken(message):
        return {"id": message.id, "status": "error", "error": "HTTP 500: System role not supported"}

    with pytest.raises(RunStopped, match="3 requests in a row failed \\(the last: HTTP 500: System role not supported\\); "
                                         "stopped after 3 of 10 messages"):
        run_messages(messages(10), path, broken, "test")
    assert [r["status"] for r in lines_of(path)] == ["error"] * 3  # on disk, and asked again by the next run


def test_errors_that_are_not_in_a_row_do_not_stop_the_run(tmp_path):
    statuses = iter(["error", "error", "ok", "error", "error", "ok"])
    records = run_messages(messages(6), tmp_path / "r.jsonl",
                           lambda message: {"id": message.id, "status": next(statuses), "error": "x"}, "test")
    assert [r["status"] for r in records] == ["error", "error", "ok", "error", "error", "ok"]


def test_resuming_a_file_of_another_model_or_prompt_is_refused_by_name(tmp_path):
    path = tmp_path / "run.jsonl"
    check_resumable(path, model="m1")  # no file yet: nothing to mix
    with ResultsFile(path) as results:
        results.append({"id": "a", "status": "ok", "model": "m1", "prompt_sha256": "abc"})
        results.append({"id": "b", "status": "ok", "model": "m2", "prompt_sha256": "abc"})
    check_resumable(path, prompt_sha256="abc")
    with pytest.raises(ValueError, match=r"run.jsonl holds answers with model m2, not m1; move it away"):
        check_resumable(path, model="m1", prompt_sha256="abc")
