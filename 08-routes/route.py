"""One message in, its route out: act, ask a question, or hand over to a person.

    python3 08-routes/route.py                                  # post 01's three messages
    python3 08-routes/route.py "my card still hasn't arrived, it's been two weeks"
    python3 08-routes/route.py --target 0.80 "can I get a refund for this?" "where is my card?"
    python3 08-routes/route.py --dataset clinc150 "how many moons does jupiter have"

The typed answer comes from the running server (LLAMA_URL, default
http://127.0.0.1:8080), exactly as in post 03: the code under the grammar,
its confidence from top_logprobs. The calibration and both thresholds are
fitted on the calib file (your own complete calib run of post 03, else the
reference one; routes.py; no server needed for that part), so they hold for
the model that wrote that file: with another model on
the server the script says so, and the route means little. With --dataset
clinc150 the prompt, grammar and calib file are CLINC150's, and an answer of
its out-of-scope code (K-A) always hands over.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import TypedAnswer
from customer_messages import AMERICAN_EXPRESS, FIAT, STILL_WAITING
from decision import CodeReply, ask_code
from labels import Intent, printable
from llama_http import Client, exit_on_server_errors
from routes import Calibrator, Thresholds, add_threshold_arguments, route_of, support_warning, thresholds_from, top_two
from results_record import ResultsLine
from calib_split import add_calib_arguments
from saved_answers import Loaded
from prompt import Prompt, load_prompt
from typed_lines import answer_fields, read_answer
from typed_request import TOP_LOGPROBS, probe

# Three of post 01's messages, all from the calibration split; in the series (GB10 reference) they go three ways
# (ask, act, hand over). The README shows where the CPU default model's answers go.
ROUTED = (STILL_WAITING, FIAT, AMERICAN_EXPRESS)


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
    """The question of the ask route, naming the answer's intent and the others (the runner-up; more for a
    longer list) in plain words: "..., or about B?" for two, "..., about B, or about C?" for three."""
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


def live_line(message: str, reply: CodeReply, answer: TypedAnswer | None, model: str) -> ResultsLine:
    """The results line of one live message: post 03's fields of the answer, no right answer (gold_code None,
    correct and right_group False), so that routing reads it as it reads a line of a results file."""
    return ResultsLine(
        id="live", text=message, gold_intent=None, gold_code=None, status=reply.status, code=reply.code,
        intent=answer.intent if answer else None, correct=False, right_group=False, retried=reply.retried,
        content=reply.content, error=reply.error, wall_ms=reply.wall_ms, timings=reply.timings, model=model,
        build=None, settings={}, **answer_fields(answer))


def ask_live(client: Client, prompt: Prompt, message: str, model: str) -> ResultsLine:
    """Ask the server for the typed answer of one message (post 03's request, top_logprobs included) and
    return its live_line. Raises what llama_http raises for a server that cannot answer."""
    reply, answer = read_answer(ask_code(client, prompt, message, top_logprobs=TOP_LOGPROBS), prompt)
    return live_line(message, reply, answer, model)


def calibrated_of(record: ResultsLine, calibrate: Calibrator) -> float:
    """The calibrated confidence of an answer; 0.0 for one without a code (it hands over whatever the value)."""
    return calibrate(record) if record.status == "ok" else 0.0


def answer_lines(message: str, record: ResultsLine, calibrated: float) -> list[str]:
    """The message, then its intent and code with raw and calibrated confidence (or why it has no code),
    one line each."""
    if record.status != "ok":
        return [f"message: {printable(message)}", f"no code: status {record.status}"]
    return [f"message: {printable(message)}", f"intent: {record.intent}  code {record.code}",
            f"confidence: raw {record.confidence:.3f} -> calibrated {calibrated:.3f}"]


def print_answer(message: str, record: ResultsLine, calibrated: float) -> None:
    """Print the answer_lines of one message."""
    print("\n".join(answer_lines(message, record, calibrated)))


def action_line(route: str, record: ResultsLine, prompt: Prompt, calibrated: float, out_of_scope: frozenset[str]) -> str:
    """What a route does, in one line: the action, the clarifying question (the two named intents) or the
    hand-over text."""
    if route == "act":
        return f"action: handle the message as {record.intent}"
    if route == "ask":
        return f"question: {clarifying_question(*(prompt.intents[code] for code in top_two(record)))}"
    return f"hand-over text: {hand_over_text(record, prompt, calibrated, out_of_scope)}"


def print_action(route: str, record: ResultsLine, prompt: Prompt, calibrated: float, out_of_scope: frozenset[str]) -> None:
    """The route, then its action_line."""
    print(f"route: {route.replace('_', ' ')}")
    print(action_line(route, record, prompt, calibrated, out_of_scope))


def print_route(message: str, record: ResultsLine, prompt: Prompt, calibrate: Calibrator, thresholds: Thresholds) -> str:
    """Print intent and code, raw and calibrated confidence, the route and its text; return the route."""
    calibrated = calibrated_of(record, calibrate)
    route = route_of(record, calibrated, thresholds)
    print_answer(message, record, calibrated)
    print_action(route, record, prompt, calibrated, thresholds.out_of_scope)
    return route


def describe_thresholds(thresholds: Thresholds) -> str:
    """The thresholds in one line: act and ask, or 'none' with the reason."""
    t = thresholds
    act = (f"act >= {t.t_act:.3f}" if t.t_act is not None else f"act none ({100 * t.target:.1f}% precision out of reach)")
    ask = f"ask >= {t.t_ask:.3f}" if t.t_ask is not None else "ask none"
    return f"{act}, {ask}"


def add_route_arguments(parser: argparse.ArgumentParser) -> None:
    """The messages, --dataset, --calib, --other-model, --target and --ask-target."""
    parser.add_argument("messages", nargs="*", help="customer messages (default: the three that post 01 routes)")
    add_calib_arguments(parser)
    add_threshold_arguments(parser)


def check_messages(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Stop with the parser's usage error (exit 2) when a message is empty."""
    if any(not message.strip() for message in args.messages):
        parser.error("a message is empty: give the text of a customer message")


def connect(calib: Loaded, other_model: bool) -> tuple[Client, dict]:
    """The server's client and model_info(), checked against the model that wrote the calib file.

    Raises ValueError when the server runs another model, unless other_model
    (then print_setup warns); raises what llama_http raises for a server that
    cannot be reached.
    """
    client = Client()
    info = client.model_info()
    calib_models = sorted({r.model for r in calib.records})
    if calib_models != [info["model"]] and not other_model:
        raise ValueError(f"the server runs {info['model']}, but the thresholds would come from the answers of "
                         f"{', '.join(calib_models)} ({calib.path.name}): a calibration does not carry over to another "
                         "model; start the server with that model, or give --other-model to route anyway")
    return client, info


def other_model_warning(info: dict, calib: Loaded) -> str | None:
    """A warning line when the server's model (info, model_info()) did not write the calib answers, else None."""
    if sorted({r.model for r in calib.records}) == [info["model"]]:
        return None
    return (f"warning: the server runs {info['model']}, but the calibration and thresholds come from another model's "
            "answers (--other-model): they do not carry over, so take the route as a demonstration only")


def print_setup(client: Client, info: dict, calib: Loaded, thresholds: str, warning: str | None) -> None:
    """The server and its model, the calib file and the thresholds fitted on it (`thresholds`, one line's
    text), the support warning if any, and other_model_warning."""
    calib_models = sorted({r.model for r in calib.records})
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
    left_out = f"; {len(calib.errors)} failed requests in it left out" if calib.errors else ""
    print(f"thresholds fitted on {calib.path.name} (model {', '.join(calib_models)}{left_out}): {thresholds}")
    if warning:
        print(warning)
    if other := other_model_warning(info, calib):
        print(other)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_route_arguments(parser)
    args = parser.parse_args()
    check_messages(parser, args)

    calib, calibrate, thresholds = thresholds_from(args)
    client, info = connect(calib, args.other_model)
    prompt = load_prompt(args.dataset)
    probe(client, prompt)
    print_setup(client, info, calib, describe_thresholds(thresholds), support_warning(thresholds))
    for message in args.messages or ROUTED:
        print()
        print_route(message, ask_live(client, prompt, message, info["model"]), prompt, calibrate, thresholds)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
