"""Four pitfalls of reading confidence from llama-server, shown live on one message.

    python3 03-where-confidence-comes-from/pitfalls.py
    python3 03-where-confidence-comes-from/pitfalls.py "where is my new card?"

1. The candidates are the same with and without the grammar: the server
   reports probabilities before the grammar, so renormalizing is our job.
2. post_sampling_probs at temperature 0 returns one candidate with
   probability 1: the probabilities after greedy sampling say nothing.
3. top_logprobs 3 vs 30 vs 100, read from one 100-candidate reply: letters
   cut off the list count as 0, so a short list inflates the renormalized
   confidence; 30 is enough.
4. Thinking: with a thinking mode on, the first generated token starts the
   reasoning, and with the grammar on the code is written as reasoning. On a
   model without a thinking mode (the CPU default) there is nothing to
   switch, and the script says so and quotes the GB10 reference figures.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import letter_of, typed_answer
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from logprobs import COFFEE
from prompt import load_prompt
from typed_request import TOP_LOGPROBS, probe, request_settings, typed_messages

MOST = 100  # candidates asked for in pitfall 3


def first_n_candidates(response: dict, n: int) -> dict:
    """A copy of a chat completion whose every step keeps only its n most likely top_logprobs candidates.

    Reading one response with n = 3, 30, 100 shows what the number of
    candidates alone does; two requests would also differ by the cache
    noise that post 03 describes.
    """
    choice = response["choices"][0]
    steps = [{**step, "top_logprobs": step["top_logprobs"][:n]} for step in choice["logprobs"]["content"]]
    return {**response, "choices": [{**choice, "logprobs": {**choice["logprobs"], "content": steps}}]}


def first_candidates(response: dict) -> list[dict]:
    return response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]


@dataclass(frozen=True)
class SameCandidates:
    """Pitfall 1: the first step's candidates of the same request with and without the grammar, compared
    token by token (a swap of two near-ties shows as one, not as two changed positions).

    count: candidates with the grammar; same_tokens: both lists hold the same token ids; same_order: in the
    same order; gap: the largest difference in one token's probability (a token missing from a list counts
    0 there); forbidden: the texts of the candidates with the grammar that write no allowed letter.
    """

    count: int
    same_tokens: bool
    same_order: bool
    gap: float
    forbidden: list[str]


def same_candidates(with_grammar: dict, without: dict, prompt) -> SameCandidates:
    """Pitfall 1's comparison of two chat completions (with and without the grammar) of one message."""
    probabilities = [{c["id"]: math.exp(c["logprob"]) for c in first_candidates(r)} for r in (with_grammar, without)]
    gap = max(abs(probabilities[0].get(token, 0.0) - probabilities[1].get(token, 0.0))
              for token in probabilities[0].keys() | probabilities[1].keys())
    return SameCandidates(count=len(probabilities[0]), same_tokens=probabilities[0].keys() == probabilities[1].keys(),
                          same_order=list(probabilities[0]) == list(probabilities[1]), gap=gap,
                          forbidden=[c["token"] for c in first_candidates(with_grammar)
                                     if letter_of(c["token"], prompt) is None])


