"""Three routes for a typed answer: act on it, ask the customer, or hand over to a person.

    python3 08-routes/routes.py                      # fit on calib, route the reference test split
    python3 08-routes/routes.py --target 0.80        # a precision the 1.5B model can reach
    python3 08-routes/routes.py --results my-test-run.jsonl --calib my-calib-run.jsonl
    python3 08-routes/routes.py --dataset clinc150   # its out-of-scope code K-A always hands over

A confidence is only worth something when a program does something different
because of it. Here it picks one of three routes for every answer:

- act        calibrated confidence >= t_act: do what the intent says, no question asked;
- ask        t_ask <= calibrated confidence < t_act: ask "is it A or B?", naming the
             answer and the runner-up in its group;
- hand over  everything else, every answer without a code (status not ok) and every
             answer whose code is declared out of scope: a person reads the message.

The calibrated confidence is post 06's isotonic fit on the calibration split
(fit_calibration). Both thresholds are fitted on that split too:

- t_act is the lowest calibrated confidence at which the answers at or above
  it are right at least `target` of the time (default 98.5%): the most
  answers a program may act on while keeping its precision on calib;
- t_ask is the lowest calibrated confidence at which, among the answers that
  would be asked (at or above t_ask, below t_act), the right intent is one of
  the two named at least `ask_target` of the time (default 90%).

Then the test split is routed with those thresholds, never refitted on it.
No server needed: it reads post 03's results files.
"""
from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from ece import check_inputs, outcomes
from isotonic import fit_isotonic
from out_of_scope import code_list, out_of_scope_codes
from separation import percent
from summary import Loaded, add_results_arguments, load_fit_and_report, percentile, read_split

ROUTES = ("act", "ask", "hand_over")
TARGET = 0.985
ASK_TARGET = 0.90
RESAMPLES = 1000
SEED = 1
LEVEL = 0.95

# A calibrator maps one results record (post 03's fields) to a calibrated confidence in [0, 1].
Calibrator = Callable[[dict], float]


def fit_calibration(calib: list[dict]) -> Calibrator:
    """The calibrated confidence of this post: post 06's isotonic fit on the calib split's raw confidences.

    Fitted on every calib answer, failed ones included at confidence 0, exactly
    as 06-isotonic/isotonic.py does. Returns a function record -> P(right) in
    [0, 1] read off the fit at record["confidence"]. It takes the whole record
    so that another calibration (temperature scaling needs the distributions)
    can replace this one function without touching the rest. Raises ValueError
    on an empty split (ece.check_inputs).
    """
    fit = fit_isotonic(*outcomes(calib))
    return lambda record: fit(record["confidence"])


@dataclass(frozen=True)
class Cut:
    """One candidate threshold and what it lets through on the calibration split.

    threshold: a calibrated confidence in [0, 1]. answers: how many answers have
    a calibrated confidence at or above it (ties included: they enter
    together). hits: how many of those count (right, for act; right intent
    among the two named, for ask). rate = hits / answers, in [0, 1].
    """

    threshold: float
    answers: int
    hits: int

    @property
    def rate(self) -> float:
        return self.hits / self.answers


def cuts(points: list[tuple[float, bool]]) -> list[Cut]:
    """Every distinct value of (calibrated confidence, hit) points as a threshold, highest first.

    A Cut at value t counts the points with confidence >= t, so answers that
    tie at t enter together: a threshold can never split a tie.
    """
    ordered = sorted(points, key=lambda point: point[0], reverse=True)
    result, answers, hits = [], 0, 0
    for i, (value, hit) in enumerate(ordered):
        answers += 1
        hits += bool(hit)
        # Only the last point of a run of equal values closes a Cut.
        if i + 1 == len(ordered) or ordered[i + 1][0] != value:
            result.append(Cut(value, answers, hits))
    return result


def lowest_cut(points: list[tuple[float, bool]], target: float) -> Cut | None:
    """The Cut with the lowest threshold whose rate is at least `target`, or None when no Cut reaches it.

    The lowest such threshold lets the most answers through while the share of
    hits among them still reaches the target; the rate need not rise steadily
    with the threshold, so a higher threshold can still miss it.
    """
    reaching = [cut for cut in cuts(points) if cut.rate >= target]
    return reaching[-1] if reaching else None


