"""What every setup stage uses: the cache folder, the one-line error, commands, progress lines, the checked download.

The build (server_build.py), the model (models.py) and the server
(server_start.py, running_server.py) keep what they make under one folder,
never in the repository, and fail the same way:

- CACHE: ~/.cache/typed-decisions, or $XDG_CACHE_HOME/typed-decisions.
- SetupError: a step failed; the message says which and what to do.
  server.py prints it as one `error:` line and exits 2.
- say(line): one line on screen, flushed at once.
- run(command, log, cwd, progress): run a command; SetupError when it fails.
- Progress: the one progress line of a step (MB, %, or a count).
- download_checked(url, sha256, path, label): a download kept only when its
  sha256 is the one expected.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# Everything the setup makes lives here: src/, build/, bin/, models/, run/, slots/ (00-setup/README.md).
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "typed-decisions"


def say(line: str) -> None:
    print(line, flush=True)


class SetupError(Exception):
    """A step of the setup failed; the message says which and what to do."""


# cmake's build lines start with the share of targets done: "[ 42%] Building CXX object ...".
BUILD_PERCENT = re.compile(rb"^\[ *(\d+)%\]", re.MULTILINE)


def run(command: list[str], log: Path | None = None, cwd: Path | None = None, progress: Progress | None = None) -> None:
    """Run a command; on failure raise SetupError naming it (and its log file).

    With a log and a Progress, the log is read every 2 s and the last
    "[ NN%]" of a cmake build moves the progress line.
    """
    if log is None:
        result = subprocess.run(command, cwd=cwd)
    else:
        with open(log, "w") as out:
            process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
            while process.poll() is None:
                time.sleep(0.2 if progress is None else 2)
                if progress is not None and (percents := BUILD_PERCENT.findall(log.read_bytes()[-4096:])):
                    progress.update(int(percents[-1]))
            result = process
    if result.returncode != 0:
        where = f"; see {log}" if log else ""
        raise SetupError(f"command failed (exit {result.returncode}): {' '.join(command)}{where}")
    if progress is not None:
        progress.done()


class Progress:
    """One progress line for one step: rewritten in place on a terminal, else printed at each quarter of the way.

    label: what the step does; total: how much there is to do, in `unit`s
    (bytes are shown in MB). update(done) moves it, done() ends the line.
    """

    def __init__(self, label: str, total: int, unit: str = "bytes") -> None:
        self.label, self.total, self.unit = label, max(total, 1), unit
        self.terminal = sys.stdout.isatty()
        self.quarter = 0
        self.started = time.monotonic()

    def _amount(self, done: int) -> str:
        if self.unit == "bytes":
            return f"{done / 1e6:,.0f} of {self.total / 1e6:,.0f} MB"
        if self.unit == "%":
            return f"{done}%"
        return f"{done} of {self.total} {self.unit}"

    def update(self, done: int, detail: str = "") -> None:
        line = f"  {self.label}: {self._amount(done)}{detail}"
        if self.terminal:
            print(f"\r{line}\033[K", end="", flush=True)
        elif 3 >= done * 4 // self.total > self.quarter:  # the last quarter is done()'s line
            self.quarter = done * 4 // self.total
            say(line)

    def done(self, detail: str = "") -> None:
        if self.terminal:
            print("\r\033[K", end="")
        say(f"  {self.label}: {self._amount(self.total)} in {time.monotonic() - self.started:.0f} s{detail}")


def download_checked(url: str, sha256: str, path: Path, label: str, size_bytes: int = 0) -> Path:
    """Download url to path, hashing as it streams, and keep it only when its sha256 is the one expected.

    The file is written under a temporary name next to path and moved into
    place after the check, so path never holds a wrong or partial file.
    size_bytes (0: unknown, the server's Content-Length then) drives the
    progress line. Raises SetupError when the download fails or the sha256
    differs.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as out:
        partial = Path(out.name)
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                progress = Progress(label, size_bytes or int(response.headers.get("Content-Length") or 0))
                done = 0
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
                    done += len(chunk)
                    progress.update(done)
        except OSError as error:
            partial.unlink()
            raise SetupError(f"could not download {url}: {error}") from None
    if digest.hexdigest() != sha256.lower():
        partial.unlink()
        raise SetupError(f"{url} has sha256 {digest.hexdigest()}, expected {sha256.lower()}")
    progress.done()
    partial.replace(path)
    return path

