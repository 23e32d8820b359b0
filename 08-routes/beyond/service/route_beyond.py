"""route.py with what goes beyond the post: the best decision's router, the gate, the certified rule, ask sets.

    python3 08-routes/beyond/service/route_beyond.py "where is my card?"                  # the decision that acts on the most
    python3 08-routes/beyond/service/route_beyond.py --decision model "where is my card?"  # post 08's model alone
    python3 08-routes/beyond/service/route_beyond.py --rule certified "where is my card?"
    python3 08-routes/beyond/service/route_beyond.py --alpha 0.2 "where is my card?"      # and its conformal ask set

Post 08's route.py routes messages with the model alone's router file. This
script routes them with a decision router (decisions/decision_router.py):
by default the one whose served decision acts on the most calib answers
(decisions/choose.py, printed first with the runner-up and what the model
adds), else --decision's or --router's. The decision answers each message
(the model alone, or combined with a ranking, or the ranking without the
model, which needs no llama-server), the router's isotonic map calibrates
it, and its thresholds route it, with on top:

- what stands before act, always on (safety.py): an intent the label file
  marks irreversible (terminate_account...) gets a confirmation question
  instead (route "confirm"), whatever its confidence; a message unlike the
  calib messages (typicality.py's gate, fitted on the decision's calib
  answers) or that carries a mark guard.py keeps (code, intent name,
  markup) is handed over; an intent it marks "change" (change_pin...) is
  asked about unless its calibrated confidence reaches the act threshold of
  --change-target (harm.py, default 99.9%), and a change or an irreversible
  intent asked for someone else ("my son's", "on behalf of") is handed over;
- --other-model: a server that runs another model than the router's is used,
  but nothing is acted on: an act is asked about instead;
- --target, --ask-target: thresholds refitted at these targets on the
  router's calib answers and its off-topic answers (post 08's rules);
- --rule certified: act only above a raw confidence whose calib precision is
  certified at level 1 - --delta (certified_routes.py);
- --alpha: also print the message's conformal ask set (ask_sets.py): the
  codes that hold the right one with probability at least 1 - alpha, and
  the route that set gives.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from ask_sets import ConformalFit, Groups, alpha_value, fit_conformal, label_groups, prediction_set, set_route
from certified_routes import CertifiedThresholds, add_rule_arguments, fit_rule, rule_warning
from choose import add_router_options, choice_lines, router_of_options
from customer_messages import AMERICAN_EXPRESS, FIAT, STILL_WAITING
from decision_router import Ready, read_decision_router, ready_router
from decisions import ask_live
from guarantee import confidence_percent
from harm import CHANGE_TARGET, check_change_target
from llama_http import Client, exit_on_server_errors
from prompt import Prompt
from registry import add_dataset_argument
from results_record import ResultsLine
from route import check_model, check_router, clarifying_question, describe_thresholds, print_action, print_answer
from routes import TARGET, fraction, route_of
from safety import Safety, route_before_act
from typed_request import probe
from typicality import confirmation_question

# Three of post 01's messages, all from the calibration split; in the series (GB10 reference) they go three ways
# (ask, act, hand over).
ROUTED = (STILL_WAITING, FIAT, AMERICAN_EXPRESS)
OTHER_MODEL = ("another model: the server runs another model than the router was fitted on (--other-model), "
               "so nothing is acted on; asked instead")


def print_checked_route(message: str, line: ResultsLine, calibrated: float, prompt: Prompt, thresholds, safety: Safety | None,
                acting: bool = True, conformal: tuple[ConformalFit, Groups] | None = None) -> str:
    """route.print_checked_route with what stands before act; return the route ("confirm" too).

    line: the decision's answer, calibrated: its calibrated confidence;
    thresholds: the router (or thresholds refitted at other targets or by
    the certified rule: anything route_of takes). Where they would act,
    safety decides (safety.py; None: nothing, post 08's routes): an
    irreversible intent gets a confirmation question (route "confirm"), a
    message the gate or a kept mark of guard.py stops is handed over with
    the reason, and a change below t_change is asked about, each with a line
    that says why; with acting False (another model) an act is asked about.
    conformal: a fit of ask_sets.py and the groups of the prompt; when given,
    the message's ask set and the route it gives are printed after the route.
    """
    route = route_of(line, calibrated, thresholds)
    print_answer(message, line, calibrated)
    why = safety.why(message, line, calibrated) if route == "act" and safety is not None else None
    if route == "act":
        route = route_before_act(why)
    if route == "act" and not acting:
        why, route = OTHER_MODEL, "ask"
    if route == "confirm":
        print(f"{why}\nroute: confirm\nquestion: {confirmation_question(prompt.by_intent[line.intent])}")
        return "confirm"
    out_of_scope = frozenset(thresholds.out_of_scope)
    if why:
        print(f"before act: not acted on: {why}")
    if why and route == "hand_over":  # the reason, not "too unsure": the confidence reached the act threshold
        print(f"route: hand over\nhand-over text: Handed over to a person: not acted on: {why}.")
    else:
        print_action(route, line, prompt, calibrated, out_of_scope)
    if conformal is not None:
        print_ask_set(line, prompt, *conformal, out_of_scope, guarded=why is not None)
    return route


def ask_set_lines(record: ResultsLine, prompt: Prompt, fit: ConformalFit, groups: Groups,
                  out_of_scope: frozenset[str], guarded: bool = False) -> tuple[str, str]:
    """The conformal ask set of one answer, two lines: its codes (up to three named), and what the set route
    does (guarded: the message carries a mark of guard.py, so an act becomes a hand-over)."""
    codes = prediction_set(record, fit, groups)
    shown = ", ".join(codes[:3]) + (f" and {len(codes) - 3} more" if len(codes) > 3 else "")
    codes_line = (f"ask set (alpha {fit.alpha:.2f}: holds the right intent with probability >= "
                  f"{100 * (1 - fit.alpha):.0f}%): {len(codes)} code{'s' * (len(codes) != 1)}"
                  + (f": {shown}" if codes else ""))
    route = set_route(codes, out_of_scope)
    if route == "act" and guarded:
        route_line = "set route: hand over (the guard: not acted on)"
    elif route == "act":
        route_line = f"set route: act (one candidate: {prompt.intents[codes[0]].name})"
    elif route == "ask":
        route_line = f"set route: ask: {clarifying_question(*(prompt.intents[code] for code in codes))}"
    else:
        route_line = "set route: hand over (" + ("no code is likely enough" if not codes else
                                                 "out of scope" if len(codes) == 1 else "too many to ask about") + ")"
    return codes_line, route_line


def print_ask_set(record: ResultsLine, prompt: Prompt, fit: ConformalFit, groups: Groups,
                  out_of_scope: frozenset[str], guarded: bool = False) -> None:
    """Print the ask_set_lines of one answer."""
    print("\n".join(ask_set_lines(record, prompt, fit, groups, out_of_scope, guarded)))


def describe_rule(thresholds) -> str:
    """route.describe_thresholds; the certified rule says it compares the raw confidence, and its level."""
    t = thresholds
    if not isinstance(t, CertifiedThresholds):
        return describe_thresholds(t)
    level = confidence_percent(t.certification.delta)
    act = (f"act raw >= {t.t_act:.3f} (certified at {level})" if t.t_act is not None
           else f"act none ({100 * t.target:.1f}% precision not certified at {level})")
    ask = f"ask >= {t.t_ask:.3f}" if t.t_ask is not None else "ask none"
    return f"{act}, {ask}"


def thresholds_of(ready: Ready, args: argparse.Namespace):
    """The router itself (its thresholds) at its own targets and the point rule; else thresholds refitted on its
    calib and off-topic answers at --target and --ask-target by --rule (certified_routes.fit_rule)."""
    router = ready.router.router
    target = args.target if args.target is not None else router.target
    ask_target = args.ask_target if args.ask_target is not None else router.ask_target
    if args.rule == "point" and (target, ask_target) == (router.target, router.ask_target):
        return router
    return fit_rule(ready.calib + ready.offtopic, ready.calibrated, target, ask_target, frozenset(router.out_of_scope),
                    args.rule, args.delta)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("messages", nargs="*", help="customer messages (default: the three that post 01 routes)")
    add_dataset_argument(parser)
    add_router_options(parser)
    parser.add_argument("--other-model", action="store_true",
                        help="use a server that runs another model than the router's; nothing is then acted on")
    parser.add_argument("--target", type=fraction, help="refit the act threshold at this precision on calib "
                        "(default: the router's own)")
    parser.add_argument("--ask-target", type=fraction, help="refit the ask threshold at this share (default: the "
                        "router's own)")
    add_rule_arguments(parser)
    parser.add_argument("--alpha", type=alpha_value,
                        help="also print the conformal ask set at this miss rate, in (0, 1) (ask_sets.py)")
    parser.add_argument("--change-target", type=float, default=CHANGE_TARGET,
                        help=f"the precision on calib an answer whose intent the label file marks 'change' must reach "
                             f"to be acted on, at least the act target (default: {CHANGE_TARGET}; harm.py)")
    args = parser.parse_args()
    if any(not message.strip() for message in args.messages):
        parser.error("a message is empty: give the text of a customer message")
    try:
        check_change_target(args.change_target, args.target or TARGET)  # a router's target is TARGET unless refitted
    except ValueError as error:
        parser.error(str(error))

    path, choice = router_of_options(args.dataset, args.router, args.decision)
    decision_router = read_decision_router(path)
    ready = ready_router(decision_router, path, args.change_target)
    check_router(decision_router.router, path, args.dataset, ready.decider.prompt)
    thresholds = thresholds_of(ready, args)
    warning, client, model = None, None, ""
    if decision_router.decision.model:
        client = Client()
        info = client.model_info()
        warning = check_model(decision_router.router, path, info, args.other_model)
        probe(client, ready.decider.prompt)
        model = info["model"]
        print(f"server: {client.url}  model: {model}  build: {info['build']}")
    print("\n".join(choice_lines(choice) if choice else [f"decision: {decision_router.decision.name}: "
                                                        f"{decision_router.decision.what}"]))
    router = decision_router.router
    print(f"router: {path.name} (fitted {router.fitted} on {router.calib_answers} calib answers of {router.model}, "
          f"{decision_router.offtopic_answers} off-topic answers in its thresholds' fit): {describe_rule(thresholds)}")
    if thresholds is not router and (rule := rule_warning(thresholds)):
        print(rule)
    if warning:
        print(warning + "; nothing is acted on: an act is asked about instead")
    print(ready.safety.describe())
    conformal = None if args.alpha is None else (fit_conformal(ready.calib, args.alpha),
                                                 label_groups(ready.decider.prompt.intents))

    def ask(prompt, text):
        return ask_live(client, prompt, text, model)
    for message in args.messages or ROUTED:
        print()
        line = ready.decider.line(message, ask if client else None)
        print_checked_route(message, line, ready.calibrated(line), ready.decider.prompt, thresholds, ready.safety,
                    warning is None, conformal)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