def check_fraction(value: float, name: str) -> None:
    """Raise ValueError unless value is a fraction in (0, 1] (0.985 means 98.5%)."""
    if not 0.0 < value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be a fraction in (0, 1], like 0.985 for 98.5%, not {value!r}")


def top_two(record: dict) -> tuple[str, ...]:
    """The codes a clarifying question names: the answer's code, then the runner-up in its group.

    record: a post 03 record with status ok ("code", "intent_distribution").
    The runner-up is the most likely other intent letter of the chosen group
    (ties broken by letter). Intents of other groups have no probability: the
    model wrote only one group letter, and the intent step was asked inside
    that group alone. So when the group is wrong, the right intent is never
    among the two. A group with a single intent gives one code.
    """
    group, letter = record["code"].split("-")
    distribution = record["intent_distribution"]
    others = sorted((x for x in distribution if x != letter), key=lambda x: (-distribution[x], x))
    return (record["code"], *(f"{group}-{x}" for x in others[:1]))


def right_in_top_two(record: dict) -> bool:
    """Whether the gold code is one of top_two(record); False for an answer without a code."""
    return record["status"] == "ok" and record["gold_code"] in top_two(record)


@dataclass(frozen=True)
class Thresholds:
    """The two thresholds of this post, fitted on the calibration split, and how they were found.

    target, ask_target: the precision asked of act, and the share of asked
    answers whose right intent is among the two named, as fractions in (0, 1].
    act: the Cut of t_act (None: no threshold reaches `target` on calib, so
    nothing is acted on). ask: the Cut of t_ask, counted over the asked answers
    only, [t_ask, t_act) (None: no ask route). best_act: the Cut with the
    highest precision on calib (the most answers among equals), to say how far
    an unreachable target is. eligible: calib answers the thresholds were fitted
    on (status ok, code not out of scope). out_of_scope: codes that always
    hand over (none for BANKING77).
    """

    target: float
    ask_target: float
    act: Cut | None
    ask: Cut | None
    best_act: Cut
    eligible: int
    out_of_scope: frozenset[str] = field(default_factory=frozenset)

    @property
    def t_act(self) -> float | None:
        """The act threshold, or None when the target is out of reach (no act route)."""
        return None if self.act is None else self.act.threshold

    @property
    def t_ask(self) -> float | None:
        """The ask threshold, or None when there is no ask route."""
        return None if self.ask is None else self.ask.threshold


def eligible(records: list[dict], out_of_scope: frozenset[str]) -> list[dict]:
    """The answers a threshold can act on or ask about: status ok and a code that is not out of scope."""
    return [r for r in records if r["status"] == "ok" and r["code"] not in out_of_scope]


def fit_thresholds(calib: list[dict], calibrate: Calibrator, target: float = TARGET, ask_target: float = ASK_TARGET,
                   out_of_scope: frozenset[str] | set[str] = frozenset()) -> Thresholds:
    """Fit t_act and t_ask on calibration records (post 03's fields: status, code, gold_code, correct,
    confidence, intent_distribution).

    t_act = lowest_cut of (calibrated confidence, correct) at `target`: the
    selective-classification rule of keeping the largest coverage whose
    precision reaches the target (Geifman and El-Yaniv 2017, "Selective
    classification for deep neural networks", fitted here on plain counts).
    t_ask = lowest_cut of (calibrated confidence, right in top two) at
    `ask_target`, over the answers below t_act only, since those are the ones
    asked. Answers without a code or with an out-of-scope code always hand over,
    so they take no part in the fit. Raises ValueError when a target is not in
    (0, 1] or no calib answer is eligible, or on a calibrated confidence
    outside [0, 1] (ece.check_inputs).
    """
    check_fraction(target, "the act target")
    check_fraction(ask_target, "the ask target")
    out_of_scope = frozenset(out_of_scope)
    answers = eligible(calib, out_of_scope)
    if not answers:
        raise ValueError(f"cannot fit thresholds: none of the {len(calib)} calib answers has an in-scope code")
    calibrated = [calibrate(r) for r in answers]
    check_inputs(calibrated, [r["correct"] for r in answers])
    act = lowest_cut([(c, r["correct"]) for c, r in zip(calibrated, answers)], target)
    best_act = max(cuts([(c, r["correct"]) for c, r in zip(calibrated, answers)]), key=lambda cut: (cut.rate, cut.answers))
    below = [(c, right_in_top_two(r)) for c, r in zip(calibrated, answers) if act is None or c < act.threshold]
    ask = lowest_cut(below, ask_target) if below else None
    return Thresholds(target, ask_target, act, ask, best_act, len(answers), out_of_scope)


