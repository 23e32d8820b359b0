"""A router as an HTTP service: the best decision measured for the task, fitted once, safe by default.

    python3 08-routes/beyond/service/service.py                          # http://127.0.0.1:8090, BANKING77's best router
    python3 08-routes/beyond/service/service.py --decision model         # post 08's model alone instead
    python3 08-routes/beyond/service/service.py --port 8090 --log decisions.jsonl
    curl -s -H 'Content-Type: application/json' -d '{"message": "where is my card?"}' 127.0.0.1:8090/route
    curl -s -H 'Content-Type: application/json' -d '{"messages": ["where is my card?", "hi"]}' 127.0.0.1:8090/route
    curl -s 127.0.0.1:8090/health
    curl -s 127.0.0.1:8090/router

A threaded standard-library http.server on 127.0.0.1. At start-up it picks
the decision router (decisions/decision_router.py) whose served decision
acts on the most calib answers at its target (decisions/choose.py: your own
routers, else the committed ones; --decision or --router names another),
prints which, why, the runner-up and what the model adds, and makes it
ready once: its ranking (post 01's nearest neighbours or the logistic
regression, sha256 checked), its combined weights and isotonic map, the
gate and harm rule fitted on its calib answers. A decision that asks the
model is checked against the running llama-server (LLAMA_URL, default
http://127.0.0.1:8080: its model, then a probe); one without the model never
calls llama-server. Each message then gets that decision's answer and post
08's routes, and its answer is the object route.py --jsonl prints, plus
"decision" and "before_act".

Safe by default, as route_beyond.py: where the thresholds would act, an
intent the label file marks irreversible gets the "confirm" route (a
confirmation question), a message unlike the calib messages (typicality.py)
or carrying a mark guard.py keeps is handed over, and an intent it marks
"change" is asked about unless its calibrated confidence reaches the stricter
--change-target's threshold; a change or an irreversible intent asked for
someone else ("my son's", "on behalf of") is handed over (harm.py). With
--other-model (a server running another model than the router's) nothing
is acted on: an act becomes a question. --unsafe-no-gate turns the gate off
and routes as post 08's route.py does (which acted on 8 of 45 hostile
messages in issue 43).

Endpoints:
  POST /route   {"message": "..."} or {"messages": ["...", ...]} (at most MAX_BATCH)
                -> 200 {"routes": [one object per message, in order]}
  GET /health   -> 200 (or 503 when llama-server cannot route) {"status", "service", "llama_server"}
  GET /router   -> 200 the router's summary: decision, its files' sha256, what the model adds, thresholds

Errors are JSON {"error": {"status": N, "message": "..."}}, never a
traceback: 400 invalid JSON (nested too deep too) or a missing or empty
message, 404 unknown path, 405 wrong method, 411 no Content-Length, 413 a
message, batch or body too large, 415 not application/json, 502
llama-server refused the request, 503 llama-server down, loading or running
another model, or the queue full (with Retry-After), 504 llama-server did
not answer in time.

llama-server has one slot, so one worker thread sends the typed requests,
one at a time; requests wait in a bounded queue (--queue). Each request gets
its answer or an error, once. Every routed message is appended to the
decision log (--log) as one JSONL line: time (UTC), message_sha256, decision,
status, code, confidence, calibrated, route, before_act and router_sha256
(decision_log.py), and each field's answer for a dataset with fields
(fields/); the message's text only with --log-text.
"""
from __future__ import annotations

import argparse
import http.server
import json
import queue
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from choose import add_router_options, choice_lines, choice_speed, router_of_options
from decision_log import DecisionLog
from decision_router import Ready, read_decision_router, ready_router
from decisions import Ask, ask_live
from harm import CHANGE_TARGET
from llama_http import (Client, ConnectionLost, ServerError, ServerLoading, ServerTimeout, ServerUnreachable,
                        exit_on_server_errors)