def has_thinking_mode(chat_template: str) -> bool:
    """Whether a chat template can think: it reads enable_thinking or writes <think>."""
    return "enable_thinking" in chat_template or "<think>" in chat_template


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("message", nargs="?", default=COFFEE, help="a customer message (default: post 03's coffee message)")
    args = parser.parse_args()
    if not args.message.strip():
        parser.error("the message is empty")
    client = Client()
    prompt = load_prompt()
    probe(client, prompt)
    messages = typed_messages(prompt, args.message)
    print(f"model: {client.model_info()['model']}\nmessage: {args.message}")

    print("\n1. candidates with and without the grammar (first step, top 5)")
    # One request first, so the message is in the cache and the two compared requests both process only its
    # last token: logits computed in another batch shape differ in the last digits (post 03's cache noise).
    ask_code(client, prompt, args.message, grammar=True, top_logprobs=TOP_LOGPROBS)
    with_grammar = ask_code(client, prompt, args.message, grammar=True, top_logprobs=TOP_LOGPROBS).response
    without = ask_code(client, prompt, args.message, grammar=False, top_logprobs=TOP_LOGPROBS).response
    for name, response in (("with grammar", with_grammar), ("without", without)):
        shown = "  ".join(f"{c['token']!r} {math.exp(c['logprob']):.3f}" for c in first_candidates(response)[:5])
        print(f"  {name:<13} {shown}")
    same = same_candidates(with_grammar, without, prompt)
    print(f"  the same {same.count} tokens: {same.same_tokens}; in the same order: {same.same_order}; "
          f"largest difference in a token's probability: {same.gap:.4f}")
    print(f"  with the grammar on, {len(same.forbidden)} of the {same.count} are tokens the grammar forbids, "
          f"e.g. {same.forbidden[:4]}")
    if same.same_tokens and same.gap < 0.01 and same.forbidden:
        if not same.same_order:
            print("  (The order differs only where two tokens' probabilities are closer than that difference.)")
        print("  So the grammar did not change the reported candidates: they are the model's probabilities before the")
        print("  grammar, forbidden tokens included, and renormalizing over the allowed letters is our job.")
    else:
        print("  The candidates differ with the grammar here: read the two lists above before trusting either.")

    print("\n2. post_sampling_probs at temperature 0")
    settings = {**request_settings(prompt, True, TOP_LOGPROBS), "post_sampling_probs": True}
    step = client.chat(messages, **settings).body["choices"][0]["logprobs"]["content"][0]
    listed = step.get("top_probs", step.get("top_logprobs", []))
    shown = "  ".join(f"{c['token']!r} {c.get('prob', math.exp(c.get('logprob', 0.0))):.3f}" for c in listed[:5])
    print(f"  {len(listed)} candidate(s): {shown}")
    top_probability = listed[0].get("prob", math.exp(listed[0].get("logprob", 0.0))) if listed else None
    if len(listed) == 1 and top_probability == 1.0:
        print("  Greedy sampling left one token with probability 1: it says nothing about how sure the model was.")
    else:
        print(f"  {len(listed)} candidates after sampling: compare them with pitfall 1's before deciding they mean anything.")

    print("\n3. top_logprobs 3, 30 and 100 (one request with 100 candidates, read with its first 3, 30 and 100)")
    response = ask_code(client, prompt, args.message, top_logprobs=MOST).response
    answers = {top: typed_answer(first_n_candidates(response, top), prompt, top) for top in (3, TOP_LOGPROBS, MOST)}
    for top, answer in answers.items():
        print(f"  top_logprobs {top:3d}: {answer.code}  P(group) {answer.p_group:.4f}  "
              f"P(intent|group) {answer.p_intent_given_group:.4f}  confidence {answer.confidence:.4f}  "
              f"allowed letters missing: {answer.missing_letters}")
    few, enough, most = answers[3], answers[TOP_LOGPROBS], answers[MOST]
    print(f"  3 candidates: {few.missing_letters} allowed letters missing, counted as 0, so the confidence is "
          f"{few.confidence - enough.confidence:+.4f} off the 30-candidate one.")
    moved = abs(most.confidence - enough.confidence)
    print(f"  30 against 100 candidates: the confidence moves by {moved:.4f}"
          + (", so 30 are enough for this message." if moved < 1e-3 else ", so 30 are not enough for this message.")
          + "\n  (candidates.py checks every answer of a results file that missed a letter.)")

    print("\n4. thinking")
    template = client.get("/props").get("chat_template", "")
    if not has_thinking_mode(template):
        print("  This model's chat template has no thinking mode (no enable_thinking, no <think>): a request cannot")
        print("  turn one on, so there is nothing to show on this model.")
        print("  GB10 reference (Ternary Bonsai 2 27B, the series' post 3, not measured here): with thinking on and no")
        print("  grammar, the most likely first token for the coffee message is 'We' (0.996), the start of the")
        print("  reasoning, not a group letter. With the grammar on as well, the grammar applies from the first token,")
        print("  so the code is written as reasoning: it lands in reasoning_content, content is empty, and the code")
        print("  differs (A-J instead of C-F). The server runs with --reasoning off and every request here sends")
        print("  enable_thinking false; a request that sends true turns thinking back on.")
        return 0
    first = {}
    for thinking in (False, True):
        body = client.chat(messages, temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=5,
                           chat_template_kwargs={"enable_thinking": thinking}).body
        first[thinking] = first_candidates(body)
        shown = "  ".join(f"{c['token']!r} {math.exp(c['logprob']):.3f}" for c in first[thinking])
        print(f"  no grammar, enable_thinking {str(thinking):<5}: first token candidates {shown}")
    if first[True] and letter_of(first[True][0]["token"], prompt) is None:
        print(f"  With thinking on, the most likely first token is {first[True][0]['token']!r}, not a group letter:")
        print("  step 1 would measure the start of the reasoning, not the group.")
    body = client.chat(messages, **request_settings(prompt, True, 5, max_tokens=8),
                       chat_template_kwargs={"enable_thinking": True}).body
    message = body["choices"][0]["message"]
    print(f"  grammar on, enable_thinking True : content {message.get('content')!r}, "
          f"reasoning_content {message.get('reasoning_content')!r}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
