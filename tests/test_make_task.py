"""A task of your own (datasets/make_task.py, task.py): prompt, grammar and splits from two CSV files; bad input.

Its baselines are tested in test_make_task_baselines.py, the labels' kinds in test_make_task_kinds.py.
"""
import csv
import json
from pathlib import Path

import pytest

# conftest.py puts the repository, its post folders and their beyond folders on sys.path
from grammar_codes import grammar_codes
from labels import read_label_file
from make_task import default_calibration, make_task, own_name_prefix, propose_groups, round_robin, write_task
from registry import Dataset, discover
from task import TaskLoader
from task_csvs import SCRIPT, WORDS, synthetic, write_csv

ROOT = Path(__file__).resolve().parents[1]


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
    router = tmp_path / "mine-router.json"
    for script, *options in (("04-is-the-confidence-honest/ece.py", "--dataset", "mine", "--results", files["test"]),
                             ("06-isotonic/isotonic.py", *fitted, "--no-show", "--png", tmp_path / "iso.png"),
                             ("07-separation/separation.py", *fitted),
                             ("08-routes/routes.py", *fitted, "--router-out", router),
                             ("08-routes/route.py", "--dataset", "mine", "--router", router, "--jsonl",
                              "has my new card been sent yet?")):
        done = run_script(script, *options, env=env)
        assert done.returncode == 0, f"{script}: {done.stderr}"
    assert json.loads(done.stdout)["code"] in dataset.codes()
    refused = run_script("04-is-the-confidence-honest/ece.py", "--results", files["test"], env=env)
    assert refused.returncode == 2  # a task's results are not BANKING77's

    # the baselines make_task.py measured with no model, for both splits, stored where run.py and routes.py read them
    stored = dataset.header["baselines"]
    assert set(stored["calib"]) >= {"neighbours", "linear_examples"} and set(stored["test"]) == set(stored["calib"])
    assert all(0.0 <= value <= 1.0 for split in ("calib", "test") for value in stored[split].values())

    # the combined decision of 08's beyond on the task: the retriever's shortlist of 2, the model choosing in it
    shortlists = {split: tmp_path / f"mine-shortlist2-{split}.jsonl" for split in ("calib", "test")}
    for split, path in shortlists.items():
        done = run_script("08-routes/beyond/combined/shortlist.py", "--dataset", "mine", "--split", split, "--shortlist", 2,
                          "--out", path, env=env)
        assert done.returncode == 0, done.stderr
    written = [ROOT / "03-where-confidence-comes-from" / "results" / f"mine-combined2-{split}.jsonl"
               for split in ("calib", "test")]
    try:
        done = run_script("08-routes/beyond/combined/combined.py", "--dataset", "mine", "--shortlist", 2,
                          "--calib", shortlists["calib"], "--results", shortlists["test"],
                          "--plain-calib", files["calib"], "--plain-results", files["test"], env=env)
        assert done.returncode == 0, done.stderr
        for split, path in zip(("calib", "test"), written):
            combined = [json.loads(line) for line in path.read_text().splitlines()]
            assert len(combined) == dataset.split_size(split)
            assert {line["code"] for line in combined if line["status"] == "ok"} <= set(dataset.codes())
    finally:
        for path in written:
            path.unlink(missing_ok=True)


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


@pytest.mark.parametrize("labels, left, expected", [
    (6, 700, 300),        # the walk-through's card_help: max(60, 300, min(1000, 175))
    (3, 345, 300),        # 3 labels of 120, 15 examples out: max(30, 300, 86)
    (30, 290, 290),       # a label short of messages: never more than left
    (2, 1990, 497),       # a larger pile grows it: max(20, 300, min(1000, 1990 // 4 = 497))
    (11, 18145, 1000),    # CLINC150's ten domains and out of scope: a quarter is 4,536, capped at 1,000
    (150, 22000, 1500),   # 10 per label still holds above the cap
])
def test_the_default_calibration_size_grows_with_the_pile_up_to_1000(labels, left, expected):
    assert default_calibration(labels, left) == expected


