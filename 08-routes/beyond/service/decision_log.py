"""The service's decision log: one JSONL line per routed message, appended, whole under concurrent writers.

    log = DecisionLog(Path("decisions.jsonl"))          # the message's text left out (with_text=True to keep it)
    log.write([log.line(message, route_object)])        # time, message_sha256, decision, route, ... (LOG_FIELDS)

What a help desk needs to audit a decision later, without what the customer
wrote: when, a sha256 of the message, the decision and its code, confidence,
calibrated confidence, route, what stood before act and the router's
sha256; for a dataset with fields, each field's option and confidences.
"""
from __future__ import annotations

import datetime
import json
import threading
from pathlib import Path

LOG_FIELDS = ("time", "message_sha256", "decision", "status", "code", "confidence", "calibrated", "route",
              "before_act", "router_sha256")


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the millisecond with a Z: "2026-12-05T13:02:11.123Z"."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DecisionLog:
    """The decision log: one JSONL line per routed message, appended, whole under concurrent writers.

    path: the file, opened once in append mode (its folder made when
    missing). with_text: also write each message's text ("message"); off by
    default, so the log records what was decided without what customers
    wrote. Each line is written with one write() and one flush() under one
    lock, so lines of concurrent requests never interleave. Raises OSError
    when the file cannot be opened.
    """

    def __init__(self, path: Path, with_text: bool = False):
        self.path = path
        self.with_text = with_text
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def line(self, message: str, row: dict) -> dict:
        """The log line (a dict, LOG_FIELDS in order, then "fields" where the route object has them) of one
        routed message and its route object `row`."""
        line = {"time": utc_now(), **{name: row[name] for name in LOG_FIELDS[1:]}}
        line |= {"fields": row["fields"]} if "fields" in row else {}  # a dataset with fields: each field's answer
        return line | {"message": message} if self.with_text else line

    def write(self, lines: list[dict]) -> None:
        """Append lines (dicts), each one JSON line, in order, together: one write and flush per line."""
        with self._lock:
            for line in lines:
                self._file.write(json.dumps(line) + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
