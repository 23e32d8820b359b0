"""One message in, its route out: act, ask a question, or hand over to a person.

    python3 08-routes/route.py                                  # post 01's three messages
    python3 08-routes/route.py "my card still hasn't arrived, it's been two weeks"
    python3 08-routes/route.py --target 0.80 "can I get a refund for this?" "where is my card?"
    python3 08-routes/route.py --dataset clinc150 "how many moons does jupiter have"
    python3 08-routes/route.py --target 0.60 --rule certified "where is my card?"
    python3 08-routes/route.py --alpha 0.2 "where is my card?"        # and its conformal ask set
    python3 08-routes/route.py --shortlist 5 "where is my card?"      # the combined decision (combined.py)

The typed answer comes from the running server (LLAMA_URL, default
http://127.0.0.1:8080), exactly as in post 03: the code under the grammar,
its confidence from top_logprobs. The calibration and both thresholds are
fitted on the calib file (your own complete calib run of post 03, else the
reference one; routes.py; no server needed for that part), so they hold for
the model that wrote that file: with another model on
the server the script says so, and the route means little. With --dataset
clinc150 the prompt, grammar and calib file are CLINC150's, and an answer of
its out-of-scope code (K-A) always hands over. --rule certified acts only
above a raw confidence whose calib precision is certified at level 1 -
--delta (routes.py). --alpha also prints the message's conformal ask set
(ask_sets.py): the codes that hold the right one with probability at least
1 - alpha, and the route that set gives.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from ask_sets import ConformalFit, Groups, alpha_value, fit_conformal, label_groups, prediction_set, set_route
from combined import Weights, combined_record
from confidence import TypedAnswer
from customer_messages import ROUTED
from decision import CodeReply, ask_code
from guarantee import confidence_percent
from guard import verdict
from labels import Intent, printable
from llama_http import Client, exit_on_server_errors
from registry import DATASETS
from routes import (Calibrator, Thresholds, add_threshold_arguments, route_of, support_warning, thresholds_from,
                    top_two)
from results_record import ResultsLine
from calib_split import add_calib_arguments
from prompt import Prompt, load_prompt
from shortlist import shortlist_of, shortlisted
from typed_lines import answer_fields, read_answer
from typed_request import TOP_LOGPROBS, probe


def plain_words(intent: Intent) -> str:
    """An intent as a customer could read it: its name in words and the first clause of its description.

    "card_arrival" with "A card already ordered or sent has not come: where
    is it, ..." -> "card arrival (a card already ordered or sent has not
    come)". The clause ends at the first ':', ';' or full stop, and text in
    parentheses is left out (descriptions are written for the model, not
    for customers).
    """
    name = intent.name.replace("_", " ").rstrip("?")
    name = name[0].lower() + name[1:] if name[1:2].islower() else name  # "Refund not..." but not "ATM"
    clause = intent.description.replace("e.g.", "for example")
    while "(" in clause and ")" in clause.split("(", 1)[1]:
        before, rest = clause.split("(", 1)
        clause = before.rstrip() + rest.split(")", 1)[1]
    for mark in (":", ";", ". "):
        clause = clause.split(mark, 1)[0]
    clause = clause.strip().rstrip(".")
    first_word = clause.split(" ", 1)[0]
    if not (len(first_word) > 1 and first_word.isupper()):  # "PIN or card blocked" keeps its capitals
        clause = clause[:1].lower() + clause[1:]
    return f"{name} ({clause})" if clause else name


def clarifying_question(first: Intent, *others: Intent) -> str:
    """The question of the ask route, naming the answer's intent and the others (the runner-up, or the rest
    of a conformal set) in plain words: "..., or about B?" for two, "..., about B, or about C?" for three."""
    if not others:
        return f"Just to be sure: is your message about {plain_words(first)}?"
    named = [plain_words(intent) for intent in (first, *others)]
    return f"Just to be sure: is your message about {', about '.join(named[:-1])}, or about {named[-1]}?"


def hand_over_text(record: ResultsLine, prompt: Prompt, calibrated: float, out_of_scope: frozenset[str]) -> str:
    """One line for the person who takes the message over: why it came to them, and the model's best guess."""
    if record.status != "ok":
        return f"Handed over to a person: the model gave no code ({record.status})."
    words = plain_words(prompt.intents[record.code])
    if record.code in out_of_scope:
        return f"Handed over to a person: the model says the message is out of scope ({record.code} {words})."
    return (f"Handed over to a person: the model's best guess is {words}, code {record.code}, "
            f"only {100 * calibrated:.0f}% sure: too unsure to act or to ask.")


