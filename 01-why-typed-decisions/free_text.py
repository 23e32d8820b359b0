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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from customer_messages import FREE_TEXT
from llama_http import Client, chat, exit_on_server_errors

SYSTEM = "You assist a bank's customer support team. Tell us what the customer wants."
MAX_TOKENS = 120
INDENT = " " * 10


@dataclass(frozen=True)
class FreeTextReply:
    """The model's reply to one message. content: its text, stripped, with " ..." added when cut; cut: it
    stopped at the token limit; tokens: tokens generated (None when the server does not say); server_ms:
    the server's prompt and generation time, in ms."""

    content: str
    cut: bool
    tokens: int | None
    server_ms: float


def ask_free_text(message: str, client: Client, max_tokens: int = MAX_TOKENS) -> FreeTextReply:
    """Ask what the customer of `message` wants, in the model's own words (SYSTEM), at most max_tokens."""
    reply = chat(SYSTEM, message, client, max_tokens=max_tokens)
    choice = reply["choices"][0]
    cut = choice.get("finish_reason") == "length"
    content = (choice["message"].get("content") or "").strip() + (" ..." if cut else "")
    timings = reply.get("timings", {})
    return FreeTextReply(content, cut, timings.get("predicted_n"), timings.get("prompt_ms", 0.0) + timings.get("predicted_ms", 0.0))


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
        reply = ask_free_text(message, client, args.max_tokens)
        print(f"Customer: {message}")
        lines = textwrap.wrap(reply.content, 80) or [""]
        print("Model:    " + lines[0])
        for line in lines[1:]:
            print(INDENT + line)
        cut = ", cut at the limit" if reply.cut else ""
        tokens = "?" if reply.tokens is None else reply.tokens
        print(f"{INDENT}({tokens} tokens{cut}, {reply.server_ms:.0f} ms on the server)\n")
    print("A person can read these; a program would still have to turn each into one of 77 intents.")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
