"""Messages in, routes out (act, ask a question, or hand over to a person), with the router routes.py wrote.

    python3 08-routes/routes.py --target 0.80 --ask-target 0.75        # fit once: writes the router file
    python3 08-routes/route.py "my card still hasn't arrived, it's been two weeks" "where is my card?"
    python3 08-routes/route.py - --jsonl < messages.txt                 # one message a line, one JSON object each
    python3 08-routes/route.py --dataset clinc150 "how many moons does jupiter have"

The typed answer comes from the running server (LLAMA_URL, default
http://127.0.0.1:8080), exactly as in post 03: the code under the grammar,
its confidence from top_logprobs. The calibration and both thresholds come
from a router file (router_file.py) and nothing is fitted here: by default
the one routes.py wrote from your runs
(03-where-confidence-comes-from/results/<dataset>-router.json), else the
committed reference one; --router names another. To route at other targets,
run routes.py with them first.

A router is refused, in one line (exit 2), when it was fitted for another
model than the server's (--other-model routes anyway, with a warning), for
another prompt, grammar, label file or dataset, when it is corrupt or of
another format version, or when its calib file is here and has changed since
the fit (sha256; a router whose calib file is not here is used, and the setup
line says its calib file was not checked). With --dataset clinc150 an answer
of its out-of-scope code (K-A) always hands over.

Messages come from the arguments, or with `-` one per line from standard
input; empty lines there are skipped and counted (the count is printed at
the end), an empty argument is refused. --jsonl prints one JSON object per
message instead of the text (fields: JSONL_FIELDS in this file); the
message's text is left out unless --with-text, so the output can be kept as a
record of what was routed without keeping what customers wrote.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from confidence import NoConfidence, typed_answer
from decision import CodeReply, ask_code
from labels import Intent, printable
from llama_http import Client, exit_on_server_errors
from prompt import Prompt, load_prompt
from registry import add_dataset_argument, dataset_named
from results_file import relative
from datafiles import sha256_of
from router_file import Answer, Router, calib_state, default_router_path, read_router, route_of, text_sha256, top_two
from typed_request import TOP_LOGPROBS, probe

# The keys of a --jsonl object, in order. index: the message's place among those routed, from 0;
# question / hand_over_text: the text of the ask / hand-over route, else null.
JSONL_FIELDS = ("index", "message_sha256", "status", "intent", "code", "confidence", "calibrated", "route",
                "question", "hand_over_text", "router_sha256")


@dataclass(frozen=True)
class LiveAnswer:
    """The typed answer of one live message, with what routing reads (router_file.Answer).

    status: the reply's ("ok", "invalid", "too_long", "error"; "error" too
    when its logprobs give no confidence). code, intent: the answer's, None
    without a code. confidence: the raw confidence in [0, 1] (0.0 without a
    code, so no threshold acts on it). intent_distribution, group_letter,
    intent_letter: the intent step's distribution and the letters written
    (None without a code). error: why there is no code, or None.
    """

    status: str
    code: str | None = None
    intent: str | None = None
    confidence: float = 0.0
    intent_distribution: dict[str, float] | None = None
    group_letter: str | None = None
    intent_letter: str | None = None
    error: str | None = None


def live_answer(reply: CodeReply, prompt: Prompt) -> LiveAnswer:
    """The LiveAnswer of a server's reply (asked with top_logprobs): post 03's typed_answer when the reply has a
    code, else the reply's status. A reply whose logprobs give no confidence (NoConfidence) becomes status
    "error" without a code, as typed_lines.read_answer makes it for a results line: it hands over."""
    if reply.status != "ok":
        return LiveAnswer(reply.status, error=reply.error)
    try:
        answer = typed_answer(reply.response, prompt, reply.top_logprobs)
    except NoConfidence as error:
        return LiveAnswer("error", error=str(error))
    return LiveAnswer("ok", answer.code, answer.intent, answer.confidence, answer.intent_step.distribution,
                      answer.group_step.chosen, answer.intent_step.chosen)


def ask_answer(client: Client, prompt: Prompt, message: str) -> LiveAnswer:
    """Ask the server for the typed answer of one message (post 03's request, top_logprobs included). Raises
    what llama_http raises for a server that cannot answer."""
    return live_answer(ask_code(client, prompt, message, top_logprobs=TOP_LOGPROBS), prompt)


def calibrated_of(record: Answer, router: Router) -> float:
    """The calibrated confidence of an answer (the router's isotonic map); 0.0 for one without a code (it hands
    over whatever the value)."""
    return router.calibrate(record.confidence) if record.status == "ok" else 0.0


@dataclass(frozen=True)
class Routed:
    """One message routed: the answer, its calibrated confidence in [0, 1] and its route."""

    answer: LiveAnswer
    calibrated: float
    route: str


def route_message(client: Client, prompt: Prompt, router: Router, message: str) -> Routed:
    """Ask, calibrate and route one message."""
    answer = ask_answer(client, prompt, message)
    calibrated = calibrated_of(answer, router)
    return Routed(answer, calibrated, route_of(answer, calibrated, router))


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


def hand_over_text(record: Answer, prompt: Prompt, calibrated: float, out_of_scope: frozenset[str]) -> str:
    """One line for the person who takes the message over: why it came to them, and the model's best guess."""
    if record.status != "ok":
        return f"Handed over to a person: the model gave no code ({record.status})."
    words = plain_words(prompt.intents[record.code])
    if record.code in out_of_scope:
        return f"Handed over to a person: the model says the message is out of scope ({record.code} {words})."
    return (f"Handed over to a person: the model's best guess is {words}, code {record.code}, "
            f"only {100 * calibrated:.0f}% sure: too unsure to act or to ask.")


def answer_lines(message: str, record: Answer, calibrated: float) -> list[str]:
    """The message, then its intent and code with raw and calibrated confidence (or why it has no code),
    one line each."""
    if record.status != "ok":
        return [f"message: {printable(message)}", f"no code: status {record.status}"]
    return [f"message: {printable(message)}", f"intent: {record.intent}  code {record.code}",
            f"confidence: raw {record.confidence:.3f} -> calibrated {calibrated:.3f}"]


def print_answer(message: str, record: Answer, calibrated: float) -> None:
    """Print the answer_lines of one message."""
    print("\n".join(answer_lines(message, record, calibrated)))


def action_line(route: str, record: Answer, prompt: Prompt, calibrated: float, out_of_scope: frozenset[str]) -> str:
    """What a route does, in one line: the action, the clarifying question (the two named intents) or the
    hand-over text."""
    if route == "act":
        return f"action: handle the message as {record.intent}"
    if route == "ask":
        return f"question: {clarifying_question(*(prompt.intents[code] for code in top_two(record)))}"
    return f"hand-over text: {hand_over_text(record, prompt, calibrated, out_of_scope)}"


def print_action(route: str, record: Answer, prompt: Prompt, calibrated: float, out_of_scope: frozenset[str]) -> None:
    """The route, then its action_line."""
    print(f"route: {route.replace('_', ' ')}")
    print(action_line(route, record, prompt, calibrated, out_of_scope))


def describe_thresholds(thresholds) -> str:
    """The thresholds in one line: act and ask, or 'none' with the reason. thresholds: a Router, or routes.py's
    Thresholds (anything with t_act, t_ask and target)."""
    t = thresholds
    act = (f"act >= {t.t_act:.3f}" if t.t_act is not None else
           f"act none (no threshold of calib gives {100 * t.target:.1f}% precision)")
    ask = f"ask >= {t.t_ask:.3f}" if t.t_ask is not None else "ask none"
    return f"{act}, {ask}"


def jsonl_object(index: int, message: str, routed: Routed, prompt: Prompt, router: Router, router_sha256: str,
                 with_text: bool = False) -> dict:
    """The --jsonl object of one routed message: JSONL_FIELDS, then "message" (its text) when with_text."""
    answer, route = routed.answer, routed.route
    text = action_line(route, answer, prompt, routed.calibrated, frozenset(router.out_of_scope)).split(": ", 1)[1]
    row = {"index": index, "message_sha256": text_sha256(message), "status": answer.status, "intent": answer.intent,
           "code": answer.code, "confidence": answer.confidence, "calibrated": routed.calibrated, "route": route,
           "question": text if route == "ask" else None, "hand_over_text": text if route == "hand_over" else None,
           "router_sha256": router_sha256}
    return row | {"message": message} if with_text else row


def print_route(message: str, routed: Routed, prompt: Prompt, router: Router) -> None:
    """Print intent and code, raw and calibrated confidence, the route and its text."""
    print_answer(message, routed.answer, routed.calibrated)
    print_action(routed.route, routed.answer, prompt, routed.calibrated, frozenset(router.out_of_scope))


def add_route_arguments(parser: argparse.ArgumentParser) -> None:
    """The messages, add_router_arguments' three, --jsonl and --with-text."""
    parser.add_argument("messages", nargs="+", metavar="message",
                        help="customer messages; - alone reads them from standard input, one per line (empty "
                             "lines are skipped and counted)")
    add_router_arguments(parser)
    parser.add_argument("--jsonl", action="store_true", help="print one JSON object per message instead of the text")
    parser.add_argument("--with-text", action="store_true", help="with --jsonl: put the message's text in its object")


def add_router_arguments(parser: argparse.ArgumentParser) -> None:
    """--dataset, --router and --other-model: which router file to route with, and whether another model may."""
    add_dataset_argument(parser)
    parser.add_argument("--router", type=Path, metavar="FILE",
                        help="the router file (default: yours, 03-where-confidence-comes-from/results/"
                             "<dataset>-router.json, written by routes.py; else the committed reference one)")
    parser.add_argument("--other-model", action="store_true",
                        help="route even when the server runs another model than the router was fitted for "
                             "(a warning says the route means little)")


def messages_of(arguments: list[str], stdin) -> tuple[list[str], int]:
    """The messages to route and the number of empty lines skipped.

    arguments: the messages given; ["-"] reads `stdin`, one message a line
    (line ends stripped; a line of blanks only is empty, skipped and counted).
    Raises ValueError for an empty message argument, for - beside other
    messages, and for standard input without a message.
    """
    if "-" in arguments:
        if len(arguments) > 1:
            raise ValueError("- reads the messages from standard input: give it alone, without other messages")
        lines = [line.rstrip("\r\n") for line in stdin]
        messages = [line for line in lines if line.strip()]
        if not messages:
            raise ValueError("standard input holds no message: give one message per line")
        return messages, len(lines) - len(messages)
    if any(not message.strip() for message in arguments):
        raise ValueError("a message is empty: give the text of a customer message")
    return list(arguments), 0


def check_router(router: Router, path: Path, dataset: str, prompt: Prompt) -> None:
    """Raise ValueError in one line when the router was not fitted for this dataset, label file, prompt and
    grammar (what route.py would send), or when its calib file is here and has changed (router_file.calib_state)."""
    if router.dataset != dataset:
        raise ValueError(f"{path} is a router for {router.dataset}, not {dataset}: give --dataset {router.dataset}, "
                         "or the router of this dataset")
    source = dataset_named(dataset)
    checks = (("label file", router.label_sha256, sha256_of(source.label_file)),
              ("prompt", router.prompt_sha256, text_sha256(prompt.system)),
              ("grammar", router.grammar_sha256, text_sha256(prompt.grammar)))
    for what, fitted, now in checks:
        if fitted != now:
            raise ValueError(f"{path} was fitted with another {what} than {dataset}'s (sha256 {fitted[:12]}..., now "
                             f"{now[:12]}...): refit with python3 08-routes/routes.py --dataset {dataset}")
    calib_state(router)


def check_model(router: Router, path: Path, info: dict, other_model: bool) -> str | None:
    """None when the server runs the router's model; a warning line when it does not and other_model; else
    raise ValueError (a calibration does not carry over to another model)."""
    if info["model"] == router.model:
        return None
    if not other_model:
        raise ValueError(f"the server runs {info['model']}, but {path} was fitted on the answers of {router.model}: "
                         "a calibration does not carry over to another model; start the server with that model, "
                         "or give --other-model to route anyway")
    return (f"warning: the server runs {info['model']}, but the router was fitted on {router.model}'s answers "
            "(--other-model): they do not carry over, so take the route as a demonstration only")


def setup_lines(client: Client, info: dict, router: Router, path: Path, warning: str | None) -> list[str]:
    """The server and its model, the router (file, fit, calib file and its state, thresholds with their calib
    answers), and the other-model warning if any."""
    lines = [f"server: {client.url}  model: {info['model']}  build: {info['build']}",
             f"router: {relative(path)} (fitted {router.fitted} on {router.calib_answers} calib answers of "
             f"{router.model}; {calib_state(router)})",
             f"thresholds: {describe_thresholds(router)} (resting on {router.act_answers} and {router.ask_answers} "
             "calib answers)"]
    return lines + ([warning] if warning else [])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_route_arguments(parser)
    args = parser.parse_args()
    if args.with_text and not args.jsonl:
        parser.error("--with-text goes with --jsonl")

    messages, skipped = messages_of(args.messages, sys.stdin)
    path = args.router or default_router_path(args.dataset)
    router = read_router(path)
    prompt = load_prompt(args.dataset)
    check_router(router, path, args.dataset, prompt)
    client = Client()
    info = client.model_info()
    warning = check_model(router, path, info, args.other_model)
    probe(client, prompt)
    router_sha256 = sha256_of(path)
    notes = sys.stderr if args.jsonl else sys.stdout  # --jsonl keeps standard output for the objects
    print("\n".join(setup_lines(client, info, router, path, warning)), file=notes)
    for index, message in enumerate(messages):
        routed = route_message(client, prompt, router, message)
        if args.jsonl:
            print(json.dumps(jsonl_object(index, message, routed, prompt, router, router_sha256, args.with_text)),
                  flush=True)
        else:
            print()
            print_route(message, routed, prompt, router)
    if skipped:
        print(f"{skipped} empty line{'' if skipped == 1 else 's'} of standard input skipped", file=notes)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