def live_line(message: str, reply: CodeReply, answer: TypedAnswer | None, model: str,
              shortlist: tuple[tuple[str, float], ...] | None = None) -> ResultsLine:
    """The results line of one live message: post 03's fields of the answer, no right answer (gold_code None,
    correct and right_group False), so that routing reads it as it reads a line of a results file."""
    return ResultsLine(
        id="live", text=message, gold_intent=None, gold_code=None, status=reply.status, code=reply.code,
        intent=answer.intent if answer else None, correct=False, right_group=False, retried=reply.retried,
        content=reply.content, error=reply.error, wall_ms=reply.wall_ms, timings=reply.timings, model=model,
        build=None, settings={}, **answer_fields(answer),
        extra={} if shortlist is None else {"shortlist": [[code, score] for code, score in shortlist]})


def print_route(message: str, record: ResultsLine, prompt: Prompt, calibrate: Calibrator, thresholds: Thresholds,
                conformal: tuple[ConformalFit, Groups] | None = None) -> str:
    """Print intent and code, raw and calibrated confidence, the route and its text; return the route.

    conformal: a fit of ask_sets.py and the groups of the prompt; when given,
    the message's ask set and the route it gives are printed after the route.
    """
    print(f"message: {printable(message)}")
    calibrated = calibrate(record) if record.status == "ok" else 0.0
    route = route_of(record, calibrated, thresholds)
    if record.status == "ok":
        print(f"intent: {record.intent}  code {record.code}")
        print(f"confidence: raw {record.confidence:.3f} -> calibrated {calibrated:.3f}")
    else:
        print(f"no code: status {record.status}")
    if route == "act" and (why := verdict(message)):
        print(f"guard: not acted on, whatever the confidence: {why}")
        route = "hand_over"
    print(f"route: {route.replace('_', ' ')}")
    if route == "act":
        print(f"action: handle the message as {record.intent}")
    elif route == "ask":
        named = [prompt.intents[code] for code in top_two(record)]
        print(f"question: {clarifying_question(*named)}")
    else:
        print(f"hand-over text: {hand_over_text(record, prompt, calibrated, thresholds.out_of_scope)}")
    if conformal is not None:
        print_ask_set(record, prompt, *conformal, thresholds.out_of_scope, guarded=verdict(message) is not None)
    return route


def print_ask_set(record: ResultsLine, prompt: Prompt, fit: ConformalFit, groups: Groups,
                  out_of_scope: frozenset[str], guarded: bool = False) -> None:
    """The conformal ask set of one answer: its codes (up to three named), and what the set route does
    (guarded: the message carries a mark of guard.py, so an act becomes a hand-over)."""
    codes = prediction_set(record, fit, groups)
    shown = ", ".join(codes[:3]) + (f" and {len(codes) - 3} more" if len(codes) > 3 else "")
    print(f"ask set (alpha {fit.alpha:.2f}: holds the right intent with probability >= {100 * (1 - fit.alpha):.0f}%): "
          f"{len(codes)} code{'s' * (len(codes) != 1)}" + (f": {shown}" if codes else ""))
    route = set_route(codes, out_of_scope)
    if route == "act" and guarded:
        print("set route: hand over (the guard: not acted on)")
    elif route == "act":
        print(f"set route: act (one candidate: {prompt.intents[codes[0]].name})")
    elif route == "ask":
        print(f"set route: ask: {clarifying_question(*(prompt.intents[code] for code in codes))}")
    else:
        print("set route: hand over (" + ("no code is likely enough" if not codes else
                                           "out of scope" if len(codes) == 1 else "too many to ask about") + ")")


