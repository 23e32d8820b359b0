"""Beyond the series: post 01's logistic regression as post 03's results lines, so posts 04-08 read it.

    python3 08-routes/beyond/regimes/baseline_lines.py                      # BANKING77: linear5, linear15, linearall
    python3 08-routes/beyond/regimes/baseline_lines.py --dataset clinc150
    python3 08-routes/beyond/variants.py 04-is-the-confidence-honest/ece.py --variant linear15

The series' method (renormalized probabilities, calibration on the calib
split, thresholds for act / ask / hand over) is for any probabilistic
classifier, not only for a language model. This script writes the class
probabilities of 01-why-typed-decisions/beyond/linear.py in the format run.py
writes, one file per split and regime of labelled messages:

    linear5    the prompt's examples (5 per intent)
    linear15   the examples and the calib split (15 per intent on BANKING77,
               the series' bargain; 10 on CLINC150); calib's own lines are cross-fitted over linear.FOLDS
               folds, as it is training data there
    linearall  every training message but the calib split

into 03-where-confidence-comes-from/results/<dataset>-<variant>-<split>.jsonl
(no server, no model). The intent probabilities become the two steps of a
code: P(group) is the mass of the group's codes, P(intent | group) the code's
share of it, so the confidence P(group) x P(intent | group) is the
probability of the decision, the most probable code. Fields that describe a
model's reply say so: content is the code, off-label mass 0 (every code is
a candidate), tokens_in_code 2 (nominal: no tokens are generated), timings
empty, wall_ms the mean time to score one message of the split (the fits
come from linear.py's cache; the first run fits them, minutes). model is
"logistic-regression" and build names linear.py's settings and the regime,
the same for calib and test, so a later post fits on one and reports on
the other as it does for a model's run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from combined import step_distributions
from labels import split_code
from linear import C, EPOCHS, FOLDS, SEED, VERSION, fits_probabilities, regime_fits, regime_messages
from prompt import load_prompt
from registry import DATASETS, SPLITS, Dataset, add_dataset_argument
from results_file import relative, replace_lines
from variants import own_results_path

MODEL = "logistic-regression"
VARIANTS = {"linear5": "examples", "linear15": "examples+calib", "linearall": "full"}
DIGITS = 12  # decimals kept of each probability of the distributions


def build_of(regime: str) -> str:
    """The build field of a regime's lines: linear.py's version and settings, and the regime."""
    return f"linear.py v{VERSION} C={C:g} epochs={EPOCHS} seed={SEED}, {regime}"


def baseline_line(message, probabilities: dict[str, float], code_of: dict[str, str], intent_of: dict[str, str],
                  regime: str, labelled: int, wall_ms: float) -> dict:
    """The results line of one message (labels.Message) from its intent probabilities (intent -> P in [0, 1],
    summing to 1), in run.py's fields (03's results_record.FIELDS).

    code_of: intent -> code, intent_of: code -> intent (the dataset's prompt).
    The decision is the most probable code (ties: the first in code order),
    its confidence P(group) x P(intent | group) from
    combined.step_distributions, each probability rounded to DIGITS decimals
    (the confidence is the product of the rounded two). labelled: how many labelled messages the fit
    used (in settings, with the regime). Raises KeyError for an intent that
    has no code.
    """
    by_code = {code_of[intent]: p for intent, p in probabilities.items()}
    code = min(by_code, key=lambda c: (-by_code[c], c))
    groups, intents = step_distributions(by_code, code)
    # 12 decimals: far below any figure the posts print, and the files a third of the size
    groups, intents = ({x: round(p, DIGITS) for x, p in step.items()} for step in (groups, intents))
    group, letter = split_code(code)
    gold = code_of[message.intent]
    return {
        "id": message.id, "text": message.text, "gold_intent": message.intent, "gold_code": gold,
        "status": "ok", "code": code, "intent": intent_of[code], "correct": code == gold,
        "right_group": group == split_code(gold)[0], "retried": False, "content": code, "error": None,
        "wall_ms": wall_ms, "timings": {}, "model": MODEL, "build": build_of(regime),
        "settings": {"regime": regime, "labelled_messages": labelled, "folds": FOLDS if regime == "examples+calib" else 1},
        "confidence": groups[group] * intents[letter], "p_group": groups[group],
        "p_intent_given_group": intents[letter], "group_distribution": groups, "intent_distribution": intents,
        "off_label_group": 0.0, "off_label_intent": 0.0, "missing_letters": 0, "tokens_in_code": 2,
    }


def variant_lines(dataset: Dataset, variant: str) -> dict[str, list[dict]]:
    """split -> the results lines of `variant` (a key of VARIANTS) for every message of calib and test, in
    split order. Fits (or reads from linear.py's cache) the regime's classifiers; ValueError for an unknown
    variant."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    regime = VARIANTS[variant]
    fits = regime_fits(dataset, regime)  # fitted, or read from the cache, before the timing: it is scoring only
    started = time.perf_counter()
    scored = fits_probabilities(dataset, fits)
    per_message_ms = 1000 * (time.perf_counter() - started) / sum(len(p) for p in scored.values())
    codes = load_prompt(dataset.name).codes
    intent_of = {code: meaning.intent for code, meaning in codes.items()}
    code_of = {intent: code for code, intent in intent_of.items()}
    labelled = len(regime_messages(dataset, regime))
    return {split: [baseline_line(m, p, code_of, intent_of, regime, labelled, round(per_message_ms, 3))
                    for m, p in zip(dataset.load_split(split), scored[split])]
            for split in SPLITS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--variant", choices=sorted(VARIANTS), action="append",
                        help="which regime to write (repeatable; default: all three)")
    args = parser.parse_args()
    dataset = DATASETS[args.dataset]
    scope = dataset.out_of_scope_codes()
    print(f"{'variant':<10} {'regime':<15} {'labelled':>8} {'calib':>7} {'test':>7}" + ("  test, in scope" if scope else ""))
    for variant in args.variant or list(VARIANTS):
        print(f"  {variant}: fitting or reading the fits, then scoring ...", file=sys.stderr, flush=True)
        lines = variant_lines(dataset, variant)
        for split, records in lines.items():
            path = own_results_path(dataset.name, split, variant)
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_lines(path, [json.dumps(r, ensure_ascii=False).encode() for r in records])
            print(f"  wrote {relative(path)} ({len(records):,} lines)", file=sys.stderr)
        calib, test = (sum(r["correct"] for r in lines[s]) / len(lines[s]) for s in SPLITS)
        row = (f"{variant:<10} {VARIANTS[variant]:<15} {lines['test'][0]['settings']['labelled_messages']:>8,} "
               f"{100 * calib:6.1f}% {100 * test:6.1f}%")
        if scope:
            inside = [r for r in lines["test"] if r["gold_code"] not in scope]
            row += f"  {100 * sum(r['correct'] for r in inside) / len(inside):14.1f}%"
        print(row)
    print("(linear15: the calib lines are cross-fitted over "
          f"{FOLDS} folds; every file is in {relative(own_results_path(dataset.name, 'test').parent)})")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
