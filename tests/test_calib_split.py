"""Post 05's calibration split (calib_split.py): a fit is refused on the answers it is judged on, and across models."""
import pytest
from calib_split import check_fit_and_report
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
