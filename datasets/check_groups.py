"""How well a grouping of the BANKING77 intents keeps easily confused intents together.

    python3 datasets/check_groups.py                                  # the grouping of banking77.json
    python3 datasets/check_groups.py --compare /tmp/channel-groups.json

A model answers with a group letter first, so an intent is easier to get right
when the intents it is confused with sit in its own group: a wrong first
letter cannot be repaired by the second. Which intents are confused comes
from the data, not from the names: the TF-IDF retriever of neighbours.py,
fitted on the training messages minus the calibration rows of the label file,
ranks every one of those messages with the message itself left out of its
neighbours (leave-one-out). When the first intent is not the message's own,
that is one confusion, (own intent -> intent ranked first).

Prints, group by group, each intent's confusions (the intents ranked first
instead, with counts, and the group of those outside its own), then the share
of all confusions that stay inside a group, for this grouping and for the
one given with --compare (a label file in the same format; only its groups
are read), and the intents the two groupings place differently.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import LABELS_FILE, fit_messages, load_labels
from labels import LabelSet
from script_exit import exit_on_bad_input
from neighbours import K, Retriever

TOP = 3  # confusions shown per intent
ACROSS = 10  # confusions across groups shown
ROOT = Path(__file__).resolve().parents[1]


def read_labels(path: Path) -> LabelSet:
    """banking77.load_labels(path), with a file that is not JSON named in the error (ValueError)."""
    try:
        return load_labels(path)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not a JSON label file: {error}") from error


def confusions(retriever: Retriever, k: int = K) -> tuple[Counter, int]:
    """Leave-one-out confusions over every message the retriever was fitted on.

    Returns (Counter of (own intent, intent ranked first) for each message
    whose own intent is not first, number of messages with no neighbour at
    all). A message with no neighbour (no feature shared with another
    message) is not a confusion: its ranking is only the tie order.
    """
    confused: Counter = Counter()
    alone = 0
    for index, own in enumerate(retriever.intents):
        first, score = retriever.rank_left_out(index, k)[0]
        if score == 0:
            alone += 1
        elif first != own:
            confused[own, first] += 1
    return confused, alone


def group_of(labels: LabelSet) -> dict[str, str]:
    """{intent name: letter of its group}."""
    return {intent.name: intent.group for intent in labels.intents}


def in_group(confused: Counter, groups: dict[str, str]) -> int:
    """How many of the confusions stay inside a group of ``groups`` ({intent: group letter})."""
    return sum(n for (own, first), n in confused.items() if groups[own] == groups[first])


def moved(here: LabelSet, there: LabelSet) -> list[tuple[str, str, str]]:
    """The intents that ``there`` places in another group than ``here``: (intent, group here, group there).

    Groups of the two files are paired by the intents they share, the pair
    sharing most first (ties: letters here, then there, in order), each group
    paired once; an intent moved when its groups are not a pair. Sorted by
    group here, then intent name. Raises ValueError when the files hold
    different intents.
    """
    groups_here, groups_there = group_of(here), group_of(there)
    if set(groups_here) != set(groups_there):
        raise ValueError("the two label files hold different intents.")
    overlap = Counter((groups_here[name], groups_there[name]) for name in groups_here)
    pairs: dict[str, str] = {}
    for (a, b), _ in sorted(overlap.items(), key=lambda item: (-item[1], item[0])):
        if a not in pairs and b not in pairs.values():
            pairs[a] = b
    return sorted(((name, groups_here[name], groups_there[name]) for name in groups_here
                   if pairs.get(groups_here[name]) != groups_there[name]), key=lambda row: (row[1], row[0]))


def shown(path: Path) -> str:
    """path relative to the repository when it is inside it, else as given."""
    full = path.resolve()
    return str(full.relative_to(ROOT)) if full.is_relative_to(ROOT) else str(path)


def percent(part: int, whole: int) -> str:
    """part / whole as ``12.3%`` (``-`` when whole is 0)."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def print_groups(labels: LabelSet, confused: Counter, top: int) -> None:
    """Per group: its confusions kept in the group, then each intent's wrong count and top confusions."""
    groups = group_of(labels)
    width = max(len(name) for name in groups)
    by_intent: dict[str, Counter] = {}
    for (own, first), n in confused.items():
        by_intent.setdefault(own, Counter())[first] = n
    print("(X) after a confused intent: it sits in group X; no letter: the same group as the intent\n")
    for group in labels.groups:
        mine = Counter({pair: n for pair, n in confused.items() if groups[pair[0]] == group.letter})
        total = sum(mine.values())
        print(f"{group.letter} {group.name}: {in_group(mine, groups):,} of {total:,} confusions "
              f"in the group ({percent(in_group(mine, groups), total)})")
        print(f"  {'intent':<{width}} {'wrong':>5}  ranked first instead")
        for intent in group.intents:
            counts = by_intent.get(intent.name, Counter())
            listed = ", ".join(f"{n} {first}" + ("" if groups[first] == group.letter else f" ({groups[first]})")
                              for first, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top])
            print(f"  {intent.name:<{width}} {sum(counts.values()):>5}  {listed}")
        print()


