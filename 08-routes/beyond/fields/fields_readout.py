"""Each field's confidence from the top_logprobs at its own position, renormalized over the letters it allows.

    answer = read_fields(response, fields_prompt, asked=30)
    answer.code, answer.confidence                      # post 03's code and confidence, as for a code alone
    answer.fields["scope"].option, answer.fields["scope"].confidence

Post 03 reads a code's two letters (confidence.py): at each decision it keeps
the candidates that write a letter the grammar allows there and
renormalizes. A reply of fields.py's grammar, C-F-A-B, holds more decisions:
the group letter, the intent letter, then one letter per field, each after
a hyphen. Each field's step is read with post 03's own renormalize, on the
candidates of the token that writes that field's letter: a candidate that
completes the field's letter ("-A" after "C-F", or "A" after "C-F-") counts
for that letter, any other for none, so the field's distribution sums to 1
over its options, its off-label mass is what the rest took, and a letter
missing from top_logprobs counts as 0, as in post 03.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from confidence import Step, TypedAnswer, check_candidates, letter_of, renormalize
from fields import Field, FieldsPrompt
from logprob_format import logprob_steps

NOT_A_LETTER = "\x00"  # put before a candidate's text that writes no field letter, so it never reads as one


@dataclass(frozen=True)
class FieldsReply:
    """One request's outcome: status "ok" (a code and one letter per field), "invalid", "too_long" or "error";
    content (the raw reply), the reply's body, timings and client wall time (ms), error, whether it was retried."""

    status: str
    content: str
    response: dict | None
    timings: dict
    wall_ms: float
    retried: bool = False
    error: str | None = None


@dataclass(frozen=True)
class FieldAnswer:
    """One field's answer: its option id and letter, the option's probability renormalized over the field's
    letters (confidence, in [0, 1]), and the Step it was read from (distribution, off-label mass, missing)."""

    option: str
    letter: str
    confidence: float
    step: Step


@dataclass(frozen=True)
class FieldsAnswer:
    """A reply of code and fields, read: the code's TypedAnswer (post 03's fields, its confidence
    P(group) x P(intent | group)) and each field's FieldAnswer by key, in answer order."""

    code: TypedAnswer
    fields: dict[str, FieldAnswer]


def field_letter(text: str, fprompt: FieldsPrompt) -> tuple[int, str] | None:
    """(the field's index, the letter) when `text` (the reply so far plus one candidate) ends with a field's letter
    at its place (after the code and the fields before it, each behind a hyphen), else None."""
    prompt = fprompt.prompt
    for index, field in enumerate(fprompt.fields):
        end = 3 + 2 * index  # the code's 3 characters, then "-X" per earlier field
        if (len(text) == end + 2 and text[end] == "-" and text[end + 1] in field.letters
                and letter_of(text[:3], prompt) is not None):
            return index, text[end + 1]
    return None


def field_step(candidates: list[dict], before: str, field: Field, index: int, fprompt: FieldsPrompt,
               chosen: str) -> Step:
    """A field's Step: post 03's renormalize over the field's letters, each candidate read as the letter it
    completes at the field's place (field_letter) or as no letter. Raises what renormalize raises."""
    as_letters = []
    for candidate in candidates:
        token = candidate.get("token")
        read = field_letter(before + token, fprompt) if isinstance(token, str) and token else None
        letter = read[1] if read is not None and read[0] == index else None
        as_letters.append({**candidate, "token": letter if letter else NOT_A_LETTER + (token or "")})
    # the field's letters stand in for group letters: renormalize reads them after "" as post 03 reads a group
    step = renormalize(as_letters, "", replace(fprompt.prompt, group_letters=field.letters), chosen)
    return replace(step, before=before, candidates=tuple(
        (original.get("token"), value) for original, (_, value) in zip(candidates, step.candidates)))


def read_fields(response: dict, fprompt: FieldsPrompt, asked: int) -> FieldsAnswer:
    """The FieldsAnswer of one chat completion asked with fields.py's grammar, logprobs and top_logprobs = asked.

    The generated tokens are read in order: a token that writes a letter of
    the code (post 03's letter_of) or of a field (field_letter) is a
    decision and its candidates are renormalized over the letters allowed
    there; a lone hyphen is none. Raises ValueError when the content is not
    a code and one letter per field or the tokens do not spell it,
    NoConfidence and ServerUnfit as post 03's typed_answer.
    """
    prompt, fields = fprompt.prompt, fprompt.fields
    content = (response["choices"][0]["message"].get("content") or "").strip()
    code = content[:3]
    letters = content[4::2]
    if (code not in prompt.codes or len(content) != 3 + 2 * len(fields) or content[3::2] != "-" * len(fields)
            or any(letter not in field.letters for letter, field in zip(letters, fields))):
        raise ValueError(f"the reply {content!r} is not a code and one letter per field ({fprompt.example})")
    written, used, decisions, code_tokens = "", [], [], 0
    for token in logprob_steps(response):
        text = token.get("token")
        if not isinstance(text, str):
            raise ValueError(f"a generated token has no text ({text!r})")
        if written == content and text == "":
            break
        used.append(token)
        if text:
            if len(written) < 3 and (letter := letter_of(written + text, prompt)) is not None:
                decisions.append(("code", written, letter, token))
            elif (read := field_letter(written + text, fprompt)) is not None:
                decisions.append((read[0], written, read[1], token))
        written += text
        code_tokens += len(written) <= 3 and bool(text)  # the code's own tokens: 2 ('C', '-F') or 3
    if written != content or len(decisions) != 2 + len(fields):
        raise ValueError(f"the tokens {[t.get('token') for t in used]} do not spell {content} as two code letters and "
                         "one letter per field")
    check_candidates(used, asked)
    (_, g_before, g_letter, g_token), (_, i_before, i_letter, i_token) = decisions[:2]
    group_step = renormalize(g_token["top_logprobs"], g_before, prompt, g_letter)
    intent_step = renormalize(i_token["top_logprobs"], i_before, prompt, i_letter)
    steps = {}
    for index, before, letter, token in decisions[2:]:
        field = fields[index]
        step = field_step(token["top_logprobs"], before, field, index, fprompt, letter)
        steps[field.key] = FieldAnswer(field.option(letter).id, letter, step.chosen_probability, step)
    typed = TypedAnswer(code=code, intent=prompt.codes[code].intent, p_group=group_step.chosen_probability,
                        p_intent_given_group=intent_step.chosen_probability,
                        confidence=group_step.chosen_probability * intent_step.chosen_probability,
                        group_step=group_step, intent_step=intent_step, tokens_in_code=code_tokens,
                        missing_letters=group_step.missing + intent_step.missing,
                        flagged_logprobs=group_step.flagged + intent_step.flagged)
    return FieldsAnswer(typed, steps)

