"""Where confidence comes from: the probabilities of a code's letters, renormalized over what the grammar allows.

A code such as C-F is written in two decisions: the group letter, then the
intent letter within that group. For every generated token llama-server
returns top_logprobs: the most likely tokens at that step with their
log-probabilities, computed from the raw logits, so BEFORE the grammar took
the forbidden tokens out. At each decision this module keeps the candidates
that write a letter the grammar allows there, and renormalizes:

    mass = {}
    for c in candidates:                         # the top_logprobs list at one step
        letter = letter_of(before + c["token"], prompt) if c["token"] else None  # "" writes no letter
        if letter is not None:
            mass[letter] = mass.get(letter, 0.0) + math.exp(c["logprob"])
    total = sum(mass.values())
    probs = {letter: p / total for letter, p in mass.items()}
    off_label = 1 - total

`before` is the code written so far ("" at the group step, "C" at the intent
step of 'C', '-F', "C-" at the third token of 'C', '-', 'F'). The off-label
mass is the share of the model's probability on tokens the grammar forbids
here; a valid letter missing from the candidates counts as 0, the chosen one
too (then the confidence is 0: nothing to renormalize). Finally

    confidence = P(group) x P(intent | group).

What the server sends is checked as it is read, with the format rules of
00-setup/toolbox/logprob_format.py (the probe of 00-setup/typed_request.py checks a
server by the same rules; this module needs no server): a logprob that is null, -inf or at or below -1e30
(llama-server's probability 0) counts as 0 and is counted in Step.flagged; a
logprob above 0 or NaN raises ServerUnfit; a step with fewer candidates than
were asked, or one lone candidate at logprob exactly 0 (what speculative
decoding sends for a drafted token), raises NoConfidence, and
typed_lines.read_answer makes that answer an error line instead of a
made-up number.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from logprob_format import LOGPROB_FLOOR, ServerUnfit, logprob_steps, logprob_value
from prompt import Prompt


class NoConfidence(ValueError):
    """This reply's logprobs cannot give a confidence: a step with fewer candidates than were asked, or a
    lone candidate at logprob exactly 0 (speculative decoding). The message names the step."""


@dataclass(frozen=True)
class Step:
    """One decision (the group letter or the intent letter), renormalized over the letters allowed there.

    before: the code written before this step ("", "C" or "C-"). chosen: the
    letter written. distribution: every allowed letter -> probability in
    [0, 1], summing to 1 (all 0 when no allowed letter was among the
    candidates). chosen_probability: distribution[chosen]. off_label_mass:
    1 - the summed raw probability of the allowed letters, in [0, 1].
    missing: allowed letters not among the candidates. candidates: the raw
    candidates as (token text, logprob in nats), most likely first (a null
    logprob is -inf here). flagged: candidates with no usable logprob (null,
    -inf, <= -1e30), taken as probability 0.
    """

    before: str
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
    and confidence (their product) are probabilities in [0, 1]. group_step,
    intent_step: the two Steps. tokens_in_code: 2 ('C', '-F') or 3 ('C', '-',
    'F'). missing_letters and flagged_logprobs: over both steps.
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


def letter_of(text: str, prompt: Prompt) -> str | None:
    """The letter that `text` (the code so far plus one candidate token) writes, or None.

    A group letter for a group's letter alone ("C"); an intent letter for a
    full code of the table ("C-F": "F"); None for anything else: "The", " C"
    (a space is not the letter), "C-" (a hyphen is no decision), "C-Z". A
    candidate that writes nothing (the end-of-generation token, text "")
    leaves the code so far as it was, so it writes no letter at this step:
    the callers skip it before asking.
    """
    if len(text) == 1 and text in prompt.group_letters:
        return text
    if len(text) == 3 and text[1] == "-" and text[2] in prompt.intent_letters.get(text[0], ""):
        return text[2]
    return None


def allowed_letters(before: str, prompt: Prompt) -> str:
    """The letters the grammar allows at the step after `before`: every group letter after "", else the
    intent letters of before's group."""
    return prompt.group_letters if before == "" else prompt.intent_letters[before[0]]


