"""Post 03's summary block: confidence ranges, the 95th percentile, the printout."""
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from summary import RANGES, in_range, percentile, print_summary

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
    return {"correct": correct, "right_group": correct, "confidence": confidence, "status": status,
            "wall_ms": 500.0, "off_label_group": group_mass if status == "ok" else None,
            "off_label_intent": intent_mass if status == "ok" else None}


def test_summary_prints_counts_medians_and_range_table_by_hand(capsys):
    records = [record(True, 0.95), record(True, 0.6), record(False, 0.3), record(False, 0.0, status="invalid")]
    print_summary(records, "banking77 test")
    out = capsys.readouterr().out
    assert "banking77 test: 4 messages in 2 s of requests (2.00 messages/s)" in out  # 4 x 500 ms
    assert "valid codes: 3 (75.0%), invalid 1" in out
    assert "correct: 2 (50.0%)" in out
    assert "median confidence when right: 0.775" in out                   # (0.95 + 0.6) / 2
    assert "median confidence when wrong: 0.150" in out                   # (0.3 + 0.0) / 2
    assert "off-label mass at the group step: median 10.00%, 95th percentile 10.00%, max 10.00%" in out
    assert "  0.00-0.50           2      0.0%" in out
    assert "  0.50-0.70           1    100.0%" in out
    assert "  0.70-0.90           0         -" in out


def test_summary_of_nothing_says_so(capsys):
    print_summary([], "banking77 calib")
    assert "banking77 calib: no messages" in capsys.readouterr().out


def test_summary_script_prints_the_reference_calibration_split_without_a_server():
    result = subprocess.run([sys.executable, str(ROOT / "03-where-confidence-comes-from/summary.py"), "--split", "calib"],
                            capture_output=True, text=True, timeout=120, env={"PATH": "", "LLAMA_URL": "http://127.0.0.1:9"})
    assert result.returncode == 0, result.stderr
    assert "770 messages" in result.stdout and "0.99-1.00" in result.stdout


def test_summary_script_names_the_command_when_the_results_file_is_missing(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "03-where-confidence-comes-from/summary.py"),
                             "--results", str(tmp_path / "none.jsonl")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "run.py --split test" in result.stderr


@pytest.mark.parametrize("content, message", [
    ("", "holds no answers"),
    ('{"id": "x"}\n', "lacks status"),
    ('{"id": "a", "status": "ok", "code": "A-A", "gold_code": "A-A", "correct": true, "right_group": true, '
     '"confidence": 1.7, "model": "m"}\n', "confidence 1.7"),
    ('{"id": "a", "status": "ok", "code": "A-A", "gold_code": "A-A", "correct": true, "right_group": true, '
     '"confidence": "high", "model": "m"}\n', "confidence 'high'"),
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


def test_a_missing_own_file_names_the_command_with_out(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "03-where-confidence-comes-from/summary.py"),
                             "--results", str(tmp_path / "mine.jsonl")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert f"run.py --split test --out {tmp_path / 'mine.jsonl'}" in result.stderr


def test_a_missing_reference_file_names_the_run_py_command_that_writes_one(tmp_path, monkeypatch):
    import summary
    monkeypatch.setattr(summary, "REFERENCE", tmp_path / "reference")
    monkeypatch.setattr(summary, "OWN_RESULTS", tmp_path / "own")
    with pytest.raises(FileNotFoundError) as missing:
        summary.load_results("test", dataset="clinc150")
    assert str(missing.value).endswith("write it with: python3 03-where-confidence-comes-from/run.py --dataset clinc150 "
                                       "--split test")


def write_lines(path, count):
    """A results file of `count` lines copied from the reference calib file (enough for the loader)."""
    import summary
    source = (summary.REFERENCE / "banking77-calib.jsonl").read_text().splitlines(keepends=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(source[:count]))
    return path


def test_scripts_read_the_reference_when_the_reader_has_no_run_and_say_so(tmp_path, monkeypatch):
    import summary
    monkeypatch.setattr(summary, "OWN_RESULTS", tmp_path / "own")
    path, records = summary.load_results("calib")
    assert path == summary.REFERENCE / "banking77-calib.jsonl" and len(records) == 770
    assert summary.describe(path, records).endswith(
        f"(the committed reference run; no run of yours at {tmp_path / 'own' / 'banking77-calib.jsonl'})")


def test_a_partial_own_run_is_named_with_its_count_and_not_mixed_with_the_reference(tmp_path, monkeypatch):
    import summary
    monkeypatch.setattr(summary, "OWN_RESULTS", tmp_path / "own")
    write_lines(tmp_path / "own" / "banking77-calib.jsonl", 120)
    path, records = summary.load_results("calib")
    assert path == summary.REFERENCE / "banking77-calib.jsonl" and len(records) == 770
    assert "has 120 of 770 messages (finish it with: python3 03-where-confidence-comes-from/run.py --split calib)" \
        in summary.describe(path, records)


def test_a_complete_own_run_is_read_instead_of_the_reference(tmp_path, monkeypatch):
    import summary
    monkeypatch.setattr(summary, "OWN_RESULTS", tmp_path / "own")
    own = write_lines(tmp_path / "own" / "banking77-calib.jsonl", 770)
    path, records = summary.load_results("calib")
    assert path == own and len(records) == 770
    assert summary.describe(path, records).endswith("(your own run, all 770 messages)")


def test_a_file_given_with_results_is_read_as_given(tmp_path, monkeypatch):
    import summary
    given = write_lines(tmp_path / "mine.jsonl", 5)
    path, records = summary.load_results("test", given)
    assert path == given and len(records) == 5
    assert summary.describe(path, records).endswith("(given on the command line)")


def test_split_sizes_match_the_splits_the_loaders_give():
    import banking77
    import clinc150
    for module in (banking77, clinc150):
        for split in ("calib", "test"):
            assert module.split_size(split) == len(module.load_split(split)), (module.__name__, split)
