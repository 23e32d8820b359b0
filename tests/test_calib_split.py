"""Post 05's calibration split (calib_split.py): a fit is refused on the answers it is judged on, and across models."""
import argparse

import pytest
from calib_split import check_fit_and_report, load_fit_and_report
from result_lines import result_line
from results_record import ResultsLine
from saved_answers import Loaded


def loaded(path, *records):
    """What read_split gives for a file of these results lines (no error lines)."""
    return Loaded(path, [ResultsLine.from_json(record, "x") for record in records], [])


def test_a_calibration_on_the_answers_it_is_judged_on_is_refused_in_sample():
    calib, test = loaded("calib.jsonl", result_line(1, True)), loaded("copy.jsonl", result_line(1, True))
    with pytest.raises(ValueError, match="share 1 messages .*in-sample"):
        check_fit_and_report(calib, test)


def test_calib_and_test_of_two_models_are_refused_unless_asked_for(capsys):
    calib = loaded("c.jsonl", {**result_line(1, True), "id": "calib-1"})
    test = loaded("t.jsonl", {**result_line(2, True), "model": "other"})
    with pytest.raises(ValueError, match="different runs: hand-made \\(b0\\) against other \\(b0\\).*--other-model"):
        check_fit_and_report(calib, test)
    check_fit_and_report(calib, test, other_model=True)
    assert capsys.readouterr().out.startswith("warning: fitting on one model's answers and reporting on another's")


def test_a_missing_results_file_is_named_before_a_bad_calib_file(tmp_path):
    # The file the reader typed comes first: both named files are wrong here, and the --results one is reported.
    bad_calib = tmp_path / "calib.jsonl"
    bad_calib.write_text("")
    args = argparse.Namespace(split="test", results=tmp_path / "missing.jsonl", calib=bad_calib, dataset="banking77",
                              other_model=False)
    with pytest.raises(FileNotFoundError, match="missing.jsonl \\(given with --results\\) does not exist"):
        load_fit_and_report(args)
    args.results = None
    with pytest.raises(ValueError, match="calib.jsonl .*holds no answers"):
        load_fit_and_report(args)
