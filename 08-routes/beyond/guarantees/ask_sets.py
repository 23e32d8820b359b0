"""Conformal ask sets: for each message, a set of codes that holds the right one with a chosen probability.

    python3 08-routes/beyond/guarantees/ask_sets.py                        # BANKING77: fit on calib, sets on test, alpha 0.1 and 0.2
    python3 08-routes/beyond/guarantees/ask_sets.py --dataset clinc150
    python3 08-routes/beyond/guarantees/ask_sets.py --alpha 0.3 --results my-test-run.jsonl --calib my-calib-run.jsonl

The ask route of routes.py names two intents, the answer and its runner-up,
and cannot say how often the right one is among them on new messages. Split
conformal prediction can: score every code of a calib message by how little
the model believed in it, take the score the right code stays under in a
share 1 - alpha of the calib messages (with one message's correction), and
let a new message's set hold every code that scores under it. If calib and
new messages are exchangeable, the set holds the right code with probability
at least 1 - alpha, whatever the model (Vovk et al. 2005; Angelopoulos and
Bates 2021, "A gentle introduction to conformal prediction and
distribution-free uncertainty quantification").

The score is LAC, 1 - P(code) (Sadinle et al. 2019, "Least ambiguous
set-valued classifiers with bounded error levels"). The model scored only the
intents of the group it chose (its intent step was asked inside that group),
so P(code) is P(group) x P(intent | group) there, and for a code of another
group g we use P(g): an upper bound of its probability, since P(intent | g)
is at most 1. The guarantee does not need the bound: any score computed the
same way on calib and on new messages keeps it. The bound decides how useful
the sets are: a code of another group enters when its whole group is likely
enough, with all the intents of that group. An answer without a code gets
score 0 for every code: its set is everything.

The set decides the route: one code -> a candidate to act on, two or three
-> a question naming them, none or more than three -> hand over (and an
out-of-scope code alone hands over, as in routes.py). The script prints, for
each alpha, the coverage on the report split with its exact interval, the
range the guarantee itself allows for that many messages, the distribution of
set sizes and the coverage at each size. No server needed.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from intervals import LEVEL, Interval, check_probability, clopper_pearson, number_argument, percent_down, percent_up
from labels import split_code
from out_of_scope import out_of_scope_codes
from compare import percent
from results_record import ResultsLine
from calib_split import add_fit_arguments, load_fit_and_report
from variants import add_variant_argument, reading

ALPHAS = (0.1, 0.2)
# Set sizes as the report groups them, and the route each size takes.
SIZES = ((0, 0), (1, 1), (2, 2), (3, 3), (4, 10), (11, 30), (31, None))
ASK_SIZES = (2, 3)

# Group letter -> the intent letters of that group, e.g. {"A": ("A", "B", ...), ...}.
Groups = dict[str, tuple[str, ...]]


def code_probability(record: ResultsLine, code: str) -> float:
    """The model's probability of `code` for this answer, or an upper bound of it, in [0, 1].

    record: a post 03 answer (status, code, group_distribution,
    intent_distribution). In the group the model chose: P(group) x P(intent |
    group), the product post 03 defines (a letter missing from the
    distribution counts 0). In another group g: P(g) x 1, an upper bound,
    since the model was never asked P(intent | g). A group missing from the
    group distribution counts 0. An answer without a code (status not ok)
    says nothing: 1 for every code.
    """
    if record.status != "ok":
        return 1.0
    group, letter = split_code(code)
    p_group = record.group_distribution.get(group, 0.0)
    if group != record.group_letter:
        return p_group
    return p_group * record.intent_distribution.get(letter, 0.0)


def score(record: ResultsLine, code: str) -> float:
    """The LAC nonconformity score of `code` for this answer: 1 - code_probability, in [0, 1] (Sadinle et al. 2019)."""
    return 1.0 - code_probability(record, code)


@dataclass(frozen=True)
class ConformalFit:
    """Split conformal fitted on calib at miss rate alpha.

    alpha: the miss rate asked, in (0, 1). n: calib scores. rank: k =
    ceil((n + 1) (1 - alpha)); quantile: the k-th smallest calib score, or
    infinity when k > n (too few calib answers for that alpha: every set is
    everything). A code is in a set when its score is at most the quantile.
    """

    alpha: float
    n: int
    rank: int
    quantile: float

    @property
    def floor(self) -> float:
        """The probability a code needs to enter a set, 1 - quantile (0 when every code enters)."""
        return max(0.0, 1.0 - self.quantile)


def conformal_quantile(scores: list[float], alpha: float) -> ConformalFit:
    """The split conformal threshold of `scores` (one per calib message: the score of its right code).

    The ceil((n + 1) (1 - alpha))-th smallest score (Angelopoulos and Bates
    2021, section 1; Lei et al. 2018, "Distribution-free predictive inference
    for regression", split conformal): with n + 1 exchangeable scores, a new
    one is at or below it with probability at least 1 - alpha, and below 1 -
    alpha + 1 / (n + 1) when there are no ties. Infinity when that rank
    exceeds n. Raises ValueError on no scores or alpha outside (0, 1).
    """
    if not scores:
        raise ValueError("no calib scores: conformal prediction needs calib answers")
    check_probability(alpha, "alpha")
    n = len(scores)
    rank = math.ceil((n + 1) * (1 - alpha))
    quantile = sorted(scores)[rank - 1] if rank <= n else math.inf
    return ConformalFit(alpha, n, rank, quantile)


def fit_conformal(calib: list[ResultsLine], alpha: float) -> ConformalFit:
    """conformal_quantile of the score of each calib message's right code (its gold_code)."""
    return conformal_quantile([score(r, r.gold_code) for r in calib], alpha)


def prediction_set(record: ResultsLine, fit: ConformalFit, groups: Groups) -> tuple[str, ...]:
    """The codes whose score is at most fit.quantile, most probable first (ties by code).

    groups: every group letter and its intent letters (groups_of or
    label_groups). Compares scores, as the fit does, so a code exactly at the
    quantile is in.
    """
    codes = [f"{group}-{letter}" for group, letters in groups.items() for letter in letters]
    inside = [code for code in codes if score(record, code) <= fit.quantile]
    return tuple(sorted(inside, key=lambda code: (-code_probability(record, code), code)))


def covers(record: ResultsLine, fit: ConformalFit) -> bool:
    """Whether the message's right code is in its set (score of gold_code at most the quantile)."""
    return score(record, record.gold_code) <= fit.quantile


def groups_of(records: list[ResultsLine]) -> Groups:
    """The groups and their intent letters, read from the answers: the letters of intent_distribution of every
    answer that chose the group (post 03 renormalizes over all the letters the grammar allows there).

    The answers are the record of what the model was offered, so this holds
    for the label set they were made with. Raises ValueError when two answers
    of one group list different letters, or when a group of the group
    distribution was never chosen (its size is unknown).
    """
    groups: dict[str, tuple[str, ...]] = {}
    offered: set[str] = set()
    for record in records:
        if record.status != "ok":
            continue
        offered.update(record.group_distribution)
        group, letters = record.group_letter, tuple(sorted(record.intent_distribution))
        if groups.setdefault(group, letters) != letters:
            raise ValueError(f"answers of group {group} were scored over different letters ({''.join(groups[group])} "
                             f"and {''.join(letters)}): the records come from different label sets")
    if not groups:
        raise ValueError("no answer with a code: the groups cannot be read from these records")
    if missing := sorted(offered - set(groups)):
        raise ValueError(f"no answer chose group {', '.join(missing)}: how many intents it holds is unknown")
    return dict(sorted(groups.items()))


def label_groups(codes) -> Groups:
    """The groups of a list of codes ("A-A", "A-B", ...), e.g. the keys of a built prompt's intents."""
    groups: dict[str, list[str]] = {}
    for code in codes:
        group, letter = split_code(code)
        groups.setdefault(group, []).append(letter)
    return {group: tuple(sorted(letters)) for group, letters in sorted(groups.items())}


def set_route(codes: tuple[str, ...], out_of_scope: frozenset[str] = frozenset()) -> str:
    """The route a set gives: "act" for one in-scope code (a candidate to act on), "ask" for two or three
    (a question naming them), "hand_over" otherwise (none, more than three, or an out-of-scope code alone)."""
    if len(codes) == 1 and codes[0] not in out_of_scope:
        return "act"
    return "ask" if len(codes) in ASK_SIZES else "hand_over"


def coverage_range(n_calib: int, n_test: int, alpha: float, level: float = LEVEL) -> tuple[float, float]:
    """The central `level` range of the share of n_test new messages whose set holds the right code.

    Split conformal's coverage, given the calib draw, is Beta(k, n + 1 - k)
    distributed, k = ceil((n + 1) (1 - alpha)) (Vovk 2012, "Conditional
    validity of inductive conformal predictors"; Angelopoulos and Bates 2021,
    section 3.2), so the count covered among n_test messages is
    beta-binomial(n_test, k, n + 1 - k). This is the range of the guarantee
    itself, calib luck included; the Clopper-Pearson interval of the test
    coverage holds only the luck of the test messages. Exact when no two
    scores tie; ties only raise coverage. Returns shares in [0, 1]. Raises
    ValueError for n_calib or n_test below 1, alpha or level outside (0, 1).
    """
    if n_calib < 1 or n_test < 1:
        raise ValueError(f"need at least one calib and one test message, not {n_calib} and {n_test}")
    check_probability(alpha, "alpha")
    check_probability(level, "the level")
    k = math.ceil((n_calib + 1) * (1 - alpha))
    if k > n_calib:
        return 1.0, 1.0
    tail = (1 - level) / 2
    cumulative, low, high = 0.0, None, n_test
    for count, p in enumerate(beta_binomial_pmf(n_test, k, n_calib + 1 - k)):
        cumulative += p
        if low is None and cumulative >= tail:
            low = count
        if cumulative >= 1 - tail:
            high = count
            break
    return low / n_test, high / n_test


def beta_binomial_pmf(n: int, a: float, b: float) -> list[float]:
    """P(X = j), j = 0..n, for X ~ beta-binomial(n, a, b): C(n, j) B(j + a, n - j + b) / B(a, b).

    A binomial count whose probability is itself Beta(a, b) (Johnson, Kemp and
    Kotz 2005, "Univariate discrete distributions", section 6.9.2), in logs
    through math.lgamma. Raises ValueError for n < 0 or a, b <= 0.
    """
    if n < 0 or not (a > 0 and b > 0):
        raise ValueError(f"need n >= 0 and a, b > 0, not n={n!r}, a={a!r}, b={b!r}")

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    base = log_beta(a, b)
    return [math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                     + log_beta(j + a, n - j + b) - base) for j in range(n + 1)]