def route_of(record: dict, calibrated: float, thresholds: Thresholds) -> str:
    """The route of one answer: "act", "ask" or "hand_over".

    record: a post 03 record (or the same fields for one live answer);
    calibrated: its calibrated confidence. An answer without a code, or with a
    code in thresholds.out_of_scope, hands over whatever its confidence. A
    confidence exactly at a threshold takes that threshold's route.
    """
    if record["status"] != "ok" or record["code"] in thresholds.out_of_scope:
        return "hand_over"
    if thresholds.t_act is not None and calibrated >= thresholds.t_act:
        return "act"
    if thresholds.t_ask is not None and calibrated >= thresholds.t_ask:
        return "ask"
    return "hand_over"


def route_all(records: list[dict], calibrate: Calibrator, thresholds: Thresholds) -> list[str]:
    """route_of for every record, in order. Raises ValueError on no records or a calibrated value outside [0, 1]."""
    calibrated = [calibrate(r) for r in records]
    check_inputs(calibrated, [r["correct"] for r in records])
    return [route_of(r, c, thresholds) for r, c in zip(records, calibrated)]


@dataclass(frozen=True)
class RouteReport:
    """What the routes did on one split.

    total: answers routed. answers, right, top_two: route -> how many answers
    took it, how many of those were right (the answer's intent is the gold
    one), how many had the gold intent among the two a question would name.
    out_of_scope: route -> how many messages whose gold code is out of scope
    took it (all 0 for a dataset without such codes).
    """

    total: int
    answers: dict[str, int]
    right: dict[str, int]
    top_two: dict[str, int]
    out_of_scope: dict[str, int] = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        """Share of all answers acted on, in [0, 1]."""
        return self.answers["act"] / self.total

    @property
    def act_precision(self) -> float | None:
        """Share of the acted-on answers that were right, in [0, 1]; None when nothing was acted on."""
        return self.right["act"] / self.answers["act"] if self.answers["act"] else None

    @property
    def wrong_actions(self) -> int:
        """Answers acted on that were wrong: the cost the act threshold is there to bound."""
        return self.answers["act"] - self.right["act"]


def report(records: list[dict], routes: list[str], out_of_scope: frozenset[str] = frozenset()) -> RouteReport:
    """Count answers, right answers, right-in-top-two and out-of-scope messages (gold code in
    `out_of_scope`) per route. Raises ValueError on empty or unequal lists."""
    if not records:
        raise ValueError("no answers to report on")
    if len(records) != len(routes):
        raise ValueError(f"{len(records)} records but {len(routes)} routes: the lengths differ")
    answers = {route: 0 for route in ROUTES}
    right, top, outside = dict(answers), dict(answers), dict(answers)
    for record, route in zip(records, routes):
        answers[route] += 1
        right[route] += bool(record["correct"])
        top[route] += right_in_top_two(record)
        outside[route] += record["gold_code"] in out_of_scope
    return RouteReport(len(records), answers, right, top, outside)


@dataclass(frozen=True)
class Interval:
    """A point estimate and its percentile bootstrap interval, all fractions in [0, 1]; level is e.g. 0.95."""

    estimate: float
    low: float
    high: float
    level: float


@dataclass(frozen=True)
class Bootstrap:
    """Bootstrap intervals for the act route.

    precision: of the acted-on answers (None when nothing was acted on).
    coverage: share of answers acted on. resamples: how many were drawn.
    without_act: resamples in which nothing was acted on; precision is
    undefined there, so its interval comes from the other resamples.
    """

    precision: Interval | None
    coverage: Interval
    resamples: int
    without_act: int


