"""A task of your own (datasets/make_task.py, task.py): prompt, grammar and splits from two CSV files; bad input."""
import csv
import json
import random
import sys
from types import SimpleNamespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import series  # noqa: E402,F401
from grammar_codes import grammar_codes  # noqa: E402
from labels import read_label_file  # noqa: E402
from make_task import (baselines_table, default_calibration, make_task, own_name_prefix, propose_groups,  # noqa: E402
                       round_robin, write_task)
from registry import Dataset, discover  # noqa: E402
from task import TaskLoader, baseline_note  # noqa: E402

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
        done = run_script("08-routes/beyond/shortlist.py", "--dataset", "mine", "--split", split, "--shortlist", 2,
                          "--out", path, env=env)
        assert done.returncode == 0, done.stderr
    written = [ROOT / "03-where-confidence-comes-from" / "results" / f"mine-combined2-{split}.jsonl"
               for split in ("calib", "test")]
    try:
        done = run_script("08-routes/beyond/combined.py", "--dataset", "mine", "--shortlist", 2,
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


def mixed(tmp_path: Path, per_label: int = 60):
    """labels.csv and messages.csv of 3 labels whose messages share words, so the baselines make mistakes."""
    names = ["card_arrival", "card_delivery", "top_up"]
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"], [[n, f"about {n}"] for n in names])
    words = ("card", "arrive", "sent", "top", "up", "money", "when", "where", "deliver", "still", "not", "my")
    draw = random.Random(0)  # 3 shared words, and half the time a word of the label's own
    rows = [[" ".join(draw.sample(words, 3) + ([name] if draw.random() < 0.5 else [])) + f" ({i})", name]
            for name in names for i in range(per_label)]
    return labels, write_csv(tmp_path / "messages.csv", ["text", "label"], rows)


def test_the_baselines_stored_are_what_neighbours_py_and_linear_py_give_on_the_tasks_splits(tmp_path):
    from linear import example_messages, fit_classifier
    from neighbours import Retriever, gold_positions, recall_at
    labels, messages = mixed(tmp_path)
    test = write_csv(tmp_path / "test.csv", ["text", "label"],
                     [["card arrive still not", "card_arrival"], ["top up money", "top_up"], ["my card sent", "card_delivery"]])
    made = make_task("mine", labels, messages, test, calib=60)
    write_task(made, tmp_path / "tasks" / "mine")
    dataset = discover(tasks=tmp_path / "tasks")["mine"]
    stored = dataset.header["baselines"]
    assert stored == made.baselines
    retriever = Retriever.fit(dataset.fit_messages())  # as baseline.py --dataset mine fits it
    linear = fit_classifier(example_messages(dataset.load_labels()), cache=None)
    for split in ("calib", "test"):
        messages_of = dataset.load_split(split)
        assert stored[split]["neighbours"] == round(recall_at(gold_positions(retriever, messages_of), 1), 4)
        assert stored[split]["linear_examples"] == round(
            sum(linear.predict(m.text) == m.intent for m in messages_of) / len(messages_of), 4)
        assert all(0.0 <= value <= 1.0 for value in stored[split].values())
    assert stored["fitted_on"] == {"neighbours": 180 - 60, "linear_examples": 15, "linear_fit": 120}
    assert stored["calib"]["neighbours"] < 1.0  # the messages share words: a test that can fail
    table = baselines_table(stored)
    assert len(table) == 4 and f"{100 * stored['test']['neighbours']:.1f}%" in table[1]


def test_the_linear_fit_takes_at_most_2000_fit_messages_round_robin(tmp_path):
    from make_task import linear_sample
    from labels import Message
    fit = [Message(f"m-{i}", f"text {i}", "ab"[i % 7 == 0]) for i in range(2100)]  # 300 of b, 1,800 of a
    sample = linear_sample(fit, 0, cap=1000)
    assert len(sample) == 1000 and len({m.id for m in sample}) == 1000
    assert sum(m.intent == "b" for m in sample) == 300  # b runs out after 300 rounds; a fills the rest
    assert linear_sample(fit, 0, cap=1000) == sample and linear_sample(fit[:50], 0, cap=1000) == fit[:50]


def test_a_task_without_a_test_split_has_calib_baselines_only(tmp_path):
    labels, messages = synthetic(tmp_path, 30, per_label=15)
    made = make_task("mine", labels, messages)
    assert set(made.baselines) == {"calib", "fitted_on", "fit_messages"}
    assert baselines_table(made.baselines)[1].endswith("-")
    # 30 labels: above the 26 the logistic regression is fitted for here, so only the neighbours
    assert list(made.baselines["fitted_on"]) == ["neighbours"]
    assert "--method linear" in baselines_table(made.baselines)[-1]


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


def test_baseline_note_names_the_better_baseline_for_a_task_and_nothing_for_the_series(tmp_path, monkeypatch):
    import registry
    labels, messages = mixed(tmp_path)
    write_task(make_task("mine", labels, messages, calib=60), tmp_path / "tasks" / "mine")
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "tasks")["mine"])
    stored = registry.DATASETS["mine"].header["baselines"]["calib"]
    best = max(stored.values())
    below, above = baseline_note("mine", "calib", best / 2), baseline_note("mine", "calib", 1.0)
    assert below.startswith("the better baseline on this split: ") and f"{100 * best:.1f}%" in below
    assert "your-task.md#when-the-model-loses-to-the-baseline" in below
    assert above.startswith("the best baseline on this split: ") and "your-task.md" not in above
    write_task(make_task("mine", labels, messages, calib=165), tmp_path / "all" / "mine")  # nothing left for test
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "all")["mine"])
    assert baseline_note("mine", "test", 0.5) is None and baseline_note("mine", "calib", 0.5) is not None
    assert [baseline_note(name, "test", 0.5) for name in ("banking77", "clinc150", "banking77oos")] == [None] * 3
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        baseline_note("mine", "calib", 1.5)