@dataclass(frozen=True)
class SetReport:
    """What the sets of one fit did on a split.

    sizes: one set size per message; covered: whether each set held the right
    code; routes: set_route of each set; coverage: the exact interval of the
    share covered; expected: coverage_range for this split's size.
    """

    sizes: list[int]
    covered: list[bool]
    routes: list[str]
    coverage: Interval
    expected: tuple[float, float]


def report_sets(records: list[ResultsLine], fit: ConformalFit, groups: Groups,
                out_of_scope: frozenset[str] = frozenset(), level: float = LEVEL) -> SetReport:
    """Set sizes, coverage and set routes of every record. Raises ValueError on no records."""
    if not records:
        raise ValueError("no answers to report on")
    sets = [prediction_set(r, fit, groups) for r in records]
    covered = [covers(r, fit) for r in records]
    interval = clopper_pearson(sum(covered), len(records), level)
    return SetReport([len(s) for s in sets], covered, [set_route(s, out_of_scope) for s in sets], interval,
                     coverage_range(fit.n, len(records), fit.alpha, level))


def size_label(low: int, high: int | None, total: int) -> str:
    """'0', '4-10', '31-151' (the last group up to the number of codes)."""
    high = total if high is None else high
    return str(low) if low == high else f"{low}-{high}"