def test_round_robin_takes_each_list_in_turn_and_skips_those_that_ran_out():
    assert round_robin([[1, 2, 3], [4], [5, 6]], 5) == [1, 4, 5, 2, 6]
    assert round_robin([[1, 2], [3, 4]], 10) == [1, 3, 2, 4]
    assert round_robin([], 3) == []


def test_a_large_pile_gets_a_larger_calibration_split_by_default(tmp_path):
    labels, messages = synthetic(tmp_path, 2, per_label=1000)
    made = make_task("mine", labels, messages)
    assert len(made.calibration) == 497  # 1,990 left after 10 examples: a quarter
    assert len(made.test) == 1990 - 497
    assert json.loads(made.files["mine.json"])["splits"]["calib"] == 497


def test_calib_sets_the_calibration_size_round_robin_over_the_labels(tmp_path):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    made = make_task("mine", labels, messages, calib=50)
    labels_of = [row[1] for row in csv.reader(messages.open())][1:]
    assert len(made.calibration) == 50 and len(made.test) == 345 - 50
    # 50 = 16 rounds of 3, then label_0 and label_1 once more
    assert [made.counts[f"label_{k}"][1] for k in range(3)] == [17, 17, 16]
    assert [labels_of[row] for row in made.calibration[-3:]] == ["label_2", "label_0", "label_1"]


@pytest.mark.parametrize("calib, expected", [(346, "at most --calib 345"), (19, "at least 20 calibration")])
def test_a_calib_the_messages_cannot_give_or_below_20_is_refused(tmp_path, run_script, calib, expected):
    labels, messages = synthetic(tmp_path, 3, per_label=120)  # 360 messages, 15 examples: 345 left
    with pytest.raises(ValueError, match=expected):
        make_task("mine", labels, messages, calib=calib)
    tasks = tmp_path / "tasks"
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, "--calib", calib,
                      env={"TYPED_DECISIONS_TASKS": str(tasks)})
    assert (done.returncode, done.stdout, len(done.stderr.splitlines())) == (2, "", 1)
    assert not tasks.exists()


CODE = r"\b[A-Z]-[A-Z]\b"


@pytest.mark.parametrize("closing, last_line", [
    ("none", "Answer with the code only."),
    ("example", "Answer with the code only, for example A-C."),  # 6 labels but the out-of-scope one: the 3rd of 5
])
def test_the_prompt_names_only_the_tasks_codes_and_ends_with_the_closing_asked_for(tmp_path, closing, last_line):
    import re
    from prompt import build_prompt
    labels, messages = synthetic(tmp_path, 6, per_label=60)
    made = make_task("mine", labels, messages, out_of_scope="label_5", closing=closing)
    system = made.files["mine.prompt.txt"].decode()
    codes = {intent.code for intent in made.labels.intents}
    assert set(re.findall(CODE, system)) <= codes and system.endswith("\n" + last_line)
    assert ("for example" in system) == (closing == "example")
    task = json.loads(made.files["mine.json"])["task"]
    assert (task["closing"], task["closing_line"]) == (closing, last_line)
    write_task(made, tmp_path / "tasks" / "mine")
    loader = discover(tasks=tmp_path / "tasks")["mine"].loader()  # what prompt.py load_prompt builds it from
    assert build_prompt(loader.load_labels(), 5, True, loader.PROMPT_INSTRUCTIONS, loader.PROMPT_CLOSING).system == system


def test_a_task_made_before_the_closing_choice_keeps_post_02s_closing(tmp_path):
    from prompt import CLOSING
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    write_task(make_task("mine", labels, messages), tmp_path / "mine")
    data = json.loads((tmp_path / "mine" / "mine.json").read_text())
    del data["task"]["closing_line"]
    (tmp_path / "mine" / "mine.json").write_text(json.dumps(data))
    assert getattr(TaskLoader(tmp_path / "mine" / "mine.json"), "PROMPT_CLOSING", CLOSING) == CLOSING


