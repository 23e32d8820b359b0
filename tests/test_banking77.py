"""BANKING77 loader, the label file, and the script that regenerates it."""
import copy
import json
import re
import shutil
import string
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from banking77 import LABELS_FILE, check_labels, load_labels, load_rows, load_split
from labels import Message, spread

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def train():
    return load_rows("train")


@pytest.fixture(scope="module")
def labels():
    return load_labels()


@pytest.fixture
def raw():
    """The committed label file as a dict, to break in copies (write them with the label_file fixture)."""
    return json.loads(LABELS_FILE.read_text(encoding="utf-8"))


# --- the CSV files -----------------------------------------------------------

def test_splits_have_official_sizes_and_77_intents(train):
    test = load_rows("test")
    assert (len(train), len(test)) == (10_003, 3_080)
    assert len({m.intent for m in train}) == len({m.intent for m in test}) == 77


def test_ids_count_data_rows_from_zero(train):
    assert train[0].id == "train-0" and train[-1].id == "train-10002"
    assert load_rows("test")[-1].id == "test-3079"


def test_quoted_field_with_comma_is_one_text(train):
    # train.csv line 6 (row 4): "How do I know if I will get my card, or if it is lost?",card_arrival
    assert train[4].text == "How do I know if I will get my card, or if it is lost?"
    assert train[4].intent == "card_arrival"


def test_quoted_field_with_line_breaks_is_one_message(train):
    assert train[1290].text == "\nI can't seem to be able to use my card\n\n\n"
    assert train[1290].intent == "card_not_working"


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="dev"):
        load_split("dev")
    with pytest.raises(ValueError, match="calib"):
        load_rows("calib")


# --- the label file ----------------------------------------------------------

def test_label_file_has_8_groups_a_to_h_of_4_to_14_intents(labels):
    assert [g.letter for g in labels.groups] == list("ABCDEFGH")
    assert all(4 <= len(g.intents) <= 14 for g in labels.groups)


def test_label_file_covers_every_dataset_intent_once(labels, train):
    names = [i.name for i in labels.intents]
    assert len(names) == len(set(names)) == 77
    assert set(names) == {m.intent for m in train}


def test_codes_are_unique_and_shaped_like_a_hyphen_b(labels):
    codes = [i.code for i in labels.intents]
    assert len(set(codes)) == 77
    assert all(re.fullmatch(r"[A-H]-[A-Z]", code) for code in codes)
    for group in labels.groups:  # letters run A, B, C... inside each group
        assert [i.letter for i in group.intents] == list(string.ascii_uppercase[:len(group.intents)])


def test_lookups_agree(labels):
    intent = labels.by_intent["card_arrival"]
    assert labels.by_code[intent.code] is intent
    assert intent in labels.group(intent.group).intents


def test_descriptions_are_one_short_line(labels):
    for intent in labels.intents:
        assert intent.description and "\n" not in intent.description
        assert len(intent.description.split()) <= 25, intent.name


def test_examples_are_five_training_texts_of_their_intent(labels, train):
    texts = {(m.text, m.intent) for m in train}
    for intent in labels.intents:
        assert len(intent.examples) == 5
        assert all((text, intent.name) in texts for text in intent.examples), intent.name


def test_calibration_is_10_rows_per_intent_disjoint_from_examples(labels, train):
    rows = labels.calibration_rows
    assert len(rows) == len(set(rows)) == 770
    assert Counter(train[row].intent for row in rows) == {i.name: 10 for i in labels.intents}
    examples = {text for i in labels.intents for text in i.examples}
    assert not examples & {train[row].text for row in rows}


def test_check_labels_accepts_the_committed_file(labels, train):
    check_labels(labels, train)


def test_calib_split_is_770_training_messages_round_robin_over_the_intents_in_code_order(labels, train):
    calib = load_split("calib", labels)
    assert len(calib) == 770
    assert all(m.id.startswith("train-") for m in calib)
    assert [m.id for m in calib] == [f"train-{row}" for row in labels.calibration_rows]
    codes = [labels.by_intent[m.intent].code for m in calib]
    in_code_order = [intent.code for intent in labels.intents]
    assert all(codes[k * 77:(k + 1) * 77] == in_code_order for k in range(10))
    assert spread(calib) == calib  # already spread: any prefix covers the intents evenly


