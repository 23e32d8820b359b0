"""Why the codes are letters: how the model splits candidate answers into tokens.

    python3 02-forcing-a-valid-answer/tokens.py                  # letters, numbers, intent names, codes
    python3 02-forcing-a-valid-answer/tokens.py "I was charged twice"

A choice can be read from one step's probabilities only when every option is
a single token. This asks the server's /tokenize how a bare letter, a letter
after a space, numbers, intent names and codes split, and then checks every
piece a code is written with: 'A'..'Z', '-A'..'-Z' and '-'. If one of them
is not a single token for your model, it says so and what to do.
"""
from __future__ import annotations

import argparse
import string
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from llama_http import Client, exit_on_server_errors

# The evidence for letters: one letter with and without a space, numbers past 9,
# intent names as the model would have to write them, and a code with its second piece.
SAMPLES = ("A", " A", "76", "151", "card_arrival", "transaction_charged_twice", "reverted_card_payment?", "C-B", "-B")


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


def token_pieces(client: Client, text: str) -> list[str]:
    """The pieces the model's tokenizer splits text into, in order ('76' -> ['7', '6'] for Qwen2.5)."""
    return [piece for _, piece in client.tokenize(text)]


def single_token(client: Client, text: str) -> int | None:
    """The id of text when the tokenizer makes it one token, else None."""
    pieces = client.tokenize(text)
    return pieces[0][0] if len(pieces) == 1 and pieces[0][1] == text else None


def letter_tokens(client: Client, letters: str = string.ascii_uppercase) -> LetterTokens:
    """Look up the token ids of every letter (default 'A'..'Z'), of '-' + letter, and of '-'.

    Raises ValueError naming the pieces that are not single tokens: then the
    renormalization of post 03 cannot read a letter's probability from one
    candidate, and the codes need other symbols (02's tokens.py shows how they split).
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
    parser.add_argument("texts", nargs="*", help="texts to split into tokens (default: the candidates of post 02)")
    args = parser.parse_args()
    client = Client()
    print(f"server: {client.url}  model: {client.model_info()['model']}\n")
    texts = args.texts or SAMPLES
    width = max(len(repr(text)) for text in texts) + 2
    for text in texts:
        pieces = token_pieces(client, text)
        count = f"{len(pieces)} token{'s' if len(pieces) != 1 else ''}"
        print(f"{text!r:<{width}} {count:<9} {pieces}")
    try:
        letter_tokens(client)
    except ValueError as error:
        print(f"\nEvery letter A-Z and every '-A' to '-Z' is a single token: False ({error})")
        print("What to do: pick code symbols that are single tokens for this model (try digits, or letters with\n"
              "a leading space), change prompt.py (prompt and grammar together), and rerun this\n"
              "check; otherwise post 03 cannot read one probability per letter.")
        return 1
    print("\nEvery letter A-Z and every '-A' to '-Z' is a single token: True")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
