"""Print the system prompt and the GBNF grammar that post 02 builds from one source.

    python3 02-forcing-a-valid-answer/prompt.py             # prints prompt and grammar
    python3 02-forcing-a-valid-answer/prompt.py --grammar   # only the grammar
    python3 02-forcing-a-valid-answer/prompt.py --count     # size in tokens (needs the server)

Both come from datasets/banking77.json through datasets/typed_prompt.py's
build_prompt(): the prompt lists every code, the grammar allows exactly those.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from typed_prompt import load_prompt  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grammar", action="store_true", help="print only the grammar")
    parser.add_argument("--count", action="store_true", help="count the prompt's tokens with the server's /tokenize")
    parser.add_argument("--examples", type=int, default=5, help="examples per intent in the prompt (default: 5)")
    parser.add_argument("--no-descriptions", action="store_true", help="leave the intent descriptions out")
    args = parser.parse_args()
    built = load_prompt(args.examples, not args.no_descriptions)
    if not args.grammar and not args.count:
        print("=== system prompt ===")
        print(built.system)
    if not args.count:
        print("=== GBNF grammar ===")
        print(built.grammar)
    print(f"{len(built.codes)} codes in {len(built.group_letters)} groups; "
          f"system prompt: {len(built.system):,} characters")
    if args.count:
        from llama_http import Client
        tokens = Client().tokenize(built.system)
        print(f"system prompt: {len(tokens):,} tokens (by the server's tokenizer)")
    return 0


if __name__ == "__main__":
    from llama_http import exit_on_server_errors
    sys.exit(exit_on_server_errors(main))
