"""A decision's answers to messages that are not a split: the off-topic set, or a committed hostile or ordinary set.

    python3 08-routes/beyond/decisions/set_answers.py --source linear          # the off-topic set, regression's shortlists
    python3 08-routes/beyond/decisions/set_answers.py --source none            # the model alone, all codes
    python3 08-routes/beyond/decisions/set_answers.py --source linear --set 08-routes/beyond/gate/adversarial/banking77-third.jsonl

Post 03's run.py and shortlist.py ask the model about the messages of a
split; this asks it, the same way, about the messages of message_sets.py:
by default the off-topic set (CLINC150 messages no bank is asked, each one's
answer wrong), with --set a committed set. --source says which decision's
request: none, the model alone with every code (run.py's request); knn,
linear or examples, the model among that ranking's top --shortlist codes
(shortlist.py's request, its "shortlist" field included, so that
combined.py's weights make the combined decision of each line offline).

The lines go to 03-where-confidence-comes-from/results/<dataset>-<variant>-
<set>.jsonl (variant: "" for none, else shortlist.py's: shortlist5,
linearshortlist5...; set: "offtopic", or the set file's name after the
dataset's, "third"), resumable like every run: a second call asks only what
is missing and asks failed requests again.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from batch import RunStopped, run_messages
from combined import shortlist_variant
from llama_http import exit_on_server_errors
from message_sets import OUT_OF_SCOPE_CODE, OUT_OF_SCOPE_INTENT, set_messages, offtopic_messages, set_name
from registry import add_dataset_argument, DATASETS
from results_record import parse_lines
from saved_answers import OWN_RESULTS
from shortlist import K, SOURCES, ranking, shortlist_field, shortlist_of, shortlisted
from summary import print_summary
from typed_lines import start_run
from typed_request import TOP_LOGPROBS


def answers_path(dataset: str, source: str, k: int, set_path: Path | None) -> Path:
    """03-where-confidence-comes-from/results/<dataset>-<variant>-<set>.jsonl (no variant for source "none")."""
    variant = "" if source == "none" else shortlist_variant(k, source)
    return OWN_RESULTS / f"{dataset}-{variant + '-' if variant else ''}{set_name(set_path)}.jsonl"


def without_intent(line: dict) -> dict:
    """A results line of a message with no intent of the dataset: gold OUT_OF_SCOPE_CODE, never right."""
    return line | {"gold_intent": OUT_OF_SCOPE_INTENT, "gold_code": OUT_OF_SCOPE_CODE, "correct": False,
                   "right_group": False}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--source", choices=("none", *SOURCES), required=True,
                        help="whose request: none (the model alone, every code) or the ranking whose top codes the "
                             "grammar allows (knn, linear, examples: shortlist.py's --source)")
    parser.add_argument("--shortlist", type=int, default=K, metavar="K", help=f"codes a shortlist allows (default {K})")
    parser.add_argument("--set", type=Path, metavar="FILE",
                        help="a committed message set (JSONL with text, and intent or target); default: the off-topic set")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N messages of the set")
    args = parser.parse_args()
    if args.shortlist < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--shortlist and --limit must be 1 or more")
    if args.set is not None and not args.set.is_file():
        parser.error(f"no message set at {args.set}")
    dataset = DATASETS[args.dataset]
    messages = offtopic_messages() if args.set is None else set_messages(args.set)
    messages = messages[:args.limit]
    out = answers_path(args.dataset, args.source, args.shortlist, args.set)
    run = start_run(args.dataset, TOP_LOGPROBS)
    run.check_resumable(out, messages, fields=() if args.source == "none" else ("shortlist",))
    known = run.prompt.by_intent
    if args.source != "none":
        rank, always = ranking(dataset, args.source), dataset.out_of_scope_codes()

    def make_record(message):
        asked_as = message if message.intent in known else replace(message, intent=next(iter(known)))
        if args.source == "none":
            line = run.line(asked_as)
        else:
            shortlist = shortlist_of(rank(message.text), run.prompt, args.shortlist, always)
            narrowed = shortlisted(run.prompt, [code for code, _ in shortlist])
            line = {**run.line(asked_as, narrowed),
                    "shortlist": shortlist_field(shortlist)}
        return line if message.intent in known else without_intent(line)

    what = f"{args.dataset} {set_name(args.set)} set, {'every code' if args.source == 'none' else args.source + ' shortlists'}"
    records = run_messages(messages, out, make_record, f"{what} (model {run.model})")
    print_summary(parse_lines(records, str(out)), what)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped,)))
