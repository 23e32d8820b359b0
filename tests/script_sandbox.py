"""Running the shell scripts of 00-setup without the programs they drive.

The setup scripts call docker, git, uvx, nvidia-smi and python3, none of which
may really run in a test (this machine has no GPU and no Docker engine, and a
real build takes minutes). FakePath gives them a PATH of fakes that record
each call, next to the real bash and coreutils; run_script runs a script with
that PATH; shellcheck checks one.
"""
import os
import shutil
import stat
import subprocess
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
REAL_TOOLS = ("bash", "env", "basename", "dirname", "sha256sum", "mkdir", "mv", "cat", "timeout")


class FakePath:
    """A PATH for running the shell scripts of 00-setup without their tools.

    fake(name, body) writes a program `name` that appends "name args" to the
    file `calls` and then runs `body` (sh; default: exit 1). `env` has a PATH
    of the fakes first, then links to the real REAL_TOOLS, and nothing else of
    this machine's: a program that is not faked is not there.
    """

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.calls = tmp_path / "calls"
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

    def fake(self, name: str, body: str = "exit 1") -> None:
        tool = self.fake_bin / name
        tool.write_text(f"#!/bin/sh\necho \"{name} $*\" >> '{self.calls}'\n{body}\n")
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def called(self) -> list[str]:
        """The calls made to fakes, one "name args" line each."""
        return self.calls.read_text().splitlines() if self.calls.exists() else []


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


def shellcheck(shellcheck_program: str, script: Path) -> subprocess.CompletedProcess:
    """shellcheck at its strictest severity, following sourced files (lib.sh, models.sh)."""
    return subprocess.run(
        [shellcheck_program, "--external-sources", "--severity=style", str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
