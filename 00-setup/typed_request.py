"""A typed request, what its reply must look like, and the probe that checks a server before a run.

A typed request is a system prompt that lists the codes, the customer's
message, the grammar that allows only those codes, greedy decoding and (for
a confidence) logprobs with top_logprobs candidates per token. The prompt
and grammar are post 02's (its prompt.py builds them; datasets/ keeps a
saved copy that the setup sends before post 02 exists). The posts send the
request and read the reply with these pieces, because the probe below must
send and read exactly the same thing, and 00-setup's warm-up runs the probe.

probe() is called by every script that asks for typed answers, before the
first answer: one real typed request with logprobs. Any failure raises
ServerUnfit with one sentence naming the cause, so the script stops with exit
2 before a single results line is written, instead of filling a file with
error lines or with confidences that mean nothing. What it checks:

1. speculative decoding is off (/slots: "speculative" of every slot; where
   /slots is off, /props: "speculative.types"): tokens accepted from a draft
   come back with logprob 0 and no candidates, so no confidence can be read;
2. the chat template takes the system message (/apply-template renders it
   into the prompt; where the server has no /apply-template, the typed request
   alone shows it): a template that refuses it fails every request (HTTP 500
   "System role not supported"), one that drops it answers without the codes;
3. the typed request itself is answered (the grammar accepted);
4. its reply carries logprobs.content with one entry per generated token
   (usage.completion_tokens, else timings.predicted_n), each entry and each
   candidate with a token id (or, on other backends, its bytes), top_logprobs
   of exactly the length asked, and every logprob a finite number <= 0.

The API is llama.cpp's tools/server/README.md; the logprobs format is
OpenAI's (choices[0].logprobs.content[i].top_logprobs[j]: token, logprob,
bytes), plus llama-server's token "id". The rules a reply's logprobs must
pass (logprob_steps, logprob_value, LOGPROB_FLOOR) live in
00-setup/toolbox/logprob_format.py, so post 03 reads a confidence by them with no
server; the probe checks a server against the same ones.
"""
from __future__ import annotations

from typing import Protocol

from llama_http import Client, Reply, ServerError
from logprob_format import ServerUnfit, logprob_steps, logprob_value


class PromptText(Protocol):
    """What a typed request takes from a prompt: its system prompt and GBNF grammar (post 02's Prompt, or
    registry.SavedPrompt)."""

    system: str
    grammar: str


# Candidates asked for at each step: enough to hold every valid letter nearly
# always (post 03 measures it and shows what a small number does).
TOP_LOGPROBS = 30
PROBE_MESSAGE = "hello"


def typed_messages(prompt: PromptText, message: str) -> list[dict]:
    """The chat messages of a typed request: the system prompt (the same in every request, so the server
    keeps it cached), then the customer's message as the user turn."""
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": message}]


def request_settings(prompt: PromptText, grammar: bool = True, top_logprobs: int = 0, max_tokens: int = 2) -> dict:
    """The chat completion settings of a typed request (recorded next to each answer)."""
    settings = {"temperature": 0.0, "max_tokens": max_tokens}
    if grammar:
        settings["grammar"] = prompt.grammar
    if top_logprobs:
        settings["logprobs"] = True
        settings["top_logprobs"] = top_logprobs
    return settings


# ---------------------------------------------------------------- telling tokens apart

def token_identity(entry: dict) -> tuple[str, int | list[int]]:
    """What tells a logprobs entry's token apart: ("id", its token id) when the entry has one (llama-server),
    else ("bytes", its bytes) (OpenAI's format). Raises ServerUnfit when it has neither."""
    token_id = entry.get("id")
    if isinstance(token_id, int) and not isinstance(token_id, bool):
        return "id", token_id
    raw = entry.get("bytes")
    if isinstance(raw, list):
        return "bytes", raw
    raise ServerUnfit(f"the server's logprobs entry for {entry.get('token')!r} has neither a token id nor its bytes: "
                      "letters can only be told apart by one of them (llama-server sends both)")


def token_matches(entry: dict, token_id: int, piece: str) -> bool:
    """Whether a logprobs entry (a generated token or a candidate) is the token token_id, whose text is piece.

    By the token id when the entry has one, else by its exact bytes against
    piece encoded as UTF-8 (so ' C' never matches 'C'). Raises ServerUnfit as
    token_identity does.
    """
    kind, value = token_identity(entry)
    return value == token_id if kind == "id" else value == list(piece.encode("utf-8"))


# ---------------------------------------------------------------- the probe