def test_the_example_closing_of_clinc150s_ten_domains_and_out_of_scope_is_the_5th_code(tmp_path):
    labels, messages = synthetic(tmp_path, 11, per_label=40)
    made = make_task("mine", labels, messages, out_of_scope="label_10", closing="example")
    assert made.files["mine.prompt.txt"].decode().endswith("for example A-E.")  # 10 in scope: the (10 - 1) // 2 = 4th


@pytest.mark.parametrize("name, description, prefix", [
    ("travel", "travel: trips and bookings", "travel: "),
    ("travel", "Travel - trips", "Travel - "),
    ("credit_cards", "credit cards, limits and rewards", "credit cards, "),
    ("credit_cards", "credit_cards: limits", "credit_cards: "),
    ("travel", "travel-related questions", ""),        # a hyphen inside a word is no separator
    ("travel", "travelling abroad: visas", ""),
    ("work", "a job: payday", ""),
])
def test_a_description_that_starts_with_its_labels_name_loses_that_start(name, description, prefix):
    assert own_name_prefix(name, description) == prefix


def test_make_task_strips_the_labels_name_from_its_description_and_says_so(tmp_path):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    write_csv(labels, ["label", "description"], [["label_0", "label_0: the first"], ["label_1", "Label_1 - the second"],
                                                 ["label_2", "the third"]])
    made = make_task("mine", labels, messages)
    assert [intent.description for intent in made.labels.intents] == ["the first", "the second", "the third"]
    assert any(note.startswith("2 descriptions began with the label's own name") for note in made.notes)
    write_csv(labels, ["label", "description"], [["label_0", "label_0:"], ["label_1", "x"], ["label_2", "y"]])
    with pytest.raises(ValueError, match="'label_0' has no description"):
        make_task("mine", labels, messages)


def test_the_next_line_keeps_the_llama_url_the_reader_set(tmp_path, run_script):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages,
                      env={"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "next: LLAMA_URL=http://127.0.0.1:1 python3 00-setup/server.py start --dataset mine"
def test_a_kind_column_with_another_kind_is_refused_in_one_line_and_nothing_is_written(tmp_path, run_script):
    _, messages = synthetic(tmp_path, 2, per_label=160)
    labels = write_csv(tmp_path / "kinds.csv", ["label", "description", "kind"],
                       [["label_0", "what label_0 is for", "inform"], ["label_1", "what label_1 is for", "delete"]])
    tasks = tmp_path / "tasks"
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages,
                      env={"TYPED_DECISIONS_TASKS": str(tasks)})
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "the label 'label_1' has the kind 'delete'; expected inform, change, irreversible" in done.stderr
    assert not tasks.exists()


# ---------------------------------------------------------------- the out-of-scope share of the calibration split

def with_out_of_scope(tmp_path: Path, outside: int = 150, test_share: float | None = None):
    """labels.csv and messages.csv of 10 labels of 40 messages and "none" with `outside` messages; with test_share,
    test.csv of 100 messages, that share of them "none"."""
    names = [f"label_{k}" for k in range(10)] + ["none"]
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"], [[n, f"what {n} is for"] for n in names])
    rows = [[f"my {WORDS[k % len(WORDS)]} question number {i} for label_{k}", f"label_{k}"]
            for k in range(10) for i in range(40)]
    rows += [[f"something else entirely, number {i}", "none"] for i in range(outside)]
    messages = write_csv(tmp_path / "messages.csv", ["text", "label"], rows)
    if test_share is None:
        return labels, messages, None
    outside_test = round(100 * test_share)
    test = write_csv(tmp_path / "test.csv", ["text", "label"],
                     [[f"something else {i}", "none"] for i in range(outside_test)]
                     + [[f"my card question {i}", f"label_{i % 10}"] for i in range(100 - outside_test)])
    return labels, messages, test


