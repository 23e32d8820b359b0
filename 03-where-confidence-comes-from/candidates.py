"""Are 30 candidates enough? Which allowed letters the answers of a results file missed, and what 100 changes.

    python3 03-where-confidence-comes-from/candidates.py              # the test answers (yours, else the reference)
    python3 03-where-confidence-comes-from/candidates.py --split calib --limit 5

Renormalizing counts an allowed letter that is not among the top_logprobs
candidates as 0. This counts, over the answers of a results file, how often
every group letter was among the 30 candidates, how often the chosen intent
letter was, and how many answers missed any allowed letter. Then it asks the
server again for the answers that missed one, with 100 candidates, and prints
how far their confidence moved. Needs the server for that second part, with
the model that wrote the file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import letter_tokens, read_answer
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from summary import add_results_arguments, describe, read_split
from typed_prompt import PROMPTS
from typed_request import probe

MORE = 100
SHOWN = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    parser.add_argument("--limit", type=int, help="re-ask at most N of the answers that missed a letter")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 0:
        parser.error("--limit must be 0 or more")
    loaded = read_split(args.split, args.results, args.dataset)
    records = loaded.records
    print(describe(loaded.path, records, len(loaded.errors)))
    ok = [r for r in records if r["status"] == "ok"]
    all_groups = sum(all(p > 0 for p in r["group_distribution"].values()) for r in ok)
    chosen_present = sum(r["p_intent_given_group"] > 0 for r in ok)
    missed = [r for r in ok if r["missing_letters"]]
    print(f"{len(ok)} answers with a code, top_logprobs {ok[0]['settings'].get('top_logprobs') if ok else '?'}:")
    print(f"  every group letter among the candidates:  {all_groups:5d}  ({100 * all_groups / len(ok):.1f}%)")
    print(f"  the chosen intent letter among them:      {chosen_present:5d}  ({100 * chosen_present / len(ok):.1f}%)")
    print(f"  some allowed letter missing:              {len(missed):5d}  ({100 * len(missed) / len(ok):.1f}%)")
    todo = missed[: args.limit]
    if not todo:
        return 0
    client = Client()
    built = PROMPTS[args.dataset]()
    probe(client, built, MORE)
    tokens = letter_tokens(client)
    model = client.model_info()["model"]
    if {r["model"] for r in todo} != {model}:
        print(f"note: the server runs {model}, the file holds answers of {', '.join(sorted({r['model'] for r in todo}))}:"
              " the comparison below mixes two models")
    print(f"\nasked again with {MORE} candidates ({len(todo)} answers):")
    moves = []
    for number, record in enumerate(todo, start=1):
        _, answer = read_answer(ask_code(client, built, record["text"], top_logprobs=MORE), built, tokens)
        if answer is None or answer.code != record["code"]:
            print(f"  {record['id']}: the code changed ({record['code']} -> {answer.code if answer else 'none'}),"
                  " the cache noise of post 03")
            continue
        moves.append(abs(answer.confidence - record["confidence"]))
        if number <= SHOWN:
            print(f"  {record['id']:<12} {record['code']}  confidence {record['confidence']:.6f} -> {answer.confidence:.6f}"
                  f"  ({record['missing_letters']} letter(s) missing before, {answer.missing_letters} now)")
    if moves:
        print(f"largest change in confidence: {max(moves):.6f} over {len(moves)} answers")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
