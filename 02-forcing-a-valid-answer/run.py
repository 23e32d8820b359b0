"""Typed requests on a BANKING77 split: how often is the answer a valid code, and how often right?

    python3 02-forcing-a-valid-answer/run.py --split calib --limit 200               # with the grammar
    python3 02-forcing-a-valid-answer/run.py --split calib --limit 200 --no-grammar  # and without
    python3 02-forcing-a-valid-answer/run.py                                         # the whole test split

Writes 02-forcing-a-valid-answer/results/codes-banking77-<split>.jsonl
(…-nogrammar.jsonl without the grammar), one line per message. Ctrl-C keeps the finished lines; the same
command resumes with the next message, and asks the messages whose request failed
(status error) again. Prints valid codes, retried, correct and right group over
the messages with an outcome, the failed ones as their own count, and the median
time per request.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_split
from batch import RunStopped, add_split_arguments, base_record, pick_messages, run_messages
from compare import share_of
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from prompt import load_prompt
from typed_request import probe, request_settings
from results_file import final_and_failed, results_folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_split_arguments(parser)
    parser.add_argument("--no-grammar", action="store_true", help="send the prompt without the grammar")
    parser.add_argument("--out", type=Path,
                        help="results file (default: 02-forcing-a-valid-answer/results/codes-banking77-<split>.jsonl)")
    args = parser.parse_args()

    grammar = not args.no_grammar
    out = args.out or results_folder(__file__) / f"codes-banking77-{args.split}{'' if grammar else '-nogrammar'}.jsonl"
    messages = pick_messages(load_split(args.split), args, parser)
    prompt = load_prompt()
    client = Client()
    info = client.model_info()
    probe(client, prompt)
    settings = request_settings(prompt, grammar)

    def make_record(message):
        return base_record(message, ask_code(client, prompt, message.text, grammar=grammar), prompt, info["model"], settings)

    what = f"{args.split} (model {info['model']}, grammar {'on' if grammar else 'off'})"
    records, failed = final_and_failed(run_messages(messages, out, make_record, what))

    n = len(records)
    valid = sum(r["status"] == "ok" for r in records)
    print(f"\n{args.split}, {n} messages, {info['model']}, grammar {'on' if grammar else 'off'}:")
    if failed:
        print(f"  errors        {len(failed):5d}  requests that failed: not counted below; the same command asks them again")
    print(f"  valid codes   {valid:5d}  {share_of(valid, n)}")
    print(f"  retried       {sum(r['retried'] for r in records):5d}  {share_of(sum(r['retried'] for r in records), n)}")
    for status in ("invalid", "too_long"):
        count = sum(r["status"] == status for r in records)
        if count:
            print(f"  {status:<13} {count:5d}  {share_of(count, n)}")
    print(f"  right group   {sum(r['right_group'] for r in records):5d}  {share_of(sum(r['right_group'] for r in records), n)}")
    print(f"  correct       {sum(r['correct'] for r in records):5d}  {share_of(sum(r['correct'] for r in records), n)}")
    walls = [r["wall_ms"] for r in records if r["status"] == "ok"]
    if walls:
        print(f"  median time per request: {statistics.median(walls):.0f} ms (wall, client side)")
    if not args.out and args.split == "calib":
        print("\ncompare the runs with and without the grammar code by code: python3 02-forcing-a-valid-answer/compare.py")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped,)))
