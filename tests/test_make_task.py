"""A task of your own (datasets/make_task.py, task.py): prompt, grammar and splits from two CSV files; bad input."""
import csv
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import series  # noqa: E402,F401
from grammar_codes import grammar_codes  # noqa: E402
from labels import read_label_file  # noqa: E402
from make_task import make_task, propose_groups, write_task  # noqa: E402
from registry import Dataset, discover  # noqa: E402
from task import TaskLoader  # noqa: E402

SCRIPT = "datasets/make_task.py"
WORDS = ("card", "transfer", "refund", "pin", "cash", "fee", "rate", "account", "app", "phone", "top", "limit")


def write_csv(path: Path, header, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as file:
        out = csv.writer(file)
        out.writerow(header)
        out.writerows(rows)
    return path


def synthetic(tmp_path: Path, n_labels: int, per_label: int = 15, groups: int = 0):
    """labels.csv and messages.csv of n_labels labels, per_label distinct messages each; labels k and k+1 share a
    topic word, so proposed groups have something to go by."""
    names = [f"label_{k}" for k in range(n_labels)]
    header = ["label", "description"] + (["group"] if groups else [])
    rows = [[name, f"what {name} is for"] + ([f"G{k % groups}"] if groups else []) for k, name in enumerate(names)]
    labels = write_csv(tmp_path / "labels.csv", header, rows)
    texts = [[f"my {WORDS[(k // 2) % len(WORDS)]} question number {i} for {name}", name]
             for k, name in enumerate(names) for i in range(per_label)]
    return labels, write_csv(tmp_path / "messages.csv", ["text", "label"], texts)


@pytest.mark.parametrize("n_labels", [2, 20, 150])
def test_a_task_of_2_20_or_150_labels_makes_a_prompt_and_grammar_of_its_codes(tmp_path, n_labels):
    labels, messages = synthetic(tmp_path, n_labels, per_label=15 if n_labels > 2 else 160)
    made = make_task("mine", labels, messages)
    codes = {intent.code for intent in made.labels.intents}
    assert len(codes) == n_labels
    grammar = made.files["mine.gbnf"].decode()
    assert grammar_codes(grammar) == codes
    system = made.files["mine.prompt.txt"].decode()
    assert all(f"{intent.code} {intent.name}: {intent.description}" in system for intent in made.labels.intents)
    if n_labels <= 26:
        assert [group.letter for group in made.labels.groups] == ["A"]
    else:  # proposed groups: single letters, none above 26
        assert 2 <= len(made.labels.groups) <= 26 and max(len(g.intents) for g in made.labels.groups) <= 26
    write_task(made, tmp_path / "mine")
    loaded = read_label_file(tmp_path / "mine" / "mine.json", n_labels, "mine")
    assert loaded == made.labels


def test_150_labels_proposed_groups_keep_labels_with_shared_words_together():
    from labels import Message
    names = [f"label_{k}" for k in range(150)]
    messages = [Message(f"m-{k}-{i}", f"{WORDS[k % 12]}{k % 12} {WORDS[k % 12]}x text {i}", name)
                for k, name in enumerate(names) for i in range(5)]
    groups = propose_groups(names, messages)
    assert sorted(name for group in groups for name in group) == sorted(names)
    group_of = {name: g for g, group in enumerate(groups) for name in group}
    # every group holds labels of one topic word only (12 topics, 150 labels, groups of at most 26)
    assert all(len({int(name.split("_")[1]) % 12 for name in group}) == 1 for group in groups)
    assert group_of["label_0"] == group_of["label_12"]


def test_the_splits_share_nothing_and_the_calibration_split_is_round_robin(tmp_path):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    made = make_task("mine", labels, messages)
    loader_rows = made.calibration
    assert len(loader_rows) == 300  # 3 labels: 100 each for a few hundred in all
    examples = {text for intent in made.labels.intents for text in intent.examples}
    texts = [row[0] for row in csv.reader(messages.open())][1:]
    labels_of = [row[1] for row in csv.reader(messages.open())][1:]
    assert not examples & {texts[row] for row in made.calibration}
    assert not set(made.calibration) & set(made.test)
    assert len(made.test) == 3 * 120 - 300 - 15
    assert [labels_of[row] for row in made.calibration[:6]] == ["label_0", "label_1", "label_2"] * 2


def test_the_same_files_and_seed_give_the_same_task_and_another_seed_another(tmp_path):
    labels, messages = synthetic(tmp_path, 4, per_label=90)
    first = make_task("mine", labels, messages)
    write_task(first, tmp_path / "mine")
    written = {path.name: path.stat().st_mtime_ns for path in (tmp_path / "mine").iterdir()}
    again = make_task("mine", labels, messages)
    assert again.files == first.files
    write_task(again, tmp_path / "mine")
    assert {path.name: path.stat().st_mtime_ns for path in (tmp_path / "mine").iterdir()} == written
    assert make_task("mine", labels, messages, seed=1).calibration != first.calibration


def test_the_registry_finds_a_task_and_its_loader_gives_its_splits(tmp_path):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    test = write_csv(tmp_path / "test.csv", ["text", "label"], [["where is my label_1", "label_1"]])
    write_task(make_task("mine", labels, messages, test, out_of_scope="label_2"), tmp_path / "tasks" / "mine")
    found = discover(tasks=tmp_path / "tasks")
    dataset = found["mine"]
    assert dataset == Dataset("mine", tmp_path / "tasks" / "mine") and "banking77" in found
    assert len(dataset.load_split("calib")) == dataset.split_size("calib") == 300
    assert [m.text for m in dataset.load_split("test")] == ["where is my label_1"]
    assert dataset.out_of_scope_codes() == {"A-C"}
    assert "gets A-C (label_2)" in dataset.loader().PROMPT_INSTRUCTIONS
    assert len(dataset.fit_messages()) == 360 - 300
    assert isinstance(dataset.loader(), TaskLoader)


def test_a_label_short_of_messages_is_noted_with_what_it_costs(tmp_path):
    labels, messages = synthetic(tmp_path, 30, per_label=15)
    rows = list(csv.reader(messages.open()))
    write_csv(messages, rows[0], [row for row in rows[1:] if row[1] != "label_3" or row[0].endswith(" 0 for label_3")
                                  or " 1 for" in row[0] or " 2 for" in row[0] or " 3 for" in row[0]])
    made = make_task("mine", labels, messages)
    assert any(note.startswith("label_3: 4 messages, 4 distinct: 4 examples, 0 calibration") for note in made.notes)
    assert any("weighs less" in note for note in made.notes)


BAD = {
    "a label in the messages that the label file lacks": (
        [["a", "x"], ["b", "y"]], [["hello", "a"], ["hi", "c"]], "uses labels that"),
    "a label without a description": ([["a", ""], ["b", "y"]], None, "has no description"),
    "a label without messages": ([["a", "x"], ["b", "y"], ["c", "z"]], None, "has no message of the label"),
    "a duplicate label": ([["a", "x"], ["a", "y"]], None, "appears twice"),
    "a label name the prompt cannot hold": ([["a: b", "x"], ["b", "y"]], None, "holds ':' or '|'"),
    "a label name with a line break": ([["a\nb", "x"], ["b", "y"]], None, "line break"),
    "too few messages for a calibration": (
        [["a", "x"], ["b", "y"]], [[f"text {i}", "ab"[i % 2]] for i in range(20)], "at least 20 are needed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_gets_one_line_exit_2_and_writes_nothing(tmp_path, run_script, case):
    label_rows, message_rows, expected = BAD[case]
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"], label_rows)
    message_rows = message_rows or [[f"text {i} {name}", name] for name in ("a", "b") for i in range(40)]
    messages = write_csv(tmp_path / "messages.csv", ["text", "label"], message_rows)
    tasks = tmp_path / "tasks"
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, env={"TYPED_DECISIONS_TASKS": str(tasks)})
    assert (done.returncode, done.stdout, len(done.stderr.splitlines())) == (2, "", 1)
    assert expected in done.stderr
    assert not tasks.exists()


def csv_file(tmp_path, content: bytes) -> Path:
    path = tmp_path / "messages.csv"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("content, expected", [
    (b"", "is empty"),
    (b"text,label\nhello,a\n\xff\xfe broken,b\n", "is not UTF-8"),
    (b"message,intent\nhello,a\n", "expected the header text,label"),
    (b"text,label\nhello,a,extra\n", "3 fields, expected 2"),
])
def test_a_messages_file_that_is_not_a_text_label_csv_is_refused(tmp_path, run_script, content, expected):
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"], [["a", "x"], ["b", "y"]])
    tasks = tmp_path / "tasks"
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", csv_file(tmp_path, content),
                      env={"TYPED_DECISIONS_TASKS": str(tasks)})
    assert (done.returncode, len(done.stderr.splitlines()), expected in done.stderr) == (2, 1, True)
    assert not tasks.exists()


def test_more_labels_than_the_codes_hold_are_refused_before_anything_is_written(tmp_path):
    labels, messages = synthetic(tmp_path, 27, per_label=3, groups=1)  # 27 labels in one group
    with pytest.raises(ValueError, match="do not fit the codes: at most 26 groups of at most 26 labels"):
        make_task("mine", labels, messages)
    many = write_csv(tmp_path / "many.csv", ["label", "description"], [[f"l{k}", "d"] for k in range(677)])
    with pytest.raises(ValueError, match="677 labels do not fit the codes"):
        make_task("mine", many, messages)


def test_a_task_may_not_take_a_series_datasets_name_or_a_name_that_is_no_file_name(tmp_path):
    labels, messages = synthetic(tmp_path, 2, per_label=160)
    for name, expected in (("banking77", "is a dataset of the series"), ("../up", "use lower-case letters")):
        with pytest.raises(ValueError, match=expected):
            make_task(name, labels, messages)


def test_the_labels_groups_column_gives_the_groups_in_the_files_order(tmp_path):
    labels, messages = synthetic(tmp_path, 30, per_label=15, groups=3)
    made = make_task("mine", labels, messages)
    assert [(g.letter, g.name, len(g.intents)) for g in made.labels.groups] == [("A", "G0", 10), ("B", "G1", 10),
                                                                               ("C", "G2", 10)]
    assert made.labels.by_intent["label_4"].code == "B-B"
    data = json.loads(made.files["mine.json"])
    assert data["splits"] == {"calib": 300, "test": 0} and data["task"]["labels"] == 30


def test_a_task_made_from_two_files_runs_through_every_post_with_the_server(tmp_path, run_script, client):
    """From two CSV files to a route, as datasets/your-task.md walks it: no Python written, no file of the
    repository touched (the task and the results go to tmp_path)."""
    from banking77 import load_rows
    chosen = ("card_arrival", "activate_my_card", "terminate_account")
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"],
                       [[name, f"the customer asks about {name.replace('_', ' ')}"] for name in chosen])
    train, test = ([m for m in load_rows(split) if m.intent in chosen] for split in ("train", "test"))
    messages = write_csv(tmp_path / "messages.csv", ["text", "label"],
                         [[m.text, m.intent] for name in chosen for m in [m for m in train if m.intent == name][:20]])
    test_csv = write_csv(tmp_path / "test.csv", ["text", "label"], [[m.text, m.intent] for m in test[::8]])
    env = {"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks")}
    made = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, "--test", test_csv, env=env)
    assert made.returncode == 0, made.stderr
    dataset = discover(tasks=tmp_path / "tasks")["mine"]
    files = {split: tmp_path / f"mine-{split}.jsonl" for split in ("calib", "test")}
    for split, path in files.items():
        done = run_script("03-where-confidence-comes-from/run.py", "--dataset", "mine", "--split", split,
                          "--out", path, env=env)
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(lines) == dataset.split_size(split) == len(dataset.load_split(split))
        assert {line["prompt_sha256"] for line in lines} == {dataset.saved_prompt().sha256}
        assert {line["code"] for line in lines if line["status"] == "ok"} <= set(dataset.codes())
    fitted = ("--dataset", "mine", "--results", files["test"], "--calib", files["calib"])
    for script, *options in (("04-is-the-confidence-honest/ece.py", "--dataset", "mine", "--results", files["test"]),
                             ("06-isotonic/isotonic.py", *fitted, "--no-show", "--png", tmp_path / "iso.png"),
                             ("07-separation/separation.py", *fitted), ("08-routes/routes.py", *fitted),
                             ("08-routes/route.py", "--dataset", "mine", "--calib", files["calib"],
                              "has my new card been sent yet?")):
        done = run_script(script, *options, env=env)
        assert done.returncode == 0, f"{script}: {done.stderr}"
    refused = run_script("04-is-the-confidence-honest/ece.py", "--results", files["test"], env=env)
    assert refused.returncode == 2  # a task's results are not BANKING77's


