"""Four pitfalls of reading confidence from llama-server, shown live on one message.

    python3 03-where-confidence-comes-from/pitfalls.py
    python3 03-where-confidence-comes-from/pitfalls.py "where is my new card?"

1. The candidates are the same with and without the grammar: the server
   reports probabilities before the grammar, so renormalizing is our job.
2. post_sampling_probs at temperature 0 returns one candidate with
   probability 1: the probabilities after greedy sampling say nothing.
3. top_logprobs 3 vs 30: letters cut off the list count as 0, so a short
   list changes the renormalized confidence.
4. Thinking: for a model with a thinking mode, enable_thinking changes what
   the first generated token is; the code then no longer starts at step 1.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from confidence import letter_tokens, typed_answer  # noqa: E402
from decision import ask_code, request_settings  # noqa: E402
from llama_http import Client, exit_on_server_errors  # noqa: E402
from typed_prompt import load_prompt  # noqa: E402

DEFAULT_MESSAGE = "I was charged twice for the same coffee this morning"


def first_candidates(response: dict) -> list[dict]:
    return response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("message", nargs="?", default=DEFAULT_MESSAGE, help="a customer message (default: a double charge)")
    args = parser.parse_args()
    client = Client()
    built = load_prompt()
    tokens = letter_tokens(client)
    messages = [{"role": "system", "content": built.system}, {"role": "user", "content": args.message}]
    print(f"model: {client.model_info()['model']}\nmessage: {args.message}")

    print("\n1. candidates with and without the grammar (first step, top 5)")
    with_grammar = ask_code(client, built, args.message, grammar=True, top_logprobs=30).response
    without = ask_code(client, built, args.message, grammar=False, top_logprobs=30).response
    for name, response in (("with grammar", with_grammar), ("without", without)):
        shown = "  ".join(f"{c['token']!r} {math.exp(c['logprob']):.3f}" for c in first_candidates(response)[:5])
        print(f"  {name:<13} {shown}")
    ids = [[c["id"] for c in first_candidates(r)] for r in (with_grammar, without)]
    gap = max(abs(math.exp(a["logprob"]) - math.exp(b["logprob"]))
              for a, b in zip(first_candidates(with_grammar), first_candidates(without)))
    allowed = set(tokens.letter[g] for g in built.group_letters)
    forbidden = [c["token"] for c in first_candidates(with_grammar) if c["id"] not in allowed]
    print(f"  same 30 tokens in the same order: {ids[0] == ids[1]}; largest difference in probability: {gap:.4f}")
    print("  (the last digits move with how much of the prompt the server took from its cache, not with the grammar)")
    print(f"  with the grammar on, {len(forbidden)} of the 30 are tokens the grammar forbids, e.g. {forbidden[:4]}:")
    print("  the server reports probabilities before the grammar, so renormalizing over the allowed letters is our job.")

    print("\n2. post_sampling_probs at temperature 0")
    settings = {**request_settings(built, True, 30), "post_sampling_probs": True}
    step = client.chat(messages, **settings).body["choices"][0]["logprobs"]["content"][0]
    listed = step.get("top_probs", step.get("top_logprobs", []))
    shown = "  ".join(f"{c['token']!r} {c.get('prob', math.exp(c.get('logprob', 0.0))):.3f}" for c in listed[:5])
    print(f"  {len(listed)} candidate(s): {shown}")
    print("  Greedy sampling keeps one token, so its probability is 1: no information about doubt.")

    print("\n3. top_logprobs 3 against 30")
    for top in (3, 30):
        reply = ask_code(client, built, args.message, top_logprobs=top)
        answer = typed_answer(reply.response, built, tokens)
        print(f"  top_logprobs {top:2d}: {answer.code}  P(group) {answer.p_group:.4f}  "
              f"P(intent|group) {answer.p_intent_given_group:.4f}  confidence {answer.confidence:.4f}  "
              f"valid letters missing: {answer.missing_letters}")
    print("  With 3 candidates most valid letters are missing and count as 0: the confidence is inflated.")

    print("\n4. thinking")
    template = client.get("/props").get("chat_template", "")
    if "enable_thinking" not in template and "<think>" not in template:
        print("  This model's chat template has no thinking mode (no enable_thinking, no <think>): nothing to switch.")
        print("  With a thinking model (such as the Qwen3-based Ternary Bonsai of the GB10 reference setup),")
        print("  enable_thinking true makes the first token '<think>', and the code's letters come only after")
        print("  the reasoning; the server is started with --reasoning off so step 1 is the group letter.")
        return 0
    for thinking in (False, True):
        body = client.chat(messages, temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=5,
                           chat_template_kwargs={"enable_thinking": thinking}).body
        shown = "  ".join(f"{c['token']!r} {math.exp(c['logprob']):.3f}" for c in first_candidates(body))
        print(f"  enable_thinking {str(thinking):<5}: first token candidates {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