def test_the_next_line_keeps_the_llama_url_the_reader_set(tmp_path, run_script):
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages,
                      env={"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "next: LLAMA_URL=http://127.0.0.1:1 python3 00-setup/server.py start --dataset mine"
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


def test_a_runs_baseline_note_counts_its_answers_and_says_when_it_is_part_of_the_split(tmp_path, monkeypatch):
    import registry
    from results_record import ResultsLine
    from task import baseline_note_of_run
    labels, messages = mixed(tmp_path)
    write_task(make_task("mine", labels, messages, calib=60), tmp_path / "tasks" / "mine")
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "tasks")["mine"])
    best = max(registry.DATASETS["mine"].header["baselines"]["calib"].values())

    def line(status: str, correct: bool):
        return SimpleNamespace(is_answer=status != "error", correct=correct)
    # 3 answers, 1 right (33.3%), and a failed request that takes no part
    part = [line("ok", True), line("ok", False), line("invalid", False), line("error", False)]
    note = baseline_note_of_run("mine", "calib", part)
    assert "the model 33.3% on 3 of its 60 messages" in note
    assert note == baseline_note("mine", "calib", 1 / 3, 3)
    whole = [line("ok", True)] * 60
    assert baseline_note_of_run("mine", "calib", whole).endswith(f"{100 * best:.1f}% (make_task.py), the model 100.0%")
    assert baseline_note_of_run("mine", "calib", [line("error", False)]) is None
    assert baseline_note_of_run("mine", "calib", []) is None
    assert hasattr(ResultsLine, "is_answer")  # the attribute the note counts by
    # the hook run.py and routes.py reach through the registry; the series' datasets have none
    assert registry.DATASETS["mine"].loader().baseline_note_of_run("calib", part) == note
    assert getattr(registry.DATASETS["banking77"].loader(), "baseline_note_of_run", None) is None


def test_a_kind_column_marks_each_label_s_action_and_without_it_every_label_is_a_change(tmp_path, monkeypatch):
    import registry
    sys.path.insert(0, str(ROOT / "08-routes" / "beyond"))
    from harm import intent_kinds
    _, messages = synthetic(tmp_path, 3, per_label=120)
    kinds = {"label_0": "inform", "label_1": "change", "label_2": "irreversible"}
    with_kind = write_csv(tmp_path / "kinds.csv", ["label", "description", "kind"],
                          [[name, f"what {name} is for", kind] for name, kind in kinds.items()])
    made = make_task("mine", with_kind, messages)
    write_task(made, tmp_path / "tasks" / "mine")
    monkeypatch.setitem(registry.DATASETS, "mine", Dataset("mine", tmp_path / "tasks" / "mine"))
    assert intent_kinds("mine") == kinds
    without = make_task("mine", synthetic(tmp_path, 3, per_label=120)[0], messages)
    marked = [i["action"] for g in json.loads(without.files["mine.json"])["groups"] for i in g["intents"]]
    assert marked == ["change"] * 3
    # the kind changes no prompt, and --irreversible marks a label irreversible whatever its kind
    assert made.files["mine.prompt.txt"] == without.files["mine.prompt.txt"]
    stricter = make_task("mine", with_kind, messages, irreversible=("label_0",))
    assert [i["action"] for g in json.loads(stricter.files["mine.json"])["groups"] for i in g["intents"]][0] == \
        "irreversible"


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
