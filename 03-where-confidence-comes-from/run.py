"""Typed answers with confidence on a whole split: the file every later post reads.

    python3 03-where-confidence-comes-from/run.py --split calib           # 770 calibration messages
    python3 03-where-confidence-comes-from/run.py                         # the 3,080 test messages
    python3 03-where-confidence-comes-from/run.py --limit 100 --spread    # 100 test messages over all intents
    python3 03-where-confidence-comes-from/run.py --sample 400 --seed 0   # 400 test messages drawn at random

Writes 03-where-confidence-comes-from/results/<dataset>-<split>.jsonl: one
JSON object per message (fields in README.md); a run with --sample N --seed S
writes <dataset>-<split>-sample<N>-seed<S>.jsonl beside it. Ctrl-C keeps the
finished lines; the same command resumes. At the end it prints the summary
block of the post. The later posts read these files without a server: your
own complete run when there is one, else your largest complete sample (a
seeded random part of the split, each intent in proportion to its share, the
same messages for the same N and seed on any machine; each script names it as
a sample), else the committed reference run in results/reference/ (each
script says which it read); after a --limit run into your own file the last
line says so.

A message whose status is not "ok" (invalid, too_long, error) has no code:
it is recorded with correct = false and confidence = 0.0, so no confidence
threshold ever takes it for a sure answer. An "error" line is a failed attempt, not an
answer: a reply the server refused, or one whose logprobs give no confidence
(a shortened candidate list). Every reader leaves it out and counts it on its
own, the same command asks it again, and three in a row stop the run. Before
the first message a probe (00-setup/typed_request.py) checks that the server
can give a confidence at all; if not, the run stops with one line and writes
nothing.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from batch import RunStopped, pick_messages, run_messages, sample_of
from llama_http import exit_on_server_errors
from registry import DATASETS
from results_record import parse_lines
from results_file import relative
from saved_answers import default_results, own_results_path, own_run_state, sample_results_path
from summary import print_summary
from typed_lines import add_run_arguments, parse_run_arguments, start_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(parser)
    args = parse_run_arguments(parser)
    split = DATASETS[args.dataset].load_split(args.split)
    messages = pick_messages(split, args, parser)
    sample = sample_of(args)
    out = args.out or (sample_results_path(args.dataset, args.split, *sample) if sample
                       else own_results_path(args.dataset, args.split))
    run = start_run(args.dataset, args.top_logprobs)
    run.check_resumable(out, split)
    what = f"{args.dataset} {args.split} (model {run.model}, top_logprobs {args.top_logprobs})"
    records = run_messages(messages, out, run.line, what)
    lines = parse_lines(records, str(out))
    print_summary(lines, f"{args.dataset} {args.split}")
    # your own task's loader (datasets/task.py) has this hook: the baselines make_task.py measured, beside the model
    note_of_run = getattr(DATASETS[args.dataset].loader(), "baseline_note_of_run", None)
    if note_of_run and (note := note_of_run(args.split, lines)):
        print("\n" + note)
    read, why = default_results(args.dataset, args.split)
    if not args.out and read != out:
        # the later posts' own rule (default_results): they read the reader's run only once it holds the whole split
        if sample:  # or its largest complete sample, when it has no such run
            print(f"\nthe later posts read {relative(read)} ({why})")
        else:
            print(f"\nthe later posts read your own run once it holds the whole split: "
                  f"{own_run_state(args.dataset, args.split)}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped,)))
