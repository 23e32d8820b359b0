"""Talking to llama-server over HTTP with the standard library.

Every post that needs the server goes through this module, so the errors a
reader can hit (server not started, still loading, request refused) read the
same everywhere:

- ServerUnreachable: nothing answers at LLAMA_URL. Scripts exit 2 with a line
  that says how to start the server.
- ServerLoading: the server answers 503 while it loads the model; wait_ready()
  waits for it, up to a bound.
- ServerError: the server answered with an HTTP error (400 for a rejected
  grammar or a message longer than the context, 500 for some of the latter).
- ServerTimeout: no answer within the client's timeout. The server may still
  have been working on the request; it was not sent again.
- ConnectionLost: the connection broke after the request was sent. It is not
  sent again either: the server may have started on it.
- ServerUnfit (defined in 00-setup/toolbox/logprob_format.py, which reads a reply
  with no server): the server answers, but cannot give typed decisions with a
  confidence (found by the probe of typed_request.py, or in a reply).

A request is sent again only when it provably never reached the server: a
kept-alive connection that the server had already closed is noticed before
anything is written to it, and the request goes out once, on a new
connection. Sending it twice would not be harmless: llama-server cancels a
task whose client hangs up and drops its partly processed prompt, so a
second copy starts the long prefill again.

The API is llama.cpp's tools/server/README.md: /health, /props, /slots,
/tokenize, /apply-template and the OpenAI-compatible /v1/chat/completions.
"""
from __future__ import annotations

import base64
import http.client
import json
import math
import os
import select
import threading
import time
import urllib.parse
from dataclasses import dataclass

from logprob_format import ServerUnfit
from script_exit import exit_on_bad_input

DEFAULT_URL = "http://127.0.0.1:8080"
TIMEOUT_ENV = "LLAMA_TIMEOUT"
# A server started with --api-key wants this key as a bearer token; it is sent, never printed.
API_KEY_ENV = "LLAMA_API_KEY"
# Seconds to wait for an answer: at least the longest prefill to expect. The longest
# prompt is a whole context (10,240 tokens: the system prompt not cached yet and a
# long message); the slowest prefill measured here is the 1.5B warm-up on 2 shared
# CPU cores, 7,021 tokens in 428 s (16 tokens/s, 00-setup/README.md), so about 640 s.
# Twice that, rounded, leaves room for a slower machine and for attention, whose cost
# grows with the prompt's length.
DEFAULT_TIMEOUT_S = 1200.0
# Seconds between two looks at /health while the server loads: a restored start is ready in
# seconds, so a whole second of polling would be a visible share of it.
READY_POLL_S = 0.25


def server_url() -> str:
    """The base URL of llama-server: $LLAMA_URL, or http://127.0.0.1:8080."""
    return os.environ.get("LLAMA_URL", DEFAULT_URL).rstrip("/")


def timeout_seconds() -> float:
    """The client's timeout in seconds: $LLAMA_TIMEOUT, else DEFAULT_TIMEOUT_S (1200).

    Raises ValueError when LLAMA_TIMEOUT is not a number of seconds above 0.
    """
    text = os.environ.get(TIMEOUT_ENV)
    if text is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds above 0, like {TIMEOUT_ENV}=2400, not {text!r}")
    return value


def split_credentials(url: str) -> tuple[str, str | None]:
    """(url without its user info, "user:password" or None): a URL is printed only without the first part."""
    parsed = urllib.parse.urlsplit(url)
    if "@" not in parsed.netloc:
        return url, None
    userinfo, host = parsed.netloc.rsplit("@", 1)
    return urllib.parse.urlunsplit(parsed._replace(netloc=host)), urllib.parse.unquote(userinfo)


def server_command(url: str, command: str) -> str:
    """The 00-setup command line for url, with LLAMA_URL in front when it is not the default."""
    prefix = "" if url.rstrip("/") == DEFAULT_URL else f"LLAMA_URL={url} "
    return f"{prefix}python3 00-setup/server.py {command}"


class ServerUnreachable(Exception):
    """Nothing accepts connections at the server URL."""


class ServerLoading(Exception):
    """The server is up but still loading the model (HTTP 503)."""


class ServerTimeout(Exception):
    """No answer within the client's timeout; the request was sent once and not again."""


class ConnectionLost(Exception):
    """The connection broke after the request was sent; it was not sent again."""


