"""A task's baselines (datasets/make_task.py, task.py): what neighbours.py and linear.py give on its splits with no
model, stored in its label file with each message's mark, and the note pairing a run of the model with the
stronger of them on the messages it answered."""
import json
import random
from pathlib import Path
from types import SimpleNamespace

# conftest.py puts the repository, its post folders and their beyond folders on sys.path
from make_task import baselines_table, make_task, write_task
from registry import discover
from task import baseline_note
from task_csvs import WORDS, synthetic, write_csv


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
    assert set(made.baselines) == {"calib", "fitted_on", "fit_messages", "right"}
    assert set(made.baselines["right"]) == {"calib"}
    assert baselines_table(made.baselines)[1].endswith("-")


def test_a_task_of_more_than_26_labels_gets_a_logistic_regression_baseline(tmp_path):
    # 31 labels (CLINC150's travel and car intents and out of scope in the issue): make_task.py used to stop at 26
    labels, messages = synthetic(tmp_path, 31, per_label=25)
    test = write_csv(tmp_path / "test.csv", ["text", "label"],
                     [[f"my {WORDS[(k // 2) % len(WORDS)]} question for label_{k}", f"label_{k}"] for k in range(31)])
    made = make_task("mine", labels, messages, test)
    # 25 each: 5 examples, 10 calib (310), and 10 more in the fit messages with the examples: 31 x 15 = 465
    assert made.baselines["fitted_on"] == {"neighbours": 465, "linear_examples": 155, "linear_fit": 465}
    assert set(made.baselines["calib"]) == set(made.baselines["test"]) == {"neighbours", "linear_examples", "linear_fit"}
    table = baselines_table(made.baselines)
    assert [line.split("  ")[0] for line in table[1:]] == [
        "nearest neighbours", "logistic regression on the examples", "logistic regression on the fit messages"]
    assert not any("no logistic regression" in line for line in table)


def mine():
    """The loader of the task "mine" the test put into the registry."""
    import registry
    return registry.DATASETS["mine"].loader()


def hand_made_marks(tmp_path, monkeypatch, **baselines):
    """A task of 2 labels whose calib split is 20 messages, its "baselines" block replaced by hand: key ->
    (accuracy on the whole split, the marks of its 20 messages). Returns the split's message ids, in order."""
    import registry
    labels, messages = synthetic(tmp_path, 2, per_label=20)
    write_task(make_task("mine", labels, messages, calib=20), tmp_path / "tasks" / "mine")
    label_file = tmp_path / "tasks" / "mine" / "mine.json"
    data = json.loads(label_file.read_text())
    data["baselines"] = {"calib": {key: accuracy for key, (accuracy, _) in baselines.items()},
                         "fitted_on": dict.fromkeys(baselines, 10), "fit_messages": 10,
                         "right": {"calib": {key: marks for key, (_, marks) in baselines.items()}}}
    label_file.write_text(json.dumps(data))
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "tasks")["mine"])
    return [message.id for message in registry.DATASETS["mine"].load_split("calib")]


def test_the_baseline_note_pairs_the_model_with_the_stronger_baseline_on_the_messages_it_answered(tmp_path,
                                                                                                  monkeypatch):
    # on the whole split linear_examples is ahead (12 of 20 against 8); on the 10 messages answered, the neighbours
    ids = hand_made_marks(tmp_path, monkeypatch, neighbours=(0.4, "1110011111" + "0" * 10),
                          linear_examples=(0.6, "1000000001" + "1" * 10))
    model = [True] * 6 + [False] * 4
    note = baseline_note(mine(), "calib", dict(zip(ids, model)))
    # neighbours on these 10: 8 right, linear_examples 2; the model 6.
    # b (right only with the model) = messages 4 and 5 = 2; c (only with the neighbours) = messages 7-10 = 4.
    # difference (2 - 4) / 10 = -0.2; se = sqrt(2 + 4 - (2 - 4)^2 / 10) / 10 = sqrt(5.6) / 10 = 0.236643;
    # 1.959964 x 0.236643 = 0.463811, so -0.2 +- 0.463811 = -0.663811 to +0.263811: -66.4 to +26.4 points
    assert note == ("the stronger baseline on the 10 messages answered of the split's 20: nearest neighbours 80.0% "
                    "(make_task.py), the model 60.0%; model minus baseline -20.0 points (95% interval -66.4 to "
                    "+26.4; right only with the model 2, only with the baseline 4): see "
                    "datasets/your-task.md#when-the-model-loses-to-the-baseline")
    # the whole split, the model right on all: linear_examples (12 of 20) is the stronger, and behind the model
    whole = baseline_note(mine(), "calib", dict.fromkeys(ids, True))
    # b = 8, c = 0: difference 0.4, se = sqrt(8 - 8^2 / 20) / 20 = sqrt(4.8) / 20 = 0.109545;
    # x 1.959964 = 0.214704: 0.185296 to 0.614704
    assert whole == ("the stronger baseline on the 20 messages answered: logistic regression on the examples 60.0% "
                     "(make_task.py), the model 100.0%; model minus baseline +40.0 points (95% interval +18.5 to "
                     "+61.5; right only with the model 8, only with the baseline 0)")
    assert "your-task.md" not in whole


