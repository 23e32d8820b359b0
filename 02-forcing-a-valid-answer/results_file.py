"""A JSONL results file that survives Ctrl-C and resumes where it stopped.

One JSON object per message, one line each, flushed and fsynced as soon as it
is written: an interrupted run keeps every finished line. A line cut in half by
a hard kill is dropped on the next open (it was not finished), and the rerun
asks for that message again. Every object has an "id"; a rerun skips the ids
already in the file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path



def results_folder(script: str | Path) -> Path:
    """The results/ folder of the post a script belongs to, e.g. 03-where-confidence-comes-from/results/.

    Each post keeps the files its scripts write (a reader's own runs, plots)
    in its own folder, which git ignores; the committed reference runs are in
    results/reference/ at the top of the repository.
    """
    return Path(script).resolve().parent / "results"


class ResultsFile:
    """Append-only JSONL file keyed by message id.

    records: the finished records already in the file (list of dicts).
    Raises ValueError when a complete line in the middle of the file is not
    JSON (the file was edited by hand or is not a results file).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records = []
        if self.path.exists():
            raw = self.path.read_bytes()
            lines = raw.split(b"\n")
            # A last line without its newline is a write cut short: drop it.
            complete, partial = lines[:-1], lines[-1]
            for number, line in enumerate(complete, start=1):
                if not line.strip():
                    continue
                try:
                    self.records.append(json.loads(line))
                except json.JSONDecodeError:
                    raise ValueError(f"{self.path} line {number} is not JSON; move the file away to start over") from None
            if partial:
                with open(self.path, "r+b") as handle:
                    handle.truncate(len(raw) - len(partial))
        self.done = {record["id"] for record in self.records}
        self._handle = open(self.path, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        """Write one record as a line and make sure it is on disk."""
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.records.append(record)
        self.done.add(record["id"])

    def close(self) -> None:
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_results(path: Path, command: str) -> list[dict]:
    """Read a finished results file: one dict per line.

    Raises FileNotFoundError naming `command` (the one that writes the file)
    when it is missing, and ValueError naming the file and line when a line is
    not a JSON object.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; write it with: {command}")
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path} line {number} is not JSON ({error.msg}): is it a results file?") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path} line {number} is not a JSON object: is it a results file?")
            records.append(record)
    return records