def check_speculative(client: Client) -> None:
    """Raise ServerUnfit when the server decodes speculatively: /slots, else /props.

    /slots lists "speculative" per slot (llama-server; off with --no-slots);
    /props has "speculative.types" in default_generation_settings.params
    ("none" when off). A server with neither is not refused here: the reply
    check of probe() still catches the empty candidate lists of drafted tokens.
    """
    advice = "tokens accepted from a draft come with logprob 0 and no candidates, so no confidence can be read; " \
             "start llama-server without --model-draft and --spec-type"
    try:
        slots = client.get("/slots")
    except ServerError:
        slots = None
    if isinstance(slots, list) and slots:
        if any(isinstance(slot, dict) and slot.get("speculative") for slot in slots):
            raise ServerUnfit(f"speculative decoding is on (/slots says speculative: true): {advice}")
        return
    params = client.get("/props").get("default_generation_settings", {}).get("params", {})
    types = params.get("speculative.types", "none") if isinstance(params, dict) else "none"
    if types not in ("none", ""):
        raise ServerUnfit(f"speculative decoding is on (/props says speculative.types {types!r}): {advice}")


def check_template(client: Client, messages: list[dict]) -> None:
    """Raise ServerUnfit when the chat template refuses the system message or leaves it out of the prompt.

    Asks /apply-template (llama-server) to render the messages; a server
    without that endpoint (404, 501) is not refused here, since the typed
    request shows a refusal too.
    """
    try:
        prompt = client.post("/apply-template", {"messages": messages}).body.get("prompt")
    except ServerError as error:
        if error.status in (404, 501):
            return
        raise ServerUnfit(f"the chat template refuses the system message (HTTP {error.status}: {error.message}): every "
                          "typed request carries the list of codes as its system message; start llama-server with a "
                          "template that takes one (--chat-template-file)") from None
    if isinstance(prompt, str) and messages[0]["content"] not in prompt:
        raise ServerUnfit("the chat template leaves the system message out of the prompt (/apply-template), so the "
                          "model would never see the list of codes; start llama-server with a template that keeps it")


def check_reply(body: dict, asked: int) -> None:
    """Raise ServerUnfit unless a typed reply carries the logprobs a confidence is read from.

    One logprobs.content entry per generated token (usage.completion_tokens,
    else timings.predicted_n); every entry and candidate with a token id or
    bytes; exactly `asked` candidates per entry; every logprob finite and <= 0
    (the lowest float, llama-server's probability 0, is finite).
    """
    steps = logprob_steps(body)
    generated = (body.get("usage") or {}).get("completion_tokens", (body.get("timings") or {}).get("predicted_n"))
    if not isinstance(generated, int):
        raise ServerUnfit("the server's reply does not say how many tokens it generated (usage.completion_tokens), so "
                          "its logprobs cannot be matched to the tokens")
    if len(steps) != generated:
        raise ServerUnfit(f"the server's logprobs have {len(steps)} entries for {generated} generated tokens: one per "
                          "token was expected")
    for number, step in enumerate(steps, start=1):
        candidates = step.get("top_logprobs")
        if not isinstance(candidates, list) or len(candidates) != asked:
            count = len(candidates) if isinstance(candidates, list) else "no"
            raise ServerUnfit(f"the server's reply has {count} candidates at token {number} where {asked} were asked "
                              "(top_logprobs): it shortens the list (speculative decoding sends none for drafted "
                              "tokens), so letters would go missing")
        for where, entry in ((f"token {number}", step),
                             *((f"candidate {k} of token {number}", c) for k, c in enumerate(candidates, start=1))):
            if not isinstance(entry, dict):
                raise ServerUnfit(f"the server's logprobs hold {entry!r} for {where}: not an object")
            token_identity(entry)
            if logprob_value(entry.get("logprob"), where) is None:
                raise ServerUnfit(f"the server sent logprob {entry.get('logprob')!r} for {where}: not a finite number")


def probe(client: Client, prompt: PromptText, top_logprobs: int = TOP_LOGPROBS, slot: int | None = None) -> Reply:
    """Check that the server can give typed decisions with a confidence; return the reply of the typed request.

    One real typed request (PROBE_MESSAGE with prompt's system prompt and
    grammar, 2 tokens at most, top_logprobs candidates per token), after the
    checks of speculative decoding and of the chat template; see the module
    docstring for the list. It pays the prefill of the system prompt when the
    server has not cached it yet. slot: the server slot to send it to
    (llama-server's id_slot; None: any idle slot). Raises ServerUnfit naming
    the first cause found; ServerUnreachable, ServerTimeout, ServerLoading...
    as any request.
    """
    if top_logprobs < 1:
        raise ValueError(f"the probe asks for candidates: top_logprobs must be 1 or more, not {top_logprobs}")
    messages = typed_messages(prompt, PROBE_MESSAGE)
    check_speculative(client)
    check_template(client, messages)
    try:
        pinned = {} if slot is None else {"id_slot": slot}
        reply = client.chat(messages, **request_settings(prompt, True, top_logprobs), **pinned)
    except ServerError as error:
        if "system" in error.message.lower():
            cause = "the chat template refuses the system message"
        elif "grammar" in error.message.lower():
            cause = "the server rejected the grammar"
        else:
            cause = "the server refused a typed request"
        raise ServerUnfit(f"{cause} (HTTP {error.status}: {error.message})") from None
    check_reply(reply.body, top_logprobs)
    return reply
