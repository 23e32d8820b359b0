"""Typed answers with confidence on a BANKING77 or CLINC150 split: the file every later post reads.

    python3 03-where-confidence-comes-from/run.py --split calib           # 770 calibration messages
    python3 03-where-confidence-comes-from/run.py                         # the 3,080 test messages
    python3 03-where-confidence-comes-from/run.py --limit 100 --spread    # 100 test messages over all intents
    python3 03-where-confidence-comes-from/run.py --dataset clinc150 --split calib   # 850 messages
    python3 03-where-confidence-comes-from/run.py --shortlist 5           # choose among the retriever's top 5

Writes 03-where-confidence-comes-from/results/<dataset>-<split>.jsonl: one
JSON object per message (fields in README.md). Ctrl-C keeps the finished lines; the same command resumes. At the
end it prints the summary block of the post. Posts 04-08 read these files
without a server: your own complete run when there is one, else the committed
reference run in results/reference/ (each script says which it read).

A message whose status is not "ok" (invalid, too_long, error) has no code:
it is recorded with correct = false and confidence = 0.0, so a threshold on
confidence never acts on it. An "error" line is a failed attempt, not an
answer: a reply the server refused, or one whose logprobs give no confidence
(a shortened candidate list). Every reader leaves it out and counts it on its
own, the same command asks it again, and three in a row stop the run. Before
the first message a probe (00-setup/typed_request.py) checks that the server
can give a confidence at all; if not, the run stops with one line and writes
nothing.

With --shortlist K, post 01's TF-IDF retriever ranks the intents first, and
the model may choose only among its top K (CLINC150: plus the out-of-scope
code, always): the same system prompt (so the same cached prefill), a
grammar narrowed to those K codes (typed_prompt.shortlisted). The confidence
keeps its definition: renormalized over the letters that grammar allows at
each step. The lines get the retriever's candidates and scores ("shortlist":
[[code, score], ...], best first) and go to <dataset>-shortlistK-<split>.jsonl.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from batch import RunStopped, add_split_arguments, pick_messages, run_messages
from confidence import letter_tokens
from llama_http import Client, exit_on_server_errors
from registry import DATASETS
from saved_answers import own_results_path
from summary import print_summary
from typed_prompt import shortlist_of, shortlisted
from typed_request import TOP_LOGPROBS, probe, request_settings
from results_record import parse_lines, typed_line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="banking77", help="which dataset (default: banking77)")
    add_split_arguments(parser)
    parser.add_argument("--top-logprobs", type=int, default=TOP_LOGPROBS,
                        help=f"candidates per token (default: {TOP_LOGPROBS})")
    parser.add_argument("--out", type=Path,
                        help="results file (default: 03-where-confidence-comes-from/results/<dataset>-<split>.jsonl)")
    parser.add_argument("--shortlist", type=int, metavar="K",
                        help="let the model choose only among the K intents that post 01's retriever ranks first")
    args = parser.parse_args()
    if args.top_logprobs < 1:
        parser.error("--top-logprobs must be 1 or more: confidence is read from the candidates")
    if args.shortlist is not None and args.shortlist < 1:
        parser.error("--shortlist must be 1 or more")

    dataset = DATASETS[args.dataset]
    variant = f"shortlist{args.shortlist}" if args.shortlist else ""
    out = args.out or own_results_path(args.dataset, args.split, variant)
    messages = pick_messages(dataset.load_split(args.split), args, parser)
    built = dataset.load_prompt()
    retriever = dataset.fit_retriever() if args.shortlist else None
    always = dataset.out_of_scope_codes()
    client = Client()
    model = client.model_info()["model"]
    probe(client, built, args.top_logprobs)
    tokens = letter_tokens(client)
    settings = request_settings(built, True, args.top_logprobs)

    def make_record(message):
        if retriever is None:
            return typed_line(client, built, tokens, message, model, settings, args.top_logprobs)
        shortlist = shortlist_of(retriever.rank(message.text), built, args.shortlist, always)
        narrowed = shortlisted(built, [code for code, _ in shortlist])
        return {**typed_line(client, built, tokens, message, model, settings, args.top_logprobs, asked=narrowed),
                "shortlist": [[code, round(score, 6)] for code, score in shortlist]}

    what = (f"{args.dataset} {args.split} (model {model}, top_logprobs {args.top_logprobs}"
            + (f", shortlist of {args.shortlist})" if args.shortlist else ")"))
    records = run_messages(messages, out, make_record, what)
    print_summary(parse_lines(records, str(out)), f"{args.dataset} {args.split}" + (f", shortlist of {args.shortlist}" if args.shortlist else ""))
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped,)))
