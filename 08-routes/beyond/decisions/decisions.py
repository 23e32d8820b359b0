"""The decisions a router can serve, each as one function from a message to post 03's results line.

    decision = DECISIONS["model+regression"]
    calib = derived_answers(decision, shortlist_lines, weights, dataset)     # offline, from saved runs
    decider = Decider(decision, dataset, prompt, weights, ranking)            # at request time
    line = decider.line("where is my card?", ask)                            # ask: the typed request, or None

The repository measures several decisions (regimes.md lays them side by
side); a router file (decision_router.py) serves one. Each is named by what
decides:

    model                the model alone, every code (post 08's router)
    model+neighbours     the model among post 01's nearest neighbours' top 5, combined with their scores (combined.py)
    neighbours           the same product without the model (its exponents 0)
    model+regression     the model among the logistic regression's top 5, combined with its probabilities
    regression           the same without the model: the regression's first code, its probability renormalized
                         over its top 5 with an exponent fitted on calib
    model+examples       the model among the top 5 of the regression fitted on the label file's examples only
    examples             the same without the model

A decision without the model needs no llama-server: its lines are made from
the ranking alone. Every decision's answer is a ResultsLine of post 03's
fields (code, confidence = P(group) x P(intent | group), both steps'
distributions, off-label mass), so calibration, routes and the gate read
every decision alike. A line made for a live message has no right answer
(gold_code None).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Callable

from combined import Weights, combined_record, combined_variant, shortlist_variant
from confidence import TypedAnswer
from decision import CodeReply, ask_code
from llama_http import Client
from prompt import Prompt
from results_record import ResultsLine
from shortlist import K, shortlist_field, shortlist_of, shortlisted
from typed_lines import answer_fields, read_answer
from typed_request import TOP_LOGPROBS


@dataclass(frozen=True)
class Decision:
    """One way to decide a message's code and confidence.

    name: its key in DECISIONS. source: the ranking whose top `shortlist`
    codes the answer is chosen among (shortlist.py's --source: "knn",
    "linear", "examples"), None for every code. model: whether the model is
    asked (False: no llama-server). what: one line for a reader.
    """

    name: str
    source: str | None
    model: bool
    what: str
    shortlist: int = K

    @property
    def run_variant(self) -> str:
        """The variant of the saved runs its answers are made from: run.py's ("") for the model alone, else
        shortlist.py's (shortlist5, linearshortlist5, exampleshortlist5)."""
        return "" if self.source is None else shortlist_variant(self.shortlist, self.source)

    @property
    def combined(self) -> bool:
        """Whether its answer is combined.py's product over a shortlist (every decision with a ranking)."""
        return self.source is not None

    @property
    def twin(self) -> str | None:
        """The same decision with the model if it has none, without it if it has one (None for the model alone,
        which has no ranking to fall back on)."""
        if self.source is None:
            return None
        return next(d.name for d in DECISIONS.values() if d.source == self.source and d.model != self.model)

    @property
    def variant(self) -> str:
        """The variant name of its own answers in file names: "" (model), combined5, linearcombined5...; without
        the model the same with "alone" after the source ("linearalonecombined5")."""
        if self.source is None:
            return ""
        name = combined_variant(self.shortlist, self.source)
        return name if self.model else name.replace("combined", "alonecombined")


SOURCE_WORDS = {"knn": "post 01's nearest neighbours", "linear": "the logistic regression",
                "examples": "the logistic regression fitted on the label file's examples"}
DECISIONS = {d.name: d for d in (
    Decision("model", None, True, "the model alone, every code (post 08)"),
    Decision("model+neighbours", "knn", True, f"the model among the top 5 of {SOURCE_WORDS['knn']}, combined"),
    Decision("neighbours", "knn", False, f"{SOURCE_WORDS['knn']}' top 5, renormalized, without the model"),
    Decision("model+regression", "linear", True, f"the model among the top 5 of {SOURCE_WORDS['linear']}, combined"),
    Decision("regression", "linear", False, f"{SOURCE_WORDS['linear']} alone, renormalized over its top 5"),
    Decision("model+examples", "examples", True, f"the model among the top 5 of {SOURCE_WORDS['examples']}, combined"),
    Decision("examples", "examples", False, f"{SOURCE_WORDS['examples']} alone, renormalized over its top 5"),
)}


def decision_named(name: str) -> Decision:
    """DECISIONS[name]; ValueError naming the decisions there are for another name."""
    if name not in DECISIONS:
        raise ValueError(f"no decision {name!r}: one of {', '.join(DECISIONS)}")
    return DECISIONS[name]


