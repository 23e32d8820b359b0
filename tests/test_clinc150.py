"""CLINC150 loader, its label file with the out-of-scope code K-A, and the script that regenerates it."""
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

from clinc150 import (CALIB_OOS_SPLIT, CALIB_SPLIT, DATA_SHA256, LABELS_FILE, check_labels,
                      load_domains, load_labels, load_rows, load_split)
from datafiles import DATA_ENV, DatasetUnavailable
from decision import ask_code
from grammar_codes import grammar_codes
from labels import spread
from make_banking77 import normalise
import clinc150
from prompt import build_prompt, load_prompt

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows():
    """Every list of data_full.json, by name."""
    return {split: load_rows(split) for split in ("train", "val", "test", "oos_train", "oos_val", "oos_test")}


@pytest.fixture(scope="module")
def labels():
    return load_labels()


@pytest.fixture(scope="module")
def prompt():
    return load_prompt("clinc150")


@pytest.fixture
def raw():
    """The committed label file as a dict, to break in copies (write them with the label_file fixture)."""
    return json.loads(LABELS_FILE.read_text(encoding="utf-8"))


# --- data_full.json ----------------------------------------------------------

def test_lists_have_official_sizes(rows):
    sizes = {split: len(messages) for split, messages in rows.items()}
    assert sizes == {"train": 15_000, "val": 3_000, "test": 4_500, "oos_train": 100, "oos_val": 100, "oos_test": 1_000}


def test_in_scope_lists_hold_150_intents_evenly_and_oos_lists_only_oos(rows):
    for split, per_intent in (("train", 100), ("val", 20), ("test", 30)):
        counts = Counter(m.intent for m in rows[split])
        assert len(counts) == 150 and set(counts.values()) == {per_intent}, split
        assert "oos" not in counts
    for split in ("oos_train", "oos_val", "oos_test"):
        assert {m.intent for m in rows[split]} == {"oos"}


def test_ids_are_split_and_position_from_zero(rows):
    assert rows["train"][0].id == "train-0" and rows["train"][-1].id == "train-14999"
    assert rows["oos_test"][-1].id == "oos_test-999"
    # data_full.json, first item of train: ["what expression would i use to say i love you if i were an italian", "translate"]
    assert rows["train"][0].text == "what expression would i use to say i love you if i were an italian"
    assert rows["train"][0].intent == "translate"


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="dev"):
        load_rows("dev")
    with pytest.raises(ValueError, match="'calib' or 'test'"):
        load_split("train")


def test_wrong_checksum_names_the_file_and_both_hashes(tmp_path, monkeypatch):
    (tmp_path / "clinc150").mkdir()
    (tmp_path / "clinc150" / "data_full.json").write_text('{"train": []}', encoding="utf-8")
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    expected = rf"data_full\.json has sha256 [0-9a-f]{{64}} but {DATA_SHA256} was expected"
    with pytest.raises(DatasetUnavailable, match=expected):
        load_rows("train")