def test_a_text_holding_the_examples_separator_is_never_an_example(tmp_path):
    labels, messages = synthetic(tmp_path, 2, per_label=160)
    rows = list(csv.reader(messages.open()))
    write_csv(messages, rows[0], [[f"is the driver lost | still waiting {i}", row[1]] if i < 100 else row
                                  for i, row in enumerate(rows[1:])])
    made = make_task("mine", labels, messages)
    assert not [text for intent in made.labels.intents for text in intent.examples if "|" in text]
    assert len(made.labels.intents[0].examples) == 5


def test_a_task_without_a_test_split_says_how_to_get_one_when_asked_for_it(tmp_path):
    labels, messages = synthetic(tmp_path, 30, per_label=15)
    write_task(make_task("mine", labels, messages), tmp_path / "tasks" / "mine")
    dataset = discover(tasks=tmp_path / "tasks")["mine"]
    assert dataset.split_size("test") == 0 and len(dataset.load_split("calib")) == 300
    with pytest.raises(ValueError, match="has no test split: .* --test FILE .* --split calib"):
        dataset.load_split("test")


def test_a_missing_file_is_named(tmp_path):
    labels, _ = synthetic(tmp_path, 2)
    with pytest.raises(ValueError, match=r"the messages file .*nowhere.csv does not exist"):
        make_task("mine", labels, tmp_path / "nowhere.csv")


def test_irreversible_labels_are_marked_in_the_label_file_where_the_routes_read_them(tmp_path, monkeypatch):
    import registry
    sys.path.insert(0, str(ROOT / "08-routes" / "beyond"))
    from typicality import irreversible_intents
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    made = make_task("mine", labels, messages, irreversible=("label_1",))
    write_task(made, tmp_path / "tasks" / "mine")
    monkeypatch.setitem(registry.DATASETS, "mine", Dataset("mine", tmp_path / "tasks" / "mine"))
    assert irreversible_intents("mine") == {"label_1"}
    assert len(registry.DATASETS["mine"].load_labels().intents) == 3      # the label file still loads
    # the mark changes no prompt: the server's cached prefill still fits
    assert made.files["mine.prompt.txt"] == make_task("mine", labels, messages).files["mine.prompt.txt"]
    with pytest.raises(ValueError, match="--irreversible 'label_9' is not a label"):
        make_task("mine", labels, messages, irreversible=("label_9",))
    with pytest.raises(ValueError, match="the out-of-scope label"):
        make_task("mine", labels, messages, out_of_scope="label_2", irreversible=("label_2",))
