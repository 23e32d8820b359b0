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
"""
from __future__ import annotations

import math
import string
from dataclasses import dataclass

from decision import CodeReply
from llama_http import Client
from typed_prompt import BuiltPrompt


# Candidates asked for at each step: enough to hold every valid letter nearly
# always (post 03 measures it and shows what a small number does).
TOP_LOGPROBS = 30


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
    first.
    """

    chosen: str
    distribution: dict[str, float]
    chosen_probability: float
    off_label_mass: float
    missing: int
    candidates: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class TypedAnswer:
    """A code with its confidence.

    code: e.g. "C-F"; intent: its intent name. p_group, p_intent_given_group
    and confidence (their product) are probabilities in [0, 1].
    group_step, intent_step: the two Steps. tokens_in_code: 2 ('C', '-F') or
    3 ('C', '-', 'F'). missing_letters: valid letters missing at both steps.
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


def renormalize(top_logprobs: list[dict], valid: dict[str, int], chosen: str | None) -> Step:
    """Renormalize one step's candidates over the valid letters.

    top_logprobs: the server's candidates for one token, each a dict with
    'id' (token id), 'token' (text) and 'logprob' (natural log). valid: letter
    -> token id of every letter the grammar allows here. chosen: the letter
    written, or None when nothing was written (03's readout.py): then the
    answer is the most probable valid letter, the first in `valid` on a tie
    (with no valid letter among the candidates, the first letter at 0).
    Raises ValueError when chosen is not a valid letter.

    This is also a softmax over only the letters' logits: a logprob is the
    logit minus one constant (the log of the sum over the vocabulary), which
    cancels in exp(logprob) / sum of exp(logprob).
    """
    if chosen is not None and chosen not in valid:
        raise ValueError(f"the chosen letter {chosen!r} is not one of the valid letters {''.join(valid)}")
    raw_by_id = {}
    for candidate in top_logprobs:
        # The same id twice would be a server bug; keep the first (the list is sorted).
        raw_by_id.setdefault(candidate["id"], math.exp(candidate["logprob"]))
    raw = {letter: raw_by_id.get(token_id, 0.0) for letter, token_id in valid.items()}
    total = sum(raw.values())
    distribution = {letter: (p / total if total > 0 else 0.0) for letter, p in raw.items()}
    if chosen is None:
        chosen = max(distribution, key=distribution.get)  # max keeps the first of equal values
    candidates = tuple((c["token"], c["logprob"]) for c in top_logprobs)
    return Step(
        chosen=chosen,
        distribution=distribution,
        chosen_probability=distribution[chosen],
        off_label_mass=min(1.0, max(0.0, 1.0 - total)),
        missing=sum(1 for token_id in valid.values() if token_id not in raw_by_id),
        candidates=candidates,
    )


def typed_answer(response: dict, built: BuiltPrompt, tokens: LetterTokens) -> TypedAnswer:
    """Turn one chat completion with logprobs into a TypedAnswer.

    response: the body of /v1/chat/completions requested with logprobs and
    top_logprobs, whose content is a full code. Accepts a code written as 2
    tokens ('C', '-F') or 3 ('C', '-', 'F'), matched by token id. Raises
    ValueError when the content is not a code of the table or the tokens do
    not spell it in one of those two ways.
    """
    choice = response["choices"][0]
    code = (choice["message"].get("content") or "").strip()
    if code not in built.codes:
        raise ValueError(f"the reply {code!r} is not a full code of the table")
    steps = (choice.get("logprobs") or {}).get("content") or []
    group, letter = code[0], code[2]
    ids = [step["id"] for step in steps]
    if ids == [tokens.letter[group], tokens.hyphen_letter[letter]]:
        intent_valid = {x: tokens.hyphen_letter[x] for x in built.intent_letters[group]}
    elif ids == [tokens.letter[group], tokens.hyphen, tokens.letter[letter]]:
        intent_valid = {x: tokens.letter[x] for x in built.intent_letters[group]}
    else:
        pieces = [step.get("token") for step in steps]
        raise ValueError(f"the tokens {pieces} do not spell {code} as 2 or 3 tokens")
    group_valid = {x: tokens.letter[x] for x in built.group_letters}
    group_step = renormalize(steps[0]["top_logprobs"], group_valid, group)
    intent_step = renormalize(steps[-1]["top_logprobs"], intent_valid, letter)
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
    )


def answer_of(reply: CodeReply, built: BuiltPrompt, tokens: LetterTokens) -> TypedAnswer | None:
    """typed_answer() of a CodeReply with status "ok", else None."""
    return typed_answer(reply.response, built, tokens) if reply.status == "ok" else None


def answer_fields(answer: TypedAnswer | None) -> dict:
    """The fields a results line gets from a TypedAnswer (see run.py).

    For no answer (status not ok) the confidence is 0.0, so no threshold acts
    on it, and every other field is None.
    """
    if answer is None:
        return {"confidence": 0.0, "p_group": None, "p_intent_given_group": None,
                "group_distribution": None, "intent_distribution": None,
                "off_label_group": None, "off_label_intent": None,
                "missing_letters": None, "tokens_in_code": None}
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
    }
