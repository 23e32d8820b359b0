"""Print the system prompt and the GBNF grammar that post 02 builds from one source.

    python3 02-forcing-a-valid-answer/prompt.py banking77             # prints prompt and grammar
    python3 02-forcing-a-valid-answer/prompt.py banking77 --grammar   # only the grammar
    python3 02-forcing-a-valid-answer/prompt.py banking77 --count     # size in tokens (needs the server)
    python3 02-forcing-a-valid-answer/prompt.py clinc150 --grammar

Both come from the label file (datasets/banking77.json, clinc150.json)
through datasets/typed_prompt.py's build_prompt(): the prompt lists every
code, the grammar allows exactly those, and prompt.codes maps each code back
to its group and intent. In your own code:

    from typed_prompt import load_prompt
    prompt = load_prompt()
    prompt.system, prompt.grammar, prompt.codes["A-A"]   # ("CARD_SETUP", "card_arrival")
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from registry import DATASETS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", nargs="?", choices=sorted(DATASETS), default="banking77",
                        help="whose prompt (default: banking77)")
    parser.add_argument("--grammar", action="store_true", help="print only the grammar")
    parser.add_argument("--count", action="store_true", help="count the prompt's tokens with the server's /tokenize")
    parser.add_argument("--examples", type=int, help="examples per intent in the prompt (default: the dataset's)")
    parser.add_argument("--no-descriptions", action="store_true", help="leave the intent descriptions out")
    args = parser.parse_args()
    if args.examples is not None and args.examples < 0:
        parser.error("--examples must be 0 or more")
    options = {} if args.examples is None else {"examples_per_intent": args.examples}
    built = DATASETS[args.dataset].load_prompt(descriptions=not args.no_descriptions, **options)
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
