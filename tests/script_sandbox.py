"""Running the shell scripts of 00-setup without the programs they drive.

The setup scripts call docker, git, uvx, nvidia-smi and python3, none of which
may really run in a test (this machine has no GPU and no Docker engine, and a
real build takes minutes). FakePath gives them a PATH of fakes next to the
real bash and coreutils; every fake (and every spy, a real program watched)
records each call as one JSON line: its argv, the environment it got and, for
a spy that asks for it, what it read on stdin. A test asserts on those calls,
as llama.cpp's server tests assert on response fields. run_script runs a
script with that PATH; shown_commands reads back the commands a --dry-run
printed; shellcheck checks one script.
"""
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# The pins of 00-setup/gb10/models.sh, as the tests expect them.
PIN_27B = {
    "repo": "prism-ml/Ternary-Bonsai-2-27B-gguf",
    "revision": "6ed5e12bf84b7a63069882c91dd9e9218647d17b",
    "file": "Ternary-Bonsai-2-27B-PQ2_0.gguf",
    "sha256": "3907dc1658db1f78a9826bf8d5bcb8dc65db0d466388937af57f2294fae62ec1",
    "alias": "ternary-bonsai-2-27b",
}
PIN_8B = {
    "repo": "prism-ml/Ternary-Bonsai-8B-gguf",
    "revision": "c2aefbeb4b24469cd11579c3384b990404c17a30",
    "file": "Ternary-Bonsai-8B-Q2_0_g64.gguf",
    "sha256": "e17b298d84ee78797916ae5c2ecc8211469cc65cccfe3080cd9a9bb503fbc55e",
    "alias": "ternary-bonsai-8b",
}


def file_url(pin):
    return f"https://huggingface.co/{pin['repo']}/resolve/{pin['revision']}/{pin['file']}"


# The real programs the setup scripts may call; everything else is faked or absent.
REAL_TOOLS = ("bash", "env", "basename", "dirname", "sha256sum", "mkdir", "mv", "cat", "timeout", "sleep")

# A fake or a spy: record the call as one JSON line, then run the fake's body
# (sh -c, with the call's arguments as $1...) or the real program.
RECORDER = """\
#!{python} -I
import json, os, subprocess, sys
record = {{"argv": [{name!r}, *sys.argv[1:]], "env": dict(os.environ), "stdin": None}}
data = None
if {read_stdin!r}:
    data = sys.stdin.buffer.read()
    record["stdin"] = data.decode(errors="replace")
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\\n")
sys.stdout.flush()
command = {command!r} + sys.argv[1:]
sys.exit(subprocess.run(command, input=data).returncode)
"""


@dataclass(frozen=True)
class Call:
    """One call of a fake or spied program.

    argv: the program's name, then its arguments, as it got them.
    env: the environment it was given.
    stdin: what it read on stdin (a spy made with read_stdin=True), else None.
    """

    argv: list[str]
    env: dict[str, str]
    stdin: str | None


class FakePath:
    """A PATH for running the shell scripts of 00-setup without their tools.

    fake(name, body) writes a program `name` that records its call and then
    runs `body` (sh, the call's arguments as $1...; default: exit 1).
    spy(name) records the calls of a real program and runs it. calls() reads
    the record back. `env` has a PATH of the fakes first, then links to the
    real REAL_TOOLS, and nothing else of this machine's: a program that is not
    faked is not there.
    """

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.log = tmp_path / "calls.jsonl"
        self.fake_bin = tmp_path / "fake-bin"
        self.real_bin = tmp_path / "real-bin"
        self.fake_bin.mkdir()
        self.real_bin.mkdir()
        for name in REAL_TOOLS:
            found = shutil.which(name)
            assert found, f"{name} is needed on PATH to run these tests"
            (self.real_bin / name).symlink_to(found)
        self.env = {
            "PATH": os.pathsep.join([str(self.fake_bin), str(self.real_bin)]),
            "HOME": str(tmp_path / "home"),
            "LANG": "C",
        }

    def _recorder(self, name: str, command: list[str], read_stdin: bool = False) -> None:
        tool = self.fake_bin / name
        tool.write_text(RECORDER.format(python=sys.executable, name=name, read_stdin=read_stdin,
                                        log=str(self.log), command=command))
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def fake(self, name: str, body: str = "exit 1") -> None:
        """Put a fake `name` on PATH: it records each call, then runs `body` with sh."""
        self._recorder(name, ["/bin/sh", "-c", body, name])

    def spy(self, name: str, read_stdin: bool = False) -> None:
        """Record each call of the real `name` (one of REAL_TOOLS), and what it reads on stdin if asked."""
        self._recorder(name, [str((self.real_bin / name).resolve())], read_stdin)

    def calls(self) -> list[Call]:
        """The calls made to fakes and spies, in order."""
        if not self.log.exists():
            return []
        return [Call(**json.loads(line)) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def argvs(self) -> list[list[str]]:
        """The argv of each call, in order: [["docker", "info", ...], ...]."""
        return [call.argv for call in self.calls()]


def run_script(script: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    """Run a bash script with `env` (no stdin, 60 s at most), output captured as text."""
    return subprocess.run(
        ["bash", str(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def shown_commands(printed: str, programs) -> list[list[str]]:
    """The commands a --dry-run printed ("+ " lines, quoted as bash's printf %q quotes), read back into
    argv lists, keeping those of `programs` (the faked ones, whose real calls a test can compare)."""
    commands = [shlex.split(line[2:]) for line in printed.splitlines() if line.startswith("+ ")]
    return [argv for argv in commands if argv[0] in programs]


def shellcheck(shellcheck_program: str, script: Path) -> subprocess.CompletedProcess:
    """shellcheck at its strictest severity, following sourced files (lib.sh, models.sh)."""
    return subprocess.run(
        [shellcheck_program, "--external-sources", "--severity=style", str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