def test_the_out_of_scope_share_sets_how_many_calibration_messages_are_out_of_scope(tmp_path):
    labels, messages, _ = with_out_of_scope(tmp_path)
    texts = [row[1] for row in csv.reader(messages.open())][1:]
    even = make_task("mine", labels, messages, out_of_scope="none", calib=300)
    assert sum(texts[row] == "none" for row in even.calibration) == 27  # 300 round-robin over 11: 28, 28, 28, 27...
    made = make_task("mine", labels, messages, out_of_scope="none", calib=300, out_of_scope_share=0.14)
    outside = [texts[row] == "none" for row in made.calibration]
    assert len(outside) == 300 and sum(outside) == 42  # round(0.14 x 300)
    assert 19 <= sum(outside[:150]) <= 23  # spread through the split: about half in its first half
    assert [made.counts[f"label_{k}"][1] for k in range(10)] == [26] * 8 + [25] * 2  # 258 round-robin over 10
    data = json.loads(made.files["mine.json"])
    assert data["calibration"]["out_of_scope_share"] == 0.14 and len(data["calibration"]["rows"]) == 300
    assert not any("calibration (asked" in note for note in made.notes)


def test_an_out_of_scope_label_short_of_messages_for_its_share_is_noted(tmp_path):
    labels, messages, _ = with_out_of_scope(tmp_path, outside=20)  # 5 examples: 15 left for the calibration split
    made = make_task("mine", labels, messages, out_of_scope="none", calib=300, out_of_scope_share=0.14)
    assert len(made.calibration) == 300 and made.counts["none"][1] == 15
    assert any(note.startswith("--out-of-scope-share 0.14: the out-of-scope label none has 15 messages beyond the "
                               "prompt's examples, so the calibration split holds 15 of 300 (5.0%), not 42: add about "
                               "27 out-of-scope messages") for note in made.notes)


def test_a_test_file_with_another_out_of_scope_share_than_calib_is_noted_with_the_option(tmp_path):
    labels, messages, test = with_out_of_scope(tmp_path, test_share=0.14)
    made = make_task("mine", labels, messages, test, out_of_scope="none", calib=300)
    # calib: 27 of 300 out of scope = 9.0%; test 14 of 100 = 14.0%, above the note's bar of 1.5 x 9.0 = 13.5
    assert any(note.startswith("the test split holds 14.0% out-of-scope messages, the calibration split 9.0%")
               and note.endswith("--out-of-scope-share 0.14") for note in made.notes)
    given = make_task("mine", labels, messages, test, out_of_scope="none", calib=300, out_of_scope_share=0.14)
    assert not any("the test split holds" in note for note in given.notes)


# ---------------------------------------------------------------- when 08's certified act rule can ever act

def test_the_certified_act_rule_needs_199_right_calib_answers_and_the_task_says_whether_it_has_them(tmp_path):
    from guarantee import DELTA, minimum_answers
    from routes import TARGET
    # n right of n: Clopper-Pearson lower bound delta ** (1 / n) at delta 0.05;
    # 0.05 ** (1 / 199) = exp(ln 0.05 / 199) = exp(-2.995732 / 199) = exp(-0.015054) = 0.985059 >= 0.985,
    # 0.05 ** (1 / 198) = exp(-0.015130) = 0.984984 < 0.985: so 199
    assert (TARGET, DELTA, minimum_answers(TARGET, DELTA)) == (0.985, 0.05, 199)
    labels, messages, _ = with_out_of_scope(tmp_path)
    enough = make_task("mine", labels, messages, out_of_scope="none", calib=300)  # 27 out of scope: 273 in scope
    assert enough.certified.startswith("certified act rule (08-routes/beyond/guarantees/certified_routes.py): it needs at least "
                                       "199 right calib answers with an in-scope code")
    assert enough.certified.endswith("the calibration split has 300 messages, 273 in scope, so it can act on this "
                                     "task once the model gets enough of them right")
    short = make_task("mine", labels, messages, out_of_scope="none", calib=200)  # 18 out of scope: 182 in scope
    # ceil(199 x 200 / 182) = ceil(218.7) = 219
    assert short.certified.endswith("the calibration split has 200 messages, 182 in scope, so it can never act on "
                                    "this task: make it again with --calib 219 or more (add messages if need be)")


