"""Free text: ask the model an open question and see what comes back.

    python3 01-why-typed-decisions/free_text.py
    python3 01-why-typed-decisions/free_text.py "my card hasn't arrived, what is this about?"

A free-text reply is something a person can read and a program cannot act on:
its length, wording and format change from message to message. The printout
shows the reply, its length in tokens and the server's own time for it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from llama_http import Client, exit_on_server_errors  # noqa: E402

QUESTION = ("A bank customer wrote: \"I was charged twice for the same coffee this morning.\" "
            "What is the customer's intent?")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("question", nargs="?", default=QUESTION, help="the question to ask (default: about a double charge)")
    parser.add_argument("--max-tokens", type=int, default=200, help="longest reply in tokens (default: 200)")
    args = parser.parse_args()
    if not args.question.strip():
        parser.error("the question is empty")
    client = Client()
    reply = client.chat([{"role": "user", "content": args.question}], temperature=0.0, max_tokens=args.max_tokens)
    content = reply.body["choices"][0]["message"].get("content", "")
    timings = reply.body.get("timings", {})
    server_ms = timings.get("prompt_ms", 0.0) + timings.get("predicted_ms", 0.0)
    print(f"model: {client.model_info()['model']}\n")
    print(f"question: {args.question}\n")
    print(f"reply:\n{content}\n")
    print(f"{timings.get('predicted_n', '?')} tokens in the reply, {timings.get('prompt_n', '?')} prompt tokens processed; "
          f"server time {server_ms:.0f} ms, wall {reply.wall_ms:.0f} ms")
    print("A person can read this; a program would have to guess which of 77 intents it means.")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
