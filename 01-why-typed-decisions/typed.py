"""A typed decision: one intent out of 77, and a confidence you can act on.

    python3 01-why-typed-decisions/typed.py                       # four messages from post 01
    python3 01-why-typed-decisions/typed.py "where is my new card?"
    python3 01-why-typed-decisions/typed.py --banking77 10        # 10 real BANKING77 test messages

The model may only answer with a code the grammar allows (post 02 builds the
prompt and the grammar; the setup keeps a copy in datasets/), and the
confidence is P(group) x P(intent | group) from the token probabilities
(post 03). This is where the series is going: the few lines marked PREVIEW
below do what posts 02 and 03 take apart and harden, and a test of post 03
holds them to that post's own confidence code on real replies.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_labels, load_split
from labels import printable
from customer_messages import TYPED
from llama_http import Client, chat, exit_on_server_errors
from registry import dataset_named
from typed_request import TOP_LOGPROBS, probe


# --- PREVIEW of posts 02 and 03 ---------------------------------------------------------------------------
def ask_typed(client: Client, system: str, grammar: str, codes: set[str], text: str, top_logprobs: int = TOP_LOGPROBS) -> dict:
    """The reply to one typed request: the code in 2 tokens ('C', '-F'), asked again with room for 3 when it
    came as 'C', '-', 'F' and was cut after 'C-' (post 02's retry)."""
    settings = {"grammar": grammar, **({"logprobs": True, "top_logprobs": top_logprobs} if top_logprobs else {})}
    reply = chat(system, text, client, max_tokens=2, **settings)
    if reply["choices"][0]["message"]["content"] not in codes:
        reply = chat(system, text, client, max_tokens=3, **settings)
    return reply


def code_and_confidence(reply: dict, codes: set[str]) -> tuple[str | None, float]:
    """The code of a reply and its confidence: at each letter, its probability renormalized over the letters
    the grammar allows there, multiplied over the two letters (post 03). (None, 0.0) without a full code."""
    code = reply["choices"][0]["message"]["content"]
    if code not in codes:
        return None, 0.0

    def letter_of(text: str) -> str | None:  # the letter `text` writes: "C" -> "C", "C-F" -> "F", else None
        return text if len(text) == 1 and text in {c[0] for c in codes} else text[2] if text in codes else None

    written, confidence = "", 1.0
    for step in reply["choices"][0]["logprobs"]["content"]:
        if written == code:
            break  # the end-of-generation token after a complete code
        chosen = letter_of(written + step["token"]) if step["token"] else None
        if chosen is not None:
            mass = {}
            for candidate in step["top_logprobs"]:  # "" (the end token) writes nothing, so no letter
                letter = letter_of(written + candidate["token"]) if candidate["token"] else None
                if letter is not None:
                    mass[letter] = mass.get(letter, 0.0) + math.exp(candidate["logprob"])
            confidence *= mass.get(chosen, 0.0) / sum(mass.values()) if mass else 0.0
        written += step["token"]
    return code, confidence
# --- end of the PREVIEW -----------------------------------------------------------------------------------


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
    prompt = dataset_named("banking77").saved_prompt()
    intent_of = {intent.code: intent.name for intent in load_labels().intents}
    probe(client, prompt)  # 00-setup: a server that cannot give a confidence stops here, with one line
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}\n")
    right = 0
    for text, gold in items:
        started = time.perf_counter()
        reply = ask_typed(client, prompt.system, prompt.grammar, set(intent_of), text)
        ms = (time.perf_counter() - started) * 1000
        code, confidence = code_and_confidence(reply, set(intent_of))
        print(printable(text))
        if code is None:
            print(f"  -> no code ({reply['choices'][0]['message']['content']!r}, {ms:.0f} ms)")
        else:
            print(f"  -> {intent_of[code]}  (code {code}, confidence {confidence:.2f}, {ms:.0f} ms)")
        if gold is not None:
            hit = code is not None and intent_of[code] == gold
            right += hit
            print(f"     true intent: {gold}  {'RIGHT' if hit else 'wrong'}")
        print()
    if any(gold for _, gold in items):
        print(f"{right} of {len(items)} right ({100 * right / len(items):.0f}%) with {info['model']}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
