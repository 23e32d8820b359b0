"""The build stage: llama-server from the llama.cpp source that llama-cpp-python's sdist vendors.

    build_server(jobs, amx)   the binary's path: built once, reused while its build stamp matches
    fetch_source()            the sdist fetched (sha256 checked) and unpacked safely (unpack_tar)
    build_options(machine)    the cmake options: CPU only, static, AMX instructions off on x86-64
    compile_server(...)       cmake, the objdump check for AMX instructions, the build stamp
    read_stamp(binary)        the build stamp: options, patch, first answer, AMX checks
    build_amx_server(jobs)    the AMX build: the tile-config patch applied to a linked copy (amx_source)
    amx_refused(why)          record in the AMX stamp why the AMX build is not used

The pins (LLAMA_CPP_PYTHON, LLAMA_CPP_BUILD, LLAMA_CPP_COMMIT, SDIST_URL,
SDIST_SHA256) and the binaries (SERVER_BIN, AMX_SERVER_BIN) live here too.
Why AMX is off by default and what the patch fixes: 00-setup/amx.md.
A failed step is a SetupError that says what to do (cmake, a compiler or
objdump missing, a download or sha256 that fails, an AMX instruction in the
AMX-off binary); where the AMX build cannot be had, the AMX-off one is
built instead, with one line saying why.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath

from setup_steps import CACHE, Progress, SetupError, download_checked, run, say
from datafiles import sha256_of

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

SERVER_BIN = CACHE / "bin" / f"llama-server-b{LLAMA_CPP_BUILD}"
# The AMX build (amx_source, build_server(amx=True)) has its own binary, build folder and stamp, so building
# it never touches the AMX-off binary or its cache.
AMX_SERVER_BIN = SERVER_BIN.with_name(SERVER_BIN.name + "-amx")


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


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"

