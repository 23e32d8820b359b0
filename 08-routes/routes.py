"""Three routes for a typed answer: act on it, ask the customer, or hand over to a person.

    python3 08-routes/routes.py                      # fit on calib, route the reference test split
    python3 08-routes/routes.py --target 0.80        # a precision the 1.5B model can reach
    python3 08-routes/routes.py --results my-test-run.jsonl --calib my-calib-run.jsonl
    python3 08-routes/routes.py --dataset clinc150   # its out-of-scope code K-A always hands over
    python3 08-routes/routes.py --router-out /tmp/my-router.json   # the router file somewhere else

A confidence is only worth something when a program does something different
because of it. Here it picks one of three routes for every answer:

- act        calibrated confidence >= t_act: do what the intent says, no question asked;
- ask        calibrated confidence >= t_ask, not acted on: ask "is it A or B?", naming
             the answer and the runner-up in its group;
- hand over  everything else, every answer without a code (status not ok) and every
             answer whose code is declared out of scope: a person reads the message.

The calibrated confidence is post 06's isotonic fit on the calibration split
(fit_calibration). Both thresholds are fitted on that split too:

- t_act is the lowest calibrated confidence at which the answers at or above
  it are right at least `target` of the time (default 98.5%): the most answers
  a program may act on while keeping its precision on calib. It promises
  nothing beyond calib: 3 right of 3 pass a 98.5% target;
- t_ask is the lowest calibrated confidence at which, among the answers that
  would be asked (at or above t_ask, not acted on), the right intent is one of
  the two named at least `ask_target` of the time (default 90%).

Then the test split is routed with those thresholds, never refitted on it,
and act precision and coverage get exact (Clopper-Pearson) 95% intervals. No
server needed: it reads post 03's results files.

The fit is written to a router file (router_file.py: the isotonic map, both
thresholds, and what they were fitted for and on), by default
03-where-confidence-comes-from/results/<dataset>-router.json beside your own
runs (git-ignored; the name follows the calib file's). route.py reads it and
routes messages without fitting anything.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from ece import check_inputs, outcomes
from intervals import LEVEL, Interval, clopper_pearson, number_argument, percent_down, percent_up
from isotonic import fit_isotonic
from registry import dataset_named
from router_file import OWN_FOLDER, own_router_path, route_of, router_from, router_name, top_two, write_router
from compare import percent
from separation import SweepPoint, sweep
from results_file import relative
from results_record import ResultsLine
from calib_split import add_fit_arguments, load_fit_and_report
from saved_answers import Loaded, read_split

ROUTES = ("act", "ask", "hand_over")
TARGET = 0.985
ASK_TARGET = 0.90

# A calibrator maps one results line (post 03's ResultsLine) to a calibrated confidence in [0, 1].
Calibrator = Callable[[ResultsLine], float]


def fit_calibration(calib: list[ResultsLine]) -> Calibrator:
    """The calibrated confidence of this post: post 06's isotonic fit on the calib split's raw confidences.

    Fitted on every calib answer, failed ones included at confidence 0, exactly
    as 06-isotonic/isotonic.py does. Returns a function record -> P(right) in
    [0, 1] read off the fit at record.confidence. It takes the whole record
    so that another calibration (temperature scaling needs the distributions)
    can replace this one function without touching the rest. Raises ValueError
    on an empty split (ece.check_inputs).
    """
    fit = fit_isotonic(*outcomes(calib))
    return lambda record: fit(record.confidence)


def cuts(points: list[tuple[float, bool]]) -> list[SweepPoint]:
    """Every distinct value of (calibrated confidence, hit) points as a threshold, highest first.

    separation.sweep() of the points: a threshold at value t keeps the points
    with confidence >= t, so answers that tie at t enter together and a
    threshold can never split a tie. A point's accuracy is its share of hits
    (right answers for act; the right intent among the two named, for ask).
    """
    return sweep([value for value, _ in points], [hit for _, hit in points])


def lowest_cut(points: list[tuple[float, bool]], target: float) -> SweepPoint | None:
    """The cut with the lowest threshold whose accuracy is at least `target`, or None when none reaches it.

    The lowest such threshold lets the most answers through while the share of
    hits among them still reaches the target; the rate need not rise steadily
    with the threshold, so a higher threshold can still miss it.
    """
    reaching = [cut for cut in cuts(points) if cut.accuracy >= target]
    return reaching[-1] if reaching else None


def check_fraction(value: float, name: str) -> None:
    """Raise ValueError unless value is a fraction in (0, 1] (0.985 means 98.5%)."""
    if not 0.0 < value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be a fraction in (0, 1], like 0.985 for 98.5%, not {value!r}")


def right_in_top_two(record: ResultsLine) -> bool:
    """Whether the gold code is one of top_two(record); False for an answer without a code."""
    return record.status == "ok" and record.gold_code in top_two(record)


@dataclass(frozen=True)
class Thresholds:
    """The two thresholds of this post, fitted on the calibration split, and how they were found.

    target, ask_target: the precision asked of act, and the share of asked
    answers whose right intent is among the two named, as fractions in (0, 1].
    act: the SweepPoint of t_act (None: no threshold reaches `target` on calib, so
    nothing is acted on). ask: the SweepPoint of t_ask, counted over the asked answers
    only, at or above t_ask and not acted on (None: no ask route). best_act: the SweepPoint with the
    highest precision on calib (the most answers among equals), to say how far
    an unreachable target is. eligible: calib answers the thresholds were fitted
    on (status ok, code not out of scope). out_of_scope: codes that always
    hand over (none for BANKING77). floor: the cut refused as t_act because it
    keeps every eligible calib answer (at_the_floor), None otherwise;
    ask_floor: the same for t_ask, a cut that keeps every answer not acted on.
    """

    target: float
    ask_target: float
    act: SweepPoint | None
    ask: SweepPoint | None
    best_act: SweepPoint
    eligible: int
    out_of_scope: frozenset[str] = field(default_factory=frozenset)
    floor: SweepPoint | None = None
    ask_floor: SweepPoint | None = None

    @property
    def t_act(self) -> float | None:
        """The act threshold, or None when the target is out of reach (no act route)."""
        return None if self.act is None else self.act.threshold

    @property
    def t_ask(self) -> float | None:
        """The ask threshold, or None when there is no ask route."""
        return None if self.ask is None else self.ask.threshold

    def acts(self, record: ResultsLine, calibrated: float) -> bool:
        """Whether the act route takes this answer (record, with its calibrated confidence): calibrated >= t_act.

        False without an act route.
        """
        return self.t_act is not None and calibrated >= self.t_act

    def act_condition(self) -> str:
        """The act rule as a condition, e.g. 'calibrated >= 0.810'; '' without an act route."""
        return "" if self.act is None else f"calibrated >= {self.act.threshold:.3f}"

    def why_no_act(self) -> str:
        """Why there is no act route, in one clause after 'none: '."""
        if self.floor is not None:
            return (f"acting on all {self.floor.kept} calib answers already reaches {percent(self.target)} "
                    f"({percent(self.floor.accuracy)}), so calib cannot tell an answer to act on from one not to; "
                    "give more calib messages or a higher --target")
        best = self.best_act
        return (f"no threshold reaches {percent(self.target)} precision on calib (best: {percent(best.accuracy)}, "
                f"{best.hits} of {best.kept} right at >= {best.threshold:.3f})")


def eligible(records: list[ResultsLine], out_of_scope: frozenset[str]) -> list[ResultsLine]:
    """The answers a threshold can act on or ask about: status ok and a code that is not out of scope."""
    return [r for r in records if r.status == "ok" and r.code not in out_of_scope]


def fit_inputs(calib: list[ResultsLine], calibrate: Calibrator, target: float, ask_target: float,
               out_of_scope: frozenset[str]) -> tuple[list[ResultsLine], list[float]]:
    """The calib answers thresholds are fitted on (eligible: status ok, code not out of scope) and their
    calibrated confidences, in the same order.

    Raises ValueError when a target is not in (0, 1], when no calib answer is
    eligible, or on a calibrated confidence outside [0, 1] (ece.check_inputs).
    """
    check_fraction(target, "the act target")
    check_fraction(ask_target, "the ask target")
    answers = eligible(calib, out_of_scope)
    if not answers:
        raise ValueError(f"cannot fit thresholds: none of the {len(calib)} calib answers has an in-scope code")
    calibrated = [calibrate(r) for r in answers]
    check_inputs(calibrated, [r.correct for r in answers])
    return answers, calibrated


def at_the_floor(cut: SweepPoint | None, eligible_answers: int) -> bool:
    """Whether a cut keeps every answer it was fitted on (eligible_answers: all of them for act, those not acted on
    for ask): its threshold is at or below the lowest calibrated confidence, so it would act on (or ask about)
    anything, however unlike calib (a greeting, an order in plain words)."""
    return cut is not None and cut.kept >= eligible_answers


def best_cut(points: list[tuple[float, bool]]) -> SweepPoint:
    """The cut with the highest accuracy (the most points among equals): how far an unreachable target is."""
    return max(cuts(points), key=lambda cut: (cut.accuracy, cut.kept))


def fit_ask(answers: list[ResultsLine], calibrated: list[float], acted: list[bool], ask_target: float) -> SweepPoint | None:
    """t_ask: lowest_cut of (calibrated confidence, right in top two) at `ask_target`, over the answers not
    acted on only (acted[i] False), since those are the ones asked; None when none reaches it or all act."""
    below = [(c, right_in_top_two(r)) for r, c, act in zip(answers, calibrated, acted) if not act]
    return lowest_cut(below, ask_target) if below else None


def ask_cuts(answers: list[ResultsLine], calibrated: list[float], acted: list[bool],
             ask_target: float) -> tuple[SweepPoint | None, SweepPoint | None]:
    """(t_ask's cut, the cut refused at the floor): fit_ask, and a cut that keeps every answer not acted on
    (at_the_floor) refused: it is no threshold, so (None, that cut)."""
    ask = fit_ask(answers, calibrated, acted, ask_target)
    return (None, ask) if at_the_floor(ask, acted.count(False)) else (ask, None)


def fit_thresholds(calib: list[ResultsLine], calibrate: Calibrator, target: float = TARGET, ask_target: float = ASK_TARGET,
                   out_of_scope: frozenset[str] | set[str] = frozenset()) -> Thresholds:
    """Fit t_act and t_ask on calibration records (post 03's fields: status, code, gold_code, correct,
    confidence, intent_distribution).

    t_act = lowest_cut of (calibrated confidence, correct) at `target`: the
    selective-classification rule of keeping the largest coverage whose
    precision reaches the target (Geifman and El-Yaniv 2017, "Selective
    classification for deep neural networks", fitted here on plain counts).
    A t_act that keeps every calib answer (at_the_floor) is no threshold:
    there is then no act route, and Thresholds.floor says why.
    t_ask = ask_cuts: lowest_cut of (calibrated confidence, right in top two)
    at `ask_target`, over the answers not acted on only; one that keeps every
    such answer is no threshold either (it would ask about a greeting): no
    ask route, and Thresholds.ask_floor says why. Answers without a
    code or with an out-of-scope code always hand over, so they take no part
    in the fit. Raises ValueError as fit_inputs does.
    """
    out_of_scope = frozenset(out_of_scope)
    answers, calibrated = fit_inputs(calib, calibrate, target, ask_target, out_of_scope)
    points = list(zip(calibrated, [r.correct for r in answers]))
    act = lowest_cut(points, target)
    floor = act if at_the_floor(act, len(answers)) else None
    if floor is not None:
        act = None
    acted = [act is not None and c >= act.threshold for c in calibrated]
    ask, ask_floor = ask_cuts(answers, calibrated, acted, ask_target)
    return Thresholds(target, ask_target, act, ask, best_cut(points), len(answers), out_of_scope, floor, ask_floor)


def route_all(records: list[ResultsLine], calibrate: Calibrator, thresholds: Thresholds) -> list[str]:
    """route_of for every record, in order. Raises ValueError on no records or a calibrated value outside [0, 1]."""
    calibrated = [calibrate(r) for r in records]
    check_inputs(calibrated, [r.correct for r in records])
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


def report(records: list[ResultsLine], routes: list[str], out_of_scope: frozenset[str] = frozenset()) -> RouteReport:
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
        right[route] += bool(record.correct)
        top[route] += right_in_top_two(record)
        outside[route] += record.gold_code in out_of_scope
    return RouteReport(len(records), answers, right, top, outside)


def act_intervals(result: RouteReport, level: float = LEVEL) -> tuple[Interval, Interval | None]:
    """Exact (Clopper-Pearson) intervals of act coverage (acted / all answers) and act precision (right /
    acted; None when nothing was acted on), at `level`.

    Both are binomial proportions: coverage counts the answers acted on among
    all, precision the right ones among those acted on (conditional on that
    number). The thresholds stay the ones fitted on calib: the intervals cover
    the luck of this split, not that of the calibration split.
    """
    coverage = clopper_pearson(result.answers["act"], result.total, level)
    precision = clopper_pearson(result.right["act"], result.answers["act"], level) if result.answers["act"] else None
    return coverage, precision


# argparse type for a fraction in (0, 1].
fraction = number_argument(check_fraction, "the value")


def add_threshold_arguments(parser: argparse.ArgumentParser) -> None:
    """--target and --ask-target: the same options in routes.py and route.py."""
    parser.add_argument("--target", type=fraction, default=TARGET,
                        help=f"precision the act route must reach on calib, a fraction (default: {TARGET})")
    parser.add_argument("--ask-target", type=fraction, default=ASK_TARGET,
                        help="share of asked answers whose right intent is among the two named, on calib "
                             f"(default: {ASK_TARGET})")


def fit_from(calib: list[ResultsLine], args: argparse.Namespace) -> tuple[Calibrator, Thresholds]:
    """Fit the calibration and the thresholds (--target, --ask-target) on the calib records of --dataset.

    The dataset's out-of-scope codes (its label file's, as post 07's
    out_of_scope_codes reads them: K-A for CLINC150) always hand over.
    Raises ValueError as fit_thresholds does.
    """
    calibrate = fit_calibration(calib)
    out_of_scope = dataset_named(args.dataset).out_of_scope_codes()
    return calibrate, fit_thresholds(calib, calibrate, args.target, args.ask_target, out_of_scope)


def thresholds_from(args: argparse.Namespace) -> tuple[Loaded, Calibrator, Thresholds]:
    """Load the calib file named by the arguments (--dataset, --calib) and fit_from its answers (error lines left out)."""
    calib = read_split("calib", args.calib, args.dataset, given_by="--calib")
    return (calib, *fit_from(calib.records, args))


def support_warning(thresholds: Thresholds) -> str | None:
    """A warning line when the act threshold rests on too few calibration answers to mean its target, else None.

    Below 1 / (1 - target) answers above t_act (67 for 98.5%), all of them
    right is no evidence of the target: one wrong answer among them would
    already put the precision below it, and a few dozen answers all right
    happen often at a much lower precision.
    """
    act = thresholds.act
    needed = math.ceil(1 / (1 - thresholds.target)) if thresholds.target < 1 else math.inf
    if act is None or act.kept >= needed:
        return None
    return (f"warning: the act threshold rests on {act.kept} calib answers; a {percent(thresholds.target)} target needs "
            f"at least {needed} above it before one wrong answer could even show, so its precision on new messages "
            "can be far below the target")


def interval_text(interval: Interval | None) -> str:
    """'92.5% (83.4% - 97.5%)', or '-' for no interval: the low end rounded down, the high end up, so the
    printed interval never claims less uncertainty than it has."""
    if interval is None:
        return "-"
    return f"{percent(interval.estimate)} ({percent_down(interval.low)} - {percent_up(interval.high)})"


# The columns of act_row, aligned with it.
ACT_COLUMNS = f"{'acted':>6}  {'coverage':<22} {'right':>6}  {'precision':<22} {'wrong actions':>13}"


def act_row(result: RouteReport, level: float = LEVEL) -> str:
    """What the act route did on a split, one row under ACT_COLUMNS: answers acted on and coverage, right and
    precision (exact intervals at `level`, act_intervals), wrong actions."""
    coverage, precision = act_intervals(result, level)
    return (f"{result.answers['act']:6d}  {interval_text(coverage):<22} {result.right['act']:6d}  "
            f"{interval_text(precision):<22} {result.wrong_actions:13d}")


def asked_on(thresholds: Thresholds) -> str:
    """Which calib answers t_ask was fitted on, as the end of 'the calib answers ...'."""
    if thresholds.act is not None:
        return "not acted on"
    return "with an in-scope code" if thresholds.out_of_scope else "with a code"


def threshold_lines(thresholds: Thresholds) -> list[str]:
    """The three routes of the thresholds, one line each: act and ask with what they let through on calib (or
    why a route is missing), then hand over."""
    t = thresholds
    if t.act is None:
        act = f"  act        none: {t.why_no_act()}"
    else:
        act = (f"  act   {t.act_condition()}  {t.act.hits} of {t.act.kept} calib answers right "
               f"({percent(t.act.accuracy)}, target {percent(t.target)})")
    if t.ask is None and t.ask_floor is not None:
        ask = (f"  ask        none: asking about all {t.ask_floor.kept} calib answers not acted on already names the "
               f"right intent in {percent(t.ask_floor.accuracy)}, so calib cannot tell a question worth asking from "
               "one not; they are handed over")
    elif t.ask is None:
        ask = (f"  ask        none: no threshold gets the right intent among the two named in "
               f"{percent(t.ask_target)} of the asked calib answers")
    else:
        ask = (f"  ask   calibrated >= {t.ask.threshold:.3f}  right intent among the two named in {t.ask.hits} of "
               f"{t.ask.kept} asked calib answers ({percent(t.ask.accuracy)}, target {percent(t.ask_target)})")
    codes = "/".join(sorted(t.out_of_scope))
    return [act, ask, "  hand over  everything else" + (f", and every {codes} answer (out of scope)" if codes else "")]


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


def print_outcome(result: RouteReport, thresholds: Thresholds) -> None:
    """One line per route: wrong actions, how often a question names the right intent, the hand-overs (and,
    with out-of-scope messages, the routes they took)."""
    if result.answers["act"]:
        wrong = result.wrong_actions
        print(f"act: {wrong} wrong action{'' if wrong == 1 else 's'} of {result.answers['act']}")
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


def closing_line(thresholds: Thresholds, result: RouteReport, split: str) -> str:
    """The one number of the post: the share of `split` acted on and at what precision, or why nothing was."""
    if thresholds.floor is not None:
        return (f"acted on 0.0% of {split} answers: {percent(thresholds.target)} is reached on calib only by acting "
                "on every answer, which is no threshold (more calib messages or a higher --target)")
    if thresholds.act is None:
        return (f"acted on 0.0% of {split} answers: {percent(thresholds.target)} precision is out of reach "
                f"on calib (best {percent(thresholds.best_act.accuracy)})")
    wrong = f"{result.wrong_actions} wrong action{'' if result.wrong_actions == 1 else 's'}"
    return (f"acted on {percent(result.coverage)} of {split} answers at {percent(result.act_precision)} "
            f"precision (target {percent(thresholds.target)}), {wrong}")


def print_routes_on(split: str, records: list[ResultsLine], calibrate: Calibrator, thresholds: Thresholds,
                    rule: str = "") -> RouteReport:
    """Route every answer of a split, print how many took each route (print_report) and what each route did
    (print_outcome), and return the report. rule: words after "routed" in the heading (" with the certified
    rule"), none by default. Raises ValueError as route_all does."""
    result = report(records, route_all(records, calibrate, thresholds), thresholds.out_of_scope)
    print(f"\n{split}: {result.total} answers routed{rule}\n")
    print_report(result)
    print()
    print_outcome(result, thresholds)
    return result


# The calibration every script of this post uses, as they name it.
CALIBRATION = "calibrated confidence: isotonic regression of post 06, fitted on calib"


def add_router_argument(parser: argparse.ArgumentParser) -> None:
    """--router-out: where the fitted router file goes."""
    parser.add_argument("--router-out", type=Path, metavar="FILE",
                        help="write the router file here (default: 03-where-confidence-comes-from/results/"
                             "<dataset>-router.json, named after the calib file; route.py reads it)")


def router_path(args: argparse.Namespace, calib_path: Path) -> Path:
    """--router-out, else the own folder (router_file.OWN_FOLDER) with router_name(calib_path)."""
    return args.router_out or OWN_FOLDER / router_name(calib_path)


def route_command(written: Path, dataset: str) -> str:
    """The route.py command that reads the router just written: --dataset unless banking77, and --router unless
    it is the one route.py reads by default (own_router_path: not so for --router-out, or a calib file of
    another name such as a sample)."""
    command = "python3 08-routes/route.py" + ("" if dataset == "banking77" else f" --dataset {dataset}")
    if Path(written).resolve() != own_router_path(dataset).resolve():
        command += f" --router {relative(written)}"
    return command


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_threshold_arguments(parser)
    add_router_argument(parser)
    args = parser.parse_args()

    calib_path, calib, _, records = load_fit_and_report(args)
    calibrate, thresholds = fit_from(calib, args)
    router = router_from(calib_path, calib, fit_isotonic(*outcomes(calib)), thresholds, dataset_named(args.dataset))
    print(CALIBRATION + "\n")
    if warning := support_warning(thresholds):
        print(warning + "\n")
    print(f"routes (ask fitted on the calib answers {asked_on(thresholds)}):")
    print("\n".join(threshold_lines(thresholds)))

    result = print_routes_on(args.split, records, calibrate, thresholds)
    print(f"\nthe act route on {args.split}, with {100 * LEVEL:.0f}% exact (Clopper-Pearson) intervals:")
    print(ACT_COLUMNS)
    print(act_row(result))
    print("\n" + closing_line(thresholds, result, args.split))
    # your own task's loader (datasets/task.py) has this hook: the baselines make_task.py measured, beside the model
    note_of_run = getattr(dataset_named(args.dataset).loader(), "baseline_note_of_run", None)
    if note_of_run and (note := note_of_run(args.split, records)):
        print(note)
    written = write_router(router, router_path(args, calib_path))
    print(f"router written to {relative(written)}: {route_command(written, args.dataset)} reads it")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