from logprob_format import ServerUnfit
from registry import add_dataset_argument
from results_file import relative
from route import Routed, check_model, check_router, jsonl_object
from datafiles import sha256_of
from router_file import OWN_FOLDER, route_of
from safety import route_before_act
from typed_request import probe
from typicality import confirmation_question

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8090
MAX_BATCH = 32             # messages in one POST /route; more -> 413
MAX_MESSAGE_CHARS = 2000   # characters in one message; more -> 413 (a BANKING77 message has at most 433)
MAX_BODY_BYTES = 256 * 1024  # bytes of one request body; more -> 413, the body unread
DEFAULT_QUEUE = 16         # requests that may wait for llama-server's slot; one more -> 503 with Retry-After
RETRY_AFTER_S = 2          # the Retry-After of a full queue, seconds
HEALTH_TIMEOUT_S = 5.0     # how long GET /health waits for llama-server's /health
LOG_NAME = "{dataset}-service-decisions.jsonl"  # in 03-where-confidence-comes-from/results/ (git-ignored)
class RequestError(Exception):
    """A request the service answers with an error: HTTP status, one sentence, extra headers (Retry-After)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def error_body(status: int, message: str) -> dict:
    """The JSON body of every error answer: {"error": {"status": status, "message": message}}."""
    return {"error": {"status": status, "message": message}}


def messages_of_request(content_type: str | None, body: bytes) -> list[str]:
    """The messages of a POST /route body, checked; raise RequestError with the status a client should see.

    content_type: the Content-Type header (application/json, parameters such
    as charset=utf-8 allowed; else 415). body: the raw bytes (UTF-8 JSON of
    one object with exactly one of "message", a text, or "messages", a list
    of 1 to MAX_BATCH texts; anything else 400). A message that is empty or
    blanks only is 400; one longer than MAX_MESSAGE_CHARS, or more than
    MAX_BATCH messages, is 413. The messages are returned as sent (not
    stripped), so their sha256 is that of the text the client holds.
    """
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise RequestError(415, f"send the body as Content-Type: application/json, not {content_type or 'none'}")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestError(400, f"the body is not JSON in UTF-8 ({error})") from None
    except RecursionError:  # json.loads recurses once per bracket: a body of [[[[...]]]] exhausts the stack
        raise RequestError(400, "the body nests arrays or objects too deep to read: send "
                                '{"message": "..."} or {"messages": ["...", ...]}') from None
    if not isinstance(data, dict):
        raise RequestError(400, 'the body must be a JSON object: {"message": "..."} or {"messages": ["...", ...]}')
    if unknown := sorted(set(data) - {"message", "messages"}):
        raise RequestError(400, f"unknown field {', '.join(map(repr, unknown))}: give \"message\" or \"messages\"")
    if len(data) != 1:
        raise RequestError(400, 'give one message as {"message": "..."} or a batch as {"messages": [...]}, '
                                "one of the two")
    if "message" in data:
        messages, where = [data["message"]], ["message"]
    else:
        messages = data["messages"]
        if not isinstance(messages, list) or not messages:
            raise RequestError(400, '"messages" must be a non-empty list of texts')
        if len(messages) > MAX_BATCH:
            raise RequestError(413, f"{len(messages)} messages in one request; at most {MAX_BATCH}: split the batch")
        where = [f"messages[{i}]" for i in range(len(messages))]
    for name, message in zip(where, messages):
        if not isinstance(message, str):
            raise RequestError(400, f"{name} is not a text")
        if not message.strip():
            raise RequestError(400, f"{name} is empty: give the text of a customer message")
        if len(message) > MAX_MESSAGE_CHARS:
            raise RequestError(413, f"{name} has {len(message)} characters; at most {MAX_MESSAGE_CHARS}")
    return messages


def server_problem(error: Exception) -> RequestError:
    """The status and sentence a client sees when llama-server could not give an answer (llama_http's
    exceptions; ServerUnfit and ValueError from the re-check after an outage)."""
    if isinstance(error, (ServerUnreachable, ServerLoading, ConnectionLost, ServerUnfit, ValueError)):
        return RequestError(503, f"llama-server cannot route now: {error}", {"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(error, ServerTimeout):
        return RequestError(504, f"llama-server did not answer in time: {error}")
    return RequestError(502, f"llama-server refused the typed request: {error}")


SERVER_ERRORS = (ServerUnreachable, ServerLoading, ConnectionLost, ServerTimeout, ServerError, ServerUnfit)


@dataclass
class Job:
    """One POST /route waiting for the worker: its messages; then its route objects or its error, and `done`."""

    messages: list[str]
    routes: list[dict] | None = None
    error: RequestError | None = None
    done: threading.Event = field(default_factory=threading.Event)


class RoutingService:
    """The router behind the HTTP endpoints: one worker thread, a bounded queue, the decision, the gate and the log.

    ready: the decision router made ready (decision_router.ready_router: the
    decider, calibration and safety checks, fitted once). router_path: its
    file (its sha256 goes into every object). client: llama_http's Client of
    llama-server, None for a decision without the model (then llama-server
    is never called). safe: the checks before act are on (False:
    --unsafe-no-gate, post 08's routes). log: a DecisionLog, or None.
    queue_size: requests that may wait. other_model: the server may run
    another model than the router's (route.check_model), and then nothing is
    acted on: an act is asked about instead. ask: (prompt, message) -> the
    model's live line (default: decisions.ask_live through client). summary:
    the lines of the choice (what GET /router shows as "why").

    After llama-server failed (unreachable, loading, connection lost,
    timeout), the next request first checks it again (its model,
    route.check_model, and typed_request.probe), so a server restarted with
    another model is refused (503), not silently used.
    """

    def __init__(self, ready: Ready, router_path: Path, client: Client | None, safe: bool = True,
                 log: DecisionLog | None = None, queue_size: int = DEFAULT_QUEUE, other_model: bool = False,
                 ask: Ask | None = None, why: list[str] | None = None):
        if queue_size < 1:
            raise ValueError(f"the queue must hold at least 1 request, not {queue_size}")
        if ready.router.decision.model and client is None:
            raise ValueError(f"the decision {ready.router.decision.name} asks the model: give llama-server's client")
        self.ready, self.router_path, self.client = ready, router_path, client
        self.router = ready.router.router
        self.decision = ready.router.decision
        self.router_sha256 = sha256_of(router_path)
        self.safe, self.log, self.other_model, self.why = safe, log, other_model, why or []
        self.ask = ask or (lambda prompt, message: ask_live(client, prompt, message, self.model or ""))
        if ask is None and ready.fields is not None:  # one request answers the code and every field
            from fields_run import ask_live_fields
            self.ask = lambda prompt, message: ask_live_fields(client, ready.fields, message, self.model or "")
        self.queue: queue.Queue[Job | None] = queue.Queue(maxsize=queue_size)
        self.queue_size = queue_size
        self.model: str | None = None   # the server's model, as last checked
        self.needs_check = self.decision.model  # check the server before the next typed request
        self.acting = True              # False once the server runs another model (--other-model): ask at most
        self.started = time.monotonic()
        self.counts = {"routed_messages": 0, "answered_requests": 0, "refused_requests": 0}
        self._counts_lock = threading.Lock()
        self._worker = threading.Thread(target=self._work, name="typed-requests", daemon=True)
        self._worker.start()

    # ------------------------------------------------------------ the worker: one typed request at a time
    def check_server(self) -> str | None:
        """Check llama-server's model against the router and that it gives typed decisions; return the
        other-model warning or None (a decision without the model checks nothing: None). Raises ValueError
        (another model, without other_model), ServerUnfit, or what llama_http raises."""
        if not self.decision.model:
            return None
        info = self.client.model_info()
        warning = check_model(self.router, self.router_path, info, self.other_model)
        probe(self.client, self.ready.decider.prompt)
        self.model, self.needs_check, self.acting = info["model"], False, warning is None
        return warning

    def decide(self, index: int, message: str) -> dict:
        """The route object of one message: route.jsonl_object (JSONL_FIELDS), then "decision" and "before_act".

        The decision's answer (decisions.Decider.line), calibrated by the
        router's isotonic map, routed by its thresholds. Where they act and
        the safety checks are on, what stands before act decides: an
        irreversible intent -> route "confirm" with the confirmation question
        in "question"; a change below t_change -> "ask" with route.py's
        question; another reason -> "hand_over", the reason in
        "hand_over_text". Where the server runs another model (other_model),
        an act becomes "ask". before_act holds the reason (null when acted
        on, or the route was not act). A dataset with fields (fields/): an
        act or a confirmation stands only where every gating field lets it
        through (the field named in before_act), and "fields" gives each
        field's option, confidence and calibrated confidence. Raises
        llama_http's exceptions.
        """
        line = self.ready.decider.line(message, self.ask if self.decision.model else None)
        calibrated = self.ready.calibrated(line)
        route = route_of(line, calibrated, self.router)
        why = None
        if route == "act" and self.safe:
            why = self.ready.safety.why(message, line, calibrated)
            route = route_before_act(why)
        gated, field_why, fields = self.ready.with_fields(route, line)  # a dataset with fields: each field's say
        route, why = (gated, field_why or why) if self.safe else (route, why)
        if route == "act" and not self.acting:
            why, route = ("another model: the server runs another model than the router was fitted on "
                          "(--other-model), so nothing is acted on; asked instead"), "ask"
        # route.py's object for the route taken (a confirmation is an act held back: its own question below)
        row = jsonl_object(index, message, Routed(line, calibrated, "act" if route == "confirm" else route),
                           self.ready.decider.prompt, self.router, self.router_sha256)
        if route == "confirm":
            row |= {"route": "confirm", "question": confirmation_question(self.ready.decider.prompt.by_intent[line.intent])}
        elif route == "hand_over" and why:
            row |= {"hand_over_text": f"Handed over to a person: not acted on: {why}."}
        elif row["hand_over_text"] and not self.decision.model:  # route.py's text names the model as the guesser
            row["hand_over_text"] = row["hand_over_text"].replace(
                "the model's best guess is", f"the best guess of the {self.decision.name} decision is")
        return row | {"decision": self.decision.name, "before_act": why} | ({"fields": fields} if fields else {})

    def route_batch(self, messages: list[str]) -> list[dict]:
        """The route objects of messages, in order, logged once all are routed (so a request that fails half-way
        logs nothing and the log holds the answered messages only). Raises RequestError (503/502/504) when
        llama-server cannot answer; then the next batch checks the server first."""
        try:
            if self.needs_check:
                self.check_server()  # ValueError: the server now runs another model
            rows = [self.decide(index, message) for index, message in enumerate(messages)]
        except (*SERVER_ERRORS, ValueError) as error:
            if isinstance(error, ValueError) and not self.needs_check:
                raise  # not the server's: a bug, answered 500 by the worker
            self.needs_check = self.decision.model
            raise server_problem(error) from None
        if self.log is not None:
            self.log.write([self.log.line(message, row) for message, row in zip(messages, rows)])
        return rows

    def _work(self) -> None:
        while (job := self.queue.get()) is not None:
            try:
                job.routes = self.route_batch(job.messages)
            except RequestError as error:
                job.error = error
            except Exception as error:  # a bug: the client gets a 500 in JSON, the traceback goes to stderr
                traceback.print_exc()
                job.error = RequestError(500, f"the service failed on this request ({error.__class__.__name__}); "
                                              "its log says why")
            finally:
                job.done.set()

    # ------------------------------------------------------------ what the handlers call
    def route(self, messages: list[str]) -> list[dict]:
        """Queue the messages for the worker and wait for their route objects. Raises RequestError: 503 with
        Retry-After when the queue is full (nothing was routed), or the worker's error."""
        job = Job(messages)
        try:
            self.queue.put_nowait(job)
        except queue.Full:
            self.count("refused_requests")
            raise RequestError(503, f"the queue is full ({self.queue_size} requests wait for llama-server's slot); "
                                    f"retry after {RETRY_AFTER_S} s", {"Retry-After": str(RETRY_AFTER_S)}) from None
        job.done.wait()
        if job.error is not None:
            self.count("refused_requests")
            raise job.error
        with self._counts_lock:
            self.counts["answered_requests"] += 1
            self.counts["routed_messages"] += len(messages)
        return job.routes

    def count(self, name: str) -> None:
        with self._counts_lock:
            self.counts[name] += 1

    def health(self) -> tuple[int, dict]:
        """(status, body) of GET /health: 200 when the service can route (llama-server answers its /health, or
        the decision does not ask the model), else 503.

        body: status ("ok" or "unavailable"), service (uptime_s, queue waiting
        and capacity, counts of routed messages, answered and refused
        requests, decision, gate on or off, log file), llama_server (url,
        state "ok", "loading", "unreachable", "error", or "not used" by a
        decision without the model, the model last checked, error).
        """
        state, error = ("ok" if self.client else "not used"), None
        if self.client is not None:
            try:
                Client(self.client.url, timeout_s=HEALTH_TIMEOUT_S).get("/health")
            except ServerLoading as problem:
                state, error = "loading", str(problem)
            except (ServerUnreachable, ConnectionLost, ServerTimeout) as problem:
                state, error = "unreachable", str(problem)
            except ServerError as problem:
                state, error = "error", str(problem)
        with self._counts_lock:
            counts = dict(self.counts)
        service = {"uptime_s": round(time.monotonic() - self.started, 1),
                   "queue": {"waiting": self.queue.qsize(), "capacity": self.queue_size}, **counts,
                   "decision": self.decision.name, "gate": "on" if self.safe else "off (--unsafe-no-gate)",
                   "acting": self.acting, "log": str(self.log.path) if self.log else None}
        llama = {"url": self.client.url if self.client else None, "state": state, "model": self.model, "error": error}
        fine = state in ("ok", "not used")
        return (200 if fine else 503), {"status": "ok" if fine else "unavailable", "service": service,
                                        "llama_server": llama}

    def summary(self) -> dict:
        """GET /router: the decision (its name, what it is, whether it asks the model, the combined weights), its
        files with their sha256 (router, calib run, off-topic answers, ranking), why it was chosen and what the
        model adds (the start lines), the router's dataset, model and build, targets, thresholds with their calib
        answers, calib size, fit date; the checks before act; the request limits."""
        r, d = self.router, self.ready.router
        files = {"router": {"path": str(relative(self.router_path)), "sha256": self.router_sha256},
                 **{name: dict(entry) for name, entry in d.files.items()}}
        return {"decision": {"name": d.decision.name, "what": d.decision.what, "asks_model": d.decision.model,
                             "weights": list(d.weights.values()) if d.weights else None,
                             "calib_act_coverage": d.act_coverage, "offtopic_answers": d.offtopic_answers},
                "files": files, "why": self.why,
                "dataset": r.dataset, "model": r.model, "build": r.build, "fitted": r.fitted,
                "targets": {"act": r.target, "ask": r.ask_target, "change": d.change_target},
                "thresholds": {"t_act": r.t_act, "t_ask": r.t_ask, "act_answers": r.act_answers,
                               "ask_answers": r.ask_answers},
                "calib": {"file": r.calib_file, "answers": r.calib_answers, "sha256": r.calib_sha256},
                "out_of_scope": list(r.out_of_scope), "router_file": str(relative(self.router_path)),
                "router_sha256": self.router_sha256,
                "before_act": self.ready.safety.describe() if self.safe else "off (--unsafe-no-gate)",
                "acting": self.acting,
                "limits": {"max_batch": MAX_BATCH, "max_message_chars": MAX_MESSAGE_CHARS,
                           "max_body_bytes": MAX_BODY_BYTES, "queue": self.queue_size}}

    def close(self) -> None:
        """Stop the worker after the jobs already queued, and close the log."""
        self.queue.put(None)
        self._worker.join()
        if self.log is not None:
            self.log.close()


class Handler(http.server.BaseHTTPRequestHandler):
    """The endpoints (see the module docstring). Every answer is JSON with a Content-Length (HTTP/1.1
    keep-alive); every error is error_body()."""

    protocol_version = "HTTP/1.1"
    server_version = "typed-decisions-service"
    # The headers and the body go out in two writes; with Nagle's algorithm on, the second waits for the
    # client's delayed ACK of the first (about 40 ms on Linux): more than the rest of the service's time.
    disable_nagle_algorithm = True
    service: RoutingService  # set by make_server

    def log_message(self, format, *args) -> None:
        pass  # the decision log records the decisions; a line per HTTP request would only be noise

    def send_json(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (a bad request line, an unsupported method) as JSON too."""
        self.close_connection = True
        self.send_json(code, error_body(code, message or self.responses.get(code, ("error",))[0]),
                       {"Connection": "close"})

    def fail(self, error: RequestError) -> None:
        self.send_json(error.status, error_body(error.status, error.message), error.headers)

    def do_GET(self) -> None:
        if self.path == "/health":
            self.send_json(*self.service.health())
        elif self.path == "/router":
            self.send_json(200, self.service.summary())
        elif self.path == "/route":
            self.fail(RequestError(405, "POST the messages to /route", {"Allow": "POST"}))
        else:
            self.fail(RequestError(404, f"no endpoint {self.path}: POST /route, GET /health, GET /router"))

    def do_POST(self) -> None:
        try:
            if self.path != "/route":
                allow = {"Allow": "GET"} if self.path in ("/health", "/router") else {}
                raise RequestError(405 if allow else 404, f"no POST {self.path}: POST /route", allow)
            messages = messages_of_request(self.headers.get("Content-Type"), self.read_body())
            self.send_json(200, {"routes": self.service.route(messages)})
        except RequestError as error:
            self.fail(error)

    def read_body(self) -> bytes:
        """The request body (Content-Length bytes). Raises RequestError 411 without a Content-Length (chunked
        bodies are not read), 400 for one that is not a number, 413 (the body unread, the connection then
        closed) above MAX_BODY_BYTES."""
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise RequestError(411, "send the body with a Content-Length")
        if not length.strip().isdigit():
            self.close_connection = True
            raise RequestError(400, f"Content-Length {length!r} is not a number of bytes")
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            raise RequestError(413, f"the body has {int(length)} bytes; at most {MAX_BODY_BYTES}")
        return self.rfile.read(int(length))

    do_PUT = do_DELETE = do_PATCH = lambda self: self.fail(
        RequestError(405, f"no {self.command}: POST /route, GET /health, GET /router", {"Allow": "GET, POST"}))


class ServiceServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer (a thread per connection, daemon threads) that logs no traceback for a client that
    hangs up."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def make_server(service: RoutingService, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ServiceServer:
    """The HTTP server of `service` bound to host:port (port 0: a free one, read server_address[1]); start it
    with serve_forever(). Raises OSError when the port is taken."""
    handler = type("ServiceHandler", (Handler,), {"service": service})
    return ServiceServer((host, port), handler)


def default_log_path(dataset: str) -> Path:
    """Where the decision log goes without --log: 03-where-confidence-comes-from/results/<dataset>-service-
    decisions.jsonl, beside a reader's own runs (git-ignored)."""
    return OWN_FOLDER / LOG_NAME.format(dataset=dataset)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port from 1 to 65535")
    return int(text)


def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM stops the service as Ctrl-C does (KeyboardInterrupt in serve_forever)."""
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}; "
                        "another one lets other machines route through this service, without any key)")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    add_dataset_argument(parser)
    add_router_options(parser)  # --decision, --router
    parser.add_argument("--other-model", action="store_true",
                        help="route even when llama-server runs another model than the router was fitted on; then "
                             "nothing is acted on (an act is asked about instead)")
    parser.add_argument("--unsafe-no-gate", action="store_true",
                        help="UNSAFE: no gate before act; route as post 08's route.py does, so irreversible intents "
                             "are acted on without a confirmation and hostile or unusual messages can be acted on")
    parser.add_argument("--change-target", type=float, default=CHANGE_TARGET,
                        help=f"the precision on calib an answer whose intent the label file marks 'change' must reach "
                             f"to be acted on (default and lowest: {CHANGE_TARGET}; harm.py); a higher one acts on fewer "
                             "changes, a lower one would lower safety and is refused")
    parser.add_argument("--queue", type=int, default=DEFAULT_QUEUE, metavar="N",
                        help=f"requests that may wait for llama-server's one slot (default {DEFAULT_QUEUE}); "
                             "one more gets 503 with Retry-After")
    parser.add_argument("--log", type=Path, metavar="FILE",
                        help="the decision log, appended to (default 03-where-confidence-comes-from/results/"
                             "<dataset>-service-decisions.jsonl)")
    parser.add_argument("--log-text", action="store_true",
                        help="also write each message's text in the decision log (off: its sha256 only)")
    args = parser.parse_args()
    if args.queue < 1:
        parser.error("--queue must be 1 or more")
    if not CHANGE_TARGET <= args.change_target <= 1:
        parser.error(f"--change-target must lie between {CHANGE_TARGET} and 1: a lower one would act on changes "
                     "the default asks about")

    path, choice = router_of_options(args.dataset, args.router, args.decision)
    decision_router = read_decision_router(path)
    if decision_router.router.dataset != args.dataset:
        raise ValueError(f"{path} is a router for {decision_router.router.dataset}, not {args.dataset}: give "
                         f"--dataset {decision_router.router.dataset}")
    ready = ready_router(decision_router, path, max(args.change_target, decision_router.change_target))
    check_router(decision_router.router, path, args.dataset, ready.decider.prompt)
    client = Client() if decision_router.decision.model else None
    why = choice_lines(choice, *choice_speed(choice, ready)) if choice else [
        f"decision: {decision_router.decision.name}: {decision_router.decision.what} (named by "
        f"{'--router' if args.router else '--decision'})"]
    service = RoutingService(ready, path, client, not args.unsafe_no_gate, None, args.queue, args.other_model,
                             why=why)
    warning = service.check_server()
    server = make_server(service, args.host, args.port)
    service.log = DecisionLog(args.log or default_log_path(args.dataset), args.log_text)
    print("\n".join(start_lines(service, warning)))
    print(f"decision log: {relative(service.log.path)} (message text {'included' if args.log_text else 'left out'})")
    print(f"listening on http://{args.host}:{server.server_address[1]} (POST /route, GET /health, GET /router; "
          f"at most {MAX_BATCH} messages a request, {args.queue} requests waiting); Ctrl-C stops", flush=True)
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the requests already queued are answered, then it stops
        print("\nstopping: answering the requests already queued", file=sys.stderr)
    finally:
        server.server_close()
        service.close()
    return 0


def start_lines(service: RoutingService, warning: str | None) -> list[str]:
    """What the service prints before it listens: the choice (service.why), the server (or that none is used),
    the router file with its calib run and off-topic answers, its files' sha256, the thresholds, the checks
    before act, the other-model warning."""
    d, r = service.ready.router, service.router
    if service.client is not None:
        build = service.client.model_info()["build"]
        server = f"server: {service.client.url}  model: {service.model}  build: {build}"
    else:
        server = "server: none: this decision does not ask the model, so llama-server is never called"
    files = ", ".join(f"{name} {entry['sha256'][:12]}" for name, entry in d.files.items())
    offtopic = (f"; {d.offtopic_answers} off-topic answers joined its thresholds' fit" if d.offtopic_answers
                else "; no off-topic answers in its thresholds' fit")
    lines = [*service.why, server,
             f"router: {relative(service.router_path)} (sha256 {service.router_sha256[:12]}; fitted {r.fitted} on "
             f"{r.calib_answers} calib answers of {r.model}{offtopic})",
             f"files checked (sha256): {files}",
             f"thresholds: act >= {r.t_act:.3f}" if r.t_act is not None else "thresholds: no act route"]
    lines[-1] += (f", ask >= {r.t_ask:.3f}" if r.t_ask is not None else ", no ask route") + \
        f" (resting on {r.act_answers} and {r.ask_answers} answers)"
    lines.append(service.ready.safety.describe() if service.safe else
                 "before act: OFF (--unsafe-no-gate): irreversible intents and unusual messages are acted on")
    if warning:
        lines.append(warning + "; nothing is acted on: an act is asked about instead")
    elif service.other_model:
        lines.append("--other-model: the server runs the router's own model, so the service acts as fitted")
    return lines


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
