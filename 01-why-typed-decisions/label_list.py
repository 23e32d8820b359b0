"""A label list: the 77 intent names in the prompt, no grammar.

    python3 01-why-typed-decisions/label_list.py              # the first 200 calibration messages
    python3 01-why-typed-decisions/label_list.py --limit 50

Better than free text, but nothing makes the model keep to the list. Each reply
is sorted into: the exact label and nothing else, a label inside other text, or
no label at all. Prints the counts, the accuracy of the replies that hold a
label, the median time per request and the replies without a label.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_labels, load_split
from llama_http import Client, chat, exit_on_server_errors


def label_prompt(names: list[str]) -> str:
    return ("You sort the messages that customers send to their bank. Answer with the one label from "
            "this list that fits the message best, and nothing else:\n" + "\n".join(names))


def find_label(reply: str, names: list[str]) -> tuple[str, str | None]:
    """Sort a reply: ("exact", label), ("inside", label) or ("none", None).

    "inside" takes the longest label found as a whole word in the reply, so
    "card_payment_fee_charged" is not read as "card_payment".
    """
    text = reply.strip().strip("`'\".").strip()
    if text in names:
        return "exact", text
    found = [name for name in names if re.search(rf"(?<![a-z_]){re.escape(name)}(?![a-z_])", reply)]
    if found:
        return "inside", max(found, key=len)
    return "none", None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("calib", "test"), default="calib", help="which messages (default: calib)")
    parser.add_argument("--limit", type=int, default=200, help="the first N messages of the split (default: 200; the "
                        "calibration split is listed round-robin over the intents, so they cover all 77)")
    parser.add_argument("--max-tokens", type=int, default=24, help="longest reply in tokens (default: 24)")
    args = parser.parse_args()
    if args.limit < 1:
        parser.error("--limit must be 1 or more")
    names = [intent.name for intent in load_labels().intents]
    messages = load_split(args.split)[: args.limit]
    client = Client()
    print(f"server: {client.url}  model: {client.model_info()['model']}\n")
    system = label_prompt(names)
    kinds = {"exact": 0, "inside": 0, "none": 0}
    right, walls, no_label = 0, [], []
    for number, message in enumerate(messages, start=1):
        started = time.perf_counter()
        reply = chat(system, message.text, client, max_tokens=args.max_tokens)
        walls.append((time.perf_counter() - started) * 1000)
        content = reply["choices"][0]["message"].get("content") or ""
        kind, label = find_label(content, names)
        kinds[kind] += 1
        right += label == message.intent
        if kind == "none":
            no_label.append((message.text, content))
        if number % 25 == 0:
            print(f"  {number}/{len(messages)}", flush=True)
    n = len(messages)
    print(f"\n{n} BANKING77 {args.split} messages, the {len(names)} intent names in the prompt, no grammar:")
    print(f"  {kinds['exact']:5d} replies were an exact label")
    print(f"  {kinds['inside']:5d} replies were a label inside other text")
    print(f"  {kinds['none']:5d} replies were no label")
    print(f"  {right:5d} were the right label ({100 * right / n:.0f}%)")
    print(f"  median time per request: {statistics.median(walls):.0f} ms")
    if no_label:
        print()
        for text, content in no_label[:20]:
            print(f"  no label: {text!r} -> {content.strip()[:70]!r}")
        if len(no_label) > 20:
            print(f"  ... and {len(no_label) - 20} more")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
