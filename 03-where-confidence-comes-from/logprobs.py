"""One message, step by step: where the confidence comes from.

    python3 03-where-confidence-comes-from/logprobs.py
    python3 03-where-confidence-comes-from/logprobs.py "my card was charged twice"

For each of the two decisions (group letter, intent letter) it prints the top
candidates as the server reports them (before the grammar), the distribution
renormalized over the letters the grammar allows at that step, and the
off-label mass. Then the product: confidence = P(group) x P(intent | group).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from confidence import Step, letter_tokens, typed_answer  # noqa: E402
from decision import ask_code  # noqa: E402
from llama_http import Client, exit_on_server_errors  # noqa: E402
from typed_prompt import load_prompt  # noqa: E402

DEFAULT_MESSAGE = "I was charged twice for the same coffee this morning"
SHOWN = 8


def print_step(title: str, step: Step, label_of) -> None:
    print(f"\n{title}")
    print("  top candidates before the grammar (token, probability):")
    for token, probability in step.candidates[:SHOWN]:
        print(f"    {token!r:8} {probability:.4f}")
    print(f"  renormalized over the {len(step.distribution)} letters allowed here:")
    for letter, probability in sorted(step.distribution.items(), key=lambda kv: -kv[1])[:SHOWN]:
        mark = "  <- chosen" if letter == step.chosen else ""
        print(f"    {letter}  {probability:.4f}  {label_of(letter)}{mark}")
    print(f"  off-label mass: {step.off_label_mass:.4f}   valid letters missing from top_logprobs: {step.missing}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("message", nargs="?", default=DEFAULT_MESSAGE, help="a customer message (default: a double charge)")
    parser.add_argument("--top-logprobs", type=int, default=30, help="candidates per token (default: 30)")
    args = parser.parse_args()
    if args.top_logprobs < 1:
        parser.error("--top-logprobs must be 1 or more")
    client = Client()
    built = load_prompt()
    tokens = letter_tokens(client)
    reply = ask_code(client, built, args.message, top_logprobs=args.top_logprobs)
    print(f"model: {client.model_info()['model']}\nmessage: {args.message}")
    if reply.status != "ok":
        print(f"no code: {reply.status} ({reply.error or repr(reply.content)})")
        return 1
    answer = typed_answer(reply.response, built, tokens)
    pieces = [step["token"] for step in reply.response["choices"][0]["logprobs"]["content"]]
    print(f"reply: {answer.code} in {answer.tokens_in_code} tokens {pieces}")
    print_step("step 1: the group letter", answer.group_step, built.group_names.get)
    group = answer.code[0]
    print_step(f"step 2: the intent letter within group {group}", answer.intent_step,
               lambda letter: built.codes[f"{group}-{letter}"].intent)
    print(f"\nconfidence = P(group {group}) x P(intent {answer.code[2]} | group {group}) = "
          f"{answer.p_group:.4f} x {answer.p_intent_given_group:.4f} = {answer.confidence:.4f}")
    print(f"answer: {answer.intent} ({answer.code}), confidence {answer.confidence:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
