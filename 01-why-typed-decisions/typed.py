"""A typed decision: one intent out of 77, and a confidence you can act on.

    python3 01-why-typed-decisions/typed.py                       # four messages from post 01
    python3 01-why-typed-decisions/typed.py "where is my new card?"
    python3 01-why-typed-decisions/typed.py --banking77 10        # 10 real BANKING77 test messages

The model may only answer with a code the grammar allows (post 02); the
confidence is P(group) x P(intent | group) from the token probabilities
(post 03). This is where the series is going; the posts after it show how each
piece works and how far the confidence can be trusted.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_split
from confidence import letter_tokens, read_answer
from customer_messages import TYPED
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from typed_prompt import load_prompt
from typed_request import TOP_LOGPROBS, probe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("messages", nargs="*", help="customer messages (default: the four of post 01)")
    parser.add_argument("--banking77", type=int, metavar="N", help="N random messages from the BANKING77 test split, with their true intent")
    parser.add_argument("--seed", type=int, default=1, help="which random messages --banking77 takes (default: 1)")
    args = parser.parse_args()
    if args.banking77 is not None and args.banking77 < 1:
        parser.error("--banking77 needs a number of messages of 1 or more")

    if args.banking77:
        test = load_split("test")
        picked = random.Random(args.seed).sample(test, min(args.banking77, len(test)))
        items = [(m.text, m.intent) for m in picked]
    else:
        if any(not text.strip() for text in args.messages):
            parser.error("a message is empty")
        items = [(text, None) for text in (args.messages or TYPED)]

    client = Client()
    info = client.model_info()
    built = load_prompt()
    probe(client, built)
    tokens = letter_tokens(client)
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}\n")
    right = 0
    for text, gold in items:
        reply, answer = read_answer(ask_code(client, built, text, top_logprobs=TOP_LOGPROBS), built, tokens)
        print(text)
        if answer is None:
            print(f"  -> no code: {reply.status} ({reply.error or repr(reply.content)}, {reply.wall_ms:.0f} ms)")
        else:
            print(f"  -> {answer.intent}  (code {answer.code}, confidence {answer.confidence:.2f}, {reply.wall_ms:.0f} ms)")
        if gold is not None:
            hit = answer is not None and answer.intent == gold
            right += hit
            print(f"     true intent: {gold}  {'RIGHT' if hit else 'wrong'}")
        print()
    if any(gold for _, gold in items):
        print(f"{right} of {len(items)} right ({100 * right / len(items):.0f}%) with {info['model']}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
