"""route.py as it was before the router file: fit the calibration and both thresholds on the calib file at
every call, and route a live message as a results line of post 03.

Post 08's route.py now reads the router file routes.py writes and fits
nothing. route_beyond.py, adversarial.py and the tests of the rules beyond
the post still fit at every call (the certified rule, conformal sets and the
gate need the calib answers themselves, not only the thresholds), through
these functions: the messages and calib options, the server check against
the calib file's model, the setup lines, and ask_live, which makes a
ResultsLine (gold_code None) of a live message so that every rule reads it
as it reads a line of a results file.
"""
from __future__ import annotations

import argparse

from calib_split import add_calib_arguments
from confidence import TypedAnswer
from customer_messages import AMERICAN_EXPRESS, FIAT, STILL_WAITING
from decision import CodeReply, ask_code
from llama_http import Client
from prompt import Prompt
from results_record import ResultsLine
from routes import Calibrator, add_threshold_arguments
from saved_answers import Loaded
from typed_lines import answer_fields, read_answer
from typed_request import TOP_LOGPROBS

# Three of post 01's messages, all from the calibration split; in the series (GB10 reference) they go three ways
# (ask, act, hand over).
ROUTED = (STILL_WAITING, FIAT, AMERICAN_EXPRESS)


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
