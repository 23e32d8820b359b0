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

The API is llama.cpp's tools/server/README.md: /health, /props, /tokenize and
the OpenAI-compatible /v1/chat/completions.
"""
from __future__ import annotations

import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass

DEFAULT_URL = "http://127.0.0.1:8080"


def server_url() -> str:
    """The base URL of llama-server: $LLAMA_URL, or http://127.0.0.1:8080."""
    return os.environ.get("LLAMA_URL", DEFAULT_URL).rstrip("/")


def server_command(url: str, command: str) -> str:
    """The 00-setup command line for url, with LLAMA_URL in front when it is not the default."""
    prefix = "" if url.rstrip("/") == DEFAULT_URL else f"LLAMA_URL={url} "
    return f"{prefix}python3 00-setup/server.py {command}"


class ServerUnreachable(Exception):
    """Nothing accepts connections at the server URL."""


class ServerLoading(Exception):
    """The server is up but still loading the model (HTTP 503)."""


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


class Client:
    """A keep-alive HTTP connection to llama-server, one per thread.

    Reusing the connection keeps the client's share of each request to a
    fraction of a millisecond; a new TCP connection per request would add
    more. Safe to share between threads (each thread gets its own connection).
    """

    def __init__(self, url: str | None = None, timeout_s: float = 600.0):
        self.url = (url or server_url()).rstrip("/")
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"LLAMA_URL must look like http://127.0.0.1:8080, got {self.url!r}")
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.timeout_s = timeout_s
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, method: str, path: str, payload: dict | None = None) -> Reply:
        """Send one request and decode the JSON answer.

        Raises ServerUnreachable (connection refused), ServerLoading (503),
        ServerError (any other status >= 400).
        """
        data = None if payload is None else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"} if data else {}
        for attempt in (1, 2):
            start = time.perf_counter()
            try:
                conn = self._connection()
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected,
                    BrokenPipeError, OSError) as error:
                self._drop_connection()
                # A kept-alive connection the server has closed fails once; retry on a fresh one.
                if attempt == 1 and not isinstance(error, ConnectionRefusedError):
                    continue
                raise ServerUnreachable(f"llama-server is not reachable at {self.url} ({error.__class__.__name__}); start it with: {server_command(self.url, 'start')}") from None
            wall_ms = (time.perf_counter() - start) * 1000.0
            break
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"error": {"message": raw.decode(errors="replace")[:200]}}
        if response.status == 503:
            raise ServerLoading(f"llama-server at {self.url} is still loading the model")
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

        on_wait(seconds_waited) is called about once a second while the server
        answers 503 (loading) or does not answer yet.
        Raises ServerUnreachable or ServerLoading when the bound is reached.
        """
        deadline = time.monotonic() + timeout_s
        started = time.monotonic()
        while True:
            try:
                self.get("/health")
                return
            except (ServerLoading, ServerUnreachable) as error:
                if time.monotonic() >= deadline:
                    raise type(error)(f"{error} (gave up after {timeout_s:.0f} s)") from None
                if on_wait:
                    on_wait(time.monotonic() - started)
                time.sleep(1.0)

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


def exit_on_server_errors(main, also: tuple[type[Exception], ...] = ()) -> int:
    """Run main() and turn the errors a reader can cause into one line and an exit code.

    ServerUnreachable / ServerLoading (the message says how to start the
    server), ServerError (a refused request), ValueError (bad input), OSError
    (a missing file, a dataset that cannot be downloaded) and the exception
    types in `also` -> exit 2. KeyboardInterrupt -> exit 130, after what was
    finished has been kept.
    """
    try:
        return main() or 0
    except (ServerUnreachable, ServerLoading, ServerError, ValueError, OSError, *also) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
