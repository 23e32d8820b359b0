"""A task's fields from a CSV (datasets/make_task.py --fields, 08-routes/beyond/fields/fields.py fields_from_csv):
written into the label file before its groups, asked by the saved prompt and grammar after the code, and a bad
fields file refused in one line that names the file and the row."""
import json

import pytest

# conftest.py puts the repository, its post folders and their beyond folders on sys.path
from fields import FIELDS_CSV_HEADER, fields_from_csv
from task_csvs import SCRIPT, synthetic, write_csv

REQUESTER = [["requester", "Whose account is the message about?", "holder", "the account holder's own", "yes",
              "change", ""],
             ["", "", "other", "someone else's account or card", "", "", ""],
             ["", "", "unclear", "the message does not say", "", "", ""]]
SCOPE = [["scope", "Is the message a request to this bank?", "in", "a request to this bank", "yes", "", ""],
         ["", "", "out", "anything else", "", "", "yes"]]


def test_a_fields_csv_gives_each_field_its_options_in_order_its_safe_values_and_gates(tmp_path):
    path = write_csv(tmp_path / "fields.csv", FIELDS_CSV_HEADER, REQUESTER + SCOPE)
    assert fields_from_csv(path) == [
        {"key": "requester", "question": "Whose account is the message about?", "gates": "change", "safe": ["holder"],
         "options": [{"id": "holder", "description": "the account holder's own"},
                     {"id": "other", "description": "someone else's account or card"},
                     {"id": "unclear", "description": "the message does not say"}]},
        {"key": "scope", "question": "Is the message a request to this bank?", "gates": "all", "safe": ["in"],
         "options": [{"id": "in", "description": "a request to this bank"},
                     {"id": "out", "description": "anything else"}], "out_of_scope": "out"}]


@pytest.mark.parametrize("rows, problem", [
    (REQUESTER[:1] + SCOPE, "has 1 option"),                                           # a field of one option
    (REQUESTER + [["", "", "other", "twice", "", "", ""]], "other"),                 # a duplicate option id
    (REQUESTER[:2] + SCOPE + [["requester"] + REQUESTER[2][1:]], "row 6: the rows of field 'requester' are not together"),
    ([["", "", "holder", "no key", "", "", ""]] + REQUESTER, "row 2: the first row names no key"),
    ([REQUESTER[0][:4] + ["maybe", "change", ""]] + REQUESTER[1:], "row 2: safe is 'yes' or blank, not 'maybe'"),
    (REQUESTER[:1] + [["requester", "Again?", "someone_else", "x", "", "", ""]],      # another question, row 3
     "row 3: a field's question and gates go on its first row only (field 'requester' has them on row 2)"),
    (REQUESTER[:1] + [["", "", "someone_else", "x", "", "all", ""]] + REQUESTER[2:],  # other gates on a later row
     "row 3: a field's question and gates"),
    ([row[:4] + ["", *row[5:]] for row in REQUESTER], "field 'requester' gates 'change' but marks no option safe"),
])
def test_a_bad_fields_csv_is_refused_in_one_sentence_naming_the_file(tmp_path, rows, problem):
    path = write_csv(tmp_path / "fields.csv", FIELDS_CSV_HEADER, rows)
    with pytest.raises(ValueError, match=str(path)) as refused:
        fields_from_csv(path)
    assert problem in str(refused.value) and "\n" not in str(refused.value)


def test_make_task_writes_the_fields_into_the_label_file_and_the_prompt_asks_them_after_the_code(tmp_path, run_script):
    labels, messages = synthetic(tmp_path, 4, per_label=20)
    fields_csv = write_csv(tmp_path / "fields.csv", FIELDS_CSV_HEADER, REQUESTER)
    env = {"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"}
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, "--fields", fields_csv, env=env)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "tasks" / "mine"
    data = json.loads((folder / "mine.json").read_text(encoding="utf-8"))
    assert list(data).index("fields") == list(data).index("groups") - 1
    assert data["fields"] == fields_from_csv(fields_csv)
    system = (folder / "mine.prompt.txt").read_text(encoding="utf-8")
    grammar = (folder / "mine.gbnf").read_text(encoding="utf-8")
    assert "Whose account is the message about?" in system and "the code and the letters only" in system
    assert "the code only" not in system
    assert grammar.rstrip().endswith('"-" [ABC]')                        # the code, then one of the 3 options
    assert any(line.startswith("fields requester: the prompt and grammar ask them after the code")
               for line in done.stdout.splitlines())
    assert "  requester gates acts: its gate is fitted on calib answers labelled with their right requester, which " \
           "messages.csv does not give, so fit_routers.py cannot fit the model's routers with it yet " \
           "(08-routes/beyond/fields/README.md)" in done.stdout.splitlines()
    # the instructions ask for the letters after the code, and the example answer is a code of this task
    assert "then the letter of each answer to the questions after the list, and nothing else" in system
    assert "for example A-A-A" in system and "C-F" not in system
    # a key repeated with the same question on the next rows is the same field
    repeated = write_csv(tmp_path / "repeated.csv", FIELDS_CSV_HEADER, [REQUESTER[0]] + [
        [REQUESTER[0][0], REQUESTER[0][1], *row[2:]] for row in REQUESTER[1:]])
    assert fields_from_csv(repeated) == data["fields"]
    # without --fields, the same CSVs make a task whose prompt asks the code only
    plain = run_script(SCRIPT, "plain", "--labels", labels, "--messages", messages, env=env)
    assert plain.returncode == 0, plain.stderr
    assert "Whose account" not in (tmp_path / "tasks" / "plain" / "plain.prompt.txt").read_text(encoding="utf-8")


def test_make_task_refuses_a_bad_fields_file_in_one_line_and_writes_nothing(tmp_path, run_script):
    labels, messages = synthetic(tmp_path, 4, per_label=20)
    fields_csv = write_csv(tmp_path / "fields.csv", FIELDS_CSV_HEADER, REQUESTER[:1])
    env = {"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"}
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, "--fields", fields_csv, env=env)
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1 and str(fields_csv) in done.stderr
    assert not (tmp_path / "tasks" / "mine").exists()
