"""The prompt, the grammar and the code table come from one source and agree."""
import re

import pytest
from banking77 import load_labels
from decision import is_too_long
from label_list import find_label
from llama_http import ServerError
from typed_prompt import build_prompt, load_prompt


@pytest.fixture(scope="module")
def built():
    return load_prompt()


def grammar_codes(grammar: str) -> set[str]:
    """Expand every '"G" "-" [letters]' alternative of the grammar into its codes."""
    codes = set()
    for group, letters in re.findall(r'^group-[a-z] ::= "([A-Z])" "-" \[([A-Z]+)\]$', grammar, re.MULTILINE):
        codes |= {f"{group}-{letter}" for letter in letters}
    return codes


def test_grammar_allows_exactly_the_codes_of_the_table(built):
    assert grammar_codes(built.grammar) == set(built.codes)
    assert len(built.codes) == 77


def test_grammar_has_a_root_and_one_rule_per_group_and_nothing_else(built):
    lines = built.grammar.strip().splitlines()
    assert lines[0] == "root ::= " + " | ".join(f"group-{g}" for g in "abcdefgh")
    assert len(lines) == 1 + len(built.group_letters) == 9


def test_every_code_appears_in_the_prompt_with_its_intent(built):
    for code, intent in built.codes.items():
        assert f"\n{code} {intent.name}:" in built.system_prompt


def test_codes_are_group_letter_hyphen_intent_letter(built):
    for code, intent in built.codes.items():
        assert re.fullmatch(r"[A-H]-[A-Z]", code)
        assert code == f"{intent.group}-{intent.letter}"
        assert intent.letter in built.intent_letters[intent.group]


def test_prompt_holds_five_examples_per_intent_by_default(built):
    assert built.system_prompt.count("\n  e.g. ") == 77
    for intent in built.codes.values():
        assert " | ".join(intent.examples[:5]) in built.system_prompt


def test_prompt_without_examples_and_descriptions_is_shorter_and_keeps_the_codes():
    labels = load_labels()
    bare = build_prompt(labels, examples_per_intent=0, descriptions=False)
    full = build_prompt(labels)
    assert "e.g." not in bare.system_prompt
    assert len(bare.system_prompt) < len(full.system_prompt) / 3
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