def test_missing_mirror_file_names_the_official_url(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    with pytest.raises(DatasetUnavailable, match=r"\(from https://raw\.githubusercontent\.com/clinc/oos-eval/"):
        load_rows("val")


# --- the splits the posts run on -----------------------------------------------

def test_test_split_is_4500_in_scope_then_1000_out_of_scope(rows):
    test = load_split("test")
    assert len(test) == 5_500
    assert test == rows["test"] + rows["oos_test"]


def test_calib_split_is_5_val_rows_per_intent_then_all_of_oos_val(labels, rows):
    calib = load_split("calib", labels)
    assert len(calib) == 850  # 150 intents x 5 + 100
    in_scope, out_of_scope = calib[:750], calib[750:]
    assert [m.id for m in in_scope] == [f"val-{row}" for row in labels.calibration_rows]
    assert list(labels.calibration_rows) == sorted(labels.calibration_rows)
    assert set(Counter(m.intent for m in in_scope).values()) == {5}
    assert out_of_scope == rows["oos_val"]


def test_label_file_names_the_lists_calib_is_drawn_from(raw):
    assert (raw["calibration"]["split"], raw["calibration"]["out_of_scope_split"]) == (CALIB_SPLIT, CALIB_OOS_SPLIT)


def test_spread_keeps_out_of_scope_in_proportion_in_every_prefix(labels):
    test = load_split("test", labels)
    dealt = spread(test)
    assert sorted(m.id for m in dealt) == sorted(m.id for m in test)
    assert len({m.intent for m in dealt[:151]}) == 151  # one of each intent first, out of scope included
    for size in (550, 1100, 2750):
        share = sum(m.intent == "oos" for m in dealt[:size]) / size
        assert abs(share - 1000 / 5500) < 0.02          # then 18.2% out of scope in every prefix


# --- the label file ----------------------------------------------------------

def test_label_file_has_11_groups_the_10_domains_then_out_of_scope(labels):
    domains = load_domains()
    assert [g.letter for g in labels.groups] == list("ABCDEFGHIJK")
    for group, intents in zip(labels.groups, domains.values()):
        assert sorted(i.name for i in group.intents) == sorted(intents)
    assert [i.name for i in labels.group("K").intents] == ["oos"]


def test_every_intent_of_data_full_is_covered_once(labels, rows):
    names = [i.name for i in labels.intents]
    assert len(names) == len(set(names)) == 151
    assert set(names) == {m.intent for messages in rows.values() for m in messages}


def test_codes_are_unique_and_out_of_scope_is_k_a(labels):
    codes = [i.code for i in labels.intents]
    assert len(set(codes)) == 151
    assert all(re.fullmatch(r"[A-J]-[A-O]|K-A", code) for code in codes)
    for group in labels.groups:  # letters run A, B, C... inside each group
        assert [i.letter for i in group.intents] == list(string.ascii_uppercase[:len(group.intents)])
    oos = labels.by_intent["oos"]
    assert oos.code == "K-A" and oos.description == "The message fits none of the intents above"


def test_descriptions_are_one_short_line(labels):
    for intent in labels.intents:
        assert intent.description and "\n" not in intent.description
        assert len(intent.description.split()) <= 12, intent.name


def test_examples_are_five_short_training_texts_of_their_intent(labels, rows):
    texts = {(m.text, m.intent) for m in rows["train"] + rows["oos_train"]}
    for intent in labels.intents:
        assert len(intent.examples) == 5
        assert all((text, intent.name) in texts and len(text) <= 60 for text in intent.examples), intent.name


def test_examples_and_calibration_messages_share_no_text(labels):
    examples = {normalise(text) for i in labels.intents for text in i.examples}
    calib = {normalise(m.text) for m in load_split("calib", labels)}
    assert len(calib) == 850  # no text twice in calib either
    assert not examples & calib


def test_check_labels_accepts_the_committed_file(labels):
    check_labels(labels)


def test_missing_intent_is_refused_with_the_dataset_name(raw, label_file):
    broken = copy.deepcopy(raw)
    del broken["groups"][0]["intents"][-1]
    with pytest.raises(ValueError, match="150 intents, CLINC150 has 151"):
        load_labels(label_file(broken))


def test_intent_moved_to_another_domain_fails_check_labels(raw, label_file):
    broken = copy.deepcopy(raw)
    moved = broken["groups"][0]["intents"].pop()
    broken["groups"][1]["intents"].append({**moved, "letter": "P"})
    with pytest.raises(ValueError, match="10 domains of domains.json"):
        check_labels(load_labels(label_file(broken)))


def test_calibration_row_that_repeats_an_example_fails_check_labels(raw, rows, label_file):
    # val-2369 "hey what's up" (greeting) is also train-11896: the one exact repeat
    # of a train text in val, so it can be an example and a calibration row at once.
    assert rows["val"][2369].text == rows["train"][11896].text == "hey what's up"
    broken = copy.deepcopy(raw)
    greeting = next(i for g in broken["groups"] for i in g["intents"] if i["intent"] == "greeting")
    greeting["examples"][0] = "hey what's up"
    calibration = broken["calibration"]["rows"]
    swapped = next(n for n, row in enumerate(calibration) if rows["val"][row].intent == "greeting")
    calibration[swapped] = 2369  # still 5 greeting rows
    with pytest.raises(ValueError, match=r"\['val-2369'\] are also prompt examples"):
        check_labels(load_labels(label_file(broken)))


# --- make_clinc150.py --------------------------------------------------------

def test_make_clinc150_is_deterministic_and_matches_committed_file(tmp_path):
    copy_path = tmp_path / "clinc150.json"
    shutil.copy(LABELS_FILE, copy_path)
    script = [sys.executable, str(ROOT / "datasets" / "make_clinc150.py"), "--labels", str(copy_path)]
    outputs = []
    for _ in range(2):
        subprocess.run(script, check=True, capture_output=True)
        outputs.append(copy_path.read_bytes())
    assert outputs[0] == outputs[1] == LABELS_FILE.read_bytes()


# --- the prompt and grammar built from it ------------------------------------

def test_grammar_allows_exactly_the_151_codes_including_k_a(prompt):
    assert grammar_codes(prompt.grammar) == set(prompt.codes)
    assert len(prompt.codes) == 151 and {"C-F", "K-A"} <= set(prompt.codes)
    # A one-intent group is a one-letter class: llama.cpp's GBNF parser reads [A] like [ABC].
    assert prompt.grammar.rstrip().endswith('| ("K-" [A])')
    assert prompt.intent_letters["K"] == "A" and prompt.group_letters == "ABCDEFGHIJK"


def test_prompt_lists_every_code_and_tells_when_to_answer_k_a(prompt):
    for code, (_, intent) in prompt.codes.items():
        assert f"\n{code} {intent}:" in prompt.system
    assert "\nGroup K: Out of scope\nK-A oos: The message fits none of the intents above\n" in prompt.system
    assert "gets K-A" in prompt.system.split("\n")[0]
    assert "bank" not in prompt.system.split("\n")[0]  # not BANKING77's instructions


def test_prompt_has_the_chosen_number_of_examples_and_fits_the_context(prompt):
    assert prompt.system.count("\n  e.g. ") == 151
    for intent in prompt.intents.values():
        assert "  e.g. " + " | ".join(intent.examples[:clinc150.PROMPT_EXAMPLES]) + "\n" in prompt.system
    # Measured: 27,221 characters = 7,018 tokens (3.88 characters a token, datasets/clinc150.md).
    # 31,000 characters is about 8,000 tokens, the budget in a 10,240-token context.
    assert len(prompt.system) <= 31_000


def test_build_prompt_keeps_banking77_instructions_by_default(labels):
    assert build_prompt(labels, 0).system.startswith("You sort the messages that customers send to their bank.")


def test_clinc150_fit_is_train_then_oos_train_and_no_calibration_message():
    messages = clinc150.fit_messages()
    assert len(messages) == 15_100
    assert Counter(m.id.rsplit("-", 1)[0] for m in messages) == {"train": 15_000, "oos_train": 100}
    assert {m.id for m in clinc150.load_split("calib")}.isdisjoint(m.id for m in messages)


def test_baseline_refuses_all_train_for_clinc150(run_script):
    result = run_script("01-why-typed-decisions/beyond/baseline.py", "--dataset", "clinc150", "--all-train")
    assert result.returncode == 2 and "--all-train is for BANKING77" in result.stderr


def test_scope_baseline_ranks_post_01s_retriever_on_the_in_scope_messages():
    from registry import DATASETS
    from scope_baseline import SCOPED, neighbours_report
    assert "clinc150" in SCOPED and "banking77" not in SCOPED  # only datasets with out-of-scope intents
    clinc = DATASETS["clinc150"]
    test = clinc.load_split("test")
    # the table's test rows: 5,500 messages, 4,500 of them in scope and 1,000 out of scope
    assert (len(test), sum(m.intent in clinc.out_of_scope_intents for m in test)) == (5500, 1000)
    in_scope_top1 = neighbours_report(clinc)
    # 3,676 of the 4,500 in-scope test messages have their intent ranked first: 3,676 / 4,500 = 0.8169
    assert in_scope_top1 == pytest.approx(3676 / 4500)


def test_the_registry_finds_clinc150_from_post_07_with_its_out_of_scope_code():
    from registry import DATASETS
    clinc = DATASETS["clinc150"]
    assert clinc.post == 7 and clinc.out_of_scope_intents == {"oos"} and clinc.out_of_scope_codes() == {"K-A"}
    assert (clinc.split_size("calib"), clinc.split_size("test")) == (850, 5500)


def test_clinc150_grammar_single_intent_rule_is_accepted_and_gives_the_out_of_scope_code(client):
    import dataclasses

    from prompt import load_prompt
    prompt = load_prompt("clinc150")
    # Keep only the out-of-scope group: the one rule with a single allowed intent letter.
    alternatives = prompt.grammar.split("::=", 1)[1].split("|")
    rule = next(alternative.strip() for alternative in alternatives if alternative.strip().startswith('("K-"'))
    assert rule == '("K-" [A])'
    only_k = dataclasses.replace(prompt, grammar=f"root ::= {rule}\n")
    reply = ask_code(client, only_k, "what is the airspeed velocity of an unladen swallow")
    assert reply.status == "ok" and reply.code == "K-A"
    assert prompt.codes["K-A"].intent == "oos"


def test_clinc150_run_writes_lines_with_codes_of_its_label_set(client, tmp_path, run_script):
    from prompt import load_prompt
    codes = load_prompt("clinc150").codes
    out = tmp_path / "clinc150-test.jsonl"
    result = run_script("03-where-confidence-comes-from/run.py", "--dataset", "clinc150", "--split", "test",
                        "--limit", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    # the first 3 messages of clinc150's test split, not banking77's
    assert [r["id"] for r in records] == [m.id for m in clinc150.load_split("test")[:3]]
    for record in records:
        assert record["status"] == "ok" and record["code"] in codes and record["gold_code"] in codes
        assert record["correct"] == (record["code"] == record["gold_code"])
