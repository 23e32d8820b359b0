"""A small local HTTP server for the failure shapes a real llama-server cannot be made to produce.

Only for those: an answer that comes after a set delay (to see that a client
timeout does not send a request twice), a connection closed without an answer
or after every answer without saying so, and reply bodies of other backends
("logprobs": null, HTTP 500 "System role not supported" on every request).
Everything else is tested against the real test server.

    def answer(method, path, body):          # -> (status, JSON body), or None to hang up without answering
        return 200, {"status": "ok"}
    with FakeServer(answer) as fake:
        Client(fake.url).get("/health")
        fake.requests                         # [("GET", "/health")]: every request that arrived, in order

fake_llama() plays just enough of llama-server (/props, /slots,
/apply-template, /tokenize, /v1/chat/completions) for a script or the probe to
reach the one answer under test.
"""
from __future__ import annotations

import http.server
import json
import socketserver
import threading
import zlib
from collections.abc import Callable

from typed_request import TOP_LOGPROBS


Answer = Callable[[str, str, dict | None], tuple[int, dict] | None]


class FakeServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 and a free port, answering every request with answer().

    requests: (method, path) of every request received, in order. connections:
    how many TCP connections were accepted. close_after_each: close the
    connection after every answer without a "Connection: close" header, as a
    server does when a kept-alive connection times out.
    """

    def __init__(self, answer: Answer, close_after_each: bool = False):
        self.answer = answer
        self.close_after_each = close_after_each
        self.requests: list[tuple[str, str]] = []
        self.connections = 0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                fake.connections += 1
                super().setup()

            def log_message(self, *args):
                pass

            def respond(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.requests.append((self.command, self.path))
                result = fake.answer(self.command, self.path, json.loads(raw) if raw else None)
                if result is None:
                    self.close_connection = True
                    return
                status, body = result
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting
                    self.close_connection = True
                    return
                if fake.close_after_each:
                    self.close_connection = True

            do_GET = do_POST = respond

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def count(self, method: str, path: str) -> int:
        """How many requests of this method and path arrived."""
        return self.requests.count((method, path))

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


# ---------------------------------------------------------------- playing llama-server

PROPS = {"model_alias": "fake-model", "build_info": "b0", "default_generation_settings": {"params": {}}}


def step(token: str, token_id: int, asked: int, **changes) -> dict:
    """One logprobs.content entry as llama-server sends it: the token and `asked` candidates, itself first."""
    candidates = [{"id": token_id, "token": token, "bytes": list(token.encode()), "logprob": -0.1}]
    candidates += [{"id": 1000 + k, "token": f"t{k}", "bytes": list(f"t{k}".encode()), "logprob": -5.0 - k}
                   for k in range(asked - 1)]
    return {"id": token_id, "token": token, "bytes": list(token.encode()), "logprob": -0.1,
            "top_logprobs": candidates, **changes}


def reply_body(asked: int = TOP_LOGPROBS, steps: list[dict] | None = None, generated: int = 2) -> dict:
    """A typed reply 'C-F' in 2 tokens with logprobs, as llama-server sends it."""
    steps = [step("C", 34, asked), step("-F", 7276, asked)] if steps is None else steps
    return {"choices": [{"finish_reason": "length", "message": {"role": "assistant", "content": "C-F"},
                         "logprobs": {"content": steps}}],
            "usage": {"completion_tokens": generated}, "timings": {"predicted_n": generated}}


def fake_llama(chat=lambda body: (200, reply_body(body["top_logprobs"])), slots=(404, {"error": {"message": "no"}}),
               props=PROPS, template=None) -> Answer:
    """An answer() for FakeServer that plays llama-server; chat(body) gives the chat completion's answer."""
    def answer(method, path, body):
        if path == "/props":
            return 200, props
        if path == "/slots":
            return slots
        if path == "/apply-template":
            return template(body) if template else (404, {"error": {"message": "File Not Found"}})
        if path == "/tokenize":  # every text one token, with an id of its own: enough for letter_tokens
            return 200, {"tokens": [{"id": zlib.crc32(body["content"].encode()), "piece": body["content"]}]}
        if path == "/v1/chat/completions":
            return chat(body)
        return 404, {"error": {"message": "File Not Found"}}
    return answer


SYSTEM_REFUSED = (500, {"error": {"code": 500, "message": "System role not supported", "type": "server_error"}})
