"""Letters are positions: how often the answer changes when the same intents are listed in another order, and the fix.

    python3 07-separation/beyond/letter_order.py                          # 200 calibration messages, 4 orders
    python3 07-separation/beyond/letter_order.py --permutations 2 --limit 50

A code is two letters, and a letter is a place in the list: C-F is the sixth
intent of the third group. Small models prefer some places to others, so the
answer can depend on where an intent is listed rather than on what it is.
This script lists the same intents in other orders and asks again: order 0
is the series' own, order 1 reverses the groups and the intents inside each
group, order 2 rotates both by half, order 3 and up shuffle both with a
fixed seed. Each order is a LabelSet with the letters handed out again, made
into a system prompt and grammar by build_prompt(), so it is the series'
prompt with nothing changed but the order. Every message goes through
run.py's request (the grammar, 2 tokens, top_logprobs) in each order, and
the answers are mapped back to intent names: two orders agree when they name
the same intent, whatever its letters.

Printed: accuracy in each order and how often its answer differs from order
0 (the flip rate); then the debiased answer, the intent with the highest
mean over the orders of P(group) x P(intent | group), taken by intent name;
accuracy, ECE (post 04) and AUROC (this post) before (order 0) and after
(the mean). Only the chosen group's intents get a probability from one
request, so an intent outside the group an order chose counts 0 in that
order: the mean is exact when every order chose the same group, and a lower
bound otherwise.

Cost: each order is a new system prompt, so its first request processes all
of its ~7,000 tokens: about 3.5 minutes for the 1.5B model on 2 CPU cores
(order 0 is cached from the server's warm-up; llama-server also keeps
recent prompts in RAM, so a rerun on the same server is cheaper), then
about 1.5 s per message. One results file per order,
07-separation/results/letter-order-banking77-calib-order<k>.jsonl, in
run.py's format; Ctrl-C keeps the finished lines and the same command
resumes. It is the one script of posts 04-07 and their beyond folders
that needs the server; the others read saved answers.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from banking77 import load_labels, load_split
from batch import check_resumable, run_messages
from labels import LETTERS, Group, Intent, LabelSet
from ece import ece
from llama_http import Client, exit_on_server_errors
from results_file import results_folder
from separation import SingleClassError, auroc
from prompt import Prompt, build_prompt
from typed_request import TOP_LOGPROBS, probe, request_settings
from results_record import ResultsLine, parse_lines
from typed_lines import typed_line

DEFAULT_LIMIT = 200
DEFAULT_ORDERS = 4


def order_of(n: int, k: int) -> list[int]:
    """Order k of n listed items, as the old positions in their new order (0-based).

    0: as they are; 1: reversed; 2: rotated by n // 2 (the second half
    first); k >= 3: shuffled by random.Random(k), the same on every run.
    Raises ValueError for k < 0.
    """
    if k < 0:
        raise ValueError(f"order numbers start at 0, not {k}")
    positions = list(range(n))
    if k == 1:
        return positions[::-1]
    if k == 2:
        return positions[n // 2:] + positions[: n // 2]
    if k >= 3:
        random.Random(k).shuffle(positions)
    return positions


def order_name(k: int) -> str:
    """How order k lists the intents, in a few words."""
    return {0: "the series' order", 1: "reversed", 2: "rotated by half"}.get(k, f"shuffled (seed {k})")


def reordered(labels: LabelSet, k: int) -> LabelSet:
    """The same groups and intents in order k (order_of), with the letters handed out again from A.

    Groups are reordered, and the intents inside each group with the same
    rule; the n-th group listed gets the n-th letter, and so does the n-th
    intent of a group. Names, descriptions, examples and calibration rows do
    not change, so build_prompt() of the result is the series' prompt in
    another order.
    """
    groups = []
    for new_group, old in enumerate(order_of(len(labels.groups), k)):
        group = labels.groups[old]
        letter = LETTERS[new_group]
        intents = tuple(Intent(letter, LETTERS[new_intent], intent.name, intent.description, intent.examples)
                        for new_intent, intent in enumerate(group.intents[i] for i in order_of(len(group.intents), k)))
        groups.append(Group(letter, group.name, intents))
    return LabelSet(tuple(groups), labels.calibration_rows)


def intent_probabilities(record: ResultsLine, prompt: Prompt) -> dict[str, float]:
    """intent name -> P(group) x P(intent | group) for the intents of the group a results line chose.

    record: a line of run.py's format, whose letters are those of `prompt`
    (the prompt it was asked with); group_distribution and
    intent_distribution map letters to probabilities. The letters are looked
    up in prompt.codes, so the keys are intent names, the same in every order.
    A line without a code gives {}.
    """
    if record.status != "ok" or not record.group_distribution:
        return {}
    group = record.group_letter
    p_group = record.group_distribution[group]
    return {prompt.codes[f"{group}-{letter}"].intent: p_group * p
            for letter, p in record.intent_distribution.items()}


def mean_by_intent(per_order: list[dict[str, float]]) -> dict[str, float]:
    """The mean over the orders of each intent's probability, an intent missing from an order counting 0.

    per_order: one intent_probabilities() dict per order, at least one.
    Raises ValueError for an empty list.
    """
    if not per_order:
        raise ValueError("no orders to average over")
    names = {name for probabilities in per_order for name in probabilities}
    return {name: sum(p.get(name, 0.0) for p in per_order) / len(per_order) for name in names}


def debiased(per_order: list[dict[str, float]]) -> tuple[str | None, float]:
    """The debiased answer: the intent with the highest mean_by_intent(), and that mean as its confidence.

    Ties go to the first intent name in alphabetical order, so the answer
    does not depend on the order of the dicts. (None, 0.0) when no order
    gave an answer.
    """
    means = mean_by_intent(per_order)
    if not means:
        return None, 0.0
    best = min(means, key=lambda name: (-means[name], name))
    return best, means[best]


def flip_rate(first: list[str | None], second: list[str | None]) -> float:
    """Share of messages, in [0, 1], whose answers (intent names, None for none) differ between two lists.

    Raises ValueError when the lists are empty or differ in length.
    """
    if not first or len(first) != len(second):
        raise ValueError(f"need two lists of answers of the same length, got {len(first)} and {len(second)}")
    return sum(a != b for a, b in zip(first, second)) / len(first)


def scores(confidences: list[float], corrects: list[bool]) -> tuple[float, float, float | None]:
    """(accuracy, ECE with post 04's 15 bins, AUROC or None when every answer is right or every one wrong)."""
    try:
        area = auroc(confidences, corrects)
    except SingleClassError:
        area = None
    return sum(corrects) / len(corrects), ece(confidences, corrects), area


def ask_in_order(client: Client, prompt: Prompt, messages, out: Path, model: str, what: str) -> list[ResultsLine]:
    """run.py's line for every message, asked with `prompt`, in the results file `out` (resumed when it exists).

    Raises ValueError when `out` holds lines of another model or asked with
    another prompt: they would mix two runs or two orders.
    """
    check_resumable(out, model=model, prompt_sha256=prompt.sha256)
    probe(client, prompt)
    settings = request_settings(prompt, True, TOP_LOGPROBS)

    return parse_lines(run_messages(
        messages, out, lambda message: typed_line(client, prompt, message, model, settings, TOP_LOGPROBS), what),
        str(out))


def prefill(records: list[ResultsLine]) -> tuple[int, float]:
    """(prompt tokens, seconds) of the request that processed the most prompt: an order's one-off cost."""
    timings = max((r.timings for r in records), key=lambda t: t.get("prompt_n", 0), default={})
    return timings.get("prompt_n", 0), timings.get("prompt_ms", 0.0) / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                        help=f"the first N calibration messages (round-robin over the intents; default: {DEFAULT_LIMIT})")
    parser.add_argument("--permutations", type=int, default=DEFAULT_ORDERS,
                        help=f"how many orders, the series' own included (default: {DEFAULT_ORDERS}; each new one "
                             "costs a prefill of the ~7k-token prompt, minutes on a CPU)")
    parser.add_argument("--results-dir", type=Path, default=results_folder(__file__),
                        help="where the files of the orders go (default: 07-separation/results)")
    args = parser.parse_args()
    if args.limit < 1:
        parser.error("--limit must be 1 or more")
    if not 2 <= args.permutations <= 12:
        parser.error("--permutations must be from 2 to 12: the series' order and at least one other")
    labels = load_labels()
    messages = load_split("calib", labels)[: args.limit]
    client = Client()
    info = client.model_info()
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
    print(f"{len(messages)} calibration messages in {args.permutations} orders; each order other than the cached one "
          "first processes its whole system prompt")
    folder = args.results_dir
    prompts, answers = [], []
    for k in range(args.permutations):
        prompt = build_prompt(reordered(labels, k))
        out = folder / f"letter-order-banking77-calib-order{k}.jsonl"
        by_id = {r.id: r for r in ask_in_order(client, prompt, messages, out, info["model"],
                                                  f"order {k}, {order_name(k)}")}
        prompts.append(prompt)
        answers.append([by_id[m.id] for m in messages])  # the messages' order, whatever the file's

    n = len(messages)
    picked = [[r.intent for r in records] for records in answers]
    gold = [m.intent for m in messages]
    print(f"\n{'order':<5} {'listed as':<20} {'prefill':>17} {'median ms':>10} {'correct':>8} {'differs from 0':>15}")
    for k, records in enumerate(answers):
        tokens, seconds = prefill(records)
        right = 100 * sum(r.correct for r in records) / n
        flips = f"{100 * flip_rate(picked[0], picked[k]):14.1f}%" if k else f"{'-':>15}"
        print(f"{k:<5} {order_name(k):<20} {tokens:6,} tok {seconds:4.0f} s "
              f"{statistics.median(r.wall_ms for r in records):10.0f} {right:7.1f}% {flips}")
    changed = [any(p[i] != picked[0][i] for p in picked[1:]) for i in range(n)]
    group_of = {intent.name: intent.group for intent in labels.intents}
    pairs = [(picked[0][i], p[i]) for p in picked[1:] for i in range(n) if p[i] != picked[0][i]]
    other_group = sum(a is None or b is None or group_of[a] != group_of[b] for a, b in pairs)
    print(f"\nthe answer changes under at least one of the {args.permutations - 1} other orders for "
          f"{sum(changed)} of {n} messages ({100 * sum(changed) / n:.1f}%)")
    if pairs:
        print(f"of the {len(pairs)} changed answers, {other_group} moved to another group and "
              f"{len(pairs) - other_group} to another intent of the same group")

    by_intent = [[intent_probabilities(records[i], prompt) for records, prompt in zip(answers, prompts)] for i in range(n)]
    mean_answers = [debiased(per_order) for per_order in by_intent]
    before = scores([r.confidence for r in answers[0]], [r.correct for r in answers[0]])
    after = scores([c for _, c in mean_answers], [a == g for (a, _), g in zip(mean_answers, gold)])
    print(f"\n{'':<26} {'accuracy':>9} {'ECE':>7} {'AUROC':>7}")
    for label, (accuracy, error, area) in (("order 0 (before)", before),
                                           (f"mean over {args.permutations} orders", after)):
        shown = f"{area:7.3f}" if area is not None else f"{'-':>7}"
        print(f"{label:<26} {100 * accuracy:8.1f}% {error:7.4f} {shown}")
    same_group = sum(len({group_of[p[i]] for p in picked if p[i] is not None}) <= 1 for i in range(n))
    print(f"every order chose the same group for {same_group} of {n} messages (there the mean is exact)")
    if args.permutations >= 4:
        half = args.permutations // 2
        first = [debiased(per_order[:half])[0] for per_order in by_intent]
        second = [debiased(per_order[half:])[0] for per_order in by_intent]
        print(f"order-dependence left: the means over orders 0-{half - 1} and {half}-{args.permutations - 1} differ for "
              f"{100 * flip_rate(first, second):.1f}% of the messages; single orders 0 and {half}: "
              f"{100 * flip_rate(picked[0], picked[half]):.1f}%")
    print(f"\nflip rate {100 * sum(changed) / n:.1f}% over {args.permutations - 1} reorderings; "
          f"averaging {args.permutations} orders: accuracy {100 * before[0]:.1f}% -> {100 * after[0]:.1f}%, "
          f"ECE {before[1]:.4f} -> {after[1]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
