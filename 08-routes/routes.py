"""Three routes for a typed answer: act on it, ask the customer, or hand over to a person.

    python3 08-routes/routes.py                      # fit on calib, route the reference test split
    python3 08-routes/routes.py --target 0.80        # a precision the 1.5B model can reach
    python3 08-routes/routes.py --results my-test-run.jsonl --calib my-calib-run.jsonl
    python3 08-routes/routes.py --dataset clinc150   # its out-of-scope code K-A always hands over
    python3 08-routes/routes.py --target 0.80 --rule certified --delta 0.10

A confidence is only worth something when a program does something different
because of it. Here it picks one of three routes for every answer:

- act        confidence >= t_act: do what the intent says, no question asked;
- ask        calibrated confidence >= t_ask, not acted on: ask "is it A or B?", naming
             the answer and the runner-up in its group;
- hand over  everything else, every answer without a code (status not ok) and every
             answer whose code is declared out of scope: a person reads the message.

The calibrated confidence is post 06's isotonic fit on the calibration split
(fit_calibration). Both thresholds are fitted on that split too:

- t_act, by one of two rules (the script prints both side by side):
  point      the lowest calibrated confidence at which the answers at or above it
             are right at least `target` of the time (default 98.5%): the most
             answers a program may act on while keeping its precision on calib.
             It promises nothing beyond calib: 3 right of 3 pass a 98.5% target;
  certified  the lowest raw confidence whose exact one-sided lower bound of calib
             precision (Clopper-Pearson, level 1 - delta) reaches the target:
             the raw thresholds keeping 10%, 20%, ... of the calib answers are
             tried from the highest down, stopping at the first that fails
             (fixed-sequence testing, post 07's certified_coverage). If calib
             and new messages are exchangeable, its precision on new messages
             reaches the target with probability at least 1 - delta;
- t_ask is the lowest calibrated confidence at which, among the answers that
  would be asked (at or above t_ask, not acted on), the right intent is one of
  the two named at least `ask_target` of the time (default 90%).

--rule picks the one the routes use (default point). Then the test split is
routed with those thresholds, never refitted on it, and act precision and
coverage get exact (Clopper-Pearson) 95% intervals. No server needed: it
reads post 03's results files.
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
from guarantee import (DELTA, LEVEL, Certification, Interval, add_delta_argument, clopper_pearson, confidence_percent,
                       lower_bound, number_argument)
from isotonic import fit_isotonic
from out_of_scope import code_list, out_of_scope_codes
from separation import SweepPoint, accuracy_coverage, certified_coverage, percent, sweep
from results_record import ResultsLine
from calib_split import add_fit_arguments, load_fit_and_report
from saved_answers import Loaded, read_split

ROUTES = ("act", "ask", "hand_over")
RULES = ("point", "certified")
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


def top_two(record: ResultsLine) -> tuple[str, ...]:
    """The codes a clarifying question names: the answer's code, then the runner-up in its group.

    record: a post 03 answer with status ok (its code and intent_distribution are read).
    The runner-up is the most likely other intent letter of the chosen group
    (ties broken by letter). Intents of other groups have no probability: the
    model wrote only one group letter, and the intent step was asked inside
    that group alone. So when the group is wrong, the right intent is never
    among the two. A group with a single intent gives one code.
    """
    distribution = record.intent_distribution
    others = sorted((x for x in distribution if x != record.intent_letter), key=lambda x: (-distribution[x], x))
    return (record.code, *(f"{record.group_letter}-{x}" for x in others[:1]))


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
    hand over (none for BANKING77). rule: "point" (act compares the calibrated
    confidence with t_act) or "certified" (act compares the raw confidence;
    certification says how it was found, at level 1 - delta).
    """

    target: float
    ask_target: float
    act: SweepPoint | None
    ask: SweepPoint | None
    best_act: SweepPoint
    eligible: int
    out_of_scope: frozenset[str] = field(default_factory=frozenset)
    rule: str = "point"
    certification: Certification | None = None

    @property
    def act_on(self) -> str:
        """Which confidence t_act is compared with: "calibrated" (point rule) or "raw" (certified rule)."""
        return "raw" if self.rule == "certified" else "calibrated"

    @property
    def t_act(self) -> float | None:
        """The act threshold, or None when the target is out of reach (no act route)."""
        return None if self.act is None else self.act.threshold

    @property
    def t_ask(self) -> float | None:
        """The ask threshold, or None when there is no ask route."""
        return None if self.ask is None else self.ask.threshold


def eligible(records: list[ResultsLine], out_of_scope: frozenset[str]) -> list[ResultsLine]:
    """The answers a threshold can act on or ask about: status ok and a code that is not out of scope."""
    return [r for r in records if r.status == "ok" and r.code not in out_of_scope]