# ---------------------------------------------------------------- proposed groups that put unlike labels together

UNLIKE = {"gas": "how much gas is left in the car", "gas_type": "which gas does the car take, unleaded",
          "mpg": "miles per gallon of gas for the car", "translate": "translate hello into french for the trip abroad",
          "timezone": "the time zone of paris for the trip abroad", "exchange_rate": "euro rate for the trip abroad"}


def test_a_label_that_shares_words_with_another_group_and_not_its_own_is_named_with_its_group():
    from check_groups import unlike_labels
    from labels import Message
    messages = [Message(f"{name}-{i}", f"{text} {i}", name) for name, text in UNLIKE.items() for i in range(5)]
    mixed_groups = [("A GAS", ["gas", "gas_type", "mpg", "translate"]), ("B TRAVEL", ["timezone", "exchange_rate"])]
    [odd] = unlike_labels(mixed_groups, messages)  # translate shares only "for the" with mpg, "trip abroad" with B
    assert (odd.intent, odd.group, odd.other_group, odd.why()) == ("translate", "A GAS", "B TRAVEL", "closer to B TRAVEL")
    assert odd.other > odd.own
    assert unlike_labels([("A GAS", ["gas", "gas_type", "mpg"]), ("B TRAVEL", ["translate", "timezone",
                                                                             "exchange_rate"])], messages) == []


def test_proposed_groups_that_mix_topics_are_warned_of_by_name_with_how_to_regroup(tmp_path, run_script):
    from make_task import unlike_warnings
    # 27 labels: 3 topics of 8 labels whose messages share the topic's words, and 3 loners of words of their own;
    # 5 groups of at most 9 (propose_groups), so a loner lands in a topic's group, whose words it does not share
    topics = {"car": "fuel tank engine", "trip": "flight hotel abroad", "card": "card pin limit"}
    names = [f"{topic}_{k}" for topic in topics for k in range(8)] + ["zebra", "violin", "quartz"]
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"], [[n, f"about {n}"] for n in names])
    words = {**{f"{t}_{k}": f"{w} {t}{k}" for t in topics for k, w in ((k, topics[t]) for k in range(8))},
             "zebra": "zebra stripes savanna", "violin": "violin bow strings", "quartz": "quartz crystal rock"}
    messages = write_csv(tmp_path / "messages.csv", ["text", "label"],
                         [[f"please {words[n]} number {i}", n] for n in names for i in range(20)])
    made = make_task("mine", labels, messages)
    flagged = {u.intent for u in made.unlike}
    assert flagged and flagged <= {"zebra", "violin", "quartz"}  # the loners only, never a topic's label
    assert all(len(made.labels.groups[ord(u.group[0]) - ord("A")].intents) > 1 for u in made.unlike)
    lines = unlike_warnings(made.unlike, "mine", tmp_path / "mine.json")
    groups_named = {u.group for u in made.unlike}
    assert lines[0].startswith(f"warning: {len(groups_named)} of the proposed groups put unlike labels together")
    assert all(any(line.startswith(f"  {u.group}: ") and f"{u.intent} (" in line for line in lines[1:-1])
               for u in made.unlike)
    assert "python3 02-forcing-a-valid-answer/prompt.py mine --save" in lines[-1]
    assert "python3 datasets/check_groups.py --dataset mine" in lines[-1]
    own = write_csv(tmp_path / "own.csv", ["label", "description", "group"],
                    [[n, f"about {n}", n.split("_")[0].upper()] for n in names])
    assert make_task("mine", own, messages).unlike == []  # your own groups are yours: no warning


# ---------------------------------------------------------------- every printed command complete; bad new options

