"""One typed request: a message in, a code (or a stated failure) out, with post 02's retry.

    reply = ask_code(client, prompt, "I am still waiting on my card?")
    reply.status, reply.code, reply.retried

The messages and settings of the request come from 00-setup/typed_request.py,
whose probe sends the same request to check a server before a run.

The rules every later post relies on:
- Greedy decoding (temperature 0) with prompt.grammar (prompt.py), at most 2
  tokens: a code is 'C' then '-F' for Qwen-family tokenizers.
- finish_reason "length" with content that is not a full code: retry once
  with room for 3 tokens ('C', '-', 'F'); if it is still not a full code,
  the answer is "invalid". Half a code is never taken as an answer.
- A message too long for the context (HTTP 400, or 500 "too large to
  process") is "too_long"; the caller goes on with the next message.
- Any other refusal is "error": not an answer but a failed attempt, asked
  again when a run is repeated (results_file.FINAL_STATUSES are the outcomes that stay).
- A grammar the server rejects (HTTP 400 "Failed to parse grammar") raises
  GrammarRejected: nothing after it can work, so the caller stops.
- An empty message raises ValueError before anything is sent.
"""
from __future__ import annotations

from dataclasses import dataclass

from llama_http import Client, ServerError
from prompt import Prompt
from typed_request import request_settings, typed_messages


class GrammarRejected(ServerError):
    """The server could not parse the grammar (HTTP 400); the message is the server's."""


@dataclass(frozen=True)
class CodeReply:
    """The outcome of one typed request.

    status: "ok" (a full code from the table), "invalid" (no full code after
    the retry), "too_long" (the message does not fit the context) or "error"
    (another server error, in `error`).
    code: the code when status is "ok", else None. content: the raw reply text.
    retried: True when a second request with room for 3 tokens was needed.
    response: the last chat completion body (with logprobs when asked), or None.
    timings: the server's timings of the last request (prompt_ms, predicted_ms
    in milliseconds; prompt_n, predicted_n in tokens). wall_ms: client wall
    time summed over the request(s), in milliseconds. error: server message.
    top_logprobs: the candidates per token that were asked for (0: none).
    """

    status: str
    code: str | None
    content: str
    retried: bool
    response: dict | None
    timings: dict
    wall_ms: float
    error: str | None = None
    top_logprobs: int = 0


def is_too_long(error: ServerError) -> bool:
    """True for both shapes of 'the message does not fit the context'.

    HTTP 400 with type exceed_context_size_error ("request (N tokens) exceeds
    the available context size"), or HTTP 500 "input (N tokens) is too large
    to process" when the prompt cannot be split into batches.
    """
    error_type = error.body.get("error", {}).get("type", "") if isinstance(error.body.get("error"), dict) else ""
    text = error.message.lower()
    return error.status in (400, 500) and (
        error_type == "exceed_context_size_error" or "context size" in text or "too large to process" in text
    )


def ask_code(client: Client, prompt: Prompt, message: str, grammar: bool = True,
             top_logprobs: int = 0) -> CodeReply:
    """Ask the server for the code of one message.

    top_logprobs: how many candidates per generated token to return (0 for
    none; post 03 uses 30). Raises ValueError for an empty message,
    GrammarRejected when the server cannot parse the grammar, and
    ServerUnreachable, ServerTimeout, ConnectionLost or ServerLoading when no
    answer came back (llama_http): then there is no outcome to record.
    """
    if not message.strip():
        raise ValueError("the message is empty: give the text of a customer message")
    messages = typed_messages(prompt, message)
    wall_ms = 0.0
    for attempt, max_tokens in enumerate((2, 3)):
        settings = request_settings(prompt, grammar, top_logprobs, max_tokens)
        try:
            reply = client.chat(messages, **settings)
        except ServerError as error:
            if grammar and error.status == 400 and "grammar" in error.message.lower():
                raise GrammarRejected(error.status, f"the server rejected the grammar: {error.message}", error.body) from None
            status = "too_long" if is_too_long(error) else "error"
            return CodeReply(status, None, "", attempt > 0, None, {}, wall_ms, error.message, top_logprobs)
        wall_ms += reply.wall_ms
        choice = reply.body["choices"][0]
        content = choice["message"].get("content") or ""
        code = content.strip()
        if code in prompt.codes:
            return CodeReply("ok", code, content, attempt > 0, reply.body, reply.body.get("timings", {}), wall_ms,
                             top_logprobs=top_logprobs)
        # Only a reply cut short by the token limit deserves more room; anything else is final.
        if choice.get("finish_reason") != "length":
            break
    return CodeReply("invalid", None, content, attempt > 0, reply.body, reply.body.get("timings", {}), wall_ms,
                     top_logprobs=top_logprobs)
