"""route.py with what goes beyond the post: the certified rule, conformal ask sets, the shortlist, the gate before act.

    python3 08-routes/beyond/route_beyond.py --target 0.60 --rule certified "where is my card?"
    python3 08-routes/beyond/route_beyond.py --alpha 0.2 "where is my card?"     # and its conformal ask set
    python3 08-routes/beyond/route_beyond.py --shortlist 5 "where is my card?"   # the combined decision (combined.py)

Post 08's route.py routes messages through the running server with the
router file routes.py wrote; this script still fits the calibration and the
thresholds on the calib file at every call (route_fitted.py: the certified
rule, the ask sets and the gate need the calib answers themselves), routes
with route.py's printing functions and adds, on top:

- what stands before act, always on (before_act): an intent the label file
  marks irreversible (terminate_account...) gets a confirmation question
  instead (route "confirm"), whatever its confidence; a message unlike the
  calib messages (typicality.py's gate, fitted on the calib file) or that
  carries a mark guard.py keeps (code, intent name, markup) is handed over;
  an intent it marks "change" (change_pin...) is asked about unless its
  calibrated confidence reaches the act threshold of --change-target
  (harm.py, default 99.9%), and a change or an irreversible intent asked for
  someone else ("my son's", "on behalf of") is handed over;
- --rule certified: act only above a raw confidence whose calib precision is
  certified at level 1 - --delta (certified_routes.py);
- --alpha: also print the message's conformal ask set (ask_sets.py): the
  codes that hold the right one with probability at least 1 - alpha, and
  the route that set gives;
- --shortlist K: the combined decision (combined.py): the model chooses
  among the retriever's top K codes, weighed with the retriever; the
  calibration and thresholds come from the combinedK calib file.

Without these options it prints what route.py prints (the thresholds fitted
here rather than read from a router file), with the gate's line before the
first message and its verdict where the thresholds would act.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
sys.path.insert(0, str(Path(__file__).resolve().parent))  # and this beyond folder, for its own modules
from ask_sets import ConformalFit, Groups, alpha_value, fit_conformal, label_groups, prediction_set, set_route
from certified_routes import CertifiedThresholds, add_rule_arguments, rule_warning, thresholds_of_rule
from combined import Weights, combined_record
from guarantee import confidence_percent
from guard import KEPT, verdict
from llama_http import Client, exit_on_server_errors
from prompt import Prompt, load_prompt
from registry import DATASETS
from results_record import ResultsLine
from route import clarifying_question, describe_thresholds, print_action, print_answer
from route_fitted import ROUTED, add_route_arguments, ask_live, calibrated_of, check_messages, connect, print_setup
from routes import Calibrator, Thresholds, route_of
from shortlist import shortlist_of, shortlisted
from typed_request import probe
from harm import CHANGE_TARGET, HarmRule, check_change_target, fit_harm_rule
from typicality import Gate, confirmation_question, fit_gate, signals


def before_act(message: str, record: ResultsLine, values: dict[str, float], gate: Gate, harm: HarmRule,
               calibrated: float, check: str = "gate") -> str | None:
    """Why an answer the thresholds would act on is not acted on, or None to act.

    check "gate" (what this script does), in this order: a change or an
    irreversible intent asked for someone else is handed over ("someone
    else: ...", harm.for_someone_else); an irreversible intent is confirmed
    ("irreversible: ..."); a message unlike the calib
    messages (typicality.py's gate, on its signals `values`) or carrying a
    mark that guard.KEPT keeps is handed over; a change below t_change (harm.py,
    on `calibrated`, the answer's calibrated confidence) is asked instead
    ("change: ..."). check "guard": guard.py's whole pattern list alone (the
    earlier guard, for comparison); "none": post 08's routes.
    """
    if check == "none":
        return None
    if check == "guard":
        return verdict(message)
    why = harm.why_not_act(record.intent, calibrated, message)
    if why and why.startswith(("irreversible", "someone else")):
        return why
    return gate.why(values) or verdict(message, KEPT) or why


def route_before_act(why: str | None) -> str:
    """The route an act becomes when before_act gives `why`: "act" (None), "confirm" (irreversible), "ask" (a
    change below t_change), else "hand_over"."""
    if why is None:
        return "act"
    return "confirm" if why.startswith("irreversible") else "ask" if why.startswith("change") else "hand_over"


def print_route(message: str, record: ResultsLine, prompt: Prompt, calibrate: Calibrator, thresholds: Thresholds,
                conformal: tuple[ConformalFit, Groups] | None = None,
                checks: tuple[dict[str, float], Gate, HarmRule] | None = None) -> str:
    """route.print_route with what stands before act; return the route ("confirm" too).

    checks: the message's signals, the gate and the harm rule (before_act).
    Where the thresholds would act, an irreversible intent gets a
    confirmation question (route "confirm"), a message the gate or a kept
    mark of guard.py stops is handed over, and a change below t_change is
    asked about, each with a line that says why. conformal: a fit of
    ask_sets.py and the groups of the prompt; when given, the message's ask
    set and the route it gives are printed after the route.
    """
    calibrated = calibrated_of(record, calibrate)
    route = route_of(record, calibrated, thresholds)
    print_answer(message, record, calibrated)
    why = before_act(message, record, *checks, calibrated) if route == "act" and checks else None
    if route == "act":
        route = route_before_act(why)
    if route == "confirm":
        print(f"{why}\nroute: confirm\nquestion: {confirmation_question(prompt.by_intent[record.intent])}")
        return "confirm"
    if why:
        print(f"before act: not acted on: {why}")
    print_action(route, record, prompt, calibrated, thresholds.out_of_scope)
    if conformal is not None:
        print_ask_set(record, prompt, *conformal, thresholds.out_of_scope, guarded=why is not None)
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


def describe_rule(thresholds: Thresholds) -> str:
    """route.describe_thresholds; the certified rule says it compares the raw confidence, and its level."""
    t = thresholds
    if not isinstance(t, CertifiedThresholds):
        return describe_thresholds(t)
    level = confidence_percent(t.certification.delta)
    act = (f"act raw >= {t.t_act:.3f} (certified at {level})" if t.t_act is not None
           else f"act none ({100 * t.target:.1f}% precision not certified at {level})")
    ask = f"ask >= {t.t_ask:.3f}" if t.t_ask is not None else "ask none"
    return f"{act}, {ask}"


def with_shortlist(record: ResultsLine, shortlist: tuple[tuple[str, float], ...]) -> ResultsLine:
    """A live line with the retriever's shortlist ((code, score) pairs, best first) in its extra fields, as
    shortlist.py writes it, so that combined_record reads it."""
    return replace(record, extra={"shortlist": [[code, score] for code, score in shortlist]})


def shortlist_decision(args, prompt: Prompt, calib: list[ResultsLine], client: Client,
                       model: str) -> Callable[[str], ResultsLine]:
    """message -> the record of its combined decision (combined.py): the model asked among the retriever's
    top --shortlist codes, weighed with the retriever by the weights stored in the combined calib file.

    Prints the weights. Raises ValueError when the calib file carries no weights (not a combined file).
    """
    weights = {Weights.of_line(r) for r in calib} - {None}
    if len(weights) != 1:
        raise ValueError("the calibration file of --shortlist is not one combined.py wrote: "
                         "run 08-routes/beyond/combined.py")
    (fitted,) = weights
    print(f"combined decision: shortlist of {args.shortlist}, P(code) proportional to {fitted.describe()}")
    dataset = DATASETS[args.dataset]
    out_of_scope = dataset.out_of_scope_codes()
    retriever = dataset.fit_retriever()
    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}

    def decide(message: str) -> ResultsLine:
        shortlist = shortlist_of(retriever.rank(message), prompt, args.shortlist, out_of_scope)
        narrowed = shortlisted(prompt, [code for code, _ in shortlist])
        record = with_shortlist(ask_live(client, narrowed, message, model), tuple(shortlist))
        return combined_record(record, fitted, intent_of, out_of_scope)
    return decide


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_route_arguments(parser)
    add_rule_arguments(parser)
    parser.add_argument("--alpha", type=alpha_value,
                        help="also print the conformal ask set at this miss rate, in (0, 1) (ask_sets.py)")
    parser.add_argument("--shortlist", type=int, metavar="K",
                        help="the combined decision: the model chooses among the retriever's top K (on CLINC150 the "
                             "out-of-scope code K-A too, with its own term), weighed with the retriever as combined.py "
                             "fitted it; calibration and thresholds from the combinedK calib file")
    parser.add_argument("--change-target", type=float, default=CHANGE_TARGET,
                        help=f"the precision on calib an answer whose intent the label file marks 'change' must reach "
                             f"to be acted on, at least --target (default: {CHANGE_TARGET}; harm.py)")
    args = parser.parse_args()
    if args.shortlist is not None and args.shortlist < 1:
        parser.error("--shortlist must be 1 or more")
    try:
        check_change_target(args.change_target, args.target)
    except ValueError as error:
        parser.error(str(error))
    args.variant = f"combined{args.shortlist}" if args.shortlist else ""
    check_messages(parser, args)

    calib, calibrate, thresholds = thresholds_of_rule(args)
    client, info = connect(calib, args.other_model)
    prompt = load_prompt(args.dataset)
    probe(client, prompt)
    conformal = None if args.alpha is None else (fit_conformal(calib.records, args.alpha), label_groups(prompt.intents))
    print_setup(client, info, calib, describe_rule(thresholds), rule_warning(thresholds))
    if args.shortlist:
        decide = shortlist_decision(args, prompt, calib.records, client, info["model"])
    else:
        def decide(message: str) -> ResultsLine:
            return ask_live(client, prompt, message, info["model"])
    retriever = DATASETS[args.dataset].fit_retriever()
    gate = fit_gate([signals(r, retriever) for r in calib.records])
    harm = fit_harm_rule(args.dataset, calib.records, calibrate, args.change_target, args.target,
                         thresholds.out_of_scope)
    print(f"before act: {gate.describe()}; guard marks {', '.join(KEPT)}")
    print(f"before act: {harm.describe()}")
    for message in args.messages or ROUTED:
        print()
        record = decide(message)
        print_route(message, record, prompt, calibrate, thresholds, conformal, (signals(record, retriever), gate, harm))
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