def test_the_letters_line_without_a_server_gives_the_complete_commands(tmp_path, run_script):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages,
                      env={"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"})
    [letters] = [line for line in done.stdout.splitlines() if line.startswith("letters ")]
    assert letters == (f"letters ABC: not checked, no server at http://127.0.0.1:1; start it (LLAMA_URL=http://127.0.0.1:1 "
                       f"python3 00-setup/server.py start --dataset mine) and run python3 datasets/make_task.py mine "
                       f"--labels {labels} --messages {messages} again to check them")


NEW_OPTIONS_BAD = {
    "a kind that is none": (["--kind", "delete"], "--kind 'delete': expected one of inform, change, irreversible"),
    "kinds from elsewhere": (["--kinds-from", "names"], "--kinds-from 'names': the kinds can be proposed from "
                                                        "descriptions only"),
    "both kind options": (["--kind", "inform", "--kinds-from", "descriptions"], "give one of them"),
    "accept without a proposal": (["--accept-kinds"], "--accept-kinds writes the kinds --kinds-from"),
    "a share above 1": (["--out-of-scope", "label_2", "--out-of-scope-share", "14"], "strictly between 0 and 1"),
    "a share of 0": (["--out-of-scope", "label_2", "--out-of-scope-share", "0"], "strictly between 0 and 1"),
    "a share that is no number": (["--out-of-scope", "label_2", "--out-of-scope-share", "a lot"],
                                  "give a fraction between 0 and 1"),
    "a share without the label": (["--out-of-scope-share", "0.1"], "needs --out-of-scope LABEL"),
}


@pytest.mark.parametrize("case", sorted(NEW_OPTIONS_BAD))
def test_a_new_option_out_of_its_range_is_refused_in_one_line_with_status_2(tmp_path, run_script, case):
    options, expected = NEW_OPTIONS_BAD[case]
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    tasks = tmp_path / "tasks"
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, *options,
                      env={"TYPED_DECISIONS_TASKS": str(tasks)})
    assert (done.returncode, done.stdout, len(done.stderr.splitlines())) == (2, "", 1)
    assert expected in done.stderr
    assert not tasks.exists()


def test_kind_options_are_refused_beside_a_kind_column(tmp_path, run_script):
    _, messages = synthetic(tmp_path, 2, per_label=160)
    labels = write_csv(tmp_path / "kinds.csv", ["label", "description", "kind"],
                       [["label_0", "what label_0 is for", "inform"], ["label_1", "what label_1 is for", "change"]])
    for options in (["--kind", "inform"], ["--kinds-from", "descriptions"]):
        done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, *options,
                          env={"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks")})
        assert (done.returncode, len(done.stderr.splitlines())) == (2, 1)
        assert "the labels file has a kind column" in done.stderr


def test_check_groups_checks_a_tasks_grouping_and_names_its_unlike_labels(tmp_path, run_script):
    words = {"gas": "gas car tank", "mpg": "gas car miles", "translate": "translate french trip",
             "timezone": "zone paris trip"}
    labels = write_csv(tmp_path / "labels.csv", ["label", "description", "group"],
                       [["gas", "fuel", "CAR"], ["mpg", "mileage", "CAR"], ["translate", "words", "CAR"],
                        ["timezone", "time", "TRAVEL"]])
    messages = write_csv(tmp_path / "messages.csv", ["text", "label"],
                         [[f"{text} {i}", name] for name, text in words.items() for i in range(30)])
    env = {"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"}
    assert run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, env=env).returncode == 0
    done = run_script("datasets/check_groups.py", "--dataset", "mine", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("leave-one-out over ") and "fit messages of mine" in done.stdout.splitlines()[0]
    unlike = done.stdout.split("intents that share fewer words")[1].splitlines()
    assert unlike[0].endswith(": 1") and unlike[1].split()[:3] == ["A", "CAR", "translate"]
    refused = run_script("datasets/check_groups.py", "--dataset", "mine", "--labels", "x.json", env=env)
    assert (refused.returncode, len(refused.stderr.splitlines())) == (2, 1)
