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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from confidence import letter_tokens  # noqa: E402
from llama_http import Client, exit_on_server_errors  # noqa: E402

SAMPLES = ("C-F", "I was charged twice for the same coffee", "my card still hasn't arrived")


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
              "letters with a leading space), change datasets/typed_prompt.py (prompt and grammar together), and rerun this\n"
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
