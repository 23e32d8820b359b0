"""Read the codes a typed-prompt grammar accepts, for tests (no llama.cpp needed).

The grammar has one line, root ::= ("A-" [A-K]) | ("B-" [ABD]) | ...; this
expands every alternative, ranges and lists alike, and refuses anything else,
so a test sees exactly the language the server will enforce.
"""
import re

ALTERNATIVE = re.compile(r'\("([A-Z])-" \[([A-Z](?:-[A-Z])?|[A-Z]+)\]\)')


def grammar_codes(grammar: str) -> set[str]:
    """Every code the grammar accepts; raises ValueError on a grammar of another shape."""
    lines = grammar.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("root ::= "):
        raise ValueError(f"expected one root rule, got {lines!r}")
    body = lines[0][len("root ::= "):]
    alternatives = body.split(" | ")
    codes = set()
    for alternative in alternatives:
        match = ALTERNATIVE.fullmatch(alternative)
        if match is None:
            raise ValueError(f"not a code alternative: {alternative!r}")
        group, letters = match.groups()
        if len(letters) == 3 and letters[1] == "-":
            letters = "".join(chr(c) for c in range(ord(letters[0]), ord(letters[2]) + 1))
        codes |= {f"{group}-{letter}" for letter in letters}
    return codes
