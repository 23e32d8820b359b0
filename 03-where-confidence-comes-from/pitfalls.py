"""Four pitfalls of reading confidence from llama-server, shown live on one message.

    python3 03-where-confidence-comes-from/pitfalls.py
    python3 03-where-confidence-comes-from/pitfalls.py "where is my new card?"

1. The candidates are the same with and without the grammar: the server
   reports probabilities before the grammar, so renormalizing is our job.
2. post_sampling_probs at temperature 0 returns one candidate with
   probability 1: the probabilities after greedy sampling say nothing.
3. top_logprobs 3 vs 30 vs 100: letters cut off the list count as 0, so a
   short list inflates the renormalized confidence; 30 is enough.
4. Thinking: with a thinking mode on, the first generated token starts the
   reasoning, and with the grammar on the code is written as reasoning. On a
   model without a thinking mode (the CPU default) there is nothing to
   switch, and the script says so and quotes the GB10 reference figures.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import letter_tokens, typed_answer
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from logprobs import COFFEE
from typed_prompt import load_prompt
from typed_request import TOP_LOGPROBS, probe, request_settings, typed_messages


def first_candidates(response: dict) -> list[dict]:
    return response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("message", nargs="?", default=COFFEE, help="a customer message (default: post 03's coffee message)")
    args = parser.parse_args()
    client = Client()
    built = load_prompt()
    if not args.message.strip():
        parser.error("the message is empty")
    probe(client, built)
    tokens = letter_tokens(client)
    messages = typed_messages(built, args.message)
    print(f"model: {client.model_info()['model']}\nmessage: {args.message}")

    print("\n1. candidates with and without the grammar (first step, top 5)")
    with_grammar = ask_code(client, built, args.message, grammar=True, top_logprobs=TOP_LOGPROBS).response
    without = ask_code(client, built, args.message, grammar=False, top_logprobs=TOP_LOGPROBS).response
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
    settings = {**request_settings(built, True, TOP_LOGPROBS), "post_sampling_probs": True}
    step = client.chat(messages, **settings).body["choices"][0]["logprobs"]["content"][0]
    listed = step.get("top_probs", step.get("top_logprobs", []))
    shown = "  ".join(f"{c['token']!r} {c.get('prob', math.exp(c.get('logprob', 0.0))):.3f}" for c in listed[:5])
    print(f"  {len(listed)} candidate(s): {shown}")
    print("  Greedy sampling keeps one token, so its probability is 1: no information about doubt.")

    print("\n3. top_logprobs 3, 30 and 100")
    for top in (3, TOP_LOGPROBS, 100):
        reply = ask_code(client, built, args.message, top_logprobs=top)
        answer = typed_answer(reply.response, built, tokens, top)
        print(f"  top_logprobs {top:2d}: {answer.code}  P(group) {answer.p_group:.4f}  "
              f"P(intent|group) {answer.p_intent_given_group:.4f}  confidence {answer.confidence:.4f}  "
              f"valid letters missing: {answer.missing_letters}")
    print("  With 3 candidates most valid letters are missing and count as 0: the confidence is inflated.")
    print("  From 30 to 100 it hardly moves: the letters beyond the 30th carry almost nothing (candidates.py checks")
    print("  every answer of a results file that missed a letter).")

    print("\n4. thinking")
    template = client.get("/props").get("chat_template", "")
    if "enable_thinking" not in template and "<think>" not in template:
        print("  This model's chat template has no thinking mode (no enable_thinking, no <think>): a request cannot")
        print("  turn one on, so there is nothing to show on this model.")
        print("  GB10 reference (Ternary Bonsai 2 27B, the series' post 3, not measured here): with thinking on and no")
        print("  grammar, the most likely first token for the coffee message is 'We' (0.996), the start of the")
        print("  reasoning, not a group letter. With the grammar on as well, the grammar applies from the first token,")
        print("  so the code is written as reasoning: it lands in reasoning_content, content is empty, and the code")
        print("  differs (A-J instead of C-F). The server runs with --reasoning off and every request here sends")
        print("  enable_thinking false; a request that sends true turns thinking back on.")
        return 0
    for thinking in (False, True):
        body = client.chat(messages, temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=5,
                           chat_template_kwargs={"enable_thinking": thinking}).body
        shown = "  ".join(f"{c['token']!r} {math.exp(c['logprob']):.3f}" for c in first_candidates(body))
        print(f"  no grammar, enable_thinking {str(thinking):<5}: first token candidates {shown}")
    body = client.chat(messages, **request_settings(built, True, 5, max_tokens=8),
                       chat_template_kwargs={"enable_thinking": True}).body
    message = body["choices"][0]["message"]
    print(f"  grammar on, enable_thinking True : content {message.get('content')!r}, "
          f"reasoning_content {message.get('reasoning_content')!r}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
