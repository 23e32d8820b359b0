"""A JSONL results file that survives Ctrl-C, resumes where it stopped, and asks failed messages again.

One JSON object per message, one line each, flushed and fsynced as soon as it
is written: an interrupted run keeps every finished line. A line cut in half by
a hard kill is dropped on the next open (it was not finished), and the rerun
asks for that message again. Every object has an "id"; a rerun skips the ids
already in the file with a final outcome (status ok, invalid or too_long).

A line with status "error" is a failed attempt, not an outcome: the next run
takes it out of the file when it opens it (the file is rewritten without it,
atomically: a new file renamed over the old one) and asks that message again,
appending the new line at the end. So a file never holds two lines for one
message, every reader can read it line by line, and the error lines in it
are the ones of its last run. Readers count them on their own and leave
them out of every figure (final_and_failed).
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
from pathlib import Path

# What a line's "status" can be: a code ("ok"), no full code after the retry ("invalid"), a message too long
# for the context ("too_long") or a failed request ("error"; decision.py says when each happens).
STATUSES = ("ok", "invalid", "too_long", "error")
# The outcomes of a message that a rerun keeps; "error" is a failed attempt, asked again.
FINAL_STATUSES = ("ok", "invalid", "too_long")

ROOT = Path(__file__).resolve().parents[1]


def is_final(record: dict) -> bool:
    """True for a line with an outcome that stays (status ok, invalid or too_long), False for a failed attempt."""
    return record.get("status") in FINAL_STATUSES


def final_and_failed(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the records with a final outcome, the others), each in file order.

    Every figure a script computes from a results file is taken over the
    first list; the second is reported as its own count.
    """
    return [r for r in records if is_final(r)], [r for r in records if not is_final(r)]


def replace_lines(path: Path, lines: list[bytes]) -> None:
    """Make `lines` the content of path, one per line, atomically: written and fsynced to a temporary file
    in the same folder, then renamed over path, so path is always either the old file or the new one."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(b"".join(line + b"\n" for line in lines))
            out.flush()
            os.fsync(out.fileno())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def relative(path: str | Path) -> Path:
    """path relative to the repository when it is inside it, else absolute: how scripts name the files they read."""
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def results_folder(script: str | Path) -> Path:
    """The results/ folder of the post a script belongs to, e.g. 03-where-confidence-comes-from/results/.

    Each post keeps the files its scripts write (a reader's own runs, plots)
    in its own folder, which git ignores; the committed reference runs are in
    results/reference/ at the top of the repository.
    """
    return Path(script).resolve().parent / "results"


class ResultsFileBusy(ValueError):
    """Another process holds the results file: two writers would each ask every message and write it twice."""


def lock_path(path: Path) -> Path:
    """The lock file beside a results file, .<name>.lock (hidden; kept after the run, since removing it would
    open a gap for a second writer): its lock outlives the atomic rewrites of the file."""
    return path.with_name(f".{path.name}.lock")


def hold(path: Path) -> int:
    """Take the results file's lock (an exclusive flock on lock_path, at once or never) and write who holds it;
    return the lock's file descriptor. Raises ResultsFileBusy naming the process that holds it."""
    descriptor = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(descriptor, 4096, 0).decode(errors="replace").strip() or "another process"
        os.close(descriptor)
        raise ResultsFileBusy(f"{path} is being written by {holder}; wait for that run to end (or stop it) "
                              "before starting another on the same file") from None
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"pid {os.getpid()} ({' '.join(sys.argv)[:300]})\n".encode(), 0)
    return descriptor


class ResultsFile:
    """Append-only JSONL file keyed by message id, for a run that writes it, held by one writer at a time.

    records: the records with a final outcome already in the file (list of
    dicts, file order); done: their ids. dropped: lines taken out when the
    file was opened, because they held no final outcome (status "error"):
    their messages are not done, so a run asks them again. Opening takes the
    file's lock (hold); a second writer gets ResultsFileBusy at once, naming
    the first, and close() releases it. Raises ValueError when a complete
    line is not a JSON object (the file was edited by hand or is not a
    results file), or when two lines with a final outcome have the same id.
    writing=False only reads: the file is left as it is (its error lines
    stay for the run that opens it next to count and replace) and append()
    is not available.
    """

    def __init__(self, path: Path, writing: bool = True):
        self.path, self.writing = Path(path), writing
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = hold(self.path)
        try:
            self._read()
        except BaseException:
            os.close(self._lock)
            raise
        self._handle = open(self.path, "a", encoding="utf-8") if writing else None

    def _read(self) -> None:
        self.records, self.dropped = [], 0
        if self.path.exists():
            raw = self.path.read_bytes()
            lines = raw.split(b"\n")
            # A last line without its newline is a write cut short: drop it.
            complete, partial = lines[:-1], lines[-1]
            kept, seen = [], {}
            for number, line in enumerate(complete, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    record = None
                if not isinstance(record, dict):
                    raise ValueError(f"{self.path} line {number} is not a JSON object; move the file away to start over")
                if is_final(record):
                    if record.get("id") in seen:
                        raise ValueError(f"{self.path} line {number}: id {record.get('id')!r} is already on line "
                                         f"{seen[record.get('id')]}, so two runs wrote this file; move it away to start over")
                    seen[record.get("id")] = number
                    kept.append(line)
                    self.records.append(record)
                else:
                    self.dropped += 1
            if self.writing and self.dropped:
                replace_lines(self.path, kept)
            elif self.writing and partial:
                with open(self.path, "r+b") as handle:
                    handle.truncate(len(raw) - len(partial))
        self.done = {record["id"] for record in self.records}

    def append(self, record: dict) -> None:
        """Write one record as a line and make sure it is on disk; its id is done if its outcome is final."""
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.records.append(record)
        if is_final(record):
            self.done.add(record["id"])

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        os.close(self._lock)  # closing the descriptor releases the flock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def numbered_records(path: Path, command: str, given_by: str = "") -> list[tuple[int, dict]]:
    """Read a finished results file: (line number, dict) for every non-empty line, error lines included.

    given_by: the option that named the file ("--calib"), for the messages.
    Raises FileNotFoundError naming `command` (the one that writes the file)
    when it is missing, and ValueError naming the file (and the option) and
    the line when a line is not UTF-8 text or not a JSON object.
    """
    path = Path(path)
    named = f" (given with {given_by})" if given_by else ""
    if not path.exists():
        raise FileNotFoundError(f"{path}{named} does not exist; write it with: {command}")
    records = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{path}{named} line {number} is not UTF-8 text (byte {raw[error.start]:#04x} at "
                                 f"{error.start}): is it a results file?") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}{named} line {number} is not JSON ({error.msg}): is it a results file?") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}{named} line {number} is not a JSON object: is it a results file?")
            records.append((number, record))
    return records


def read_results(path: Path, command: str) -> list[dict]:
    """The records of a finished results file, one dict per line, error lines included (see final_and_failed).

    Raises as numbered_records does.
    """
    return [record for _, record in numbered_records(path, command)]
