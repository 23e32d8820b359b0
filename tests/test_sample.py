"""run.py --sample N --seed S: a seeded sample of a split, each label in its share; the later posts read a complete
one, name it as a sample, and a partial run's refusal names the ways on. No server."""
import argparse
import hashlib
import json
import random
from pathlib import Path

import pytest
from batch import add_split_arguments, pick_messages, sample_of
from labels import Message, allocate, sample_rank, seeded_sample
from make_task import make_task, write_task
from registry import DATASETS, Dataset
from result_lines import result_line, write_lines
from task_csvs import write_csv

ROOT = Path(__file__).resolve().parents[1]


def labelled(counts: dict[str, int]) -> list[Message]:
    """Messages grouped by label as an official file is: counts[label] of each, ids test-0, test-1, ..."""
    names = [label for label, count in counts.items() for _ in range(count)]
    return [Message(f"test-{k}", f"message {k}", label) for k, label in enumerate(names)]


@pytest.mark.parametrize("n, expected", [
    # quotas 3, 1.5, 0.5: whole parts 3, 1, 0; the 1 left over ties at .5, the larger label b takes it: 3, 2, 0;
    # then c takes one from the label furthest above its quota (b: 2 - 1.5 = 0.5 against a: 3 - 3 = 0)
    (5, {"a": 3, "b": 1, "c": 1}),
    # fewer than the labels: no label is owed one. Quotas 1.2, 0.6, 0.2: whole parts 1, 0, 0; b's .6 takes the last
    (2, {"a": 1, "b": 1, "c": 0}),
    # quotas 1.8, 0.9, 0.3: whole parts 1, 0, 0; the 2 left over go to .9 (b) and .8 (a): 2, 1, 0; c takes a's extra
    (3, {"a": 1, "b": 1, "c": 1}),
    (1, {"a": 1, "b": 0, "c": 0}),   # quota 0.6 is the largest part
    (10, {"a": 6, "b": 3, "c": 1}),  # the whole split
])
def test_largest_remainder_allocation_of_6_3_1_messages_by_hand(n, expected):
    assert allocate({"a": 6, "b": 3, "c": 1}, n) == expected


def test_the_allocation_sums_to_n_stays_within_each_label_and_keeps_every_label_when_n_allows():
    rng = random.Random(3)
    for _ in range(300):
        sizes = {f"l{k}": rng.choice((1, 2, 3, 5, 40, 1000)) for k in range(rng.randint(1, 12))}
        total = sum(sizes.values())
        n = rng.randint(1, total)
        taken = allocate(sizes, n)
        assert sum(taken.values()) == n and all(0 <= taken[label] <= sizes[label] for label in sizes)
        if n >= len(sizes):
            assert min(taken.values()) >= 1
        if all(n * size >= total for size in sizes.values()):  # no label is owed one: each within 1 of its quota
            assert all(abs(taken[label] - n * sizes[label] / total) < 1 for label in sizes)


@pytest.mark.parametrize("sizes, n", [({"a": 3}, 0), ({"a": 3}, 4), ({"a": 0, "b": 2}, 1)])
def test_an_allocation_of_nothing_too_much_or_from_an_empty_label_is_refused(sizes, n):
    with pytest.raises(ValueError):
        allocate(sizes, n)


def test_the_seeded_order_is_the_sha256_of_seed_and_id():
    assert sample_rank(Message("test-3", "x", "a"), 7) == hashlib.sha256(b"7:test-3").hexdigest()


def test_a_seeded_sample_is_the_same_twice_spans_every_label_and_keeps_the_split_order():
    messages = labelled({"a": 60, "b": 30, "c": 10, "d": 1})
    first = seeded_sample(messages, 20, seed=0)
    assert first == seeded_sample(messages, 20, seed=0) and len(first) == 20
    assert {m.intent for m in first} == {"a", "b", "c", "d"}
    # quotas 11.9, 5.9, 2.0, 0.2: whole parts 11, 5, 1, 0 (the 3 left over: .9, .9, .8 -> a, b, c): 12, 6, 2, 0;
    # d takes one from a (12 - 11.88 = 0.12 above, b 0.06, c 0.02): 11, 6, 2, 1
    assert [sum(m.intent == label for m in first) for label in "abcd"] == [11, 6, 2, 1]
    assert [messages.index(m) for m in first] == sorted(messages.index(m) for m in first)
    assert seeded_sample(messages, 20, seed=1) != first


def test_a_seeded_sample_does_not_depend_on_the_file_order():
    messages = labelled({"a": 60, "b": 30, "c": 10})
    shuffled = messages[:]
    random.Random(5).shuffle(shuffled)
    assert {m.id for m in seeded_sample(shuffled, 25, 4)} == {m.id for m in seeded_sample(messages, 25, 4)}


def test_a_larger_sample_with_the_same_seed_holds_the_smaller_when_the_labels_are_the_same_size():
    messages = labelled({"a": 40, "b": 40, "c": 40})
    for small, large in ((3, 4), (10, 30), (30, 119)):
        assert set(seeded_sample(messages, small, 2)) <= set(seeded_sample(messages, large, 2))


