"""Every measured number in the prose of the READMEs is quoted from a console block or names its source."""
import pytest
from prose_numbers import check, measured_numbers, unsourced

BLOCK = "```console\n$ python3 04-is-the-confidence-honest/ece.py\nECE, 15 bins: 0.0849\naccuracy 26.851%\n```\n"


def test_no_readme_quotes_a_measured_number_without_a_source():
    findings = check()
    assert not findings, "measured numbers with no source (tests/prose_numbers.py says the rule):\n" + "\n".join(
        map(str, findings))


def test_a_number_a_console_block_shows_is_sourced_as_written_or_rounded():
    assert unsourced(BLOCK + "\nThe test split has an ECE of 0.0849.\n") == []
    assert unsourced(BLOCK + "\nThe test split has an ECE of 0.085, accuracy 26.9%.\n") == []


def test_a_number_no_block_shows_and_no_source_names_is_listed_with_its_line():
    # the slip of the 04 README that an independent recomputation found: 0.34430 - 0.26851 is 7.58, not 7.5
    text = BLOCK + "\nThat is 7.5 points of overconfidence.\n"
    [finding] = unsourced(text, "x/README.md")
    assert (finding.file, finding.line, finding.number) == ("x/README.md", 7, "7.5")  # 5 block lines, a blank one


@pytest.mark.parametrize("paragraph", [
    "`python3 01-why-typed-decisions/beyond/baseline.py` is right on 79.1% of them.",
    "The TF-IDF `baseline.py` is right on 79.1% of them.",
    "On the GB10 the 27B model is right on 86.9%.",
    "The series' post 3 gives 86.9% for the 27B model.",
])
def test_a_paragraph_that_names_its_source_needs_no_block(paragraph):
    assert unsourced(paragraph + "\n") == []


def test_a_table_takes_its_source_from_the_paragraph_before_it():
    table = "| decision | accuracy |\n|---|---|\n| model | 26.9% |\n"
    assert unsourced("From `python3 08-routes/beyond/combined/combined.py`:\n\n" + table) == []
    assert [f.number for f in unsourced("The decisions:\n\n" + table)] == ["26.9%"]


@pytest.mark.parametrize("line, numbers", [
    ("right on 26.9% of 3,080 messages, 1,359 right and 19 wrong", ["26.9%", "1,359", "19"]),
    ("an ECE of 0.0849 and a confidence of 0.82", ["0.0849", "0.82"]),
    ("`--target 0.985` and `ece.py` print 0.0849", ["0.0849"]),             # inline code is a setting
    ("0.9486 x 0.9818 = 0.9314, from the steps above", []),                 # arithmetic shown inline
    ("in 166.8 s, 202 MB and 7,025 tokens on 2 cores", []),                  # units: timings and sizes
    ("Python 3.11.2, build b11312, 2026-11-30 at 09:03, load average 2.4", []),
    ("below 0.5 and from 0.33-0.47, bins of 15", []),                         # bounds to talk about
    ("## 0.0849 in a heading", []),
])
def test_what_counts_as_a_measured_number(line, numbers):
    assert measured_numbers(line) == numbers
