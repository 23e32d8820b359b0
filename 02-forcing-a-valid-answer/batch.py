"""Typed requests over a list of messages, one JSONL line each, resumable.

02's run.py and 03's run.py both go through run_messages(): it skips the
messages already in the results file with a final outcome, asks the failed
ones (status "error") again, shows progress, keeps every finished line when
interrupted, and stops when several requests in a row fail. What goes into a
line is the caller's make_record().
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

from labels import Message, seeded_sample, split_code, spread
from decision import CodeReply
from prompt import Prompt
from results_file import ResultsFile, relative

# This many error lines in a row stop a run: the server has stopped answering
# typed requests, and going on would only write more error lines.
ERRORS_IN_A_ROW = 3


class RunStopped(Exception):
    """A run stopped before its end because of the server; the message says why and what a rerun does."""


def add_split_arguments(parser: argparse.ArgumentParser) -> None:
    """--split (calib or test, default test), --limit N, --spread and --sample N --seed S: the messages a run.py
    sends."""
    parser.add_argument("--split", choices=("calib", "test"), default="test",
                        help="which messages (default: test, the official test split)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N messages of the split, in its order (calib is "
                        "listed round-robin over the intents, so any prefix covers them evenly; test in file order)")
    parser.add_argument("--spread", action="store_true",
                        help="reorder the split round-robin over the intents before --limit (useful for test)")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="N messages of the split drawn at random with --seed, each intent in proportion to its "
                        "share and every intent at least once when N allows; kept in the split's order. Not with "
                        "--limit or --spread")
    parser.add_argument("--seed", type=int, metavar="S",
                        help="the seed of --sample (default: 0): the same N and seed give the same messages anywhere")


def sample_of(args: argparse.Namespace) -> tuple[int, int] | None:
    """(N, seed) of a --sample run (seed 0 unless --seed), None for a run without --sample."""
    return None if args.sample is None else (args.sample, 0 if args.seed is None else args.seed)


def pick_messages(messages: list[Message], args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[Message]:
    """The messages of a split that --spread and --limit, or --sample and --seed, select.

    A --limit or --sample below 1, a --sample larger than the split, --sample
    with --limit or --spread, a --seed below 0 or without --sample are parser
    errors (one line, exit 2). --sample: labels.seeded_sample, in the split's
    order.
    """
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be 1 or more")
    if args.sample is None:
        if args.seed is not None:
            parser.error("--seed goes with --sample N: it chooses which N messages")
        return (spread(messages) if args.spread else messages)[: args.limit]
    if args.limit is not None or args.spread:
        parser.error("--sample draws its own messages from the whole split: give it without --limit and --spread")
    if args.sample < 1:
        parser.error("--sample must be 1 or more")
    if args.sample > len(messages):
        parser.error(f"--sample {args.sample}: the {args.split} split has {len(messages):,} messages")
    if args.seed is not None and args.seed < 0:
        parser.error("--seed must be 0 or more")
    return seeded_sample(messages, *sample_of(args))


def base_record(message: Message, reply: CodeReply, prompt: Prompt, model: str, settings: dict) -> dict:
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
    gold_code = prompt.by_intent[message.intent].code
    response = reply.response or {}
    return {
        "id": message.id, "text": message.text,
        "gold_intent": message.intent, "gold_code": gold_code,
        "status": reply.status, "code": reply.code,
        "intent": prompt.codes[reply.code].intent if reply.code else None,
        "correct": reply.code == gold_code,
        "right_group": reply.code is not None and split_code(reply.code)[0] == split_code(gold_code)[0],
        "retried": reply.retried, "content": reply.content, "error": reply.error,
        "wall_ms": round(reply.wall_ms, 2), "timings": reply.timings,
        "model": model, "build": response.get("system_fingerprint"), "grammar": "grammar" in settings,
        "settings": {key: value for key, value in settings.items() if key != "grammar"},
        "prompt_sha256": prompt.sha256,
    }


def check_resumable(out: Path, ids: set[str] | None = None, fields: tuple[str, ...] = (),
                    known: set[str] | None = None, **expected) -> None:
    """Raise ValueError when the results file `out` is not the same run as the one about to resume it.

    expected: field -> value every line must have, e.g. model=..., build=...,
    prompt_sha256=...: resuming a file written by another model, build or
    prompt would mix two runs in one file. ids: the ids of the messages of
    this run's split (a line of another split or dataset is refused).
    fields: the extra fields this run writes on every line: a line without
    them is of another kind of run. known: every field a line of this run
    may have besides `fields` (None: not checked); a line with another one
    is of another kind of run too. A missing file passes.
    """
    if not Path(out).exists():
        return
    with ResultsFile(out, writing=False) as results:  # the run itself counts and replaces the error lines
        for field, value in expected.items():
            other = sorted({str(r.get(field)) for r in results.records if r.get(field) != value})
            if other:
                raise ValueError(f"{out} holds answers with {field} {', '.join(other)}, not {value}; "
                                 "move it away to start over")
        foreign = [r["id"] for r in results.records if ids is not None and r.get("id") not in ids]
        if foreign:
            raise ValueError(f"{out} holds the id {foreign[0]!r}, which is not a message of this run's split "
                             f"({len(foreign)} such lines): it is another split's or dataset's file")
        lacking = sorted({name for r in results.records for name in fields if name not in r})
        beyond = sorted({name for r in results.records for name in r
                         if known is not None and name not in known and name not in fields})
        if lacking or beyond:
            which = f"without the field {lacking[0]!r}" if lacking else f"with the field {beyond[0]!r}"
            raise ValueError(f"{out} holds lines {which}, unlike the lines of this run: another kind of run wrote it; "
                             "move it away to start over")


def run_messages(messages: list[Message], out: Path, make_record: Callable[[Message], dict], what: str) -> list[dict]:
    """Write make_record(message) for every message without a final outcome in `out`; return all their records.

    Error lines of an earlier run are taken out of the file and asked again
    (results_file.ResultsFile). Prints one header line, then progress every
    10 messages (count, seconds, messages per second). Ctrl-C raises
    KeyboardInterrupt after the last finished line is on disk; the same call
    later resumes after it. Raises RunStopped after ERRORS_IN_A_ROW error
    lines in a row (they are on disk, and asked again by the next run).
    """
    with ResultsFile(out) as results:
        todo = [m for m in messages if m.id not in results.done]
        again = f" ({results.dropped} error lines of an earlier run asked again)" if results.dropped else ""
        print(f"{what}: {len(messages)} messages, {len(messages) - len(todo)} already in {relative(out)}, {len(todo)} to go"
              + again)
        started, in_a_row = time.monotonic(), 0
        for number, message in enumerate(todo, start=1):
            record = make_record(message)
            results.append(record)
            in_a_row = in_a_row + 1 if record["status"] == "error" else 0
            if in_a_row == ERRORS_IN_A_ROW:
                raise RunStopped(f"{in_a_row} requests in a row failed (the last: {record['error']}); stopped after "
                                 f"{number} of {len(todo)} messages. The same command asks the failed ones again")
            if number % 10 == 0 or number == len(todo):
                elapsed = time.monotonic() - started
                print(f"  {number}/{len(todo)}  {elapsed:.0f} s  ({number / elapsed:.2f} messages/s)", flush=True)
        wanted = {m.id for m in messages}
        return [r for r in results.records if r["id"] in wanted]
