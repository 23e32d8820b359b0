"""From token probabilities to a typed answer with a confidence.

typed.py shows this confidence first, so the code lives in this post; post 03
explains it step by step (logprobs.py, pitfalls.py) and measures it (run.py).

A code "C-F" is generated in two decisions: the group letter, then the intent
letter. For each, the server returns top_logprobs: the most likely next tokens
with their log-probabilities BEFORE the grammar filtered them (llama-server
computes them from the raw logits). So this module:

1. finds the grammar's valid letters among the candidates by token id (from
   /tokenize: letter_tokens below), never by stripped text: ' C' is not 'C';
2. renormalizes over the valid letters that are present:
   P(letter) = exp(logprob_letter) / sum of exp(logprob) over valid letters;
   a valid letter missing from top_logprobs counts as 0;
3. records the off-label mass: 1 - (sum of the valid letters' probabilities),
   the share of the model's probability that went to tokens the grammar forbids;
4. multiplies: confidence = P(group) x P(intent | group).

If the chosen letter itself is missing from top_logprobs, its probability is 0
and so is the confidence: it is treated like every other missing letter, since
its own logprob (which the server also reports) would give it an advantage over
the letters that were cut off by top_logprobs.

What the server sends is checked as it is read (typed_request.py reads the
format, the same way its start-of-run probe does):
- a logprob that is JSON null, -inf, or at or below -1e30 (llama-server's
  lowest float for a probability of 0) counts as probability 0, and is counted
  in Step.flagged;
- a logprob above 0 (a probability above 1, some backends' "not available")
  or NaN raises ServerUnfit naming it: the server's numbers cannot be trusted;
- a candidate without a token id is matched by its exact bytes; one with
  neither, or a reply with "logprobs": null, raises ServerUnfit naming the
  missing feature;
- a step with fewer candidates than were asked, or a lone candidate at
  logprob exactly 0 (what speculative decoding sends for a drafted token),
  raises NoConfidence: that answer has no confidence, and its results line is
  an error (read_answer), never a number.
"""
from __future__ import annotations

import dataclasses
import math
import string
from dataclasses import dataclass

from decision import CodeReply
from labels import split_code
from llama_http import Client
from typed_prompt import BuiltPrompt
from typed_request import LOGPROB_FLOOR, logprob_steps, logprob_value, token_identity, token_matches


class NoConfidence(ValueError):
    """This reply's logprobs cannot give a confidence: a step with fewer candidates than were asked, or a
    lone candidate at logprob exactly 0 (speculative decoding). The message names the step."""


@dataclass(frozen=True)
class LetterTokens:
    """Token ids of the pieces a code is written with, taken from /tokenize.

    letter: 'A' -> id of the token 'A' (the group step, and the intent step
    of a 3-token code 'C', '-', 'F'). hyphen_letter: 'F' -> id of the token
    '-F' (the intent step of a 2-token code). hyphen: id of the token '-'.
    """

    letter: dict[str, int]
    hyphen_letter: dict[str, int]
    hyphen: int


def single_token(client: Client, text: str) -> int | None:
    """The id of text when the tokenizer makes it one token, else None."""
    pieces = client.tokenize(text)
    return pieces[0][0] if len(pieces) == 1 and pieces[0][1] == text else None


def letter_tokens(client: Client, letters: str = string.ascii_uppercase) -> LetterTokens:
    """Look up the token ids of every letter (default 'A'..'Z'), of '-' + letter, and of '-'.

    Raises ValueError naming the pieces that are not single tokens: then the
    renormalization of post 03 cannot read a letter's probability from one
    candidate, and the codes need other symbols (02's tokens.py shows how they split).
    """
    letter, hyphen_letter, split = {}, {}, []
    for char in letters:
        for text, table in ((char, letter), ("-" + char, hyphen_letter)):
            token_id = single_token(client, text)
            if token_id is None:
                split.append(text)
            else:
                table[char] = token_id
    hyphen = single_token(client, "-")
    if hyphen is None:
        split.append("-")
    if split:
        raise ValueError(f"these code pieces are not single tokens for this model: {' '.join(map(repr, split))}")
    return LetterTokens(letter, hyphen_letter, hyphen)



