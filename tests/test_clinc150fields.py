"""clinc150fields (08-routes/beyond/fields): CLINC150 as three fields, scope then the domain and the intent within it
(the code's two letters), its out-of-scope code K-A off the code list."""
from __future__ import annotations

from fields import fields_grammar, fields_prompt
from registry import DATASETS


def test_a_field_that_replaces_the_out_of_scope_code_takes_it_off_the_code_list():
    clinc = fields_prompt("clinc150fields")
    assert clinc.dropped == {"K-A"} and "K-A" not in clinc.prompt.codes and len(clinc.prompt.codes) == 150
    assert "K" not in clinc.prompt.group_letters and clinc.prompt.grammar.endswith(')) "-" [AB]\n')
    assert fields_grammar('root ::= ("A-" [AB])\n', ()) == 'root ::= (("A-" [AB]))\n'


def test_the_saved_prompt_is_the_fields_prompt_and_the_splits_are_clinc150_s():
    clinc = fields_prompt("clinc150fields")
    saved = DATASETS["clinc150fields"].saved_prompt()
    assert (saved.system, saved.grammar) == (clinc.prompt.system, clinc.prompt.grammar)
    assert DATASETS["clinc150fields"].split_size("test") == 5500 and DATASETS["clinc150fields"].base == "clinc150"