def fit_thresholds(calib: list[ResultsLine], calibrate: Calibrator, target: float = TARGET, ask_target: float = ASK_TARGET,
                   out_of_scope: frozenset[str] | set[str] = frozenset(), rule: str = "point",
                   delta: float = DELTA) -> Thresholds:
    """Fit t_act and t_ask on calibration records (post 03's fields: status, code, gold_code, correct,
    confidence, intent_distribution).

    rule "point": t_act = lowest_cut of (calibrated confidence, correct) at
    `target`: the selective-classification rule of keeping the largest
    coverage whose precision reaches the target (Geifman and El-Yaniv 2017,
    "Selective classification for deep neural networks", fitted here on plain
    counts). rule "certified": t_act = post 07's certified_coverage (the
    thresholds that keep 10%, 20%, ... of the answers, fixed-sequence testing
    of their exact lower bounds at level 1 - delta; Angelopoulos et al. 2021,
    "Learn then test") on the raw confidence, since the calibration was
    fitted on these same calib answers and thresholds read off it would be
    chosen with their outcomes; acting on calibrated >= c is acting on raw >=
    some r anyway, as the isotonic map never reverses two answers.
    t_ask = lowest_cut of (calibrated confidence, right in top two) at
    `ask_target`, over the answers not acted on only, since those are the ones
    asked. Answers without a code or with an out-of-scope code always hand over,
    so they take no part in the fit. Raises ValueError when a target is not in
    (0, 1], the rule is unknown, delta is outside (0, 1) or no calib answer is
    eligible, or on a calibrated confidence outside [0, 1] (ece.check_inputs).
    """
    check_fraction(target, "the act target")
    check_fraction(ask_target, "the ask target")
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}: expected one of {', '.join(RULES)}")
    out_of_scope = frozenset(out_of_scope)
    answers = eligible(calib, out_of_scope)
    if not answers:
        raise ValueError(f"cannot fit thresholds: none of the {len(calib)} calib answers has an in-scope code")
    calibrated = [calibrate(r) for r in answers]
    corrects = [r.correct for r in answers]
    check_inputs(calibrated, corrects)
    best_act = max(cuts(list(zip(calibrated, corrects))), key=lambda cut: (cut.accuracy, cut.kept))
    certification = None
    if rule == "point":
        act = lowest_cut(list(zip(calibrated, corrects)), target)
        scores = calibrated
    else:
        scores = [r.confidence for r in answers]
        certification = certified_coverage(accuracy_coverage(scores, corrects), target, delta)
        point = certification.point
        act = point
    below = [(c, right_in_top_two(r)) for c, score, r in zip(calibrated, scores, answers)
             if act is None or score < act.threshold]
    ask = lowest_cut(below, ask_target) if below else None
    return Thresholds(target, ask_target, act, ask, best_act, len(answers), out_of_scope, rule, certification)