def print_sizes(result: SetReport, total_codes: int) -> None:
    """The distribution of set sizes, the coverage at each, and the route each size takes."""
    n = len(result.sizes)
    print(f"{'set size':<9} {'answers':>7} {'share':>7} {'right code in the set':>22}   route")
    for low, high in SIZES:
        if low > total_codes:
            break
        inside = [i for i, size in enumerate(result.sizes) if low <= size and (high is None or size <= high)]
        right = sum(result.covered[i] for i in inside)
        shown = f"{right} ({percent(right / len(inside))})" if inside else "-"
        route = ("act on it (a candidate)" if low == high == 1 else "ask, naming them" if low in ASK_SIZES
                 else "hand over")
        print(f"{size_label(low, high, total_codes):<9} {len(inside):7d} {percent(len(inside) / n):>7} "
              f"{shown:>22}   {route}")


# argparse type for a miss rate in (0, 1).
alpha_value = number_argument(check_probability, "alpha")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_variant_argument(parser)
    parser.add_argument("--alpha", type=alpha_value, action="append",
                        help="miss rate of the sets, in (0, 1); repeat for several (default: 0.1 and 0.2)")
    args = parser.parse_args()
    alphas = tuple(args.alpha) if args.alpha else ALPHAS

    with reading(args.variant):
        calib_path, calib, path, records = load_fit_and_report(args)
    if path.resolve() == calib_path.resolve():
        print("(the same file: the sets are scored on the answers they were fitted on)")
    groups = groups_of(calib + records)
    total = sum(len(letters) for letters in groups.values())
    out_of_scope = out_of_scope_codes(args.dataset)
    print(f"codes: {total} in {len(groups)} groups (the letters each group's answers were scored over)")
    print("score of a code (LAC): 1 - P(code), P(code) = P(group) x P(intent | group) in the group the model chose;\n"
          "a code of another group gets P(its group), an upper bound (the model scored no intent there)\n")

    level = f"{100 * LEVEL:.0f}%"
    reports = {}
    print(f"{'alpha':<6} {'promise':>7} {'calib rank':>10} {'in the set':>10}  {args.split + ': right code in the set':>27}"
          f"  {f'{level} exact interval':>19}  {'guarantee range':>15}  {'median':>6}")
    print(f"{'':<6} {'':>7} {f'of {len(calib)}':>10} {'when P >=':>10}  {'':>27}  {'':>19}  "
          f"{f'({level}, calib in)':>15}  {'set':>6}")
    for alpha in alphas:
        fit = fit_conformal(calib, alpha)
        result = reports[alpha] = report_sets(records, fit, groups, out_of_scope)
        c, (low, high) = result.coverage, result.expected
        rank = f"{fit.rank}" if fit.rank <= fit.n else f"{fit.rank} > {fit.n}"
        print(f"{alpha:<6.2f} {percent(1 - alpha):>7} {rank:>10} {fit.floor:10.4f}  "
              f"{f'{c.k} ({percent(c.estimate)})':>27}  {f'{percent_down(c.low)} - {percent_up(c.high)}':>19}  "
              f"{f'{percent_down(low)} - {percent_up(high)}':>15}  {statistics.median(result.sizes):6.0f}")
    print(f"guarantee range: where the share covered falls in {level} of calib and {args.split} draws of these sizes\n"
          "(split conformal's coverage is Beta-distributed given calib); it holds if the messages are exchangeable")

    for alpha, result in reports.items():
        print(f"\nalpha {alpha:.2f}: sets on {args.split} ({len(records)} answers, {total} codes)")
        print_sizes(result, total)

    last = [f"alpha {alpha:.2f}: {percent(r.coverage.estimate)} covered, "
            f"{percent(sum(route == 'ask' for route in r.routes) / len(records))} small enough to ask"
            for alpha, r in reports.items()]
    print(f"\non {args.split}, right code in the set at " + "; ".join(last))
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
