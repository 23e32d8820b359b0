"""What an out-of-scope code costs on BANKING77: the same messages asked with and without I-A (beyond the series).

    python3 08-routes/beyond/gate/oos_cost.py --split calib       # the 770 calibration messages
    python3 08-routes/beyond/gate/oos_cost.py --results 08-routes/reference/qwen2.5-coder-1.5b-instruct-q4_k_m-oos/banking77oos-test-first770.jsonl

banking77oos (datasets/banking77oos.json) is BANKING77 plus the code I-A for a
message that is not a request to the bank. Every BANKING77 message is a
request to the bank, so on its splits an I-A answer is always wrong; the
longer prompt can move the other answers too. This script pairs the answers
of run.py --dataset banking77 (without the code) and --dataset banking77oos
(with it) by message id and prints, over the messages both files answered:
how many are right in each, the difference with its 95% interval, how many
were answered I-A (and how many of those were right without the code), and
how many others changed code. What the code does to hostile messages is
adversarial.py --dataset banking77oos.

--results names the banking77oos file (default: your own complete run of
the split, else the committed reference run), --without the banking77 one
(default: the same for banking77). Only messages in both are compared; a
line with status error is left out of both.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from out_of_scope import code_list, out_of_scope_codes
from registry import SPLITS
from results_record import ResultsLine
from saved_answers import describe, read_split
from script_exit import exit_on_bad_input

WITH, WITHOUT = "banking77oos", "banking77"
Z_95 = 1.959963984540054  # the standard normal's 97.5% quantile


@dataclass(frozen=True)
class PairedCost:
    """The paired comparison of two runs on the same n messages (counts of messages).

    right_without, right_with: right answers in each run. only_without,
    only_with: right in one run and not the other (the discordant pairs).
    out_of_scope: answers of an out-of-scope code in the run with it;
    out_of_scope_right_without: of those, right in the run without it.
    other_changes: messages whose code changed, not to an out-of-scope code.
    """

    n: int
    right_without: int
    right_with: int
    only_without: int
    only_with: int
    out_of_scope: int
    out_of_scope_right_without: int
    other_changes: int

    @classmethod
    def of_pairs(cls, pairs: list[tuple[bool, bool]]) -> "PairedCost":
        """The counts of (right without, right with) per message, one pair a message; no out-of-scope counts (a
        comparison of any two decisions on the same messages, "right" read as the caller's outcome)."""
        return cls(len(pairs), sum(without for without, _ in pairs), sum(with_ for _, with_ in pairs),
                   sum(without and not with_ for without, with_ in pairs),
                   sum(with_ and not without for without, with_ in pairs), 0, 0, 0)

    @property
    def difference(self) -> float:
        """Accuracy with the code minus accuracy without, in [-1, 1]."""
        return (self.right_with - self.right_without) / self.n

    def interval(self, z: float = Z_95) -> tuple[float, float]:
        """The Wald interval of the paired difference: difference +- z x se, se = sqrt(b + c - (b - c)^2 / n) / n
        with b, c the discordant counts (Agresti, Categorical Data Analysis, 3rd ed., section 11.1); clipped to
        [-1, 1]. With no discordant pair it is the point."""
        b, c = self.only_with, self.only_without
        se = math.sqrt(max(b + c - (b - c) ** 2 / self.n, 0.0)) / self.n
        return max(-1.0, self.difference - z * se), min(1.0, self.difference + z * se)


def paired_cost(without: list[ResultsLine], with_code: list[ResultsLine], out_of_scope: frozenset[str]) -> PairedCost:
    """Compare two runs message by message over the ids both answered.

    without, with_code: results lines (answers; error lines already left out)
    of the run without and with the out-of-scope code. out_of_scope: the codes
    that mean "none of these" in the second run ({"I-A"}). Raises ValueError
    when the runs share no message or when a shared message has two different
    right codes (the files are not of the same messages).
    """
    by_id = {line.id: line for line in without}
    pairs = [(by_id[line.id], line) for line in with_code if line.id in by_id]
    if not pairs:
        raise ValueError("the two runs share no message id: they are not answers to the same messages "
                         "(files of two different splits? --split names the split of both)")
    for first, second in pairs:
        if first.gold_code != second.gold_code:
            raise ValueError(f"message {first.id} has the right code {first.gold_code} in one run and "
                             f"{second.gold_code} in the other: not the same messages")
    outside = [(first, second) for first, second in pairs if second.code in out_of_scope]
    return PairedCost(
        n=len(pairs),
        right_without=sum(first.correct for first, _ in pairs),
        right_with=sum(second.correct for _, second in pairs),
        only_without=sum(first.correct and not second.correct for first, second in pairs),
        only_with=sum(second.correct and not first.correct for first, second in pairs),
        out_of_scope=len(outside),
        out_of_scope_right_without=sum(first.correct for first, _ in outside),
        other_changes=sum(first.code != second.code and second.code not in out_of_scope for first, second in pairs))


def read_run(split: str, path: Path | None, dataset: str, option: str):
    """saved_answers.read_split of one side; a file given for it that the other side's reader takes is refused
    with the option it belongs to (read_split's own advice names --dataset, which this script has not)."""
    try:
        return read_split(split, path, dataset, given_by=option if path else "")
    except ValueError as refusal:
        other = WITHOUT if dataset == WITH else WITH
        try:
            if not path:
                raise refusal
            read_split(split, path, other, given_by=option)
        except (OSError, ValueError):
            raise refusal from None  # not the other side's file either: this side's refusal stands
    raise ValueError(f"{path} (given with {option}) holds {other} answers: it is not a {dataset} file; oos_cost.py "
                     f"takes the {WITH} answers with --results and the {WITHOUT} ones with --without")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=SPLITS, default="test", help="which split (default: test)")
    parser.add_argument("--results", type=Path, help="the banking77oos answers (default: your own complete run, "
                        "else the committed reference run)")
    parser.add_argument("--without", type=Path, help="the banking77 answers (default: the same for banking77)")
    args = parser.parse_args()
    with_code = read_run(args.split, args.results, WITH, "--results")
    without = read_run(args.split, args.without, WITHOUT, "--without")
    outside = out_of_scope_codes(WITH)
    cost = paired_cost(without.records, with_code.records, outside)
    print(f"without {code_list(outside)}: {describe(without.path, without.records, len(without.errors))}")
    print(f"with {code_list(outside)}:    {describe(with_code.path, with_code.records, len(with_code.errors))}")
    print(f"\n{args.split}: {cost.n:,} messages answered in both\n")
    print(f"{'':<22}{'right':>7}{'accuracy':>10}")
    print(f"{'without ' + code_list(outside):<22}{cost.right_without:>7,}{cost.right_without / cost.n:>10.1%}")
    print(f"{'with ' + code_list(outside):<22}{cost.right_with:>7,}{cost.right_with / cost.n:>10.1%}")
    low, high = cost.interval()
    print(f"\ndifference: {100 * cost.difference:+.1f} points (95% interval {100 * low:+.1f} to {100 * high:+.1f}); "
          f"right only without: {cost.only_without}, right only with: {cost.only_with}")
    print(f"answered {code_list(outside)}: {cost.out_of_scope} ({cost.out_of_scope / cost.n:.1%}), "
          f"{cost.out_of_scope_right_without} of them right without the code")
    print(f"another code than without, not {code_list(outside)}: {cost.other_changes} ({cost.other_changes / cost.n:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
