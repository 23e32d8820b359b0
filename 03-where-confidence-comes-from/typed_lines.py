"""run.py's results line for one message: ask, read the confidence, make the line.

    line = typed_line(client, prompt, message, model, settings, top_logprobs=30)
    reply, answer = read_answer(ask_code(client, prompt, text, top_logprobs=30), prompt)

The fields are 02's (batch.base_record: id, text, gold, status, code,
timings, model, settings...) and the answer's (answer_fields: confidence,
p_group, p_intent_given_group, both distributions, off-label mass, missing
letters, tokens). results_record.py reads such lines back and checks them.
read_answer joins a server's reply (02's CodeReply) to confidence.py's
typed_answer, which reads a decoded reply with no server.
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from batch import add_split_arguments, base_record, check_resumable
from confidence import NoConfidence, TypedAnswer, typed_answer
from decision import CodeReply, ask_code
from labels import Message
from llama_http import Client
from prompt import Prompt, load_prompt
from registry import add_dataset_argument
from results_record import FIELDS
from typed_request import TOP_LOGPROBS, probe, request_settings


def answer_of(reply: CodeReply, prompt: Prompt) -> TypedAnswer | None:
    """typed_answer() of a CodeReply with status "ok" (asked with reply.top_logprobs candidates), else None.

    Raises ValueError when the reply was asked without top_logprobs, and as typed_answer does.
    """
    if reply.status != "ok":
        return None
    if reply.top_logprobs < 1:
        raise ValueError("the reply was asked without top_logprobs: ask_code(..., top_logprobs=N) gives a confidence")
    return typed_answer(reply.response, prompt, reply.top_logprobs)


def read_answer(reply: CodeReply, prompt: Prompt) -> tuple[CodeReply, TypedAnswer | None]:
    """answer_of(), with a reply whose logprobs give no confidence (NoConfidence) turned into status "error".

    Returns (the reply, its TypedAnswer or None). The code of such a reply is
    dropped and the reason goes into its error, so its results line is an
    error that a rerun asks again, never an answer with a made-up confidence.
    """
    try:
        return reply, answer_of(reply, prompt)
    except NoConfidence as error:
        return dataclasses.replace(reply, status="error", code=None, error=str(error)), None


def answer_fields(answer: TypedAnswer | None) -> dict:
    """The fields a results line gets from a TypedAnswer (see run.py).

    For no answer (status not ok) the confidence is 0.0, so no threshold acts
    on it, and every other field is None.
    """
    if answer is None:
        return {"confidence": 0.0, "p_group": None, "p_intent_given_group": None,
                "group_distribution": None, "intent_distribution": None,
                "off_label_group": None, "off_label_intent": None,
                "missing_letters": None, "tokens_in_code": None, "flagged_logprobs": None}
    return {
        "confidence": answer.confidence,
        "p_group": answer.p_group,
        "p_intent_given_group": answer.p_intent_given_group,
        "group_distribution": answer.group_step.distribution,
        "intent_distribution": answer.intent_step.distribution,
        "off_label_group": answer.group_step.off_label_mass,
        "off_label_intent": answer.intent_step.off_label_mass,
        "missing_letters": answer.missing_letters,
        "tokens_in_code": answer.tokens_in_code,
        "flagged_logprobs": answer.flagged_logprobs,
    }


def typed_line(client: Client, prompt: Prompt, message: Message, model: str, settings: dict, top_logprobs: int,
               asked: Prompt | None = None) -> dict:
    """run.py's results line for one message: the typed request (the grammar, 2 tokens, top_logprobs
    candidates per token), its confidence, and the fields of batch.base_record.

    asked: the prompt the request sends (default: prompt), for a request with
    a narrower grammar whose line keeps prompt's gold code and sha256.
    Failed requests give a line with status error (confidence 0), as
    read_answer makes them. Raises what ask_code raises (server
    unreachable, grammar refused).
    """
    asked = asked or prompt
    reply, answer = read_answer(ask_code(client, asked, message.text, top_logprobs=top_logprobs), asked)
    return {**base_record(message, reply, prompt, model, settings), **answer_fields(answer)}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """run.py's options: --dataset, the split options of 02's batch.py (--split, --limit, --spread, --sample,
    --seed), --top-logprobs and --out."""
    add_dataset_argument(parser)
    add_split_arguments(parser)
    parser.add_argument("--top-logprobs", type=int, default=TOP_LOGPROBS,
                        help=f"candidates per token (default: {TOP_LOGPROBS})")
    parser.add_argument("--out", type=Path,
                        help="results file (default: 03-where-confidence-comes-from/results/<dataset>-<split>.jsonl, "
                        "or <dataset>-<split>-sample<N>-seed<S>.jsonl with --sample)")


def parse_run_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """parser.parse_args(), with --top-logprobs below 1 refused as a parser error (one line, exit 2)."""
    args = parser.parse_args()
    if args.top_logprobs < 1:
        parser.error("--top-logprobs must be 1 or more: confidence is read from the candidates")
    return args


@dataclass(frozen=True)
class TypedRun:
    """What every request of a run shares: the server, the prompt, the model's name and build, the request
    settings (recorded on each line) and the candidates asked per token."""

    client: Client
    prompt: Prompt
    model: str
    build: str
    settings: dict
    top_logprobs: int

    def line(self, message: Message, asked: Prompt | None = None) -> dict:
        """typed_line() of one message with this run's settings."""
        return typed_line(self.client, self.prompt, message, self.model, self.settings, self.top_logprobs, asked)

    def check_resumable(self, out: Path, split: list[Message], fields: tuple[str, ...] = ()) -> None:
        """ValueError unless `out` (when it exists) holds only lines of this same run: this model, build and
        prompt, messages of the split (all of it, not only the --limit asked now), and the fields of run.py's
        lines plus `fields` (batch.check_resumable)."""
        check_resumable(out, ids={m.id for m in split}, fields=fields, known=set(FIELDS), model=self.model,
                        build=self.build, prompt_sha256=self.prompt.sha256)


def start_run(dataset: str, top_logprobs: int) -> TypedRun:
    """The dataset's prompt and a probe of the server (00-setup/typed_request.py): a server that cannot give a
    confidence stops the run here, with one line and nothing written. Raises ServerUnfit then, ValueError for
    top_logprobs below 1."""
    if top_logprobs < 1:
        raise ValueError("--top-logprobs must be 1 or more: confidence is read from the candidates")
    prompt = load_prompt(dataset)
    client = Client()
    info = client.model_info()
    probe(client, prompt, top_logprobs)
    return TypedRun(client, prompt, info["model"], info["build"], request_settings(prompt, True, top_logprobs),
                    top_logprobs)
