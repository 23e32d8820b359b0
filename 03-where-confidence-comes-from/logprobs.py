"""One message, step by step: from top_logprobs to a confidence.

    python3 03-where-confidence-comes-from/logprobs.py                 # the coffee message
    python3 03-where-confidence-comes-from/logprobs.py "What do I need to do to transfer money into my account?"

For each generated token it prints the top candidates as the server reports
them (logprob and p = exp(logprob), before the grammar). Then each decision
renormalized over the letters the grammar allows at that step: the group
letter over the 8 groups, the intent letter over the chosen group's letters,
with the off-label mass (the share that went to tokens the grammar forbids).
Then the product: confidence = P(group) x P(intent | group).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import Step, typed_answer
from decision import ask_code
from labels import split_code
from llama_http import Client, exit_on_server_errors
from prompt import load_prompt
from typed_request import TOP_LOGPROBS, probe

COFFEE = "I was charged twice for the same coffee, can I get one refunded?"
SHOWN = 5


def print_candidates(number: int, token: str, step: Step) -> None:
    """The first SHOWN candidates of one generated token: text, logprob, p."""
    print(f"Token {number}: {token!r}. Top candidates, before the grammar:")
    for text, logprob in step.candidates[:SHOWN]:
        print(f"  {text!r:<8} logprob {logprob:8.3f}   p = {math.exp(logprob):.4f}")
    print("  ...")


def print_distribution(title: str, step: Step, label_of) -> None:
    """A step's distribution over its allowed letters, most likely first (the first SHOWN)."""
    print(f"{title} ({100 * step.off_label_mass:.2f}% off-label):")
    for letter, probability in sorted(step.distribution.items(), key=lambda kv: -kv[1])[:SHOWN]:
        print(f"  {label_of(letter):<40} {probability:.4f}")
    if step.missing:
        print(f"  ({step.missing} allowed letter(s) not among the {TOP_LOGPROBS} candidates: counted as 0)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("message", nargs="?", default=COFFEE, help="a customer message (default: post 03's coffee message)")
    args = parser.parse_args()
    if not args.message.strip():
        parser.error("the message is empty")
    client = Client()
    prompt = load_prompt()
    probe(client, prompt)
    reply = ask_code(client, prompt, args.message, top_logprobs=TOP_LOGPROBS)
    print(f"model: {client.model_info()['model']}\nmessage: {args.message}\n")
    if reply.status != "ok":
        print(f"no code: {reply.status} ({reply.error or repr(reply.content)})")
        return 1
    answer = typed_answer(reply.response, prompt, TOP_LOGPROBS)
    pieces = [step["token"] for step in reply.response["choices"][0]["logprobs"]["content"]]
    print_candidates(1, pieces[0], answer.group_step)
    print_candidates(len(pieces), pieces[-1], answer.intent_step)
    if len(pieces) == 3:
        print(f"(the code came in 3 tokens {pieces}: the intent letter is token 3)")
    group, letter = split_code(answer.code)
    print()
    print_distribution(f"P(group), over the {len(prompt.group_letters)} group letters", answer.group_step,
                       lambda g: f"{g} {prompt.group_names[g]}")
    print_distribution(f"P(intent | group {group}), over that group's {len(prompt.intent_letters[group])} letters",
                       answer.intent_step, lambda x: f"{group}-{x} {prompt.codes[f'{group}-{x}'].intent}")
    print(f"\nConfidence in {answer.code}: P(group {group}) x P(intent {letter} | group {group}) = "
          f"{answer.p_group:.4f} x {answer.p_intent_given_group:.4f} = {answer.confidence:.4f}")
    print(f"answer: {answer.intent} ({answer.code}), confidence {answer.confidence:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
