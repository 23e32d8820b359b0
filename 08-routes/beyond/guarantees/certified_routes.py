"""routes.py with a second act rule beside the post's: a certified one (beyond the series).

    python3 08-routes/beyond/guarantees/certified_routes.py                    # both act rules, the point rule's routes
    python3 08-routes/beyond/guarantees/certified_routes.py --target 0.60      # a target the calib answers support
    python3 08-routes/beyond/guarantees/certified_routes.py --dataset clinc150 --target 0.40 --rule certified
    python3 08-routes/beyond/guarantees/certified_routes.py --target 0.80 --rule certified --delta 0.10

Post 08's routes.py fits t_act by the point rule: the lowest calibrated
confidence whose calib answers reach the target. It promises nothing beyond
calib (3 right of 3 pass a 98.5% target). The certified rule takes instead:

  certified  the lowest raw confidence whose exact one-sided lower bound of calib
             precision (Clopper-Pearson, level 1 - delta) reaches the target:
             the raw thresholds keeping 10%, 20%, ... of the calib answers are
             tried from the highest down, stopping at the first that fails
             (fixed-sequence testing, certified_separation.py's certified_coverage). If calib
             and new messages are exchangeable, its precision on new messages
             reaches the target with probability at least 1 - delta.

t_ask stays routes.py's: the calibrated confidence, fitted on the answers
not acted on. The script prints both act rules side by side with their calib
support and what each does on the reported split; --rule picks the one whose
full routes follow (default point: then the routes are routes.py's). It
reads the reference files where routes.py does (08-routes/reference/ for the
kinds of run of this folder). No server needed.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from guarantee import DELTA, Certification, add_delta_argument, confidence_percent, lower_bound
from intervals import LEVEL, percent_down
from routes import (ACT_COLUMNS, ASK_TARGET, CALIBRATION, TARGET, Calibrator, Thresholds, act_row, add_threshold_arguments,
                    asked_on, ask_cuts, best_cut, closing_line, fit_from, fit_inputs, fit_thresholds,
                    print_routes_on, report, route_all, support_warning, threshold_lines)
from results_record import ResultsLine
from calib_split import add_fit_arguments, load_fit_and_report
from saved_answers import Loaded
from certified_separation import certified_coverage
from compare import percent
from separation import accuracy_coverage
from variants import add_variant_argument, read_variant, reading

RULES = ("point", "certified")


@dataclass(frozen=True)
class CertifiedThresholds(Thresholds):
    """Thresholds whose act route is the certified rule: t_act is a raw confidence, certified at level 1 - delta.

    certification: how t_act was found (post 07's Certification: the grid
    of thresholds tried, the first that failed, delta). act is its point
    (None: the target is not certified, no act route); ask is fitted on the
    answers below t_act in raw confidence, on the calibrated confidence as
    in routes.py.
    """

    certification: Certification | None = None

    def acts(self, record: ResultsLine, calibrated: float) -> bool:
        """Whether the act route takes this answer: its raw confidence (record.confidence) >= t_act."""
        return self.t_act is not None and record.confidence >= self.t_act

    def act_condition(self) -> str:
        """The act rule as a condition, e.g. 'raw >= 0.612'; '' without an act route."""
        return "" if self.act is None else f"raw >= {self.act.threshold:.3f}"

    def why_no_act(self) -> str:
        """Why the target is not certified, in one clause after 'none: '."""
        c = self.certification
        if c.needed is None:
            return f"{percent(self.target)} precision is never certified (no count rules out a little less)"
        if c.first is None:
            return (f"{percent(self.target)} needs {c.needed} calib answers above a threshold, all right; "
                    f"there are {self.eligible}")
        return (f"the first threshold tested, raw >= {c.failed.threshold:.3f}, keeps {c.failed.kept} answers, "
                f"{c.failed.hits} right, lower bound {percent_down(c.failed_lower)}")


def rule_of(thresholds: Thresholds) -> str:
    """The name of the act rule of thresholds: "certified" (CertifiedThresholds) or "point" (routes.py's)."""
    return "certified" if isinstance(thresholds, CertifiedThresholds) else "point"


def fit_certified(calib: list[ResultsLine], calibrate: Calibrator, target: float = TARGET,
                  ask_target: float = ASK_TARGET, out_of_scope: frozenset[str] | set[str] = frozenset(),
                  delta: float = DELTA) -> CertifiedThresholds:
    """Fit t_act by the certified rule and t_ask below it, on the calib records routes.fit_thresholds reads.

    t_act = certified_separation.certified_coverage (the thresholds that keep 10%, 20%,
    ... of the answers, fixed-sequence testing of their exact lower bounds at
    level 1 - delta; Angelopoulos et al. 2021, "Learn then test") on the raw
    confidence, since the calibration was fitted on these same calib answers
    and thresholds read off it would be chosen with their outcomes; acting on
    calibrated >= c is acting on raw >= some r anyway, as the isotonic map
    never reverses two answers. t_ask = routes.fit_ask over the answers below
    t_act in raw confidence. Raises ValueError as routes.fit_inputs does, and
    for delta outside (0, 1).
    """
    out_of_scope = frozenset(out_of_scope)
    answers, calibrated = fit_inputs(calib, calibrate, target, ask_target, out_of_scope)
    corrects = [r.correct for r in answers]
    raw = [r.confidence for r in answers]
    certification = certified_coverage(accuracy_coverage(raw, corrects), target, delta)
    act = certification.point
    acted = [act is not None and score >= act.threshold for score in raw]
    ask, ask_floor = ask_cuts(answers, calibrated, acted, ask_target)
    return CertifiedThresholds(target, ask_target, act, ask, best_cut(list(zip(calibrated, corrects))), len(answers),
                               out_of_scope, ask_floor=ask_floor, certification=certification)


def fit_rule(calib: list[ResultsLine], calibrate: Calibrator, target: float = TARGET, ask_target: float = ASK_TARGET,
             out_of_scope: frozenset[str] | set[str] = frozenset(), rule: str = "point",
             delta: float = DELTA) -> Thresholds:
    """The thresholds of one act rule: routes.fit_thresholds ("point") or fit_certified ("certified", at delta).

    Raises ValueError for another rule, and as those two do.
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}: expected one of {', '.join(RULES)}")
    if rule == "point":
        return fit_thresholds(calib, calibrate, target, ask_target, out_of_scope)
    return fit_certified(calib, calibrate, target, ask_target, out_of_scope, delta)


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """--rule and --delta, beside routes.add_threshold_arguments (--target, --ask-target)."""
    parser.add_argument("--rule", choices=RULES, default="point",
                        help="how t_act is fitted: point (calib precision reaches the target) or certified "
                             "(its exact lower bound does, at level 1 - delta) (default: point)")
    add_delta_argument(parser)


def fit_both(calib: list[ResultsLine], args: argparse.Namespace) -> tuple[Calibrator, Thresholds, CertifiedThresholds]:
    """The calibration, the point rule's thresholds (routes.fit_from) and the certified rule's (--delta), with
    the same targets and out-of-scope codes."""
    calibrate, point = fit_from(calib, args)
    return calibrate, point, fit_certified(calib, calibrate, args.target, args.ask_target, point.out_of_scope,
                                           args.delta)


def thresholds_of_rule(args: argparse.Namespace) -> tuple[Loaded, Calibrator, Thresholds]:
    """Like routes.thresholds_from, with --rule and --delta, and the calib file of args.variant ("" for run.py's
    answers; a combined decision's calib file for route_beyond.py --shortlist)."""
    calib = read_variant("calib", args.calib, args.dataset, getattr(args, "variant", ""), "--calib")
    calibrate, point, sure = fit_both(calib.records, args)
    return calib, calibrate, sure if args.rule == "certified" else point


def rule_warning(thresholds: Thresholds) -> str | None:
    """routes.support_warning for the point rule, saying that the certified rule refuses such a threshold; None
    for the certified rule (its lower bound already answers for the support)."""
    warning = None if rule_of(thresholds) == "certified" else support_warning(thresholds)
    return None if warning is None else warning + " (--rule certified refuses it)"


def act_rule_lines(point: Thresholds, sure: CertifiedThresholds) -> list[str]:
    """Both act rules side by side with their calib support: a heading, the columns, one row per rule (answers,
    right, precision, exact lower bound; or why it has no act route), then what the certified rule promises."""
    delta = sure.certification.delta
    level = confidence_percent(delta)
    codes = "/".join(sorted(point.out_of_scope))
    kind = f"an in-scope code (not {codes})" if codes else "a code"
    lines = [f"act rules for {percent(point.target)} precision, fitted on {point.eligible} calib answers with {kind}:",
             f"{'rule':<10} {'act when':<21} {'calib answers':>13} {'right':>6} {'precision':>10} "
             f"{f'{level} lower bound':>16}"]
    for t in (point, sure):
        if t.act is None:
            lines.append(f"{rule_of(t):<10} none: {t.why_no_act()}")
        else:
            lines.append(f"{rule_of(t):<10} {t.act_condition():<21} {t.act.kept:13d} {t.act.hits:6d} "
                         f"{percent(t.act.accuracy):>10} {percent_down(lower_bound(t.act.hits, t.act.kept, delta)):>16}")
    c = sure.certification
    start = f" (at least {c.needed}: fewer cannot reach {percent(c.target)})" if c.needed else ""
    stop = (f"; here raw >= {c.failed.threshold:.3f}: {c.failed.hits} of {c.failed.kept} right, lower bound "
            f"{percent_down(c.failed_lower)}" if c.point is not None and c.failed is not None else "")
    lines.append(f"certified: raw thresholds keeping 10%, 20%, ... of these calib answers{start},\n"
                 f"  tried from the highest down, stopping at the first whose one-sided {level} exact lower bound "
                 f"falls short\n  (fixed-sequence testing){stop}.\n"
                 f"  If calib and new messages are exchangeable, its precision on new messages is at least "
                 f"{percent(c.target)} with probability\n  at least {level}; the point rule promises nothing beyond calib.")
    return lines


def print_act_rules(point: Thresholds, sure: CertifiedThresholds) -> None:
    """Print the act_rule_lines of both rules."""
    print("\n".join(act_rule_lines(point, sure)))


def print_act_on_split(split: str, records: list[ResultsLine], calibrate: Calibrator, rules: list[Thresholds],
                       level: float = LEVEL) -> None:
    """What each act rule does on the reported split, one row each (routes.act_row): answers acted on and
    coverage, right and precision (exact intervals at `level`), wrong actions."""
    print(f"{split} ({len(records)} answers), {100 * level:.0f}% exact (Clopper-Pearson) intervals:")
    print(f"{'rule':<10} {ACT_COLUMNS}")
    for t in rules:
        print(f"{rule_of(t):<10} {act_row(report(records, route_all(records, calibrate, t), t.out_of_scope), level)}")


def rule_closing_line(thresholds: Thresholds, result, split: str, delta: float) -> str:
    """routes.closing_line with the rule named; a target the certified rule does not certify says so."""
    rule = rule_of(thresholds)
    if thresholds.act is None and rule == "certified":
        line = (f"acted on 0.0% of {split} answers: {percent(thresholds.target)} precision is not certified "
                f"on calib at {confidence_percent(delta)}")
    else:
        line = closing_line(thresholds, result, split)
    return f"{line} ({rule} rule)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_variant_argument(parser)
    add_threshold_arguments(parser)
    add_rule_arguments(parser)
    args = parser.parse_args()

    with reading(args.variant):  # both files of args.variant, and their describe() lines
        _, calib, _, records = load_fit_and_report(args)
    calibrate, point, sure = fit_both(calib, args)
    thresholds = sure if args.rule == "certified" else point
    print(CALIBRATION + "\n")
    if warning := rule_warning(thresholds):
        print(warning + "\n")
    print_act_rules(point, sure)
    print()
    print_act_on_split(args.split, records, calibrate, [point, sure])
    print()
    print(f"routes with the {args.rule} rule (ask fitted on the calib answers {asked_on(thresholds)}):")
    print("\n".join(threshold_lines(thresholds)))

    result = print_routes_on(args.split, records, calibrate, thresholds, f" with the {args.rule} rule")
    print("\n" + rule_closing_line(thresholds, result, args.split, args.delta))
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