def renormalize(candidates: list[dict], before: str, prompt: Prompt, chosen: str | None = None) -> Step:
    """One step's candidates renormalized over the letters the grammar allows after `before` (the loop above).

    candidates: the server's top_logprobs for one token, each with 'token'
    (text) and 'logprob' (natural log). chosen: the letter written, or None
    when nothing was written (03's beyond/readout.py): then the most probable
    allowed letter, the first in the grammar's order on a tie. A candidate
    token that writes a letter is summed into it, so two tokens with the
    same text count together (the grammar allows both). Raises ValueError
    when chosen is not allowed here, ServerUnfit for a logprob above 0 or NaN
    or a candidate without token text. A softmax over only the letters'
    logits gives the same numbers: a logprob is the logit minus one constant,
    which cancels in exp(logprob) / sum of exp(logprob).
    """
    valid = allowed_letters(before, prompt)
    if chosen is not None and chosen not in valid:
        raise ValueError(f"the chosen letter {chosen!r} is not one of the allowed letters {valid}")
    mass: dict[str, float] = {}
    flagged, seen = 0, []
    for number, candidate in enumerate(candidates, start=1):
        token = candidate.get("token")
        value = logprob_value(candidate.get("logprob"), f"candidate {number} ({token!r})")
        if not isinstance(token, str):
            raise ServerUnfit(f"the server's candidate {number} has no token text ({token!r}): letters are read from it")
        unusable = value is None or value <= LOGPROB_FLOOR
        flagged += unusable
        seen.append((token, -math.inf if value is None else value))
        letter = letter_of(before + token, prompt) if token else None  # "" writes nothing: no letter
        if letter is not None:
            mass[letter] = mass.get(letter, 0.0) + (0.0 if unusable else math.exp(value))
    total = sum(mass.values())
    distribution = {letter: (mass.get(letter, 0.0) / total if total > 0 else 0.0) for letter in valid}
    if chosen is None:
        chosen = max(distribution, key=distribution.get)  # max keeps the first of equal values
    return Step(before, chosen, distribution, distribution[chosen], min(1.0, max(0.0, 1.0 - total)),
                sum(letter not in mass for letter in valid), tuple(seen), flagged)


def check_candidates(steps: list[dict], asked: int) -> None:
    """Raise NoConfidence when a step has fewer than `asked` candidates, or one lone candidate at logprob 0.

    Both are what speculative decoding sends for a token accepted from the
    draft: the letters that went missing would count as 0 and the confidence
    would mean nothing.
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


def typed_answer(response: dict, prompt: Prompt, asked: int) -> TypedAnswer:
    """The TypedAnswer of one chat completion asked with logprobs and top_logprobs = asked.

    The generated tokens are read in order: a token that writes a letter
    (letter_of) is a decision and its candidates are renormalized; the hyphen
    of a 3-token code ('C', '-', 'F') is not one, and nothing after the full
    code counts (llama-server lists the end-of-generation token, text '',
    when a 3-token retry ends after 2). Raises ValueError when the content is
    not a code of the table or the tokens do not spell it with two decisions,
    NoConfidence as check_candidates, ServerUnfit as renormalize.
    """
    code = (response["choices"][0]["message"].get("content") or "").strip()
    if code not in prompt.codes:
        raise ValueError(f"the reply {code!r} is not a full code of the table")
    tokens = logprob_steps(response)
    written, used, decisions = "", [], []
    for token in tokens:
        text = token.get("token")
        if not isinstance(text, str):
            raise ValueError(f"a generated token has no text ({text!r})")
        if written == code and text == "":
            break
        used.append(token)
        letter = letter_of(written + text, prompt) if text else None
        if letter is not None:
            decisions.append((written, letter, token))
        written += text
    if written != code or len(decisions) != 2:
        raise ValueError(f"the tokens {[t.get('token') for t in tokens]} do not spell {code} as a group letter, "
                         "then an intent letter")
    check_candidates(used, asked)
    group_step, intent_step = (renormalize(token["top_logprobs"], before, prompt, letter)
                               for before, letter, token in decisions)
    return TypedAnswer(
        code=code,
        intent=prompt.codes[code].intent,
        p_group=group_step.chosen_probability,
        p_intent_given_group=intent_step.chosen_probability,
        confidence=group_step.chosen_probability * intent_step.chosen_probability,
        group_step=group_step,
        intent_step=intent_step,
        tokens_in_code=len(used),
        missing_letters=group_step.missing + intent_step.missing,
        flagged_logprobs=group_step.flagged + intent_step.flagged,
    )