class ServerError(Exception):
    """The server refused a request.

    Attributes: status (HTTP status code, int), message (the server's own
    error message, str), body (the decoded JSON error, dict).
    """

    def __init__(self, status: int, message: str, body: dict):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass(frozen=True)
class Reply:
    """One HTTP exchange: the decoded JSON body and the client's wall time.

    wall_ms is measured around the whole exchange (send, wait, read, decode),
    in milliseconds, so it can be compared with the server's own timings.
    """

    body: dict
    wall_ms: float


def closed_by_server(sock) -> bool:
    """True when a kept-alive socket can be read from before a request was written to it.

    Between requests the server has nothing to say, so a readable socket means
    it closed the connection (llama-server does after 5 s idle), or sent bytes
    that belong to no request; either way the socket is not to be used, and
    nothing has been sent on it yet.
    """
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):  # a socket already closed on our side
        return True
    return bool(readable)


class Client:
    """A keep-alive HTTP connection to llama-server, one per thread.

    Reusing the connection keeps the client's share of each request to a
    fraction of a millisecond; a new TCP connection per request would add
    more. Safe to share between threads (each thread gets its own connection).
    timeout_s: seconds to wait for an answer (default: timeout_seconds(), 1200
    unless $LLAMA_TIMEOUT says otherwise).
    """

    def __init__(self, url: str | None = None, timeout_s: float | None = None):
        # self.url is the one that is printed: user info (user:password@) is taken out and sent as a header.
        self.url, credentials = split_credentials((url or server_url()).rstrip("/"))
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"LLAMA_URL must look like http://127.0.0.1:8080, got {self.url!r}")
        try:
            self.port = parsed.port or 80
        except ValueError:
            raise ValueError(f"LLAMA_URL has a port that is not a number from 1 to 65535: {self.url!r}") from None
        self.host = parsed.hostname
        self.timeout_s = timeout_seconds() if timeout_s is None else timeout_s
        self._auth: dict[str, str] = {}
        if credentials:
            self._auth["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
        if os.environ.get(API_KEY_ENV):
            self._auth["Authorization"] = f"Bearer {os.environ[API_KEY_ENV]}"
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"  # never the credentials

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection, open and unused since its last answer.

        A kept-alive socket the server has closed is dropped before anything is
        written to it (closed_by_server), and a new connection is opened.
        Raises ServerUnreachable when the connection cannot be made (refused,
        or no answer to the connect within the timeout): nothing was sent.
        """
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and closed_by_server(conn.sock):
            self._drop_connection()
            conn = None
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            self._local.conn = conn
        if conn.sock is None:
            try:
                conn.connect()
            except OSError as error:
                self._drop_connection()
                raise ServerUnreachable(f"llama-server is not reachable at {self.url} ({error.__class__.__name__}); "
                                        f"start it with: {server_command(self.url, 'start')}") from None
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, method: str, path: str, payload: dict | None = None) -> Reply:
        """Send one request, once, and decode the JSON answer.

        Raises ServerUnreachable (no connection could be made: nothing was
        sent), ServerTimeout (no answer within timeout_s), ConnectionLost (the
        connection broke after sending), ServerLoading (503), ServerError (any
        other status >= 400). The request is never sent twice (see the module
        docstring).
        """
        data = None if payload is None else json.dumps(payload).encode()
        headers = {**({"Content-Type": "application/json"} if data else {}), **self._auth}
        start = time.perf_counter()
        conn = self._connection()
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError:
            self._drop_connection()
            raise ServerTimeout(
                f"llama-server at {self.url} did not answer {method} {path} within {self.timeout_s:g} s; it may still "
                "have been processing it (a long prompt on a slow or busy machine takes minutes). It was not sent "
                f"again. To wait longer, set {TIMEOUT_ENV} to more seconds (e.g. {TIMEOUT_ENV}=2400) and rerun") from None
        except (OSError, http.client.HTTPException) as error:
            self._drop_connection()
            raise ConnectionLost(
                f"the connection to llama-server at {self.url} broke after {method} {path} was sent "
                f"({error.__class__.__name__}); it was not sent again, since the server may have started on it. "
                f"Check the server ({server_command(self.url, 'status')}) and rerun") from None
        wall_ms = (time.perf_counter() - start) * 1000.0
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"error": {"message": raw.decode(errors="replace")[:200]}}
        if response.status == 503:
            raise ServerLoading(f"llama-server at {self.url} is still loading the model")
        if response.status == 401:
            hint = "the key in " + API_KEY_ENV + " is not the server's" if API_KEY_ENV in os.environ else (
                f"set {API_KEY_ENV} to the server's --api-key")
            raise ServerError(401, f"llama-server at {self.url} wants an API key: {hint}", {})
        if response.status >= 400:
            error = body.get("error", body) if isinstance(body, dict) else {}
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            raise ServerError(response.status, message, body if isinstance(body, dict) else {})
        return Reply(body, wall_ms)

    def get(self, path: str) -> dict:
        """GET a JSON endpoint such as /health or /props."""
        return self.request("GET", path).body

    def post(self, path: str, payload: dict) -> Reply:
        """POST a JSON payload; the Reply carries the client's wall time in ms."""
        return self.request("POST", path, payload)

    def wait_ready(self, timeout_s: float = 300.0, on_wait=None) -> None:
        """Wait until /health answers 200, for at most timeout_s seconds.

        /health is asked every READY_POLL_S (0.25 s); on_wait(seconds_waited)
        is called before each wait while the server answers 503 (loading),
        does not answer yet, or drops the connection while it starts. Raises
        ServerUnreachable, ServerLoading or ConnectionLost when the bound is
        reached.
        """
        deadline = time.monotonic() + timeout_s
        started = time.monotonic()
        while True:
            try:
                self.get("/health")
                return
            except (ServerLoading, ServerUnreachable, ConnectionLost) as error:
                if time.monotonic() >= deadline:
                    raise type(error)(f"{error} (gave up after {timeout_s:.0f} s)") from None
                if on_wait:
                    on_wait(time.monotonic() - started)
                time.sleep(READY_POLL_S)

    def model_info(self) -> dict:
        """What the server runs: {'model': alias or file name, 'build': build string}.

        Read from /props (model_alias, model_path, build_info).
        """
        props = self.get("/props")
        model = props.get("model_alias") or os.path.basename(props.get("model_path", "")) or "unknown"
        return {"model": model, "build": props.get("build_info", "unknown")}

    def tokenize(self, text: str) -> list[tuple[int, str]]:
        """Tokens of text as (token id, piece) pairs, from /tokenize with pieces.

        No special tokens are added. A piece that is not valid UTF-8 comes back
        from the server as a list of bytes; it is decoded with replacement.
        """
        body = self.post("/tokenize", {"content": text, "with_pieces": True, "add_special": False}).body
        pairs = []
        for token in body["tokens"]:
            piece = token["piece"]
            if isinstance(piece, list):
                piece = bytes(piece).decode("utf-8", errors="replace")
            pairs.append((token["id"], piece))
        return pairs

    def chat(self, messages: list[dict], **settings) -> Reply:
        """POST /v1/chat/completions with the given messages and settings.

        Thinking is switched off for models whose template has it (the
        setting is ignored by templates without it). Prompt caching is on, so
        a system prompt shared by every request is processed only once.
        """
        payload = {
            "messages": messages,
            "cache_prompt": True,
            "chat_template_kwargs": {"enable_thinking": False},
            **settings,
        }
        return self.post("/v1/chat/completions", payload)


def chat(system: str, message: str, client: Client | None = None, **settings) -> dict:
    """One chat completion: the system prompt and the customer's message in, the reply's JSON body out.

    Greedy (temperature 0) unless settings say otherwise; settings are
    /v1/chat/completions fields (max_tokens, grammar, logprobs...). The
    reply's text is body["choices"][0]["message"]["content"]. client: the
    server to ask (default: Client(), the one at LLAMA_URL). Raises what
    Client.chat raises.
    """
    client = client or Client()
    messages = [{"role": "system", "content": system}, {"role": "user", "content": message}]
    return client.chat(messages, **{"temperature": 0.0, **settings}).body


def exit_on_server_errors(main, also: tuple[type[Exception], ...] = ()) -> int:
    """Run main() and turn the errors a reader can cause into one line and an exit code.

    ServerUnreachable / ServerLoading (the message says how to start the
    server), ServerTimeout and ConnectionLost (what happened to the request),
    ServerError (a refused request), ServerUnfit (what the server cannot do),
    ValueError (bad input), OSError (a missing file, a dataset that cannot be
    downloaded) and the exception types in `also` -> exit 2.
    KeyboardInterrupt -> exit 130, after what was finished has been kept.
    The rule is 00-setup/toolbox/script_exit.py's, which scripts that need no server use.
    """
    return exit_on_bad_input(main, also=(ServerUnreachable, ServerLoading, ServerTimeout, ConnectionLost, ServerError,
                                         ServerUnfit, *also))