def derived_answers(decision: Decision, lines: list[ResultsLine], weights: Weights | None, intent_of: dict[str, str],
                    out_of_scope: frozenset[str]) -> list[ResultsLine]:
    """The decision's answers to saved lines of its run variant: the model alone's lines as they are; a combined
    decision's made by combined.combined_record with `weights` (fitted on calib, model exponents 0 without the
    model, which then decides a line whose model answer failed too). intent_of: code -> intent name. Raises
    ValueError for a combined decision without weights, and as combined_record does."""
    if not decision.combined:
        return list(lines)
    if weights is None:
        raise ValueError(f"the decision {decision.name} combines the model with a ranking: it needs weights")
    return [combined_record(line, weights, intent_of, out_of_scope, decide_failed=not decision.model) for line in lines]


# ---------------------------------------------------------------- a live message

def live_line(message: str, reply: CodeReply, answer: TypedAnswer | None, model: str) -> ResultsLine:
    """The results line of one live message: post 03's fields of the answer, no right answer (gold_code None,
    correct and right_group False), so that every rule reads it as it reads a line of a results file."""
    return ResultsLine(
        id="live", text=message, gold_intent=None, gold_code=None, status=reply.status, code=reply.code,
        intent=answer.intent if answer else None, correct=False, right_group=False, retried=reply.retried,
        content=reply.content, error=reply.error, wall_ms=reply.wall_ms, timings=reply.timings, model=model,
        build=None, settings={}, **answer_fields(answer))


def ask_live(client: Client, prompt: Prompt, message: str, model: str) -> ResultsLine:
    """Ask the server for the typed answer of one message under `prompt` (post 03's request, top_logprobs
    included; a shortlisted prompt narrows the grammar) and return its live_line. Raises what llama_http raises
    for a server that cannot answer."""
    reply, answer = read_answer(ask_code(client, prompt, message, top_logprobs=TOP_LOGPROBS), prompt)
    return live_line(message, reply, answer, model)


def unasked_line(message: str) -> ResultsLine:
    """The line of a message the model was not asked about (a decision without the model): no code (status
    "error", confidence 0), which combined_record(decide_failed=True) turns into the ranking's decision."""
    return ResultsLine(
        id="live", text=message, gold_intent=None, gold_code=None, status="error", code=None, intent=None,
        correct=False, right_group=False, retried=False, content="", error="not asked: a decision without the model",
        wall_ms=0.0, timings={}, model="", build=None, settings={}, **answer_fields(None))


# message -> [(intent, score)], best first (shortlist.ranking)
Ranking = Callable[[str], list[tuple[str, float]]]
# (prompt, message) -> the model's live line under that prompt (ask_live with a client and model)
Ask = Callable[[Prompt, str], ResultsLine]


@dataclass(frozen=True)
class Decider:
    """A decision ready to answer live messages: its prompt, combined weights and ranking, fitted beforehand.

    prompt: the dataset's (post 02). weights: combined.py's, fitted on calib
    (None for the model alone). ranking: the source's ranking function (None
    for the model alone). out_of_scope: the dataset's out-of-scope codes (on
    every shortlist).
    """

    decision: Decision
    prompt: Prompt
    weights: Weights | None
    ranking: Ranking | None
    out_of_scope: frozenset[str] = frozenset()

    def line(self, message: str, ask: Ask | None) -> ResultsLine:
        """The decision's line for one message: the ranking's shortlist (when it has one), the model's answer under
        the narrowed grammar (when it asks the model; `ask`), combined with the weights. Raises ValueError when
        the decision asks the model and `ask` is None, and what `ask` raises."""
        if not self.decision.combined:
            if ask is None:
                raise ValueError("the model alone needs the typed request: no llama-server given")
            return ask(self.prompt, message)
        shortlist = shortlist_of(self.ranking(message), self.prompt, self.decision.shortlist, self.out_of_scope)
        if self.decision.model:
            if ask is None:
                raise ValueError(f"{self.decision.name} asks the model: no llama-server given")
            asked = ask(shortlisted(self.prompt, [code for code, _ in shortlist]), message)
        else:
            asked = unasked_line(message)
        line = replace(asked, extra={"shortlist": shortlist_field(shortlist)})  # rounded as the saved runs are
        intent_of = {code: meaning.intent for code, meaning in self.prompt.codes.items()}
        return combined_record(line, self.weights, intent_of, self.out_of_scope, decide_failed=not self.decision.model)


def model_share(line: ResultsLine) -> dict:
    """What a combined line keeps of the model's own answer, for a route object: {"model_code": ...,
    "model_confidence": ...} ({} for a line of the model alone)."""
    return {name: line.extra[name] for name in ("model_code", "model_confidence") if name in line.extra}


def retriever_sha256(retriever) -> str:
    """Hex sha256 of a fitted neighbours.Retriever's index: its texts and intents in fit order and the idf of
    every feature (repr, sorted), from which the rest of the index follows."""
    digest = hashlib.sha256()
    digest.update(json.dumps([retriever.texts, retriever.intents]).encode())
    digest.update(json.dumps(sorted((term, repr(value)) for term, value in retriever.idf.items())).encode())
    return digest.hexdigest()

