"""The start of the server: llama-server launched, trusted once it has answered, the AMX build checked first.

    start_server(model, host, ...)   build and install if needed, launch, wait on /health, first answer;
                                     returns the pid record (running_server.py keeps it)
    first_answer(client, ...)        one short real completion: a build that dies on it is one line (died)
    check_amx(client, model)         the AMX build's top_logprobs against the AMX-off build's, on one request
    compare_top_logprobs(amx, ref)   that comparison, position by position (an AmxComparison)
    free_port(), is_loopback(host)   a port nothing listens on; whether a host is this machine only

PARALLEL and CONTEXT_PER_SLOT are the slots a server gets by default. A port
taken by another program, or a server that exits or is not ready in time, is
a SetupError; ReferenceFailed when the AMX-off build cannot answer the AMX
check, which then gives no verdict.
"""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from llama_http import (API_KEY_ENV, Client, ConnectionLost, ServerError, ServerLoading, ServerTimeout,
                        ServerUnreachable, server_url)
from models import install_model
from running_server import pid_file, running, stop_server
from server_build import AMX_SERVER_BIN, LLAMA_CPP_BUILD, amx_refused, build_server, build_stamp, cpu_name, read_stamp
from setup_steps import CACHE, SetupError, say
from slot_cache import slots_folder

# One slot with room for the ~7k-token system prompt, a message and the code. One
# slot because a CPU has no compute to spare for a second, and each slot would pay
# the prompt's prefill (minutes on a CPU) separately.
PARALLEL = 1
CONTEXT_PER_SLOT = 10240


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
    pids = pid_file(port)  # the log and the key file go beside it
    pids.parent.mkdir(parents=True, exist_ok=True)
    # The AMX build's saved slots go to a folder of their own: their key (its build) never matches the AMX-off
    # build's, and a save deletes the files of the same prompt and model under another key in its folder (prune).
    folder = (slots or (slots_folder(CACHE) / "amx" if binary == AMX_SERVER_BIN else slots_folder(CACHE))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    log = pids.with_suffix(".log")
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
        key_file = pids.with_suffix(".key")
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
# machine: 00-setup/amx.md).
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

