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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import letter_tokens
from llama_http import Client, exit_on_server_errors

# The evidence for letters: one letter with and without a space, numbers past 9,
# intent names as the model would have to write them, and a code with its second piece.
SAMPLES = ("A", " A", "76", "151", "card_arrival", "transaction_charged_twice", "reverted_card_payment?", "C-B", "-B")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("texts", nargs="*", help="texts to split into tokens (default: the candidates of post 02)")
    args = parser.parse_args()
    client = Client()
    print(f"server: {client.url}  model: {client.model_info()['model']}\n")
    texts = args.texts or SAMPLES
    width = max(len(repr(text)) for text in texts) + 2
    for text in texts:
        pieces = [piece for _, piece in client.tokenize(text)]
        count = f"{len(pieces)} token{'s' if len(pieces) != 1 else ''}"
        print(f"{text!r:<{width}} {count:<9} {pieces}")
    try:
        letter_tokens(client)
    except ValueError as error:
        print(f"\nEvery letter A-Z and every '-A' to '-Z' is a single token: False ({error})")
        print("What to do: pick code symbols that are single tokens for this model (try digits, or letters with\n"
              "a leading space), change datasets/typed_prompt.py (prompt and grammar together), and rerun this\n"
              "check; otherwise post 03 cannot read one probability per letter.")
        return 1
    print("\nEvery letter A-Z and every '-A' to '-Z' is a single token: True")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
