"""Results files that are each valid but do not belong together, and two writers on one file."""
import argparse
import json
import subprocess
import sys
import time

import pytest
import saved_answers
from batch import check_resumable
from calib_split import add_fit_arguments, load_fit_and_report
from result_lines import result_line, write_lines
from results_file import ResultsFile, ResultsFileBusy, lock_path
from saved_answers import check_belongs, read_split
from results_record import ResultsLine


def lines(*records):
    return [ResultsLine.from_json(record, "x") for record in records]


def test_a_file_asked_with_another_prompt_is_not_the_datasets():
    other = {**result_line(1, True), "prompt_sha256": "0" * 64}
    with pytest.raises(ValueError, match="with another prompt \\(sha256 000000000000\\), not banking77's"):
        check_belongs("x.jsonl", lines(other), "banking77")


def test_a_file_of_another_known_dataset_is_refused_naming_the_option_that_reads_it():
    from registry import DATASETS
    theirs = {**result_line(1, True), "prompt_sha256": DATASETS["banking77oos"].saved_prompt().sha256}
    with pytest.raises(ValueError) as refused:
        check_belongs("x.jsonl", lines(theirs), "banking77", given_by="--calib")
    assert str(refused.value) == ("x.jsonl (given with --calib) holds answers asked with banking77oos's prompt, "
                                  "not banking77's: it is not a banking77 file; give --dataset banking77oos to read it")


def test_a_file_of_the_datasets_own_prompt_belongs():
    from registry import DATASETS
    mine = {**result_line(1, True), "prompt_sha256": DATASETS["banking77"].saved_prompt().sha256}
    check_belongs("x.jsonl", lines(mine, result_line(2, False)), "banking77")  # no error


def test_a_code_the_dataset_does_not_have_is_refused_even_when_the_line_is_consistent():
    # consistent in itself: a code of group Z, wrong, so right_group false; letters among its distributions
    record = {**result_line(1, False), "code": "Z-Z", "content": "Z-Z", "right_group": False,
              "group_distribution": {"Z": 1.0}, "intent_distribution": {"Z": 0.5, "B": 0.5}}
    with pytest.raises(ValueError, match="holds the code Z-Z, which banking77 does not have"):
        check_belongs("x.jsonl", lines(record), "banking77")


def test_a_file_that_mixes_models_or_kinds_of_line_is_refused():
    with pytest.raises(ValueError, match="mixes the answers of 2 models \\(hand-made, other\\)"):
        check_belongs("x.jsonl", lines(result_line(1, True), {**result_line(2, True), "model": "other"}), "banking77")
    with pytest.raises(ValueError, match="mixes lines of different kinds of run"):
        check_belongs("x.jsonl", lines(result_line(1, True), {**result_line(2, True), "later": [1]}), "banking77")


def test_the_isotonic_fit_on_a_copy_of_the_test_file_is_refused(tmp_path, run_script):
    copy = tmp_path / "calib-copy.jsonl"
    copy.write_bytes(saved_answers.reference_path("banking77-test.jsonl").read_bytes())
    # the files and checks isotonic.py (and every script that fits on calib) reads its options through
    parser = argparse.ArgumentParser()
    add_fit_arguments(parser)
    with pytest.raises(ValueError, match="share 3080 messages .*in-sample"):
        load_fit_and_report(parser.parse_args(["--calib", str(copy)]))
    result = run_script("06-isotonic/isotonic.py", "--calib", copy, "--no-show", "--png", tmp_path / "x.png")
    assert result.returncode == 2 and not (tmp_path / "x.png").exists()


def test_a_file_that_is_not_utf8_names_itself_and_the_option(tmp_path, run_script):
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"id": "test-0", "text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=f"{bad} \\(given with --results\\) line 1 is not UTF-8 text"):
        read_split("test", bad, given_by="--results")
    # ece.py reads --results through the same read_split: the ValueError above ends it with exit 2, not a traceback
    result = run_script("04-is-the-confidence-honest/ece.py", "--results", bad)
    assert result.returncode == 2


# ---------------------------------------------------------------- resuming a file, and one writer at a time

def test_a_second_writer_of_a_results_file_is_refused_at_once_naming_the_first(tmp_path):
    path = tmp_path / "run.jsonl"
    with ResultsFile(path):
        with pytest.raises(ResultsFileBusy, match=f"is being written by pid {__import__('os').getpid()}"):
            ResultsFile(path)
    with ResultsFile(path):  # released on close
        pass
    assert lock_path(path).exists()


def test_a_writer_in_another_process_holds_the_file_until_it_exits(tmp_path):
    path = tmp_path / "run.jsonl"
    code = (f"import sys, time; sys.path[:0] = {sys.path!r}; from results_file import ResultsFile; "
            f"f = ResultsFile({str(path)!r}); print('holding', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()  # returns once the holder has opened the file (or died: then the raises fails)
        with pytest.raises(ResultsFileBusy, match=f"pid {holder.pid}"):
            ResultsFile(path)
    finally:
        holder.kill()
        holder.wait()
    ResultsFile(path).close()  # the lock went with the process


def test_a_file_with_an_id_on_two_final_lines_is_refused(tmp_path):
    path = write_lines(tmp_path / "twice.jsonl", [result_line(1, True), result_line(2, True), result_line(1, False)])
    with pytest.raises(ValueError, match="line 3: id 'test-1' is already on line 1, so two runs wrote this file"):
        ResultsFile(path)


def test_resuming_is_refused_for_a_file_of_another_run(tmp_path):
    path = write_lines(tmp_path / "old.jsonl", [{**result_line(1, True), "build": "b0", "prompt_sha256": "a" * 64}])
    same = dict(model="hand-made", build="b0", prompt_sha256="a" * 64)
    check_resumable(path, ids={"test-1", "test-2"}, **same)  # the same run: fine
    for field, value in (("model", "other"), ("build", "b1"), ("prompt_sha256", "b" * 64)):
        with pytest.raises(ValueError, match=f"holds answers with {field}"):
            check_resumable(path, ids={"test-1"}, **{**same, field: value})
    with pytest.raises(ValueError, match="holds the id 'test-1', which is not a message of this run's split"):
        check_resumable(path, ids={"calib-1"}, **same)
    with pytest.raises(ValueError, match="without the field 'shortlist'"):
        check_resumable(path, ids={"test-1"}, fields=("shortlist",), **same)
    extra = write_lines(tmp_path / "extra.jsonl", [{**result_line(1, True), "shortlist": [["A-B", 1.0]]}])
    with pytest.raises(ValueError, match="with the field 'shortlist'"):
        check_resumable(extra, ids={"test-1"}, known=set(result_line(1, True)) | {"prompt_sha256", "build"})


def test_two_run_py_processes_on_one_file_one_runs_and_the_other_exits_at_once(client, tmp_path):
    out = tmp_path / "banking77-calib.jsonl"
    command = [sys.executable, "03-where-confidence-comes-from/run.py", "--split", "calib", "--limit", "12", "--out", str(out)]
    first = subprocess.Popen(command, cwd=saved_answers.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**__import__("os").environ, "LLAMA_URL": client.url})
    try:
        deadline = time.monotonic() + 300
        while not (lock_path(out).exists() and lock_path(out).read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        second = subprocess.run(command, cwd=saved_answers.ROOT, capture_output=True, text=True, timeout=300,
                                env={**__import__("os").environ, "LLAMA_URL": client.url})
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"is being written by pid {first.pid}" in second.stderr and second.stderr.count("\n") == 1
    finally:
        first.wait(timeout=600)
    assert first.returncode == 0
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 12
