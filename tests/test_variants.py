"""08-routes/beyond/variants.py: other kinds of run than run.py's, read by post 03's reader from outside it."""
import argparse

import pytest
import saved_answers
from result_lines import result_line, write_lines
from variants import (known_variants, own_results_path, read_variant, reading, results_name, run_command,
                      variant_name)


def test_a_variants_file_name_has_it_between_dataset_and_split():
    assert results_name("banking77", "calib", "abc5") == "banking77-abc5-calib.jsonl"
    assert results_name("clinc150", "test", "other") == "clinc150-other-test.jsonl"
    assert results_name("banking77", "test") == "banking77-test.jsonl"  # no variant: run.py's name
    with pytest.raises(ValueError, match="split must be one of"):
        results_name("banking77", "train", "abc5")


@pytest.mark.parametrize("text", ["", "shortlist5", "combined12", "linearall"])
def test_a_variant_name_is_lower_case_letters_then_digits(text):
    assert variant_name(text) == text


@pytest.mark.parametrize("text", ["Shortlist5", "5shortlist", "short-list", "a5b"])
def test_another_variant_name_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not a variant"):
        variant_name(text)


def test_the_committed_variants_are_known():
    # 08-routes/reference/ holds the shortlist, combined and logistic-regression runs
    assert {"shortlist5", "combined5", "linear15"} <= set(known_variants())
    assert "" not in known_variants()


def test_reading_a_variant_points_post_03s_reader_at_its_files_and_puts_it_back():
    plain = saved_answers.own_results_path, saved_answers.run_command
    with reading("shortlist5"):
        assert saved_answers.own_results_path("banking77", "test") == own_results_path("banking77", "test", "shortlist5")
        path, why = saved_answers.default_results("banking77", "calib")
        assert path.name == "banking77-shortlist5-calib.jsonl" and why.startswith("the committed reference run")
    assert (saved_answers.own_results_path, saved_answers.run_command) == plain
    with reading(""):  # run.py's answers: nothing swapped
        assert (saved_answers.own_results_path, saved_answers.run_command) == plain


def test_a_variants_answers_are_read_and_described_as_the_committed_run():
    loaded = read_variant("calib", None, "banking77", "shortlist5")
    assert loaded.path.name == "banking77-shortlist5-calib.jsonl" and len(loaded.records) == 770
    with reading("shortlist5"):
        assert "(the committed reference run; no run of yours at " in saved_answers.describe(loaded.path, loaded.records)
    # outside the block post 03's reader does not know the name: a file given on the command line
    assert "(given on the command line)" in saved_answers.describe(loaded.path, loaded.records)


def test_a_missing_variant_names_its_writer_and_the_kinds_there_are(tmp_path, monkeypatch):
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    with pytest.raises(FileNotFoundError) as missing:
        read_variant("calib", None, "banking77", "other3")
    assert str(missing.value).startswith("no banking77 calib answers: no reference run, and no run of yours at ")
    assert ("banking77-other3-calib.jsonl; write it with: " + run_command("banking77", "calib", "other3")
            + f" (the kinds of run there are: {', '.join(known_variants())})") in str(missing.value)
    # a partial run of the reader's is named with its count; other3 is then a kind there is
    (tmp_path / "own").mkdir()
    write_lines(tmp_path / "own" / "banking77-other3-calib.jsonl", [result_line(n, True, 0.9) for n in range(5)])
    with pytest.raises(FileNotFoundError) as partial:
        read_variant("calib", None, "banking77", "other3")
    own = tmp_path / "own" / "banking77-other3-calib.jsonl"
    # no --sample for a variant: its writer is not run.py
    assert str(partial.value).endswith(f"{own} has 5 of 770 messages (finish it with: the script that writes other3 "
                                       "answers (08-routes/beyond/README.md names it); or read it as it is with --calib "
                                       f"(--results with --split calib) {own})")


def test_a_posts_script_has_no_variant_option_and_the_runner_adds_it(run_script):
    post = run_script("03-where-confidence-comes-from/summary.py", "--help")
    assert post.returncode == 0 and "--split" in post.stdout and "--variant" not in post.stdout
    refused = run_script("03-where-confidence-comes-from/summary.py", "--variant", "shortlist5")
    assert refused.returncode == 2 and "unrecognized arguments: --variant shortlist5" in refused.stderr
    result = run_script("08-routes/beyond/variants.py", "03-where-confidence-comes-from/summary.py",
                        "--variant", "shortlist5", "--split", "calib")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("08-routes/reference/") and "banking77-shortlist5-calib.jsonl: model " in first


def test_the_runner_refuses_a_kind_of_run_there_is_not(run_script):
    result = run_script("08-routes/beyond/variants.py", "03-where-confidence-comes-from/summary.py", "--variant", "nokind9")
    assert result.returncode == 2 and "no answers of kind 'nokind9'; the kinds of run there are: " in result.stderr


def test_a_missing_shortlist_or_combined_run_names_the_command_that_writes_it_for_any_dataset():
    assert run_command("banking77", "calib", "shortlist5") == "python3 08-routes/beyond/combined/shortlist.py --split calib"
    assert run_command("card_help", "test", "shortlist5") == "python3 08-routes/beyond/combined/shortlist.py --dataset card_help"
    assert run_command("clinc150", "calib", "exampleshortlist3") == (
        "python3 08-routes/beyond/combined/shortlist.py --dataset clinc150 --shortlist 3 --source examples --split calib")
    assert run_command("domains", "test", "linearcombined5") == (
        "python3 08-routes/beyond/combined/combined.py --dataset domains --source linear")
    assert run_command("banking77", "test", "other3").startswith("the script that writes other3 answers")