def route_of(record: ResultsLine, calibrated: float, thresholds: Thresholds) -> str:
    """The route of one answer: "act", "ask" or "hand_over".

    record: a post 03 results line (route.py's live_line for a live message);
    calibrated: its calibrated confidence. t_act is compared with the
    calibrated confidence under the point rule and with the raw one
    (record.confidence) under the certified rule; t_ask always with the
    calibrated one. An answer without a code, or with a code in
    thresholds.out_of_scope, hands over whatever its confidence. A confidence
    exactly at a threshold takes that threshold's route.
    """
    if record.status != "ok" or record.code in thresholds.out_of_scope:
        return "hand_over"
    act_score = record.confidence if thresholds.act_on == "raw" else calibrated
    if thresholds.t_act is not None and act_score >= thresholds.t_act:
        return "act"
    if thresholds.t_ask is not None and calibrated >= thresholds.t_ask:
        return "ask"
    return "hand_over"


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
    the luck of this split, not that of the calibration split; the certified
    rule's lower bound is the one that covers the fit.
    """
    coverage = clopper_pearson(result.answers["act"], result.total, level)
    precision = clopper_pearson(result.right["act"], result.answers["act"], level) if result.answers["act"] else None
    return coverage, precision


# argparse type for a fraction in (0, 1].
fraction = number_argument(check_fraction, "the value")


def add_threshold_arguments(parser: argparse.ArgumentParser) -> None:
    """--target, --ask-target, --rule and --delta: the same options in routes.py and route.py."""
    parser.add_argument("--target", type=fraction, default=TARGET,
                        help=f"precision the act route must reach on calib, a fraction (default: {TARGET})")
    parser.add_argument("--ask-target", type=fraction, default=ASK_TARGET,
                        help="share of asked answers whose right intent is among the two named, on calib "
                             f"(default: {ASK_TARGET})")
    parser.add_argument("--rule", choices=RULES, default="point",
                        help="how t_act is fitted: point (calib precision reaches the target) or certified "
                             "(its exact lower bound does, at level 1 - delta) (default: point)")
    add_delta_argument(parser)


def fit_from(calib: list[ResultsLine], args: argparse.Namespace, rule: str | None = None) -> tuple[Calibrator, Thresholds]:
    """Fit the calibration and the thresholds (--target, --ask-target, --delta; --rule unless `rule` is given)
    on the calib records of --dataset.

    The dataset's out-of-scope codes (07's out_of_scope_codes: K-A for
    CLINC150) always hand over.
    """
    calibrate = fit_calibration(calib)
    return calibrate, fit_thresholds(calib, calibrate, args.target, args.ask_target, out_of_scope_codes(args.dataset),
                                     rule or args.rule, args.delta)


def thresholds_from(args: argparse.Namespace) -> tuple[Loaded, Calibrator, Thresholds]:
    """Load the calib file named by the arguments (--dataset, --calib) and fit_from its answers (error lines left out)."""
    calib = read_split("calib", args.calib, args.dataset, getattr(args, "variant", ""), "--calib")
    return (calib, *fit_from(calib.records, args))


def support_warning(thresholds: Thresholds) -> str | None:
    """A warning line when the act threshold rests on too few calibration answers to mean its target, else None.

    Below 1 / (1 - target) answers above t_act (67 for 98.5%), all of them
    right is no evidence of the target: one wrong answer among them would
    already put the precision below it, and a few dozen answers all right
    happen often at a much lower precision. The certified rule (--rule
    certified) refuses such a threshold instead.
    """
    act = thresholds.act
    needed = math.ceil(1 / (1 - thresholds.target)) if thresholds.target < 1 else math.inf
    if act is None or thresholds.rule != "point" or act.kept >= needed:
        return None
    return (f"warning: the act threshold rests on {act.kept} calib answers; a {percent(thresholds.target)} target needs "
            f"at least {needed} above it before one wrong answer could even show, so its precision on new messages "
            "can be far below the target (--rule certified refuses it)")


def act_when(thresholds: Thresholds) -> str:
    """The act rule as a condition, e.g. 'calibrated >= 0.810' or 'raw >= 0.612'; '' without an act route."""
    return "" if thresholds.act is None else f"{thresholds.act_on} >= {thresholds.act.threshold:.3f}"


def why_no_act(thresholds: Thresholds) -> str:
    """Why a rule has no act route, in one clause after 'none: '."""
    t = thresholds
    if t.rule == "point":
        best = t.best_act
        return (f"no threshold reaches {percent(t.target)} precision on calib (best: {percent(best.accuracy)}, "
                f"{best.hits} of {best.kept} right at >= {best.threshold:.3f})")
    c = t.certification
    if c.needed is None:
        return f"{percent(t.target)} precision is never certified (no count rules out a little less)"
    if c.first is None:
        return f"{percent(t.target)} needs {c.needed} calib answers above a threshold, all right; there are {t.eligible}"
    return (f"the first threshold tested, raw >= {c.failed.threshold:.3f}, keeps {c.failed.kept} answers, "
            f"{c.failed.hits} right, lower bound {percent(c.failed_lower)}")


def print_act_rules(point: Thresholds, sure: Thresholds) -> None:
    """Both act rules side by side with their calib support: answers, right, precision, exact lower bound."""
    delta = sure.certification.delta
    level = confidence_percent(delta)
    codes = code_list(point.out_of_scope)
    kind = f"an in-scope code (not {codes})" if codes else "a code"
    print(f"act rules for {percent(point.target)} precision, fitted on {point.eligible} calib answers with {kind}:")
    print(f"{'rule':<10} {'act when':<21} {'calib answers':>13} {'right':>6} {'precision':>10} "
          f"{f'{level} lower bound':>16}")
    for t in (point, sure):
        if t.act is None:
            print(f"{t.rule:<10} none: {why_no_act(t)}")
        else:
            print(f"{t.rule:<10} {act_when(t):<21} {t.act.kept:13d} {t.act.hits:6d} {percent(t.act.accuracy):>10} "
                  f"{percent(lower_bound(t.act.hits, t.act.kept, delta)):>16}")
    c = sure.certification
    start = f" (at least {c.needed}: fewer cannot reach {percent(c.target)})" if c.needed else ""
    stop = (f"; here raw >= {c.failed.threshold:.3f}: {c.failed.hits} of {c.failed.kept} right, lower bound "
            f"{percent(c.failed_lower)}" if c.point is not None and c.failed is not None else "")
    print(f"certified: raw thresholds keeping 10%, 20%, ... of these calib answers{start},\n"
          f"  tried from the highest down, stopping at the first whose one-sided {level} exact lower bound falls short\n"
          f"  (fixed-sequence testing){stop}.\n"
          f"  If calib and new messages are exchangeable, its precision on new messages is at least {percent(c.target)} "
          f"with probability\n  at least {level}; the point rule promises nothing beyond calib.")


def print_act_on_split(split: str, records: list[ResultsLine], calibrate: Calibrator, rules: list[Thresholds],
                       level: float = LEVEL) -> None:
    """What each act rule does on the reported split: answers acted on and coverage, right and precision
    (exact intervals at `level`), wrong actions."""
    width = f"{100 * level:.0f}%"
    print(f"{split} ({len(records)} answers), {width} exact (Clopper-Pearson) intervals:")
    print(f"{'rule':<10} {'acted':>6}  {'coverage':<22} {'right':>6}  {'precision':<22} {'wrong actions':>13}")
    for t in rules:
        result = report(records, route_all(records, calibrate, t), t.out_of_scope)
        coverage, precision = act_intervals(result, level)
        print(f"{t.rule:<10} {result.answers['act']:6d}  {interval_text(coverage):<22} {result.right['act']:6d}  "
              f"{interval_text(precision):<22} {result.wrong_actions:13d}")


def interval_text(interval: Interval | None) -> str:
    """'92.5% (83.4% - 97.5%)', or '-' for no interval."""
    if interval is None:
        return "-"
    return f"{percent(interval.estimate)} ({percent(interval.low)} - {percent(interval.high)})"


def print_thresholds(thresholds: Thresholds) -> None:
    """The two thresholds of the routes and what they let through on calib, or why a route is missing."""
    t = thresholds
    codes = code_list(t.out_of_scope)
    ask_on = "not acted on" if t.act is not None else "with a code" if not codes else "with an in-scope code"
    print(f"routes with the {t.rule} rule (ask fitted on the calib answers {ask_on}):")
    if t.act is None:
        print(f"  act        none: {why_no_act(t)}")
    else:
        print(f"  act   {act_when(t)}  {t.act.hits} of {t.act.kept} calib answers right "
              f"({percent(t.act.accuracy)}, target {percent(t.target)})")
    if t.ask is None:
        print(f"  ask        none: no threshold gets the right intent among the two named in "
              f"{percent(t.ask_target)} of the asked calib answers")
    else:
        print(f"  ask   calibrated >= {t.ask.threshold:.3f}  right intent among the two named in {t.ask.hits} of "
              f"{t.ask.kept} asked calib answers ({percent(t.ask.accuracy)}, target {percent(t.ask_target)})")
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
    add_fit_arguments(parser)
    add_threshold_arguments(parser)
    args = parser.parse_args()

    calib_path, calib, path, records = load_fit_and_report(args)
    calibrate, point = fit_from(calib, args, "point")
    _, sure = fit_from(calib, args, "certified")
    thresholds = sure if args.rule == "certified" else point
    print("calibrated confidence: isotonic regression of post 06, fitted on calib\n")
    if warning := support_warning(thresholds):
        print(warning + "\n")
    print_act_rules(point, sure)
    print()
    print_act_on_split(args.split, records, calibrate, [point, sure])
    print()
    print_thresholds(thresholds)

    routes = route_all(records, calibrate, thresholds)
    result = report(records, routes, thresholds.out_of_scope)
    print(f"\n{args.split}: {result.total} answers routed with the {thresholds.rule} rule\n")
    print_report(result)
    print()
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

    rule = f" ({thresholds.rule} rule)"
    if thresholds.act is None and thresholds.rule == "point":
        print(f"\nacted on 0.0% of {args.split} answers: {percent(thresholds.target)} precision is out of reach "
              f"on calib (best {percent(thresholds.best_act.accuracy)}){rule}")
    elif thresholds.act is None:
        print(f"\nacted on 0.0% of {args.split} answers: {percent(thresholds.target)} precision is not certified "
              f"on calib at {confidence_percent(args.delta)}{rule}")
    else:
        wrong = f"{result.wrong_actions} wrong action{'' if result.wrong_actions == 1 else 's'}"
        print(f"\nacted on {percent(result.coverage)} of {args.split} answers at {percent(result.act_precision)} "
              f"precision (target {percent(thresholds.target)}), {wrong}{rule}")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