def test_a_seeded_sample_of_two_messages_with_one_id_is_refused():
    with pytest.raises(ValueError, match="same id"):
        seeded_sample([Message("test-0", "x", "a"), Message("test-0", "y", "b")], 1, 0)


def parse(*argv: str) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(prog="run.py")
    add_split_arguments(parser)
    return parser.parse_args(argv), parser


def test_sample_picks_the_seeded_sample_and_seed_defaults_to_0():
    messages = labelled({"a": 6, "b": 3, "c": 1})
    args, parser = parse("--sample", "5")
    assert sample_of(args) == (5, 0)
    assert pick_messages(messages, args, parser) == seeded_sample(messages, 5, 0)
    args, parser = parse("--sample", "5", "--seed", "3")
    assert sample_of(args) == (5, 3) and pick_messages(messages, args, parser) == seeded_sample(messages, 5, 3)
    assert sample_of(parse("--limit", "5")[0]) is None


@pytest.mark.parametrize("argv, expected", [
    (("--sample", "0"), "--sample must be 1 or more"),
    (("--sample", "11"), "--sample 11: the test split has 10 messages"),
    (("--sample", "5", "--limit", "3"), "give it without --limit and --spread"),
    (("--sample", "5", "--spread"), "give it without --limit and --spread"),
    (("--seed", "2"), "--seed goes with --sample N"),
    (("--sample", "5", "--seed", "-1"), "--seed must be 0 or more"),
])
def test_bad_sample_options_are_one_parser_error_exit_2(argv, expected, capsys):
    args, parser = parse(*argv)
    with pytest.raises(SystemExit) as stopped:
        pick_messages(labelled({"a": 6, "b": 3, "c": 1}), args, parser)
    error = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2 and error[-1].startswith("run.py: error: --") and expected in error[-1]


@pytest.fixture
def own(tmp_path, monkeypatch):
    """The reader's own results folder in tmp_path (empty), for saved_answers."""
    import saved_answers
    monkeypatch.setattr(saved_answers, "OWN_RESULTS", tmp_path / "own")
    (tmp_path / "own").mkdir()
    return tmp_path / "own"


def calib_lines(ids) -> list[str]:
    """The reference BANKING77 calib lines of these ids, in file order."""
    import saved_answers
    wanted = set(ids)
    source = (saved_answers.REFERENCE / "banking77-calib.jsonl").read_text().splitlines(keepends=True)
    return [line for line in source if json.loads(line)["id"] in wanted]


def write_sample(own: Path, size: int, seed: int, drop: int = 0) -> Path:
    """A BANKING77 calib sample run of size and seed from the reference lines, its last `drop` lines missing."""
    ids = [m.id for m in seeded_sample(DATASETS["banking77"].load_split("calib"), size, seed)]
    path = own / f"banking77-calib-sample{size}-seed{seed}.jsonl"
    path.write_text("".join(calib_lines(ids)[: size - drop]))
    return path


def test_the_later_posts_read_a_complete_sample_and_name_it_as_one(own):
    import saved_answers
    path = write_sample(own, 20, 0)
    assert saved_answers.sample_results_path("banking77", "calib", 20, 0) == path
    loaded = saved_answers.read_split("calib")
    assert loaded.path == path and len(loaded.records) == 20
    assert saved_answers.describe(loaded.path, loaded.records).endswith(
        "(your own seeded sample, 20 of 770 messages (seed 0))")


def test_of_several_complete_samples_the_largest_is_read_then_the_lowest_seed(own):
    import saved_answers
    write_sample(own, 20, 0)
    write_sample(own, 30, 2)
    larger = write_sample(own, 30, 1)
    assert saved_answers.default_results("banking77", "calib")[0] == larger


def test_an_unfinished_sample_is_not_read_and_is_named_with_the_command_that_finishes_it(own):
    import saved_answers
    write_sample(own, 20, 0, drop=1)
    path, why = saved_answers.default_results("banking77", "calib")
    assert path == saved_answers.REFERENCE / "banking77-calib.jsonl"
    assert why.endswith("banking77-calib-sample20-seed0.jsonl has 19 of 20 messages (finish it with: python3 "
                        "03-where-confidence-comes-from/run.py --split calib --sample 20 --seed 0)")


def test_a_sample_file_with_a_message_outside_its_sample_is_not_complete(own):
    import saved_answers
    path = write_sample(own, 20, 0)
    other = next(m.id for m in DATASETS["banking77"].load_split("calib")
                 if m.id not in saved_answers.sample_ids(DATASETS["banking77"], "calib", 20, 0))
    path.write_text(path.read_text() + calib_lines([other])[0])
    runs = saved_answers.sample_runs("banking77", "calib")
    assert [(run.answered, run.foreign, run.complete) for run in runs] == [(20, 1, False)]


