"""Regenerate the example texts and calibration rows of a CLINC150 label file.

The hand-written parts of clinc150.json (groups, letters, names,
descriptions) are kept; for every intent the script picks:

  - 5 example texts from ``train`` (``oos``: from ``oos_train``), shown to the
    model inside the prompt;
  - 5 calibration rows from ``val`` (in-scope intents only: the calib split
    also takes all 100 ``oos_val`` messages, so none are listed).

How the pick works, intent by intent (so regrouping intents never changes it):
  1. examples: the intent's rows in file order, duplicate texts dropped
     (make_banking77.normalise; the first copy in the list is kept), shuffled
     with random.Random(f"{seed}:{intent}"); the first 5 that are one line of
     at most 60 characters (short examples keep the 151-intent prompt small);
  2. calibration: the intent's ``val`` rows, shuffled with
     random.Random(f"{seed}:{intent}:val"); the first 5 whose text is not,
     once normalised, a prompt example of any intent or an earlier pick
     (``val`` repeats a few ``train`` texts).
The calibration rows of all intents are written sorted. Running the script
twice gives a byte-identical file.

    python3 datasets/make_clinc150.py              # rewrite datasets/clinc150.json
    python3 datasets/make_clinc150.py --labels my_labels.json --seed 7
"""
import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from clinc150 import (CALIB_OOS_SPLIT, CALIB_SPLIT, LABELS_FILE, OUT_OF_SCOPE,
                      check_labels, load_labels, load_rows)
from make_banking77 import fits_in_prompt, normalise, to_json

N_EXAMPLES = 5
N_CALIBRATION = 5
MAX_EXAMPLE_CHARS = 60


def distinct_rows(messages) -> dict[str, list[int]]:
    """intent -> its rows in file order, keeping only the first copy of each normalised text."""
    seen, rows_of = set(), {}
    for row, message in enumerate(messages):
        if normalise(message.text) not in seen:
            seen.add(normalise(message.text))
            rows_of.setdefault(message.intent, []).append(row)
    return rows_of


def pick_examples(rows: list[int], texts: list[str], seed: int, intent: str) -> list[int]:
    """The N_EXAMPLES example rows of one intent (step 1 of the module docstring)."""
    order = list(rows)
    random.Random(f"{seed}:{intent}").shuffle(order)
    examples = [row for row in order if fits_in_prompt(texts[row], MAX_EXAMPLE_CHARS)][:N_EXAMPLES]
    if len(examples) < N_EXAMPLES:
        raise ValueError(f"{intent} has fewer than {N_EXAMPLES} distinct training texts "
                         f"of at most {MAX_EXAMPLE_CHARS} characters.")
    return examples


def pick_calibration(rows: list[int], texts: list[str], taken: set[str], seed: int, intent: str) -> list[int]:
    """The N_CALIBRATION ``val`` rows of one intent (step 2); ``taken``: normalised example texts."""
    order = list(rows)
    random.Random(f"{seed}:{intent}:val").shuffle(order)
    calibration = [row for row in order if normalise(texts[row]) not in taken][:N_CALIBRATION]
    if len(calibration) < N_CALIBRATION:
        raise ValueError(f"{intent} has fewer than {N_CALIBRATION} {CALIB_SPLIT} texts that are not examples.")
    return calibration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=LABELS_FILE,
                        help="label file to update in place (default: %(default)s)")
    parser.add_argument("--seed", type=int, help="new seed (default: the one stored in the file)")
    args = parser.parse_args()

    data = json.loads(args.labels.read_text(encoding="utf-8"))
    seed = data["calibration"]["seed"] if args.seed is None else args.seed
    train, oos_train = load_rows("train"), load_rows("oos_train")
    val = load_rows(CALIB_SPLIT)
    sources = {False: (train, distinct_rows(train)), True: (oos_train, distinct_rows(oos_train))}

    for group in data["groups"]:  # examples first: calibration must avoid all of them
        for intent in group["intents"]:
            messages, rows_of = sources[intent["intent"] == OUT_OF_SCOPE]
            texts = [m.text for m in messages]
            intent["examples"] = [texts[row] for row in
                                  pick_examples(rows_of.get(intent["intent"], []), texts, seed, intent["intent"])]
    taken = {normalise(text) for group in data["groups"] for intent in group["intents"] for text in intent["examples"]}
    val_texts = [m.text for m in val]
    val_rows = {}
    for row, message in enumerate(val):
        val_rows.setdefault(message.intent, []).append(row)

    calibration = []
    print(f"{'group':<66} {'intents':>7} {'examples':>8} {'calib':>5}")
    for group in data["groups"]:
        n_examples = n_calibration = 0
        for intent in group["intents"]:
            n_examples += len(intent["examples"])
            if intent["intent"] == OUT_OF_SCOPE:
                n_calibration += len(load_rows(CALIB_OOS_SPLIT))
                continue
            rows = pick_calibration(val_rows.get(intent["intent"], []), val_texts, taken, seed, intent["intent"])
            taken |= {normalise(val_texts[row]) for row in rows}
            calibration += rows
            n_calibration += len(rows)
        label = f"{group['letter']} {group['name']}"
        print(f"{label:<66} {len(group['intents']):>7} {n_examples:>8} {n_calibration:>5}")
    data["calibration"] = {"seed": seed, "per_intent": N_CALIBRATION, "split": CALIB_SPLIT,
                           "out_of_scope_split": CALIB_OOS_SPLIT, "rows": sorted(calibration)}
    args.labels.write_text(to_json(data), encoding="utf-8")

    labels = load_labels(args.labels)  # the file must still load and match the data
    check_labels(labels)
    prompt_chars = sum(len(i.description) + sum(len(e) for e in i.examples) for i in labels.intents)
    print(f"wrote {args.labels}: {len(labels.intents)} intents, {len(labels.groups)} groups, "
          f"{len(labels.calibration_rows)} calibration rows of {CALIB_SPLIT} (+ all of {CALIB_OOS_SPLIT})")
    print(f"descriptions + examples: {prompt_chars:,} characters")


if __name__ == "__main__":
    main()