def bootstrap_act(acted: list[bool], corrects: list[bool], resamples: int = RESAMPLES, seed: int = SEED,
                  level: float = LEVEL) -> Bootstrap:
    """Percentile bootstrap of act precision and coverage (Efron and Tibshirani 1993, ch. 13).

    acted, corrects: one pair per answer of the split. Each resample draws as
    many answers as there are, with replacement (random.Random(seed), so the
    same seed gives the same interval), and recomputes both numbers; the
    interval runs from the (1 - level) / 2 to the (1 + level) / 2 percentile.
    The thresholds stay the ones fitted on calib: the interval covers the luck
    of the test sample, not that of the calibration split. Raises ValueError
    on empty or unequal lists, resamples < 1 or a level outside (0, 1).
    """
    if not acted:
        raise ValueError("no answers to resample")
    if len(acted) != len(corrects):
        raise ValueError(f"{len(acted)} routes but {len(corrects)} outcomes: the lengths differ")
    if resamples < 1:
        raise ValueError(f"resamples must be 1 or more, not {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"the level must be in (0, 1), like 0.95, not {level!r}")
    n = len(acted)
    # 0: not acted on, 1: acted on and wrong, 2: acted on and right.
    kinds = [(2 if right else 1) if act else 0 for act, right in zip(acted, corrects)]
    rng = random.Random(seed)
    precisions, coverages = [], []
    for _ in range(resamples):
        counts = [0, 0, 0]
        for kind in rng.choices(kinds, k=n):
            counts[kind] += 1
        acts = counts[1] + counts[2]
        coverages.append(acts / n)
        if acts:
            precisions.append(counts[2] / acts)
    tails = ((1 - level) / 2, (1 + level) / 2)
    total_acts = sum(acted)
    coverage = Interval(total_acts / n, *(percentile(coverages, t) for t in tails), level)
    precision = None
    if total_acts and precisions:
        right = sum(1 for kind in kinds if kind == 2)
        precision = Interval(right / total_acts, *(percentile(precisions, t) for t in tails), level)
    return Bootstrap(precision, coverage, resamples, resamples - len(precisions))


def fraction(text: str) -> float:
    """argparse type for a fraction in (0, 1]."""
    try:
        value = float(text)
        check_fraction(value, "the value")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def add_threshold_arguments(parser: argparse.ArgumentParser) -> None:
    """--target and --ask-target: the same options in routes.py and route.py."""
    parser.add_argument("--target", type=fraction, default=TARGET,
                        help=f"precision the act route must reach on calib, a fraction (default: {TARGET})")
    parser.add_argument("--ask-target", type=fraction, default=ASK_TARGET,
                        help="share of asked answers whose right intent is among the two named, on calib "
                             f"(default: {ASK_TARGET})")


def fit_from(calib: list[dict], args: argparse.Namespace) -> tuple[Calibrator, Thresholds]:
    """Fit the calibration and the thresholds (--target, --ask-target) on the calib records of --dataset.

    The dataset's out-of-scope codes (07's out_of_scope_codes: K-A for
    CLINC150) always hand over.
    """
    calibrate = fit_calibration(calib)
    return calibrate, fit_thresholds(calib, calibrate, args.target, args.ask_target, out_of_scope_codes(args.dataset))


def thresholds_from(args: argparse.Namespace) -> tuple[Loaded, Calibrator, Thresholds]:
    """Load the calib file named by the arguments (--dataset, --calib) and fit_from its answers (error lines left out)."""
    calib = read_split("calib", args.calib, args.dataset)
    return (calib, *fit_from(calib.records, args))


def print_thresholds(thresholds: Thresholds) -> None:
    """The two thresholds and what they let through on calib, or why a route is missing."""
    t = thresholds
    codes = code_list(t.out_of_scope)
    kind = f"an in-scope code (not {codes})" if codes else "a code"
    print(f"thresholds on the calibrated confidence, fitted on {t.eligible} calib answers with {kind}:")
    if t.act is None:
        best = t.best_act
        print(f"  act        none: no threshold reaches {percent(t.target)} precision on calib "
              f"(best: {percent(best.rate)}, {best.hits} of {best.answers} right at >= {best.threshold:.3f})")
    else:
        print(f"  act   >= {t.act.threshold:.3f}  {t.act.hits} of {t.act.answers} calib answers right "
              f"({percent(t.act.rate)}, target {percent(t.target)})")
    if t.ask is None:
        print(f"  ask        none: no threshold gets the right intent among the two named in "
              f"{percent(t.ask_target)} of the asked calib answers")
    else:
        print(f"  ask   >= {t.ask.threshold:.3f}  right intent among the two named in {t.ask.hits} of {t.ask.answers} "
              f"asked calib answers ({percent(t.ask.rate)}, target {percent(t.ask_target)})")
    print("  hand over  everything else" + (f", and every {codes} answer (out of scope)" if codes else ""))


def print_report(result: RouteReport) -> None:
    """The route table: answers, share, right (top 1), right intent among the two named."""
    print(f"{'route':<10} {'answers':>7} {'share':>7} {'right':>14} {'right in top two':>17}")
    rows = [(route.replace("_", " "), result.answers[route], result.right[route], result.top_two[route])
            for route in ROUTES]
    rows.append(("all", result.total, sum(result.right.values()), sum(result.top_two.values())))
    for name, answers, right, top in rows:
        share = f"{100 * answers / result.total:6.1f}%"
        right_text = f"{right} ({100 * right / answers:.1f}%)" if answers else "-"
        top_text = f"{top} ({100 * top / answers:.1f}%)" if answers else "-"
        print(f"{name:<10} {answers:7d} {share:>7} {right_text:>14} {top_text:>17}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser, fits_on_calib=True)
    add_threshold_arguments(parser)
    parser.add_argument("--seed", type=int, default=SEED, help=f"seed of the bootstrap resampling (default: {SEED})")
    parser.add_argument("--resamples", type=int, default=RESAMPLES,
                        help=f"bootstrap resamples of the split (default: {RESAMPLES})")
    args = parser.parse_args()
    if args.resamples < 1:
        parser.error("--resamples must be 1 or more")

    calib_path, calib, path, records = load_fit_and_report(args)
    calibrate, thresholds = fit_from(calib, args)
    if path.resolve() == calib_path.resolve():
        print("(the same file: thresholds and report are in-sample, so the report flatters them)")
    print("calibrated confidence: isotonic regression of post 06, fitted on calib\n")
    print_thresholds(thresholds)

    routes = route_all(records, calibrate, thresholds)
    result = report(records, routes, thresholds.out_of_scope)
    print(f"\n{args.split}: {result.total} answers routed\n")
    print_report(result)
    print()
    if result.answers["act"]:
        boot = bootstrap_act([r == "act" for r in routes], [bool(r["correct"]) for r in records],
                             args.resamples, args.seed)
        p, c = boot.precision, boot.coverage
        print(f"act precision {percent(p.estimate)} ({p.level:.0%} bootstrap interval {percent(p.low)} - "
              f"{percent(p.high)}), target {percent(thresholds.target)}")
        print(f"act coverage  {percent(c.estimate)} ({c.level:.0%} bootstrap interval {percent(c.low)} - "
              f"{percent(c.high)})   [{boot.resamples} resamples of the {args.split} answers, seed {args.seed}"
              + (f"; {boot.without_act} without any act" if boot.without_act else "") + "]")
        print(f"wrong actions {result.wrong_actions} of {result.answers['act']}")
    else:
        print("act: nothing acted on" + (" (no act route)" if thresholds.act is None else "") + ", no wrong actions")
    if result.answers["ask"]:
        print(f"ask: the right intent is among the two named in {result.top_two['ask']} of "
              f"{result.answers['ask']} questions ({percent(result.top_two['ask'] / result.answers['ask'])})")
    else:
        print("ask: no questions")
    print(f"hand over: {result.answers['hand_over']} answers ({percent(result.answers['hand_over'] / result.total)})"
          f" go to a person, {result.right['hand_over']} of them were right")
    if outside := sum(result.out_of_scope.values()):
        print(f"out-of-scope messages ({outside}): " + ", ".join(
            f"{result.out_of_scope[route]} {route.replace('_', ' ')}" for route in ROUTES)
              + f"; {result.out_of_scope['act'] + result.out_of_scope['ask']} reached act or ask")

    if thresholds.act is None:
        print(f"\nacted on 0.0% of {args.split} answers: {percent(thresholds.target)} precision is out of reach "
              f"on calib (best {percent(thresholds.best_act.rate)})")
    else:
        print(f"\nacted on {percent(result.coverage)} of {args.split} answers at {percent(result.act_precision)} "
              f"precision (target {percent(thresholds.target)}), {result.wrong_actions} wrong actions")
    return 0


if __name__ == "__main__":
    from llama_http import exit_on_server_errors
    sys.exit(exit_on_server_errors(main))
