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
"""
from __future__ import annotations

import http.server
import json
import socket
import socketserver
import threading
from collections.abc import Callable

def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the moment of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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
