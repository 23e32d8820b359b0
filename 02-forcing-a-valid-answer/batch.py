"""Typed requests over a list of messages, one JSONL line each, resumable.

02's run.py and 03's run.py both go through run_messages(): it skips the
messages already in the results file, shows progress, and keeps every finished
line when interrupted. What goes into a line is the caller's make_record().
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

from banking77 import Message, spread
from decision import CodeReply
from typed_prompt import BuiltPrompt
from results_file import ResultsFile


def add_split_arguments(parser: argparse.ArgumentParser) -> None:
    """--split (calib or test, default test), --limit N and --spread: the messages a run.py sends."""
    parser.add_argument("--split", choices=("calib", "test"), default="test",
                        help="which messages (default: test, the official test split)")
    parser.add_argument("--limit", type=int, help="only the first N messages of the split, in its order (calib is "
                        "listed round-robin over the intents, so any prefix covers them evenly; test in file order)")
    parser.add_argument("--spread", action="store_true",
                        help="reorder the split round-robin over the intents before --limit (useful for test)")


def pick_messages(messages: list[Message], args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[Message]:
    """The messages of a split that --spread and --limit select; a --limit below 1 is a parser error (exit 2)."""
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be 1 or more")
    return (spread(messages) if args.spread else messages)[: args.limit]


def base_record(message: Message, reply: CodeReply, built: BuiltPrompt, model: str, settings: dict) -> dict:
    """The fields every typed-request line has.

    id, text, gold_intent, gold_code, status, code, intent, correct (bool),
    right_group (bool), retried (bool), content (raw reply), error, wall_ms
    (client time, ms), timings (the server's), model, build (the server's
    system_fingerprint), grammar (bool: was the grammar sent) and settings
    (the request settings without the grammar's text, which is rebuilt from
    the data file rather than repeated on every line) and prompt_sha256 (hex
    sha256 of the system prompt, so a file can be checked against the prompt
    it was made with).
    """
    gold_code = built.by_intent[message.intent].code
    response = reply.response or {}
    return {
        "id": message.id, "text": message.text,
        "gold_intent": message.intent, "gold_code": gold_code,
        "status": reply.status, "code": reply.code,
        "intent": built.codes[reply.code].intent if reply.code else None,
        "correct": reply.code == gold_code,
        "right_group": reply.code is not None and reply.code[0] == gold_code[0],
        "retried": reply.retried, "content": reply.content, "error": reply.error,
        "wall_ms": round(reply.wall_ms, 2), "timings": reply.timings,
        "model": model, "build": response.get("system_fingerprint"), "grammar": "grammar" in settings,
        "settings": {key: value for key, value in settings.items() if key != "grammar"},
        "prompt_sha256": built.sha256,
    }


def check_resumable(out: Path, **expected) -> None:
    """Raise ValueError when the results file `out` holds lines that differ from `expected` in a field.

    expected: field -> value every line must have, e.g. model=...,
    prompt_sha256=...: resuming a file written by another model or with
    another prompt would mix two runs in one file. A missing file passes.
    """
    if not Path(out).exists():
        return
    with ResultsFile(out) as results:
        for field, value in expected.items():
            other = sorted({str(r.get(field)) for r in results.records if r.get(field) != value})
            if other:
                raise ValueError(f"{out} holds answers with {field} {', '.join(other)}, not {value}; "
                                 "move it away to start over")


def run_messages(messages: list[Message], out: Path, make_record: Callable[[Message], dict], what: str) -> list[dict]:
    """Write make_record(message) for every message not yet in `out`; return all their records.

    Prints one header line, then progress every 10 messages (count, seconds,
    messages per second). Ctrl-C raises KeyboardInterrupt after the last
    finished line is on disk; the same call later resumes after it.
    """
    with ResultsFile(out) as results:
        todo = [m for m in messages if m.id not in results.done]
        print(f"{what}: {len(messages)} messages, {len(messages) - len(todo)} already in {out}, {len(todo)} to go")
        started = time.monotonic()
        for number, message in enumerate(todo, start=1):
            results.append(make_record(message))
            if number % 10 == 0 or number == len(todo):
                elapsed = time.monotonic() - started
                print(f"  {number}/{len(todo)}  {elapsed:.0f} s  ({number / elapsed:.2f} messages/s)", flush=True)
        wanted = {m.id for m in messages}
        return [r for r in results.records if r["id"] in wanted]
