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

Then the intents that share more words with another group than with their
own, or few (unlike_labels): a grouping proposed from the words alone can
put unlike intents together. With --dataset, the grouping and the messages
are that dataset's (its label file; the retriever is fitted on its fit
messages; the words of a dataset made from your own files are counted over
all its labelled messages).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import LABELS_FILE, fit_messages, load_labels
from labels import LETTERS, LabelSet, Message
from script_exit import exit_on_bad_input
from neighbours import K, Retriever, features
from registry import add_dataset_argument, dataset_named

TOP = 3  # confusions shown per intent
ACROSS = 10  # confusions across groups shown
ROOT = Path(__file__).resolve().parents[1]


def read_label_set(path: Path) -> LabelSet:
    """banking77.load_labels(path), with a file that is not JSON named in the error (ValueError)."""
    try:
        return load_labels(path)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not a JSON label file: {error}") from error


def read_other(path: Path, labels: LabelSet, home: Path) -> LabelSet:
    """The grouping of another label file of a task (labels.read_label_file, as many intents as `labels`), with a
    file that is not JSON named in the error (ValueError). home: the task's own label file, for the errors."""
    from labels import read_label_file
    try:
        return read_label_file(path, len(labels.intents), home.stem)
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


def of_total(part: int, whole: int) -> str:
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
              f"in the group ({of_total(in_group(mine, groups), total)})")
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
        print(f"{name:<{width}} {len(grouping.groups):>6} {kept:>8,} {total:>6,} {of_total(kept, total):>6} "
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


@dataclass(frozen=True)
class Unlike:
    """An intent unlike the rest of its group: its group and the closest other group (as named in the grouping
    given), its mean cosine with the other intents of each, and the typical (median) such cosine of an intent with
    its own group in this grouping (unlike_labels), all in [0, 1]."""

    intent: str
    group: str
    own: float
    other_group: str
    other: float
    typical: float

    def why(self) -> str:
        """Why it is unlike its group, in a few words: "closer to E CHANGE" or "few words in common"."""
        return f"closer to {self.other_group}" if self.other > self.own else "few words in common"


def intent_vectors(messages) -> dict[str, dict[str, float]]:
    """Each intent's messages as one document, a unit TF-IDF vector over the intents: weight (1 + ln tf) x ln(N /
    df), tf the messages of the intent that hold the feature (neighbours.features: words and word pairs), df the
    intents whose messages hold it, N the intents. A feature every intent uses (what, my, the) weighs 0, so what
    is left are the words of the intent's topic; the retriever's own idf counts messages, and on a few messages
    per intent those common words would make every intent look alike."""
    held: dict[str, Counter] = {}
    for message in messages:
        held.setdefault(message.intent, Counter()).update(set(features(message.text)))
    df = Counter(feature for counts in held.values() for feature in counts)
    vectors = {}
    for intent, counts in held.items():
        weights = {f: (1 + math.log(n)) * math.log(len(held) / df[f]) for f, n in counts.items() if df[f] < len(held)}
        length = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors[intent] = {f: w / length for f, w in weights.items()}
    return vectors


SHARE_FLOOR = 0.5  # an intent sharing under half the words the grouping's typical intent shares with its group


def unlike_labels(groups: list[tuple[str, list[str]]], messages) -> list[Unlike]:
    """The intents of `groups` ((name, intents) pairs) whose messages share few words with the rest of their group.

    An intent's likeness to a group is the mean cosine of its intent_vectors
    with the group's other intents: the same average linkage as
    make_task.propose_groups, on vectors that leave out the words every intent
    uses. An intent is unlike its group when its likeness to another group is
    higher (the closest one is named), or when it is below SHARE_FLOOR times
    the median likeness of an intent to its own group in this grouping (few
    words in common: a merge the group sizes forced). A group of one intent
    is left out (nothing to compare), as is an intent without messages.
    Sorted by group order, then from the least like its group.
    """
    vectors = intent_vectors(messages)

    def likeness(intent: str, others: list[str]) -> float:
        others = [other for other in others if other != intent and other in vectors]
        return sum(sum(w * vectors[other].get(f, 0.0) for f, w in vectors[intent].items())
                   for other in others) / len(others) if others else 0.0

    members = [(name, intent) for name, intents in groups if len(intents) > 1 for intent in intents if intent in vectors]
    own = {intent: likeness(intent, dict(groups)[name]) for name, intent in members}
    ranked = sorted(own.values())
    typical = (ranked[(len(ranked) - 1) // 2] + ranked[len(ranked) // 2]) / 2 if ranked else 0.0
    found = []
    for name, intent in members:
        other, closest = max(((likeness(intent, intents), group) for group, intents in groups
                              if group != name and any(i in vectors for i in intents)), default=(0.0, ""))
        if other > own[intent] or own[intent] < SHARE_FLOOR * typical or own[intent] == 0.0:
            found.append(Unlike(intent, name, own[intent], closest, other, typical))
    order = {name: k for k, (name, _) in enumerate(groups)}
    return sorted(found, key=lambda u: (order[u.group], u.own - u.other))


def propose_groups(names: list[str], messages: list[Message]) -> list[list[str]]:
    """Groups for more labels than one group of single letters holds: labels whose messages are alike together.

    Each label is the mean of its messages' TF-IDF vectors (post 01's
    retriever, fitted on `messages`), and labels are merged, closest average
    cosine first (average linkage), into max(ceil(n / 26), round(sqrt(n)))
    groups of at most 1.5 times the mean size (26 at most). Returns the groups
    as lists of names, each in the order of `names`, ordered by their first
    name. Deterministic: ties go to the earlier pair.
    """
    retriever = Retriever.fit(messages)
    centroid: dict[str, Counter] = {name: Counter() for name in names}
    for message in messages:
        centroid[message.intent].update(retriever.vector(message.text))
    for vector in centroid.values():
        length = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        for term in vector:
            vector[term] /= length
    n = len(names)
    similarity = [[sum(w * centroid[b].get(t, 0.0) for t, w in centroid[a].items()) for b in names] for a in names]
    target = max(math.ceil(n / len(LETTERS)), round(math.sqrt(n)))
    cap = min(len(LETTERS), math.ceil(1.5 * n / target))
    clusters = [[i] for i in range(n)]
    while len(clusters) > target:
        best, pair = -1.0, None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                if len(clusters[i]) + len(clusters[j]) <= cap:
                    average = (sum(similarity[a][b] for a in clusters[i] for b in clusters[j])
                               / (len(clusters[i]) * len(clusters[j])))
                    if average > best:
                        best, pair = average, (i, j)
        if pair is None:  # every merge would pass the cap: allow bigger groups
            cap += 1
            continue
        i, j = pair
        clusters[i] = sorted(clusters[i] + clusters.pop(j))
    return [[names[i] for i in cluster] for cluster in sorted(clusters)]


def group_name(names: list[str], taken: set[str]) -> str:
    """A name for a proposed group: the word its labels' names share most (in capitals), made unique."""
    words = Counter(word for name in names for word in set(re.findall(r"[a-z0-9]+", name.lower())))
    best = max(words, key=lambda word: (words[word], -len(word)), default="group").upper()
    name, k = best, 2
    while name in taken:
        name, k = f"{best}_{k}", k + 1
    return name


def unlike_warnings(unlike: list, name: str, label_file: Path) -> list[str]:
    """The warnings make_task.py prints for proposed groups that put unlike labels together (Made.unlike): a line
    per such group naming it and its odd labels with the group each is closer to, then how to change the groups
    and check them. [] when there is none."""
    by_group: dict[str, list] = {}
    for u in unlike:
        by_group.setdefault(u.group, []).append(u)
    if not by_group:
        return []
    lines = [f"warning: {len(by_group)} of the proposed groups put unlike labels together: the messages of the labels "
             f"below share more words with another group's labels than with the rest of their own, or few, "
             f"so the model, which picks a group before a label, may send them to the wrong group"]
    lines += [f"  {group}: " + ", ".join(f"{u.intent} ({u.why()})" for u in odd) for group, odd in by_group.items()]
    lines.append(f"  to regroup, move labels between groups in {shown(label_file)} (\"groups\"; a letter once in "
                 f"each group) and write the prompt again: python3 02-forcing-a-valid-answer/prompt.py {name} --save "
                 f"(making the task again overwrites them), or give the labels file a group column; "
                 f"python3 datasets/check_groups.py --dataset {name} checks a grouping")
    return lines


def print_unlike(labels: LabelSet, messages) -> None:
    """The intents that share more words with another group than with their own (unlike_labels)."""
    found = unlike_labels([(f"{g.letter} {g.name}", [i.name for i in g.intents]) for g in labels.groups], messages)
    print(f"intents that share fewer words with the rest of their group than with another group, or few "
          f"(mean cosine of their words, unlike_labels): {len(found)}")
    for u in found:
        print(f"  {u.group:<24} {u.intent:<28} {u.own:.3f} own group, {u.other:.3f} {u.other_group}")


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
    parser.add_argument("--labels", type=Path,
                        help=f"BANKING77: the grouping to check, and whose calibration rows are left out (default: "
                             f"{shown(LABELS_FILE)})")
    add_dataset_argument(parser, what="whose grouping to check, on its fit messages")
    parser.add_argument("--compare", type=Path, help="another label file; only its groups are used")
    parser.add_argument("--top", type=int, default=TOP, help=f"confusions shown per intent (default: {TOP})")
    args = parser.parse_args()
    if args.top < 1:
        parser.error("--top must be 1 or more")
    if args.labels and args.dataset != "banking77":
        raise ValueError(f"--labels is a BANKING77 label file; --dataset {args.dataset} checks that dataset's own "
                         f"grouping (edit its label file to try another)")
    dataset = dataset_named(args.dataset)
    if args.dataset == "banking77":
        path = args.labels or LABELS_FILE
        labels = read_label_set(path)
        fitted, what = fit_messages(labels), (f"BANKING77 training messages (train.csv minus the "
                                              f"{len(labels.calibration_rows)} calibration rows of {shown(path)})")
    else:
        path, labels, fitted = dataset.label_file, dataset.load_labels(), dataset.fit_messages()
        what = f"fit messages of {args.dataset} (its labelled messages minus the calibration and test splits)"
    other = (read_label_set(args.compare) if args.dataset == "banking77" else read_other(args.compare, labels, path)
             ) if args.compare else None
    start = time.perf_counter()
    retriever = Retriever.fit(fitted)
    confused, alone = confusions(retriever)
    seconds = time.perf_counter() - start
    n = len(retriever.texts)
    wrong = sum(confused.values())
    print(f"leave-one-out over {n:,} {what}, k = {K}, {seconds:.1f} s")
    print(f"own intent first: {n - wrong - alone:,} ({of_total(n - wrong - alone, n)}); "
          f"confusions: {wrong:,} ({of_total(wrong, n)}); no neighbour: {alone}\n")
    print_groups(labels, confused, args.top)
    print_across(labels, confused, ACROSS)
    print()
    outside = dataset.out_of_scope_intents  # a task's every labelled message, as make_task.py measured them
    labelled = dataset.loader().messages() if dataset.is_task else fitted
    print_unlike(labels, [m for m in labelled if m.intent not in outside])
    print()
    if other is None:
        kept = in_group(confused, group_of(labels))
        print(f"confusions kept inside a group: {kept:,} of {wrong:,} = {of_total(kept, wrong)} "
              f"(by chance, with groups of these sizes: {100 * by_chance(labels):.1f}%)")
        return 0
    print_comparison(labels, other, (shown(path), shown(args.compare)), confused)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
