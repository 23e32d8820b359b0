"""Attempt 1, just ask: what the customer wants, in the model's own words.

    python3 01-why-typed-decisions/free_text.py
    python3 01-why-typed-decisions/free_text.py "my card hasn't arrived, what is this about?"

The system prompt asks the model to say what the customer wants, nothing
more. A reply is something a person can read and a program cannot branch on:
its length, wording and format change from message to message, and some
replies answer the customer instead of saying what they want. For each
message it prints the reply, its length in tokens and the server's time.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from customer_messages import FREE_TEXT
from llama_http import Client, chat, exit_on_server_errors

SYSTEM = "You assist a bank's customer support team. Tell us what the customer wants."
MAX_TOKENS = 120
INDENT = " " * 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("messages", nargs="*", help="customer messages (default: three from BANKING77)")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                        help=f"longest reply in tokens (default: {MAX_TOKENS})")
    args = parser.parse_args()
    if args.max_tokens < 1:
        parser.error("--max-tokens must be 1 or more")
    if any(not message.strip() for message in args.messages):
        parser.error("a message is empty")
    client = Client()
    print(f"server: {client.url}  model: {client.model_info()['model']}")
    print(f"system prompt: {SYSTEM}\n")
    for message in args.messages or FREE_TEXT:
        reply = chat(SYSTEM, message, client, max_tokens=args.max_tokens)
        choice = reply["choices"][0]
        content = (choice["message"].get("content") or "").strip()
        if choice.get("finish_reason") == "length":
            content += " ..."
        timings = reply.get("timings", {})
        server_ms = timings.get("prompt_ms", 0.0) + timings.get("predicted_ms", 0.0)
        print(f"Customer: {message}")
        lines = textwrap.wrap(content, 80) or [""]
        print("Model:    " + lines[0])
        for line in lines[1:]:
            print(INDENT + line)
        cut = ", cut at the limit" if choice.get("finish_reason") == "length" else ""
        print(f"{INDENT}({timings.get('predicted_n', '?')} tokens{cut}, {server_ms:.0f} ms on the server)\n")
    print("A person can read these; a program would still have to turn each into one of 77 intents.")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
