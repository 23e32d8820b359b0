"""Fit a router for every decision that has saved runs, and say which one the service serves.

    python3 08-routes/beyond/decisions/fit_routers.py                        # BANKING77: every decision with runs
    python3 08-routes/beyond/decisions/fit_routers.py --decision model+regression
    python3 08-routes/beyond/decisions/fit_routers.py --offtopic-share 0      # thresholds on calib alone, for comparison
    python3 08-routes/beyond/decisions/fit_routers.py --dataset clinc150

For each decision of decisions.py whose calib run exists (your own complete
run, else the committed one), decision_router.py fits its router: the
combined weights, post 06's isotonic map, post 08's thresholds (with the
off-topic answers of set_answers.py, each counted wrong, where they exist),
harm.py's t_change and the gate, and writes it to 03-where-confidence-comes-
from/results/<dataset>-<decision>-decision-router.json (--out-folder for
another folder). No server is needed: the answers are the saved runs'.

One row per decision: what the served decision (thresholds, then what
stands before act) does on calib, on the whole off-topic set (the sample
that joined the fit, and the rest, held out) and, where the decision's test
run exists, on the test split: the share acted on and its
precision with exact 95% intervals, and the wrong acts by the kind of
action of their intent. The closing lines are the service's choice
(choose.py): the decision whose act coverage on calib is highest, the
runner-up, and what the model adds.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from choose import choice_lines, choose
from decision_router import (OFFTOPIC_SHARE, SUFFIX, DecisionRouter, Fitted, fit_decision_router, offtopic_path,
                             read_lines, served_route, write_decision_router)
from decisions import DECISIONS, derived_answers
from harm import CHANGE_TARGET, KINDS
from intervals import clopper_pearson
from prompt import load_prompt
from registry import DATASETS, add_dataset_argument
from results_file import relative
from results_record import ResultsLine
from routes import add_threshold_arguments
from routes import interval_text
from saved_answers import OWN_RESULTS
from variants import read_variant


def served_routes(lines: list[ResultsLine], router: DecisionRouter, fitted: Fitted) -> list[str]:
    """The served route of each answer (decision_router.served_route)."""
    return [served_route(line, fitted.calibrate(line) if line.status == "ok" else 0.0, router.router, fitted.safety)
            for line in lines]


def act_cells(lines: list[ResultsLine], routes: list[str], fitted: Fitted) -> tuple[str, str, str]:
    """(coverage with its interval, precision with its interval, wrong acts by kind "inform/change/irreversible")."""
    acted = [line for line, route in zip(lines, routes) if route == "act"]
    coverage = interval_text(clopper_pearson(len(acted), len(lines)))
    precision = interval_text(clopper_pearson(sum(a.correct for a in acted), len(acted))) if acted else "-"
    wrong = [fitted.safety.harm.kind(a.intent) for a in acted if not a.correct]
    return coverage, precision, "/".join(str(wrong.count(kind)) for kind in KINDS)


def offtopic_answers(dataset: str, router: DecisionRouter) -> list[ResultsLine]:
    """The decision's answers to the whole off-topic set (set_answers.py's file of its run variant), [] without
    one: the answers that joined the fit and the ones held out of it."""
    path = offtopic_path(dataset, router.decision)
    if not path.exists():
        return []
    prompt = load_prompt(dataset)
    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}
    return derived_answers(router.decision, read_lines(path), router.weights, intent_of,
                           DATASETS[dataset].out_of_scope_codes())


def test_answers(dataset: str, router: DecisionRouter) -> list[ResultsLine] | None:
    """The decision's answers to the test split (its test run's lines with the router's weights), None when the
    decision has no test run."""
    try:
        test = read_variant("test", None, dataset, router.decision.run_variant)
    except (FileNotFoundError, ValueError):
        return None
    prompt = load_prompt(dataset)
    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}
    return derived_answers(router.decision, test.records, router.weights, intent_of,
                           DATASETS[dataset].out_of_scope_codes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--decision", choices=list(DECISIONS), action="append",
                        help="fit this decision only (repeat for several; default: every decision with a calib run)")
    add_threshold_arguments(parser)
    parser.add_argument("--change-target", type=float, default=CHANGE_TARGET,
                        help=f"the precision on calib a change must reach to be acted on (default {CHANGE_TARGET}; harm.py)")
    parser.add_argument("--offtopic-share", type=float, default=OFFTOPIC_SHARE, metavar="S",
                        help=f"the share of the thresholds' fit the off-topic answers make, in [0, 1) (default "
                             f"{OFFTOPIC_SHARE}; 0: the calib answers alone)")
    parser.add_argument("--out-folder", type=Path, metavar="DIR",
                        help="write the routers here (default: 03-where-confidence-comes-from/results/)")
    args = parser.parse_args()
    folder = args.out_folder or OWN_RESULTS
    written: dict[str, Path] = {}
    print(f"{args.dataset}: the served decision at act {100 * args.target:.1f}%, ask {100 * args.ask_target:.1f}%, "
          f"change {100 * args.change_target:.1f}%, off-topic answers {100 * args.offtopic_share:.0f}% of the thresholds' "
          "fit (in fit: how many; every fit on calib; acted: coverage and precision with exact 95% intervals; wrong "
          "acts by kind: inform/change/irreversible)\n")
    header = (f"{'decision':<17} {'in fit':>6}  {'calib acted':<22} {'off-topic acted':>15}  "
              f"{'test acted':<22} {'test precision':<22} {'wrong':>7}")
    print(header)
    in_fit = 0  # off-topic answers in all the fits
    for name in args.decision or DECISIONS:
        decision = DECISIONS[name]
        try:
            router, fitted = fit_decision_router(args.dataset, decision, target=args.target, ask_target=args.ask_target,
                                                 change_target=args.change_target, offtopic_share=args.offtopic_share)
        except FileNotFoundError as missing:
            if args.decision:
                raise
            print(f"{name:<17} no calib run: {missing}")
            continue
        except ValueError as unfit:  # e.g. a field's gate without labelled calib answers (fields/README.md)
            if args.decision:
                raise
            print(f"{name:<17} not fitted: {unfit}")
            continue
        path = write_decision_router(router, folder / f"{args.dataset}-{name}{SUFFIX}")
        written[name] = path
        calib_routes = served_routes(fitted.calib, router, fitted)
        calib_cell = act_cells(fitted.calib, calib_routes, fitted)[0]
        every = offtopic_answers(args.dataset, router)  # the whole off-topic set: most of it held out of the fit
        offtopic = f"{served_routes(every, router, fitted).count('act')} of {len(every)}" if every else "-"
        test = test_answers(args.dataset, router)
        cells = act_cells(test, served_routes(test, router, fitted), fitted) if test else ("-", "-", "-")
        print(f"{name:<17} {router.offtopic_answers:>6}  {calib_cell:<22} {offtopic:>15}  {cells[0]:<22} "
              f"{cells[1]:<22} {cells[2]:>7}")
        in_fit += router.offtopic_answers
    if written and not in_fit and args.offtopic_share:
        print(f"\nno off-topic answers of {args.dataset} joined a fit: python3 08-routes/beyond/decisions/set_answers.py "
              f"--dataset {args.dataset} writes them (CLINC150 messages no bank is asked: decisions/README.md says "
              "which, before you use them for another task)")
    if not written:
        print(f"\nno decision has a calib run: python3 03-where-confidence-comes-from/run.py --dataset {args.dataset} "
              "--split calib first")
        return 1
    print("\nrouters written to " + ", ".join(str(relative(p)) for p in written.values()))
    choice = choose(args.dataset, written)
    print("\n" + "\n".join(choice_lines(choice)))
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
