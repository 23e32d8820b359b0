"""How the model splits text into tokens, and whether every code letter is one token.

    python3 02-forcing-a-valid-answer/tokens.py                      # the codes and a few messages
    python3 02-forcing-a-valid-answer/tokens.py "I was charged twice"

A code such as "C-F" is read back letter by letter from the token
probabilities (post 03). That only works when each letter the grammar allows is
one token of its own: 'C' at the first step, and '-F' (or '-' then 'F') at the
second. This script asks the server's /tokenize and says so, or says what to do.
"""
from __future__ import annotations

import argparse
import string
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from llama_http import Client, exit_on_server_errors  # noqa: E402

SAMPLES = ("C-F", "I was charged twice for the same coffee", "my card still hasn't arrived")


@dataclass(frozen=True)
class LetterTokens:
    """Token ids of the pieces a code is written with, taken from /tokenize.

    letter: 'A' -> id of the token 'A' (the group step, and the intent step
    of a 3-token code 'C', '-', 'F'). hyphen_letter: 'F' -> id of the token
    '-F' (the intent step of a 2-token code). hyphen: id of the token '-'.
    """

    letter: dict[str, int]
    hyphen_letter: dict[str, int]
    hyphen: int


def single_token(client: Client, text: str) -> int | None:
    """The id of text when the tokenizer makes it one token, else None."""
    pieces = client.tokenize(text)
    return pieces[0][0] if len(pieces) == 1 and pieces[0][1] == text else None


def letter_tokens(client: Client, letters: str = string.ascii_uppercase) -> LetterTokens:
    """Look up the token ids of every letter (default 'A'..'Z'), of '-' + letter, and of '-'.

    Raises ValueError naming the pieces that are not single tokens: then the
    renormalization of post 03 cannot read a letter's probability from one
    candidate, and the codes need other symbols (see tokens.py's output).
    """
    letter, hyphen_letter, split = {}, {}, []
    for char in letters:
        for text, table in ((char, letter), ("-" + char, hyphen_letter)):
            token_id = single_token(client, text)
            if token_id is None:
                split.append(text)
            else:
                table[char] = token_id
    hyphen = single_token(client, "-")
    if hyphen is None:
        split.append("-")
    if split:
        raise ValueError(f"these code pieces are not single tokens for this model: {' '.join(map(repr, split))}")
    return LetterTokens(letter, hyphen_letter, hyphen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("texts", nargs="*", help="texts to split into tokens (default: a code and two messages)")
    args = parser.parse_args()
    client = Client()
    print(f"server: {client.url}  model: {client.model_info()['model']}\n")
    for text in args.texts or SAMPLES:
        pieces = client.tokenize(text)
        shown = "  ".join(f"{piece!r}:{token_id}" for token_id, piece in pieces)
        print(f"{text!r} -> {len(pieces)} tokens: {shown}")

    print("\nEvery piece a code can be written with, as one token each?")
    try:
        table = letter_tokens(client)
    except ValueError as error:
        print(f"NO: {error}")
        print("What to do: pick code symbols that are single tokens for this model (try digits, or\n"
              "letters with a leading space), change prompt.py and the grammar together, and rerun this\n"
              "check; otherwise post 03 cannot read one probability per letter.")
        return 1
    for title, ids, prefix in (("letters", table.letter, ""), ("hyphen + letter", table.hyphen_letter, "-")):
        shown = " ".join(f"{prefix}{char}:{token_id}" for char, token_id in ids.items())
        print(f"  {title}: 26 single tokens\n    {shown}")
    print(f"  hyphen: '-':{table.hyphen}")
    print("yes: a code is 2 tokens ('C', '-F') or 3 ('C', '-', 'F'), one probability per letter")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
