"""The prompt, the grammar and the code table come from one source and agree."""
import json
import re

import pytest
from banking77 import load_labels
from decision import is_too_long
from label_list import find_label
from llama_http import ServerError
from grammar_codes import grammar_codes
from prompt import build_prompt, grammar_of, letter_class, load_prompt

# The facts of the series' posts 1-3: its eight groups (letter, name, intents)
# and every code the posts name.
SERIES_GROUPS = [("A", "CARD_SETUP", 11), ("B", "CARD_PROBLEMS_AND_PIN", 11), ("C", "CARD_PAYMENTS_AND_REFUNDS", 10),
                 ("D", "CASH_WITHDRAWAL", 7), ("E", "TOP_UP", 14), ("F", "TRANSFERS", 10),
                 ("G", "EXCHANGE_AND_CURRENCIES", 4), ("H", "ACCOUNT_AND_IDENTITY", 10)]
SERIES_CODES = {"A-A": "card_arrival", "A-B": "card_delivery_estimate", "A-I": "card_about_to_expire",
                "C-C": "card_payment_wrong_exchange_rate", "C-F": "transaction_charged_twice",
                "E-I": "topping_up_by_card", "E-N": "transfer_into_account",
                "F-J": "balance_not_updated_after_bank_transfer", "G-D": "fiat_currency_support"}


@pytest.fixture(scope="module")
def prompt():
    return load_prompt()


def test_groups_are_the_series_groups(prompt):
    assert [(g.letter, g.name, len(g.intents)) for g in load_labels().groups] == SERIES_GROUPS
    assert prompt.group_names == {letter: name for letter, name, _ in SERIES_GROUPS}


def test_every_code_the_posts_name_means_what_the_posts_say(prompt):
    for code, intent in SERIES_CODES.items():
        assert prompt.codes[code].intent == intent, code
    assert prompt.codes["A-A"] == ("CARD_SETUP", "card_arrival")  # post 2: prompt.codes["A-A"]
    assert prompt.by_intent["supported_cards_and_currencies"].group == "E"  # moved into TOP_UP


def test_grammar_allows_exactly_the_codes_of_the_table(prompt):
    assert grammar_codes(prompt.grammar) == set(prompt.codes)
    assert len(prompt.codes) == 77


def test_grammar_is_one_root_rule_with_a_letter_range_per_group_as_in_the_posts(prompt):
    assert prompt.grammar == ('root ::= ("A-" [A-K]) | ("B-" [A-K]) | ("C-" [A-J]) | ("D-" [A-G]) | '
                             '("E-" [A-N]) | ("F-" [A-J]) | ("G-" [A-D]) | ("H-" [A-J])\n')


def test_letter_class_is_a_range_only_for_letters_without_gaps():
    assert letter_class("ABCD") == "[A-D]"
    assert letter_class("A") == "[A]"
    assert letter_class("ACE") == "[ACE]"
    assert grammar_codes(grammar_of({"A": "ABC", "B": "AC", "K": "A"})) == {"A-A", "A-B", "A-C", "B-A", "B-C", "K-A"}


def test_every_code_appears_in_the_prompt_with_its_intent(prompt):
    for code, (_, intent) in prompt.codes.items():
        assert f"\n{code} {intent}:" in prompt.system


def test_codes_are_group_letter_hyphen_intent_letter(prompt):
    for code, intent in prompt.intents.items():
        assert re.fullmatch(r"[A-H]-[A-Z]", code)
        assert code == f"{intent.group}-{intent.letter}"
        assert intent.letter in prompt.intent_letters[intent.group]


def test_prompt_holds_five_examples_per_intent_by_default(prompt):
    assert prompt.system.count("\n  e.g. ") == 77
    for intent in prompt.intents.values():
        assert " | ".join(intent.examples[:5]) in prompt.system


def test_prompt_without_examples_and_descriptions_is_shorter_and_keeps_the_codes():
    labels = load_labels()
    bare = build_prompt(labels, examples_per_intent=0, descriptions=False)
    full = build_prompt(labels)
    assert "e.g." not in bare.system
    assert len(bare.system) < len(full.system) / 3
    assert bare.grammar == full.grammar and bare.codes.keys() == full.codes.keys()


def test_negative_example_count_is_refused():
    with pytest.raises(ValueError, match="examples_per_intent"):
        build_prompt(load_labels(), examples_per_intent=-1)


def test_too_long_is_recognized_in_both_server_shapes():
    # HTTP 400 exceed_context_size_error, and HTTP 500 "too large to process".
    four_hundred = ServerError(400, "request (30000 tokens) exceeds the available context size (10240 tokens), try increasing it",
                               {"error": {"code": 400, "type": "exceed_context_size_error", "message": "..."}})
    five_hundred = ServerError(500, "input (30000 tokens) is too large to process. increase the physical batch size",
                               {"error": {"code": 500, "type": "server_error", "message": "..."}})
    grammar = ServerError(400, "Failed to parse grammar", {"error": {"code": 400, "type": "invalid_request_error"}})
    assert is_too_long(four_hundred) and is_too_long(five_hundred)
    assert not is_too_long(grammar)


@pytest.mark.parametrize("reply, expected", [
    ("card_arrival", ("exact", "card_arrival")),
    ("`card_arrival`.", ("exact", "card_arrival")),
    ("The label is card_payment_fee_charged.", ("inside", "card_payment_fee_charged")),
    ("I think it is card_payment_not_recognised", ("inside", "card_payment_not_recognised")),
    ("Your card is on its way!", ("none", None)),
])
def test_label_list_sorts_replies(reply, expected):
    names = [intent.name for intent in load_labels().intents]
    assert find_label(reply, names) == expected


def test_the_saved_prompt_of_every_dataset_is_what_build_prompt_gives():
    # the setup's warm-up and post 01 send the saved files; the posts from 02 on build the prompt: the same bytes
    from registry import DATASETS
    for name, dataset in DATASETS.items():
        if "fields" in json.loads(dataset.label_file.read_text(encoding="utf-8")):
            continue  # a dataset with fields sends the prompt of 08-routes/beyond/fields (tests/test_banking77fields.py)
        saved, built = dataset.saved_prompt(), load_prompt(name)
        assert (saved.system, saved.grammar, saved.sha256) == (built.system, built.grammar, built.sha256), name


def test_prompt_py_save_writes_the_files_the_setup_reads(tmp_path, monkeypatch):
    import prompt as prompt_module
    import registry
    monkeypatch.setattr(registry, "HERE", tmp_path)  # where the saved prompt goes; the labels stay where they are
    system, grammar = prompt_module.save_prompt("banking77")
    assert (system, grammar) == (tmp_path / "banking77.prompt.txt", tmp_path / "banking77.gbnf")
    saved = registry.dataset_named("banking77").saved_prompt()
    assert (saved.system, saved.grammar) == (load_prompt().system, load_prompt().grammar)
