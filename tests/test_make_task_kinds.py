"""The labels' kinds in a task of your own (datasets/make_task.py, task.py): what acting on a label does (inform,
change, irreversible) from a kind column, --irreversible, --kind or --kinds-from descriptions, written where 08's
routes read it, and what it costs when the reader gives none."""
import json
import sys
from pathlib import Path

import pytest

# conftest.py puts the repository, its post folders and their beyond folders on sys.path
from make_task import make_task, write_task
from registry import Dataset
from task_csvs import SCRIPT, synthetic, write_csv

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the kinds in the label file, where the routes read them

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


# ---------------------------------------------------------------- what the labels' kinds cost, and how to give them

DESCRIBED = {"card_arrival": "Where is my card?", "exchange_rate": "What is the exchange rate between two currencies",
             "fees": "Asks about the fees of a transfer", "book_hotel": "Book a hotel room.",
             "change_pin": "Can I change my PIN?", "lost_luggage": "Report a bag the airline lost"}


def described(tmp_path: Path, per_label: int = 60):
    """labels.csv of DESCRIBED (no kind column) and messages.csv with per_label messages each."""
    labels = write_csv(tmp_path / "labels.csv", ["label", "description"], list(DESCRIBED.items()))
    messages = write_csv(tmp_path / "messages.csv", ["text", "label"],
                         [[f"{name.replace('_', ' ')} message {i}", name] for name in DESCRIBED for i in range(per_label)])
    return labels, messages


def actions(made) -> dict[str, str]:
    return {i["intent"]: i["action"] for g in json.loads(made.files["mine.json"])["groups"] for i in g["intents"]}


@pytest.mark.parametrize("description, kind", [
    ("Where is my card?", "inform"), ("How do you change a car's oil?", "inform"),
    ("Is a flight on time, delayed or cancelled", "inform"), ("Asks about the fees of a transfer", "inform"),
    ("Information on opening hours", "inform"), ("Check the balance", "inform"),
    ("Book a hotel room.", "change"), ("Can I change my PIN?", "change"),   # a polite request is a change
    ("Asks for a refund", "change"), ("A bank account: balance, transfers, bills", "change"),
    ("Tell the bank about a trip", "change"),
])
def test_a_description_that_reads_as_a_question_is_proposed_inform_and_anything_else_a_change(description, kind):
    from task import proposed_kind
    assert proposed_kind(description) == kind


def test_without_a_kind_column_one_line_says_every_label_is_a_change_and_what_that_costs(tmp_path):
    labels, messages = described(tmp_path)
    made = make_task("mine", labels, messages)
    assert set(actions(made).values()) == {"change"}  # the safe default when the reader says nothing
    [line] = made.kind_lines
    assert line.startswith("kinds: every label is a change, the safe default (no kind column)")
    assert "99.9% precision on calib, not the 98.5%" in line  # harm.CHANGE_TARGET and routes.TARGET
    assert "--kind inform" in line and "--kinds-from descriptions" in line and not made.kinds_pending


def test_kind_inform_marks_every_label_inform_and_irreversible_still_wins(tmp_path):
    labels, messages = described(tmp_path)
    made = make_task("mine", labels, messages, kind="inform", irreversible=("change_pin",))
    assert actions(made) == {**dict.fromkeys(DESCRIBED, "inform"), "change_pin": "irreversible"}
    assert made.kind_lines == ["kinds (what acting on a label does, 08-routes/beyond/gate/harm.py): 5 inform, "
                               "1 irreversible, from --kind inform"]


def test_kinds_from_descriptions_prints_a_proposal_and_writes_it_only_with_accept_kinds(tmp_path, run_script):
    labels, messages = described(tmp_path)
    proposed = {"card_arrival": "inform", "exchange_rate": "inform", "fees": "inform", "book_hotel": "change",
                "change_pin": "change", "lost_luggage": "change"}
    waiting = make_task("mine", labels, messages, kinds_from="descriptions")
    assert set(actions(waiting).values()) == {"change"} and waiting.kinds_pending
    assert "  inform (3): card_arrival, exchange_rate, fees" in waiting.kind_lines
    assert "  change (3): book_hotel, change_pin, lost_luggage" in waiting.kind_lines
    accepted = make_task("mine", labels, messages, kinds_from="descriptions", accept_kinds=True)
    assert actions(accepted) == proposed and not accepted.kinds_pending
    assert accepted.files["mine.prompt.txt"] == waiting.files["mine.prompt.txt"]  # the kinds change no prompt
    env = {"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks"), "LLAMA_URL": "http://127.0.0.1:1"}
    done = run_script(SCRIPT, "mine", "--labels", labels, "--messages", messages, "--kinds-from", "descriptions", env=env)
    assert done.returncode == 0, done.stderr
    assert (f"to write these kinds: python3 datasets/make_task.py mine --labels {labels} --messages {messages} "
            f"--kinds-from descriptions --accept-kinds") in done.stdout.splitlines()
