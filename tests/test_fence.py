"""The message fenced as material (08-routes/beyond/gate/fence.py): the prompt's note and the random marker."""
from fence import FENCE_NOTE, fence, fenced_prompt
from grammar_codes import grammar_codes
from prompt import load_prompt


def test_the_fenced_prompt_adds_the_note_before_the_last_line_and_keeps_the_codes():
    plain = load_prompt()
    fenced = fenced_prompt(plain)
    assert fenced.system.splitlines()[-1] == plain.system.splitlines()[-1]   # the request for the code stays last
    assert fenced.system.replace(f"{FENCE_NOTE}\n\n", "", 1) == plain.system
    assert grammar_codes(fenced.grammar) == grammar_codes(plain.grammar) and fenced.sha256 != plain.sha256


def test_each_message_gets_its_own_marker_on_lines_of_their_own():
    first, second = fence("close my account"), fence("close my account")
    lines = first.splitlines()
    assert lines[1] == "close my account" and lines[0] == lines[2] and len(lines) == 3
    assert lines[0].startswith("<<") and len(lines[0]) == 20                  # << + 16 hex digits + >>
    assert first != second
