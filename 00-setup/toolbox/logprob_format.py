"""What a chat completion's logprobs look like, and the checks a reply's numbers pass: read with no server.

A reply to a request with logprobs carries, in OpenAI's format as
llama-server sends it, choices[0].logprobs.content: one entry per generated
token, each with its top_logprobs candidates (token, logprob, bytes, and
llama-server's token "id"). Post 03 reads a confidence from those numbers,
00-setup/typed_request.py's probe checks a server against the same rules,
and both raise ServerUnfit for a reply that no confidence can be read from.
This module only reads a decoded reply (a dict); the HTTP client,
00-setup/llama_http.py, raises ServerUnfit too and exports it.
"""
from __future__ import annotations

import math

# A logprob at or below this is a probability of 0: llama-server writes the
# lowest float (-3.4e38) for it, since JSON has no -inf.
LOGPROB_FLOOR = -1e30


class ServerUnfit(Exception):
    """The server answers, but not in a way typed decisions with a confidence can be read from.

    The message names the cause (no logprobs, a shortened candidate list,
    speculative decoding, a chat template that refuses the system message...).
    """


def logprob_steps(response: dict) -> list[dict]:
    """choices[0].logprobs.content of a chat completion: one dict per generated token.

    Raises ServerUnfit when the reply has no choices, or carries no logprobs
    ("logprobs": null: the server does not return them on
    /v1/chat/completions), or its content is not a list.
    """
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerUnfit("the server's reply has no choices: not an OpenAI-style chat completion")
    logprobs = choices[0].get("logprobs")
    if logprobs is None:
        raise ServerUnfit('the server sent "logprobs": null although logprobs were asked for: it does not return '
                          "token logprobs on /v1/chat/completions, which a confidence is read from (llama-server does)")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        raise ServerUnfit("the server's logprobs have no list under \"content\": one entry per generated token was "
                          "expected (OpenAI's format, as llama-server sends it)")
    return content


def logprob_value(value, where: str) -> float | None:
    """A logprob as a float, or None when the server gave no probability (JSON null, or -inf).

    A logprob is log p in nats, so it is at most 0. Raises ServerUnfit naming
    `where` (e.g. "candidate 'C' at step 1") for a logprob above 0 (a
    probability above 1, which some backends send to mean "not available"),
    NaN or +inf, or a value that is not a number at all.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ServerUnfit(f"the server sent logprob {value!r} for {where}: not a number")
    if value == -math.inf:
        return None
    if not value <= 0.0:  # also NaN and +inf
        raise ServerUnfit(f"the server sent logprob {value!r} for {where}: a probability above 1 (or not a number), "
                          "which no confidence can be read from")
    return float(value)