def test_a_complete_run_of_the_whole_split_comes_before_any_sample(own):
    import saved_answers
    write_sample(own, 20, 0)
    whole = own / "banking77-calib.jsonl"
    whole.write_text("".join(calib_lines(m.id for m in DATASETS["banking77"].load_split("calib"))))
    assert saved_answers.default_results("banking77", "calib") == (whole, "your own run, all 770 messages")


def test_a_sample_given_with_results_is_described_as_a_sample(tmp_path, own):
    import saved_answers
    given = write_sample(tmp_path, 20, 3, drop=5)
    loaded = saved_answers.read_split("calib", given, "banking77", "--results")
    assert saved_answers.describe(loaded.path, loaded.records).endswith(
        "(given on the command line; a seeded sample, 20 of 770 messages (seed 3), 15 of them answered)")


def test_a_partial_run_without_a_reference_names_finishing_it_reading_it_and_sampling(tmp_path, own, monkeypatch):
    import saved_answers
    monkeypatch.setattr(saved_answers, "REFERENCE", tmp_path / "reference")
    monkeypatch.setattr(saved_answers, "later_reference_folders", lambda: [])
    write_lines(own / "banking77-test.jsonl", [result_line(n, True, 0.9) for n in range(5)])
    with pytest.raises(FileNotFoundError) as partial:
        saved_answers.read_split("test")
    command = "python3 03-where-confidence-comes-from/run.py --split test"
    assert str(partial.value) == (
        f"no banking77 test answers: no reference run, and yours at {own / 'banking77-test.jsonl'} has 5 of 3,080 "
        f"messages (finish it with: {command}; or read it as it is with --results {own / 'banking77-test.jsonl'}; "
        f"or answer a seeded sample instead: {command} --sample N)")
    assert "\n" not in str(partial.value)


def small_task(folder: Path, name: str, topic: str, test_counts=(6, 3, 1)) -> Dataset:
    """A task of three labels about `topic` made by make_task.py from small CSVs (120 messages a label, a test
    split of test_counts messages a label), written into folder/<name>/."""
    labels = [f"{topic}_{k}" for k in range(3)]
    folder.mkdir(parents=True, exist_ok=True)
    label_csv = write_csv(folder / f"{name}-labels.csv", ["label", "description"],
                          [[label, f"the customer asks about {label}"] for label in labels])
    messages = write_csv(folder / f"{name}-messages.csv", ["text", "label"],
                         [[f"a {topic} question {i} about {label}", label] for label in labels for i in range(120)])
    test = write_csv(folder / f"{name}-test.csv", ["text", "label"],
                     [[f"test {topic} {i} on {label}", label] for label, count in zip(labels, test_counts)
                      for i in range(count)])
    write_task(make_task(name, label_csv, messages, test), folder / name)
    return Dataset(name, folder / name)


def task_lines(dataset: Dataset, ids) -> list[dict]:
    """Right answers A-B for these ids with the task's prompt, as run.py writes them."""
    sha = dataset.saved_prompt().sha256
    return [{**result_line(0, True, 0.9), "id": id, "prompt_sha256": sha} for id in ids]


def test_a_tasks_complete_sample_of_6_3_1_test_messages_is_read_and_described(tmp_path, own, monkeypatch):
    import saved_answers
    task = small_task(tmp_path / "tasks", "mine", "card")
    monkeypatch.setitem(DATASETS, "mine", task)
    chosen = seeded_sample(task.load_split("test"), 5, 0)
    assert sorted(sum(m.intent == f"card_{k}" for m in chosen) for k in range(3)) == [1, 1, 3]  # 3, 1, 1 as by hand
    write_lines(own / "mine-test-sample5-seed0.jsonl", task_lines(task, [m.id for m in chosen]))
    loaded = saved_answers.read_split("test", dataset="mine")
    assert len(loaded.records) == 5 and saved_answers.describe(loaded.path, loaded.records).endswith(
        "(your own seeded sample, 5 of 10 messages (seed 0))")


def test_a_results_file_of_another_task_is_refused_in_one_line(tmp_path, run_script):
    tasks = tmp_path / "tasks"
    card, fee = small_task(tasks, "card_task", "card"), small_task(tasks, "fee_task", "fee")
    assert card.saved_prompt().sha256 != fee.saved_prompt().sha256
    given = write_lines(tmp_path / "card.jsonl", task_lines(card, [m.id for m in card.load_split("test")]))
    env = {"TYPED_DECISIONS_TASKS": str(tasks)}
    assert run_script("04-is-the-confidence-honest/ece.py", "--dataset", "card_task", "--results", given,
                      env=env).returncode == 0
    refused = run_script("04-is-the-confidence-honest/ece.py", "--dataset", "fee_task", "--results", given, env=env)
    assert (refused.returncode, refused.stdout, len(refused.stderr.splitlines())) == (2, "", 1)
    assert refused.stderr == (f"error: {given} (given with --results) holds answers asked with card_task's prompt, "
                              "not fee_task's: it is not a fee_task file; give --dataset card_task to read it\n")