def test_the_paired_interval_is_the_wald_interval_of_agresti_11_1():
    from task import Paired
    # b = 12, c = 45, n = 200 (the 200 answers): d = -33 / 200 = -0.165;
    # se = sqrt(57 - 33^2 / 200) / 200 = sqrt(57 - 5.445) / 200 = sqrt(51.555) / 200 = 7.180181 / 200 = 0.035901
    low, high = Paired("linear_fit", 200, 138, 171, 12, 45).interval()
    assert (round(low, 4), round(high, 4)) == (round(-0.165 - 1.959964 * 0.035901, 4),
                                               round(-0.165 + 1.959964 * 0.035901, 4))
    assert Paired("neighbours", 10, 5, 5, 0, 0).interval() == (0.0, 0.0)  # no discordant message: the point


def test_the_baseline_note_says_nothing_for_the_series_and_how_to_get_marks_for_an_older_task(tmp_path, monkeypatch):
    import registry
    labels, messages = mixed(tmp_path)
    write_task(make_task("mine", labels, messages, calib=60), tmp_path / "tasks" / "mine")
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "tasks")["mine"])
    ids = [m.id for m in registry.DATASETS["mine"].load_split("calib")]
    assert baseline_note(mine(), "calib", dict.fromkeys(ids, False)).endswith(
        "see datasets/your-task.md#when-the-model-loses-to-the-baseline")
    assert baseline_note(mine(), "calib", {}) is None
    # the series' datasets have another loader, without the note: only a task's loader carries it
    assert [hasattr(registry.DATASETS[name].loader(), "baseline_note_of_run") for name in
            ("banking77", "clinc150", "banking77oos")] == [False] * 3
    write_task(make_task("mine", labels, messages, calib=60), tmp_path / "older" / "mine")
    label_file = tmp_path / "older" / "mine" / "mine.json"
    data = json.loads(label_file.read_text())
    del data["baselines"]["right"]  # as make_task.py wrote it before it stored the marks
    label_file.write_text(json.dumps(data))
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "older")["mine"])
    older = baseline_note(mine(), "calib", dict.fromkeys(ids, True))
    assert "no per-message marks" in older and older.endswith("(the same files and seed give the same splits)")
    write_task(make_task("mine", labels, messages, calib=165), tmp_path / "all" / "mine")  # nothing left for test
    monkeypatch.setitem(registry.DATASETS, "mine", discover(tasks=tmp_path / "all")["mine"])
    assert baseline_note(mine(), "test", {"messages-0": True}) is None


def test_a_runs_baseline_note_pairs_its_answers_by_id_and_leaves_failed_requests_out(tmp_path, monkeypatch):
    import registry
    from results_record import ResultsLine
    from task import baseline_note_of_run
    ids = hand_made_marks(tmp_path, monkeypatch, neighbours=(0.5, "1" * 10 + "0" * 10))

    def line(message_id: str, status: str, correct: bool):
        return SimpleNamespace(id=message_id, is_answer=status != "error", correct=correct)
    # 3 answers, 1 right, the neighbours right on all 3; a failed request (the 4th) takes no part
    part = [line(ids[0], "ok", True), line(ids[1], "ok", False), line(ids[2], "invalid", False),
            line(ids[3], "error", False)]
    note = baseline_note_of_run(mine(), "calib", part)
    assert note.startswith("the stronger baseline on the 3 messages answered of the split's 20: nearest neighbours "
                           "100.0% (make_task.py), the model 33.3%; model minus baseline -66.7 points")
    assert note == baseline_note(mine(), "calib", {ids[0]: True, ids[1]: False, ids[2]: False})
    assert baseline_note_of_run(mine(), "calib", [line(ids[0], "error", False)]) is None
    assert baseline_note_of_run(mine(), "calib", []) is None
    assert hasattr(ResultsLine, "is_answer") and "id" in ResultsLine.__dataclass_fields__  # what the note reads
    # the hook run.py and routes.py reach through the registry; the series' datasets have none
    assert registry.DATASETS["mine"].loader().baseline_note_of_run("calib", part) == note
    assert getattr(registry.DATASETS["banking77"].loader(), "baseline_note_of_run", None) is None


def test_making_a_task_again_only_for_new_baseline_marks_keeps_its_runs(tmp_path):
    from make_task import changed_task
    labels, messages = synthetic(tmp_path, 3, per_label=120)
    made = make_task("mine", labels, messages)
    write_task(made, tmp_path / "mine")
    data = json.loads(made.files["mine.json"])
    del data["baselines"]["right"]  # the task as make_task.py made it before the marks
    (tmp_path / "mine" / "mine.json").write_text(json.dumps(data))
    assert not changed_task(tmp_path / "mine", made.files, "mine")
    assert changed_task(tmp_path / "mine", make_task("mine", labels, messages, seed=1).files, "mine")  # other splits
    assert not changed_task(tmp_path / "elsewhere", made.files, "mine")