def test_calib_split_holds_the_messages_the_posts_route_first_for_their_intent(labels):
    calib = load_split("calib", labels)
    # The messages post 01 shows; it routes the first three with thresholds fitted on this split.
    for text, intent in [("I am still waiting on my card?", "card_arrival"),
                         ("I need assistance with understanding which fiat currencies that you support.",
                          "fiat_currency_support"),
                         ("Help me use American Express to add money to the account.", "supported_cards_and_currencies"),
                         ("How long is the delivery time to the US?", "card_delivery_estimate")]:
        first = next(m for m in calib if m.intent == intent)
        assert first.text == text


def test_duplicated_intent_is_refused(raw, label_file):
    broken = copy.deepcopy(raw)
    broken["groups"][1]["intents"][0]["intent"] = "card_arrival"  # already A-A
    with pytest.raises(ValueError, match="card_arrival.*more than once"):
        load_labels(label_file(broken))


def test_duplicated_intent_letter_is_refused(raw, label_file):
    broken = copy.deepcopy(raw)
    broken["groups"][0]["intents"][1]["letter"] = "A"
    with pytest.raises(ValueError, match="letter 'A' is used twice"):
        load_labels(label_file(broken))


def test_duplicated_group_letter_is_refused(raw, label_file):
    broken = copy.deepcopy(raw)
    broken["groups"][1]["letter"] = "A"
    with pytest.raises(ValueError, match="group letter 'A' is used twice"):
        load_labels(label_file(broken))


def test_missing_intent_is_refused(raw, label_file):
    broken = copy.deepcopy(raw)
    del broken["groups"][0]["intents"][-1]
    with pytest.raises(ValueError, match="76 intents"):
        load_labels(label_file(broken))


def test_example_from_another_intent_fails_check_labels(raw, train, label_file):
    broken = copy.deepcopy(raw)
    broken["groups"][0]["intents"][0]["examples"][0] = broken["groups"][1]["intents"][0]["examples"][0]
    with pytest.raises(ValueError, match="card_arrival"):
        check_labels(load_labels(label_file(broken)), train)


# --- make_banking77.py -------------------------------------------------------

def test_make_banking77_is_deterministic_and_matches_committed_file(tmp_path):
    copy_path = tmp_path / "banking77.json"
    shutil.copy(LABELS_FILE, copy_path)
    script = [sys.executable, str(ROOT / "datasets" / "make_banking77.py"), "--labels", str(copy_path)]
    outputs = []
    for _ in range(2):
        subprocess.run(script, check=True, capture_output=True)
        outputs.append(copy_path.read_bytes())
    assert outputs[0] == outputs[1] == LABELS_FILE.read_bytes()



def test_spread_deals_one_message_per_intent_before_any_second():
    calib = load_split("calib")
    dealt = spread(calib)
    assert sorted(m.id for m in dealt) == sorted(m.id for m in calib)
    assert len({m.intent for m in dealt[:77]}) == 77
    assert len({m.intent for m in dealt[77:154]}) == 77


def test_spread_by_hand_with_uneven_intents():
    a1, a2, a3, b1 = (Message(f"x-{i}", "t", intent) for i, intent in enumerate("aaab"))
    # positions k / n: a1 0, a2 1/3, a3 2/3, b1 0; a1 and b1 tie at 0 and a came first
    assert spread([a1, a2, a3, b1]) == [a1, b1, a2, a3]
    c1, c2, d1, d2 = (Message(f"y-{i}", "t", intent) for i, intent in enumerate("ccdd"))
    assert spread([c1, c2, d1, d2]) == [c1, d1, c2, d2]          # equal sizes: round-robin
    assert spread([]) == []


def test_a_code_is_taken_apart_in_one_place_and_only_a_real_code_is_accepted():
    from labels import split_code
    assert split_code("C-F") == ("C", "F") and split_code("K-A") == ("K", "A")
    for bad in ("CF", "C-", "c-f", "C-FF", "C_F", None, 7):
        with pytest.raises(ValueError, match="is not a code such as 'C-F'"):
            split_code(bad)
