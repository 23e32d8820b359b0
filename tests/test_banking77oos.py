"""BANKING77 with an out-of-scope code (banking77oos, beyond post 08): BANKING77's label set plus I-A, from a label
file that extends BANKING77's and no loader module of its own."""
import json

import pytest

import banking77
from grammar_codes import grammar_codes
from labels import read_label_file
from prompt import load_prompt
from registry import DATASETS, HERE
from registry import ExtendingLoader

LABELS_FILE = HERE / "banking77oos.json"
banking77oos = DATASETS["banking77oos"].loader()


@pytest.fixture(scope="module")
def labels():
    return banking77oos.load_labels()


def test_the_label_set_is_banking77s_77_intents_then_out_of_scope_as_i_a(labels):
    base = banking77.load_labels()
    assert labels.groups[:-1] == base.groups
    assert [g.letter for g in labels.groups] == list("ABCDEFGHI")
    (intent,) = labels.groups[-1].intents
    assert (intent.code, intent.name, len(labels.intents)) == ("I-A", "out_of_scope", 78)
    assert labels.calibration_rows == base.calibration_rows and len(labels.calibration_rows) == 770


def test_the_registry_finds_it_from_post_08_with_banking77s_codes_and_i_a():
    dataset = DATASETS["banking77oos"]
    assert isinstance(dataset.loader(), ExtendingLoader) and not (HERE / "banking77oos.py").exists()
    assert dataset.post == 8 and dataset.out_of_scope_codes() == {"I-A"}
    assert dataset.codes() == DATASETS["banking77"].codes() | {"I-A"}
    assert (dataset.split_size("calib"), dataset.split_size("test")) == (770, 3080)


@pytest.mark.parametrize("split", ["calib", "test"])
def test_its_splits_are_banking77s_messages(split):
    assert banking77oos.load_split(split) == banking77.load_split(split)


def test_a_retriever_sees_banking77s_training_messages_without_calib():
    assert banking77oos.fit_messages() == banking77.fit_messages()


def test_the_prompt_offers_i_a_and_says_when_to_answer_it():
    prompt = load_prompt("banking77oos")
    assert grammar_codes(prompt.grammar) == set(prompt.codes) == DATASETS["banking77oos"].codes()
    assert prompt.grammar.rstrip().endswith('| ("I-" [A])')
    first = prompt.system.split("\n")[0]
    assert "not a request to the bank" in first and "gets I-A" in first
    assert "\nGroup I: OUT_OF_SCOPE\nI-A out_of_scope: " in prompt.system
    # everything else is BANKING77's list, code for code
    base = load_prompt("banking77")
    assert {code: meaning for code, meaning in prompt.codes.items() if code != "I-A"} == base.codes


def test_its_examples_are_none_of_the_adversarial_messages(labels):
    from pathlib import Path
    adversarial = Path(__file__).resolve().parents[1] / "08-routes" / "beyond" / "gate" / "adversarial" / "banking77.jsonl"
    texts = {json.loads(line)["text"].lower() for line in adversarial.read_text().splitlines() if line.strip()}
    examples = labels.by_intent["out_of_scope"].examples
    assert len(examples) == 5 and not texts & {e.lower() for e in examples}


def test_a_group_letter_of_banking77_in_its_file_is_refused(tmp_path):
    data = json.loads(LABELS_FILE.read_text())
    data["groups"][0]["letter"] = "H"
    path = tmp_path / "banking77oos.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"reuses BANKING77's group letters \['H'\]"):
        banking77oos.load_labels(path)


def test_an_intent_name_of_banking77_in_its_file_is_refused(tmp_path):
    data = json.loads(LABELS_FILE.read_text())
    data["groups"][0]["intents"][0]["intent"] = "card_arrival"
    path = tmp_path / "banking77oos.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"intent names \['card_arrival'\]"):
        banking77oos.load_labels(path)


def test_a_label_file_that_extends_another_takes_no_calibration_rows_of_its_own_and_one_without_must_have_them(tmp_path):
    assert read_label_file(LABELS_FILE, 1, "banking77oos").calibration_rows == ()
    data = json.loads(LABELS_FILE.read_text())
    del data["extends"]
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="calibration"):
        read_label_file(path, 1, "other")


def test_it_reads_the_data_files_of_banking77():
    assert DATASETS["banking77oos"].base == "banking77" and DATASETS["banking77"].base == "banking77"