def describe_thresholds(thresholds: Thresholds) -> str:
    """The thresholds in one line: act and ask, or 'none' with the reason; the certified rule says its level."""
    t = thresholds
    if t.rule == "certified":
        level = confidence_percent(t.certification.delta)
        act = (f"act raw >= {t.t_act:.3f} (certified at {level})" if t.t_act is not None
               else f"act none ({100 * t.target:.1f}% precision not certified at {level})")
    else:
        act = (f"act >= {t.t_act:.3f}" if t.t_act is not None
               else f"act none ({100 * t.target:.1f}% precision out of reach)")
    ask = f"ask >= {thresholds.t_ask:.3f}" if thresholds.t_ask is not None else "ask none"
    return f"{act}, {ask}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("messages", nargs="*", help="customer messages (default: the three that post 01 routes)")
    add_calib_arguments(parser)
    add_threshold_arguments(parser)
    parser.add_argument("--alpha", type=alpha_value,
                        help="also print the conformal ask set at this miss rate, in (0, 1) (ask_sets.py)")
    parser.add_argument("--shortlist", type=int, metavar="K",
                        help="the combined decision: the model chooses among the retriever's top K (on CLINC150 the "
                             "out-of-scope code K-A too, with its own term), weighed with the retriever as combined.py "
                             "fitted it; calibration and thresholds from the combinedK calib file")
    args = parser.parse_args()
    if args.shortlist is not None and args.shortlist < 1:
        parser.error("--shortlist must be 1 or more")
    args.variant = f"combined{args.shortlist}" if args.shortlist else ""
    if any(not message.strip() for message in args.messages):
        parser.error("a message is empty: give the text of a customer message")

    calib, calibrate, thresholds = thresholds_from(args)
    calib_models = sorted({r.model for r in calib.records})
    client = Client()
    info = client.model_info()
    if calib_models != [info["model"]] and not args.other_model:
        raise ValueError(f"the server runs {info['model']}, but the thresholds would come from the answers of "
                         f"{', '.join(calib_models)} ({calib.path.name}): a calibration does not carry over to another "
                         "model; start the server with that model, or give --other-model to route anyway")
    prompt = load_prompt(args.dataset)
    probe(client, prompt)
    conformal = None if args.alpha is None else (fit_conformal(calib.records, args.alpha), label_groups(prompt.intents))
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
    left_out = f"; {len(calib.errors)} failed requests in it left out" if calib.errors else ""
    print(f"thresholds fitted on {calib.path.name} (model {', '.join(calib_models)}{left_out}): "
          f"{describe_thresholds(thresholds)}")
    if warning := support_warning(thresholds):
        print(warning)
    if calib_models != [info["model"]]:
        print(f"warning: the server runs {info['model']}, but the calibration and thresholds come from another model's "
              "answers (--other-model): they do not carry over, so take the route as a demonstration only")
    decide = shortlist_decision(args, prompt, calib.records, client, info["model"]) if args.shortlist else None
    for message in args.messages or ROUTED:
        print()
        if decide is None:
            reply, answer = read_answer(ask_code(client, prompt, message, top_logprobs=TOP_LOGPROBS), prompt)
            record = live_line(message, reply, answer, info["model"])
        else:
            record = decide(message)
        print_route(message, record, prompt, calibrate, thresholds, conformal)
    return 0


def shortlist_decision(args, prompt: Prompt, calib: list[ResultsLine], client: Client,
                       model: str) -> Callable[[str], ResultsLine]:
    """message -> the record of its combined decision (combined.py): the model asked among the retriever's
    top --shortlist codes, weighed with the retriever by the weights stored in the combined calib file.

    Prints the weights. Raises ValueError when the calib file carries no weights (not a combined file).
    """
    weights = {Weights.of_line(r) for r in calib} - {None}
    if len(weights) != 1:
        raise ValueError("the calibration file of --shortlist is not one combined.py wrote: run 08-routes/combined.py")
    (fitted,) = weights
    print(f"combined decision: shortlist of {args.shortlist}, P(code) proportional to {fitted.describe()}")
    dataset = DATASETS[args.dataset]
    out_of_scope = dataset.out_of_scope_codes()
    retriever = dataset.fit_retriever()
    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}

    def decide(message: str) -> ResultsLine:
        shortlist = shortlist_of(retriever.rank(message), prompt, args.shortlist, out_of_scope)
        narrowed = shortlisted(prompt, [code for code, _ in shortlist])
        reply, answer = read_answer(ask_code(client, narrowed, message, top_logprobs=TOP_LOGPROBS), narrowed)
        return combined_record(live_line(message, reply, answer, model, tuple(shortlist)), fitted, intent_of,
                               out_of_scope)
    return decide


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