@dataclass(frozen=True)
class Step:
    """One decision (group letter or intent letter), renormalized over the valid letters.

    chosen: the letter the model wrote. distribution: valid letter ->
    probability in [0, 1], summing to 1 (all 0 when no valid letter was among
    the candidates). chosen_probability: distribution[chosen].
    off_label_mass: 1 - sum of the raw probabilities of the valid letters, in
    [0, 1]. missing: how many valid letters were not in top_logprobs.
    candidates: the raw top candidates as (token text, logprob) pairs, the
    logprob in nats as the server reports it, before the grammar, most likely
    first (a logprob the server sent as null is -inf here). flagged: how many
    candidates had no usable logprob (null, -inf, or <= -1e30) and were taken
    as probability 0.
    """

    chosen: str
    distribution: dict[str, float]
    chosen_probability: float
    off_label_mass: float
    missing: int
    candidates: tuple[tuple[str, float], ...]
    flagged: int = 0


@dataclass(frozen=True)
class TypedAnswer:
    """A code with its confidence.

    code: e.g. "C-F"; intent: its intent name. p_group, p_intent_given_group
    and confidence (their product) are probabilities in [0, 1].
    group_step, intent_step: the two Steps. tokens_in_code: 2 ('C', '-F') or
    3 ('C', '-', 'F'). missing_letters: valid letters missing at both steps.
    flagged_logprobs: candidates taken as probability 0 at both steps (Step.flagged).
    """

    code: str
    intent: str
    p_group: float
    p_intent_given_group: float
    confidence: float
    group_step: Step
    intent_step: Step
    tokens_in_code: int
    missing_letters: int
    flagged_logprobs: int = 0


def renormalize(top_logprobs: list[dict], valid: dict[str, int], chosen: str | None,
                pieces: dict[str, str] | None = None) -> Step:
    """Renormalize one step's candidates over the valid letters.

    top_logprobs: the server's candidates for one token, each a dict with
    'id' (token id; else 'bytes'), 'token' (text) and 'logprob' (natural log).
    valid: letter -> token id of every letter the grammar allows here.
    chosen: the letter written, or None when nothing was written (03's
    readout.py): then the answer is the most probable valid letter, the first
    in `valid` on a tie (with no valid letter among the candidates, the first
    letter at 0). pieces: letter -> the token's text, to match candidates that
    carry bytes but no id (default: the letter itself). A null, -inf or
    <= -1e30 logprob counts as probability 0 (Step.flagged).
    Raises ValueError when chosen is not a valid letter, and ServerUnfit for a
    logprob above 0 or NaN, or a candidate with neither id nor bytes.

    This is also a softmax over only the letters' logits: a logprob is the
    logit minus one constant (the log of the sum over the vocabulary), which
    cancels in exp(logprob) / sum of exp(logprob).
    """
    if chosen is not None and chosen not in valid:
        raise ValueError(f"the chosen letter {chosen!r} is not one of the valid letters {''.join(valid)}")
    pieces = pieces or {letter: letter for letter in valid}
    raw, flagged, candidates = {}, 0, []
    for number, candidate in enumerate(top_logprobs, start=1):
        value = logprob_value(candidate.get("logprob"), f"candidate {number} ({candidate.get('token')!r})")
        unusable = value is None or value <= LOGPROB_FLOOR
        flagged += unusable
        candidates.append((candidate.get("token"), -math.inf if value is None else value))
        token_identity(candidate)  # neither id nor bytes: ServerUnfit, even when no letter is looked for
        for letter, token_id in valid.items():
            # The same token twice would be a server bug; keep the first (the list is sorted).
            if letter not in raw and token_matches(candidate, token_id, pieces[letter]):
                raw[letter] = 0.0 if unusable else math.exp(value)
    total = sum(raw.values())
    distribution = {letter: (raw.get(letter, 0.0) / total if total > 0 else 0.0) for letter in valid}
    if chosen is None:
        chosen = max(distribution, key=distribution.get)  # max keeps the first of equal values
    return Step(
        chosen=chosen,
        distribution=distribution,
        chosen_probability=distribution[chosen],
        off_label_mass=min(1.0, max(0.0, 1.0 - total)),
        missing=len(valid) - len(raw),
        candidates=tuple(candidates),
        flagged=flagged,
    )


def check_candidates(steps: list[dict], asked: int) -> None:
    """Raise NoConfidence when a step has fewer than `asked` candidates, or one lone candidate at logprob 0.

    Both are what speculative decoding sends for a token accepted from the
    draft (an empty list, or only that token at logprob 0): the letters that
    went missing would count as 0 and the confidence would mean nothing.
    """
    for number, step in enumerate(steps, start=1):
        candidates = step.get("top_logprobs") or []
        if len(candidates) < asked:
            raise NoConfidence(f"token {number} ({step.get('token')!r}) has {len(candidates)} candidates where {asked} "
                               "were asked (top_logprobs): the server cut the list, as speculative decoding does for "
                               "drafted tokens, so no confidence is read from it")
        if len(candidates) == 1 and candidates[0].get("logprob") == 0:
            raise NoConfidence(f"token {number} ({step.get('token')!r}) has one lone candidate at logprob exactly 0, "
                               "what speculative decoding sends for a drafted token: no confidence is read from it")


