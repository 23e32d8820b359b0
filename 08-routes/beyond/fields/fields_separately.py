"""The other way to several decisions: one request for the code, then one request per field, on the same cached prompt.

    reply, answer = ask_separately(client, fields_prompt("banking77fields"), "my dad's card is blocked")

fields_run.py asks the code and every field in one request (fields.py's
grammar). A reader of peers that ask one criterion per request may ask why:
this asks the code with post 02's ask_code (the fields prompt as system
prompt, so the server keeps its cached prefill; the code's grammar only),
then each field with the message followed by one line that names the field,
under a grammar of that field's letters alone, one token. Each field's
confidence is post 03's renormalize over its letters at that token. The
reply's wall time is the sum of the requests' (1 + fields of them), so
fields_run.py --one-per-field writes lines that compare with its own, in ms
and in answers.
"""
from __future__ import annotations

from dataclasses import replace

from confidence import NoConfidence, renormalize
from decision import ask_code
from fields import FieldsPrompt
from fields_readout import FieldAnswer, FieldsAnswer, FieldsReply
from llama_http import Client, ServerError
from logprob_format import logprob_steps
from prompt import grammar_of
from typed_lines import read_answer
from typed_request import TOP_LOGPROBS, request_settings, typed_messages


def field_question(message: str, fprompt: FieldsPrompt, index: int) -> str:
    """The user turn that asks one field: the message, then which question to answer, with one letter."""
    field = fprompt.fields[index]
    return (f"{message}\n\n(Answer only question {index + 1}, {field.key}: {field.question} "
            f"One letter: {', '.join(f'{o.letter} {o.id}' for o in field.options)}.)")


def ask_separately(client: Client, fprompt: FieldsPrompt, message: str,
                   top_logprobs: int = TOP_LOGPROBS) -> tuple[FieldsReply, FieldsAnswer | None]:
    """The code by post 02's ask_code (code grammar only), then each field by a request of its own (its letters
    only, one token): (a FieldsReply whose content is the answers joined as one reply would write them and whose
    wall_ms is the sum, the FieldsAnswer or None when a request gave no answer). Raises what llama_http raises
    when no answer came back."""
    code_prompt = replace(fprompt.prompt, grammar=grammar_of(fprompt.prompt.intent_letters))
    reply, typed = read_answer(ask_code(client, code_prompt, message, top_logprobs=top_logprobs), code_prompt)
    wall_ms = reply.wall_ms
    if reply.status != "ok" or typed is None:
        return FieldsReply(reply.status, reply.content, reply.response, reply.timings, wall_ms, reply.retried,
                           reply.error), None
    answers, content = {}, reply.code
    for index, field in enumerate(fprompt.fields):
        asked = replace(fprompt.prompt, grammar=f"root ::= [{field.letters}]\n", group_letters=field.letters)
        try:
            done = client.chat(typed_messages(asked, field_question(message, fprompt, index)),
                               **request_settings(asked, True, top_logprobs, 1))
        except ServerError as error:
            return FieldsReply("error", content, None, {}, wall_ms, False, error.message), None
        wall_ms += done.wall_ms
        letter = (done.body["choices"][0]["message"].get("content") or "").strip()
        if letter not in field.letters:
            return FieldsReply("invalid", content + "-" + letter, done.body, {}, wall_ms), None
        try:
            (token,) = logprob_steps(done.body)
            step = renormalize(token["top_logprobs"], "", asked, letter)
        except (ValueError, NoConfidence) as problem:
            return FieldsReply("error", content, done.body, {}, wall_ms, False, str(problem)), None
        answers[field.key] = FieldAnswer(field.option(letter).id, letter, step.chosen_probability, step)
        content += "-" + letter
    return FieldsReply("ok", content, reply.response, reply.timings, wall_ms, reply.retried), FieldsAnswer(typed, answers)
