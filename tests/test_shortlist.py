"""08's shortlist.py: a prompt whose grammar allows only a retriever's top codes."""
import pytest
from grammar_codes import grammar_codes
from prompt import load_prompt
from shortlist import shortlisted


@pytest.fixture(scope="module")
def prompt():
    return load_prompt()


def test_a_shortlisted_prompt_keeps_the_system_prompt_and_allows_only_its_codes(prompt):
    short = shortlisted(prompt, ["E-N", "C-F", "E-I", "F-J"])
    assert short.system == prompt.system and short.sha256 == prompt.sha256  # the server's cache still fits
    assert grammar_codes(short.grammar) == {"C-F", "E-I", "E-N", "F-J"}
    assert short.grammar == 'root ::= ("C-" [F]) | ("E-" [IN]) | ("F-" [J])\n'
    assert short.group_letters == "CEF" and short.intent_letters == {"C": "F", "E": "IN", "F": "J"}
    assert list(short.codes) == ["C-F", "E-I", "E-N", "F-J"] and short.codes["E-N"].intent == "transfer_into_account"


def test_a_shortlist_with_an_unknown_code_or_none_is_refused(prompt):
    with pytest.raises(ValueError, match="not in the prompt"):
        shortlisted(prompt, ["A-A", "Z-Z"])
    with pytest.raises(ValueError, match="empty"):
        shortlisted(prompt, [])
