"""Are 30 candidates enough (beyond the series)? Which allowed letters the answers of a results file missed, and what 100 changes.

    python3 03-where-confidence-comes-from/beyond/candidates.py              # the test answers (yours, else the reference)
    python3 03-where-confidence-comes-from/beyond/candidates.py --split calib --limit 5

Renormalizing counts an allowed letter that is not among the top_logprobs
candidates as 0. This counts, over the answers of a results file, how often
every group letter was among the 30 candidates, how often the chosen intent
letter was, and how many answers missed any allowed letter. Then it asks the
server again for the answers that missed one, with 100 candidates, and reads
each reply twice, with its first 30 candidates and with all 100: the
difference is what the candidates beyond the 30th change (a second request
would also differ by post 03's cache noise). Needs the server for that
second part, with the model that wrote the file.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from confidence import TypedAnswer, typed_answer
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from pitfalls import MOST, first_n_candidates
from prompt import Prompt, load_prompt
from results_record import ResultsLine
from saved_answers import add_results_arguments, describe, read_split
from typed_request import TOP_LOGPROBS, probe

SHOWN = 10


@dataclass(frozen=True)
class Coverage:
    """How complete the candidates of a file's answers with a code were.

    answers: answers with a code (status ok); all_groups: those with every group letter among the
    candidates; chosen_present: those with the chosen intent letter among them; missed: the answers with
    some allowed letter missing (missing_letters > 0), in file order.
    """

    answers: int
    all_groups: int
    chosen_present: int
    missed: list[ResultsLine]


def coverage(records: list[ResultsLine]) -> Coverage:
    """The Coverage of a results file's answers (lines without a code take no part)."""
    ok = [r for r in records if r.status == "ok"]
    return Coverage(answers=len(ok), all_groups=sum(all(p > 0 for p in r.group_distribution.values()) for r in ok),
                    chosen_present=sum(r.p_intent_given_group > 0 for r in ok),
                    missed=[r for r in ok if r.missing_letters])


@dataclass(frozen=True)
class Reread:
    """One message asked again with MOST candidates. status: the reply's ("ok", or why it has no code);
    with_30, with_100: its reading with the first TOP_LOGPROBS candidates and with all MOST (None without
    a code)."""

    status: str
    with_30: TypedAnswer | None
    with_100: TypedAnswer | None


def reask(client: Client, prompt: Prompt, text: str) -> Reread:
    """Ask text again with MOST candidates and read the one reply twice (no second request's cache noise)."""
    reply = ask_code(client, prompt, text, top_logprobs=MOST)
    if reply.status != "ok":
        return Reread(reply.status, None, None)
    return Reread(reply.status, typed_answer(first_n_candidates(reply.response, TOP_LOGPROBS), prompt, TOP_LOGPROBS),
                  typed_answer(reply.response, prompt, MOST))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    parser.add_argument("--limit", type=int, help="re-ask at most N of the answers that missed a letter")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 0:
        parser.error("--limit must be 0 or more")
    loaded = read_split(args.split, args.results, args.dataset, "--results")
    records = loaded.records
    print(describe(loaded.path, records, len(loaded.errors)))
    ok = [r for r in records if r.status == "ok"]
    covered = coverage(records)
    all_groups, chosen_present, missed = covered.all_groups, covered.chosen_present, covered.missed
    print(f"{len(ok)} answers with a code, top_logprobs {ok[0].settings.get('top_logprobs') if ok else '?'}:")
    print(f"  every group letter among the candidates:  {all_groups:5d}  ({100 * all_groups / len(ok):.1f}%)")
    print(f"  the chosen intent letter among them:      {chosen_present:5d}  ({100 * chosen_present / len(ok):.1f}%)")
    print(f"  some allowed letter missing:              {len(missed):5d}  ({100 * len(missed) / len(ok):.1f}%)")
    todo = missed[: args.limit]
    if not todo:
        return 0
    client = Client()
    prompt = load_prompt(args.dataset)
    probe(client, prompt, MOST)
    model = client.model_info()["model"]
    if {r.model for r in todo} != {model}:
        print(f"note: the server runs {model}, the file holds answers of {', '.join(sorted({r.model for r in todo}))}:"
              " the comparison below mixes two models")
    print(f"\nasked again with {MOST} candidates ({len(todo)} answers), each reply read with its first {TOP_LOGPROBS} and all {MOST}:")
    moves = []
    for number, record in enumerate(todo, start=1):
        read = reask(client, prompt, record.text)
        if read.status != "ok":
            print(f"  {record.id}: no code this time ({read.status})")
            continue
        with_30, with_100 = read.with_30, read.with_100
        moves.append(abs(with_100.confidence - with_30.confidence))
        if number <= SHOWN:
            print(f"  {record.id:<12} {with_30.code}  confidence {with_30.confidence:.6f} with {TOP_LOGPROBS}, "
                  f"{with_100.confidence:.6f} with {MOST}  (letters missing: {with_30.missing_letters} -> "
                  f"{with_100.missing_letters})")
    if moves:
        print(f"largest change in confidence from {TOP_LOGPROBS} to {MOST} candidates: {max(moves):.6f} "
              f"over {len(moves)} answers")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
