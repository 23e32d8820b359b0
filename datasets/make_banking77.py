"""Regenerate the example texts and calibration rows of a BANKING77 label file.

The hand-written parts of banking77.json (groups, letters, names,
descriptions) are kept; for every intent the script picks, from train.csv:

  - 5 example texts, shown to the model inside the prompt;
  - 10 calibration rows, held out to fit confidence thresholds later.

How the pick works, intent by intent (so regrouping intents never changes it):
  1. take the intent's training rows in file order and drop duplicate texts
     (same text after lower-casing, collapsing spaces and dropping a final
     ?.! -- only the first copy in the file is kept);
  2. shuffle them with random.Random(f"{seed}:{intent}");
  3. examples = the first 5 rows that are one line of at most 100 characters
     (short examples keep the prompt small), leaving out the messages the
     posts name as calibration messages (PINNED below);
  4. calibration = the pinned messages of the intent, then the first rows
     not taken as examples, 10 in all.
The calibration rows are written round-robin: the first calibration row of
every intent (in code order, A-A to H-J), then the second of every intent,
and so on. So any prefix of the calibration split covers the intents evenly:
the first 200 messages, which post 02 runs with and without the grammar,
hold 2 or 3 of each. Running the script twice gives a byte-identical file.

    python3 datasets/make_banking77.py              # rewrite datasets/banking77.json
    python3 datasets/make_banking77.py --labels my_labels.json --seed 7
"""
import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import LABELS_FILE, check_labels, load_labels, load_rows

N_EXAMPLES = 5
N_CALIBRATION = 10
MAX_EXAMPLE_CHARS = 100
# Training messages the posts use as calibration messages (post 01 routes the
# first three with thresholds fitted on the calibration split, and typed.py
# sends all four): they must be in the split, and come first for their intent.
PINNED = {
    "card_arrival": "I am still waiting on my card?",
    "fiat_currency_support": "I need assistance with understanding which fiat currencies that you support.",
    "supported_cards_and_currencies": "Help me use American Express to add money to the account.",
    "card_delivery_estimate": "How long is the delivery time to the US?",
}


def normalise(text: str) -> str:
    """The form used to spot duplicate texts: lower case, single spaces, no final ?.!"""
    return " ".join(text.lower().split()).rstrip("?.! ")


def fits_in_prompt(text: str, max_chars: int = MAX_EXAMPLE_CHARS) -> bool:
    """An example must be one line without outer blanks and at most ``max_chars`` long."""
    return text == text.strip() and "\n" not in text and len(text) <= max_chars


def pick(rows: list[int], texts: list[str], seed: int, intent: str) -> tuple[list[int], list[int]]:
    """(example rows, calibration rows) for one intent; ``rows`` are its distinct-text rows.

    A PINNED message of the intent is never an example and is the first
    calibration row. Raises ValueError when a pinned text is not among rows,
    or the intent has too few rows.
    """
    order = list(rows)
    random.Random(f"{seed}:{intent}").shuffle(order)
    pinned = [row for row in order if texts[row] == PINNED.get(intent)]
    if intent in PINNED and not pinned:
        raise ValueError(f"the pinned calibration message {PINNED[intent]!r} is not a training text of {intent}.")
    examples = [row for row in order if fits_in_prompt(texts[row]) and row not in pinned][:N_EXAMPLES]
    calibration = (pinned + [row for row in order if row not in examples and row not in pinned])[:N_CALIBRATION]
    if len(examples) < N_EXAMPLES or len(calibration) < N_CALIBRATION:
        raise ValueError(f"{intent} has too few distinct short training texts for {N_EXAMPLES} examples "
                         f"and {N_CALIBRATION} calibration rows.")
    return examples, calibration


def to_json(data: dict) -> str:
    """JSON with indent 1, keys in file order, and integer lists wrapped 10 per line."""
    def wrap(match):
        numbers = re.findall(r"\d+", match.group(0))
        lines = [", ".join(numbers[i:i + 10]) for i in range(0, len(numbers), 10)]
        return "[\n   " + ",\n   ".join(lines) + "\n  ]"
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s*\d+(?:,\s*\d+)*\s*\]", wrap, text) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=LABELS_FILE,
                        help="label file to update in place (default: %(default)s)")
    parser.add_argument("--seed", type=int, help="new seed (default: the one stored in the file)")
    args = parser.parse_args()

    data = json.loads(args.labels.read_text(encoding="utf-8"))
    seed = data["calibration"]["seed"] if args.seed is None else args.seed
    train = load_rows("train")
    texts = [message.text for message in train]
    seen, rows_of = set(), {}
    for row, message in enumerate(train):
        if normalise(message.text) not in seen:
            seen.add(normalise(message.text))
            rows_of.setdefault(message.intent, []).append(row)

    calibration = []  # one list of rows per intent, in code order
    print(f"{'group':<40} {'intents':>7} {'examples':>8} {'calib':>5}")
    for group in data["groups"]:
        n_examples = n_calibration = 0
        for intent in group["intents"]:
            examples, calib = pick(rows_of.get(intent["intent"], []), texts, seed, intent["intent"])
            intent["examples"] = [texts[row] for row in examples]
            calibration.append(calib)
            n_examples, n_calibration = n_examples + len(examples), n_calibration + len(calib)
        label = f"{group['letter']} {group['name']}"
        print(f"{label:<40} {len(group['intents']):>7} {n_examples:>8} {n_calibration:>5}")
    round_robin = [rows[k] for k in range(N_CALIBRATION) for rows in calibration]
    data["calibration"] = {"seed": seed, "per_intent": N_CALIBRATION, "rows": round_robin}
    args.labels.write_text(to_json(data), encoding="utf-8")

    labels = load_labels(args.labels)  # the file must still load and match the data
    check_labels(labels, train)
    prompt_chars = sum(len(i.description) + sum(len(e) for e in i.examples) for i in labels.intents)
    print(f"wrote {args.labels}: {len(labels.intents)} intents, {len(labels.groups)} groups, "
          f"{len(labels.calibration_rows)} calibration rows")
    print(f"descriptions + examples: {prompt_chars:,} characters")


if __name__ == "__main__":
    main()