def typed_answer(response: dict, built: BuiltPrompt, tokens: LetterTokens, asked: int) -> TypedAnswer:
    """Turn one chat completion with logprobs into a TypedAnswer.

    response: the body of /v1/chat/completions requested with logprobs and
    top_logprobs = asked, whose content is a full code. Accepts a code written
    as 2 tokens ('C', '-F') or 3 ('C', '-', 'F'), matched by token id (by
    bytes where the server sends no ids); a token that writes nothing after
    a complete 2-token code (the end-of-generation token, which llama-server
    lists when a 3-token retry is finished by the grammar after 2) is not
    part of the code. Raises ValueError when the content
    is not a code of the table or the tokens do not spell it in one of those
    two ways, NoConfidence for a step the confidence cannot be read from
    (check_candidates), and ServerUnfit for logprobs the server should not
    send (null, above 0, without id or bytes).
    """
    choice = response["choices"][0]
    code = (choice["message"].get("content") or "").strip()
    if code not in built.codes:
        raise ValueError(f"the reply {code!r} is not a full code of the table")
    steps = logprob_steps(response)
    if len(steps) == 3 and steps[2].get("token") == "":
        steps = steps[:2]
    check_candidates(steps, asked)
    group, letter = split_code(code)
    two = [(tokens.letter[group], group), (tokens.hyphen_letter[letter], "-" + letter)]
    three = [(tokens.letter[group], group), (tokens.hyphen, "-"), (tokens.letter[letter], letter)]
    if spells(steps, two):
        intent_valid = {x: tokens.hyphen_letter[x] for x in built.intent_letters[group]}
        intent_pieces = {x: "-" + x for x in built.intent_letters[group]}
    elif spells(steps, three):
        intent_valid = {x: tokens.letter[x] for x in built.intent_letters[group]}
        intent_pieces = None
    else:
        pieces = [step.get("token") for step in steps]
        raise ValueError(f"the tokens {pieces} do not spell {code} as 2 or 3 tokens")
    group_valid = {x: tokens.letter[x] for x in built.group_letters}
    group_step = renormalize(steps[0]["top_logprobs"], group_valid, group)
    intent_step = renormalize(steps[-1]["top_logprobs"], intent_valid, letter, intent_pieces)
    return TypedAnswer(
        code=code,
        intent=built.codes[code].intent,
        p_group=group_step.chosen_probability,
        p_intent_given_group=intent_step.chosen_probability,
        confidence=group_step.chosen_probability * intent_step.chosen_probability,
        group_step=group_step,
        intent_step=intent_step,
        tokens_in_code=len(steps),
        missing_letters=group_step.missing + intent_step.missing,
        flagged_logprobs=group_step.flagged + intent_step.flagged,
    )


def spells(steps: list[dict], expected: list[tuple[int, str]]) -> bool:
    """Whether the generated tokens are exactly `expected`, as (token id, text) pairs (token_matches)."""
    return len(steps) == len(expected) and all(token_matches(step, token_id, piece)
                                               for step, (token_id, piece) in zip(steps, expected))


def answer_of(reply: CodeReply, built: BuiltPrompt, tokens: LetterTokens) -> TypedAnswer | None:
    """typed_answer() of a CodeReply with status "ok" (asked with reply.top_logprobs candidates), else None.

    Raises ValueError when the reply was asked without top_logprobs, and as
    typed_answer does.
    """
    if reply.status != "ok":
        return None
    if reply.top_logprobs < 1:
        raise ValueError("the reply was asked without top_logprobs: ask_code(..., top_logprobs=N) gives a confidence")
    return typed_answer(reply.response, built, tokens, reply.top_logprobs)


def read_answer(reply: CodeReply, built: BuiltPrompt, tokens: LetterTokens) -> tuple[CodeReply, TypedAnswer | None]:
    """answer_of(), with a reply whose logprobs give no confidence (NoConfidence) turned into status "error".

    Returns (the reply, its TypedAnswer or None). The code of such a reply is
    dropped and the reason goes into its error, so its results line is an
    error that a rerun asks again, never an answer with a made-up confidence.
    """
    try:
        return reply, answer_of(reply, built, tokens)
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
