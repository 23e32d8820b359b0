"""A shortlist: the model chooses only among the retriever's top K codes (beyond the series).

    python3 08-routes/beyond/combined/shortlist.py --split calib            # 770 calibration messages, shortlists of 5
    python3 08-routes/beyond/combined/shortlist.py                          # the 3,080 test messages
    python3 08-routes/beyond/combined/shortlist.py --dataset clinc150 --split calib --shortlist 5
    python3 08-routes/beyond/combined/shortlist.py --source examples --split calib   # the shortlist of the 5-per-intent classifier

Post 03's run.py with one change: a ranking of the intents comes first, and
each request's grammar allows only its top K codes (on a
dataset with an out-of-scope code, that code too, always: among the K where
the retriever ranks it there, else after them). The system prompt stays the
whole list, so the server keeps its cached prefill. The confidence keeps its
definition: renormalized over the letters this narrower grammar allows at
each step. Each line is run.py's plus "shortlist": the ranking's codes and
scores, [[code, score], ...], best first; they go to
03-where-confidence-comes-from/results/<dataset>-<variant>-<split>.jsonl,
where combined.py reads them (combined.line_shortlist).

Where the ranking comes from (--source; the variant of its files):
- knn (shortlistK): post 01's TF-IDF nearest-neighbour retriever, fitted on
  every training message but the calibration split; scores are summed
  similarities;
- linear (linearshortlistK): post 01's logistic regression (linear.py) on
  the same messages; scores are its probabilities;
- examples (exampleshortlistK): the logistic regression fitted on the label
  file's 5 examples per intent only, the series' own regime (the calibration
  split stays for fitting the combination and the routes).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from batch import RunStopped, pick_messages, run_messages
from combined import shortlist_variant, source_messages
from llama_http import exit_on_server_errors
from prompt import Prompt, grammar_of
from registry import DATASETS
from results_record import parse_lines
from summary import print_summary
from typed_lines import add_run_arguments, parse_run_arguments, start_run
from variants import own_results_path

K = 5


def shortlisted(prompt: Prompt, codes: list[str]) -> Prompt:
    """The same prompt, with a grammar and code table that allow only `codes` (a shortlist, e.g. a retriever's top K).

    The system prompt is unchanged, so the server keeps using its cached
    prefill; only the per-request grammar narrows. group_letters and
    intent_letters shrink to the shortlisted codes, so post 03's
    renormalization runs over the letters this grammar allows, as always.
    Letters keep their order in the full prompt. Raises ValueError on an
    empty shortlist or a code the prompt does not list.
    """
    if not codes:
        raise ValueError("the shortlist is empty")
    unknown = [code for code in codes if code not in prompt.codes]
    if unknown:
        raise ValueError(f"codes {unknown} are not in the prompt's table")
    chosen = set(codes)
    kept = [code for code in prompt.codes if code in chosen]  # the prompt's order
    intent_letters = {group: "".join(letter for letter in letters if f"{group}-{letter}" in chosen)
                      for group, letters in prompt.intent_letters.items()}
    intent_letters = {group: letters for group, letters in intent_letters.items() if letters}
    return replace(prompt, grammar=grammar_of(intent_letters), codes={code: prompt.codes[code] for code in kept},
                   intents={code: prompt.intents[code] for code in kept}, group_letters="".join(intent_letters),
                   intent_letters=intent_letters)


def shortlist_of(ranking: list[tuple[str, float]], prompt: Prompt, k: int,
                 always: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
    """The K best (code, retriever score) pairs of a ranking of intents, plus the codes in `always`.

    ranking: (intent name, score) pairs, best first (neighbours.Retriever.rank).
    always: codes that every shortlist holds (CLINC150's out-of-scope code),
    added with their own score at the end when not among the K. Raises
    ValueError for K below 1.
    """
    if k < 1:
        raise ValueError(f"a shortlist needs at least one code, not {k}")
    score = {prompt.by_intent[intent].code: value for intent, value in ranking}
    codes = [prompt.by_intent[intent].code for intent, _ in ranking[:k]]
    codes += sorted(always - set(codes))
    return [(code, score.get(code, 0.0)) for code in codes]


SCORE_DIGITS = 6  # decimals a results line keeps of each retriever score


def shortlist_field(shortlist: list[tuple[str, float]]) -> list[list]:
    """The "shortlist" field of a results line: [[code, score], ...] with each score rounded to SCORE_DIGITS
    decimals. A live decision (decisions.py) rounds the same way, so it combines what the saved lines hold."""
    return [[code, round(score, SCORE_DIGITS)] for code, score in shortlist]


SOURCES = ("knn", "linear", "examples")


def ranking(dataset, source: str):
    """text -> [(intent, score)], best first, from the --source's model of dataset (registry.Dataset)."""
    if source == "knn":
        return dataset.fit_retriever().rank
    from linear import fit_classifier
    classifier = fit_classifier(source_messages(dataset, source))

    def rank(text: str) -> list[tuple[str, float]]:
        return sorted(classifier.probabilities(text).items(), key=lambda pair: (-pair[1], pair[0]))
    return rank


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(parser)
    parser.add_argument("--shortlist", type=int, default=K, metavar="K",
                        help=f"how many of the ranking's codes each request allows (default: {K})")
    parser.add_argument("--source", choices=SOURCES, default="knn",
                        help="what ranks the intents: knn (post 01's retriever, default), linear (post 01's logistic "
                             "regression on the same messages) or examples (it, fitted on the 5 examples per intent)")
    args = parse_run_arguments(parser)
    if args.shortlist < 1:
        parser.error("--shortlist must be 1 or more")
    dataset = DATASETS[args.dataset]
    out = args.out or own_results_path(args.dataset, args.split, shortlist_variant(args.shortlist, args.source))
    split = dataset.load_split(args.split)
    messages = pick_messages(split, args, parser)
    run = start_run(args.dataset, args.top_logprobs)
    run.check_resumable(out, split, fields=("shortlist",))
    rank = ranking(dataset, args.source)
    always = dataset.out_of_scope_codes()

    def make_record(message):
        shortlist = shortlist_of(rank(message.text), run.prompt, args.shortlist, always)
        narrowed = shortlisted(run.prompt, [code for code, _ in shortlist])
        return {**run.line(message, narrowed), "shortlist": shortlist_field(shortlist)}

    source = "" if args.source == "knn" else f" from {args.source}"
    what = (f"{args.dataset} {args.split} (model {run.model}, top_logprobs {args.top_logprobs}, "
            f"shortlist of {args.shortlist}{source})")
    records = run_messages(messages, out, make_record, what)
    print_summary(parse_lines(records, str(out)), f"{args.dataset} {args.split}, shortlist of {args.shortlist}{source}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped,)))