def by_chance(labels: LabelSet) -> float:
    """The in-group share expected if the intents were shuffled into groups of the same sizes.

    A confusion (a -> b) stays in a group when b lands in a's group: for a
    random placement that has probability sum over groups of s(s - 1),
    divided by N(N - 1) (s = group size, N = intents), whatever a and b are.
    """
    sizes = [len(group.intents) for group in labels.groups]
    n = sum(sizes)
    return sum(s * (s - 1) for s in sizes) / (n * (n - 1))


def print_comparison(labels: LabelSet, other: LabelSet, names: tuple[str, str], confused: Counter) -> None:
    """The in-group share of both groupings, then the moved intents with the confusions they take part in."""
    total = sum(confused.values())
    width = max(len(name) for name in names)
    print("confusions kept inside a group")
    print(f"{'grouping':<{width}} {'groups':>6} {'in group':>8} {'of':>6} {'share':>6} {'by chance':>9}")
    for name, grouping in zip(names, (labels, other)):
        kept = in_group(confused, group_of(grouping))
        print(f"{name:<{width}} {len(grouping.groups):>6} {kept:>8,} {total:>6,} {percent(kept, total):>6} "
              f"{100 * by_chance(grouping):>8.1f}%")
    rows = moved(labels, other)
    if not rows:
        return
    here, there = group_of(labels), group_of(other)
    print(f"\n{len(rows)} intents sit in another group in {names[1]}; the confusions each takes part in "
          "(as own or as first intent; one between two of them counts in both rows), and how many stay in a group")
    table = [(name, f"{a} {labels.group(a).name}", f"{b} {other.group(b).name}",
              Counter({pair: n for pair, n in confused.items() if name in pair})) for name, a, b in rows]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    print(f"{'intent':<{widths[0]}}  {'here':<{widths[1]}}  {'there':<{widths[2]}}  {'confusions':>10}  "
          f"{'in group here':>13}  {'there':>5}")
    for name, group_here, group_there, mine in table:
        print(f"{name:<{widths[0]}}  {group_here:<{widths[1]}}  {group_there:<{widths[2]}}  {sum(mine.values()):>10}  "
              f"{in_group(mine, here):>13}  {in_group(mine, there):>5}")


def print_across(labels: LabelSet, confused: Counter, top: int) -> None:
    """The ``top`` largest confusions between two groups (both directions of a pair added)."""
    groups = group_of(labels)
    pairs: Counter = Counter()
    for (own, first), n in confused.items():
        if groups[own] != groups[first]:
            pairs[tuple(sorted((own, first)))] += n
    width = max((len(a) for a, _ in pairs), default=6)
    print("largest confusions across groups (both directions)")
    for (a, b), n in sorted(pairs.items(), key=lambda item: (-item[1], item[0]))[:top]:
        print(f"  {n:>4}  {groups[a]} {a:<{width}}  {groups[b]} {b}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, default=LABELS_FILE,
                        help="the grouping to check, and whose calibration rows are left out (default: %(default)s)")
    parser.add_argument("--compare", type=Path, help="another label file; only its groups are used")
    parser.add_argument("--top", type=int, default=TOP, help=f"confusions shown per intent (default: {TOP})")
    args = parser.parse_args()
    if args.top < 1:
        parser.error("--top must be 1 or more")
    labels = read_labels(args.labels)
    other = read_labels(args.compare) if args.compare else None
    start = time.perf_counter()
    retriever = Retriever.fit(fit_messages(labels))
    confused, alone = confusions(retriever)
    seconds = time.perf_counter() - start
    n = len(retriever.texts)
    wrong = sum(confused.values())
    print(f"leave-one-out over {n:,} BANKING77 training messages (train.csv minus the "
          f"{len(labels.calibration_rows)} calibration rows of {shown(args.labels)}), k = {K}, {seconds:.1f} s")
    print(f"own intent first: {n - wrong - alone:,} ({percent(n - wrong - alone, n)}); "
          f"confusions: {wrong:,} ({percent(wrong, n)}); no neighbour: {alone}\n")
    print_groups(labels, confused, args.top)
    print_across(labels, confused, ACROSS)
    print()
    if other is None:
        kept = in_group(confused, group_of(labels))
        print(f"confusions kept inside a group: {kept:,} of {wrong:,} = {percent(kept, wrong)} "
              f"(by chance, with groups of these sizes: {100 * by_chance(labels):.1f}%)")
        return 0
    print_comparison(labels, other, (shown(args.labels), shown(args.compare)), confused)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
