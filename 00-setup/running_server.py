"""The running server: its pid record, stop, and its slots warmed up (from a saved slot file when there is one).

    running(port)                      the pid record of the server this script started on port (None: none)
    stop_server(port)                  stop it (SIGTERM, SIGKILL after 10 s)
    warm(client, record, label)        the dataset's system prompt into every slot: restored from the saved
                                       slot file (slot_cache.py) when it matches, else processed and saved
    warm_up(client, prompt, slot)      the typed probe that processes the system prompt once
    warm_running(client, label, prompt)  warm() on the server at client's URL, any prompt under its own label

The pid record (pid_file: RUN/llama-server-<port>.json, with the log and the
API key file beside it) is what server_start.start_server writes; stop never
signals a process it does not name (is_our_server): a pid file naming
another program is a SetupError. DEFAULT_DATASET is the prompt a start warms
up. A server that cannot give a confidence fails the warm-up with ServerUnfit
(typed_request.py).
"""
from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from llama_http import Client, Reply, ServerError, server_command
from models import model_sha256
from registry import dataset_named
from setup_steps import CACHE, SetupError, say
from slot_cache import (NotSaved, SlotChanged, SlotFile, Unusable, check_saved, expected_slot_tokens, prune, restore,
                        save, server_key)
from typed_request import PromptText, probe

RUN = CACHE / "run"
# The prompt the warm-up puts into the slots, unless --dataset names another.
DEFAULT_DATASET = "banking77"


def pid_file(port: int) -> Path:
    """The pid record of the server on port, RUN/llama-server-<port>.json; its log (.log) and API key file (.key)
    lie beside it under the same name."""
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



def warm_running(client: Client, label: str, prompt: PromptText) -> Warmed:
    """warm() on the server at client's URL that server_start.start_server started: `prompt` into its slots,
    restored from the slot saved under `label` when it matches, else processed once and saved. Raises SetupError
    naming the start command when no server this script started answers there."""
    port = int(client.url.rsplit(":", 1)[1])
    record = running(port)
    if record is None:
        raise SetupError(f"no llama-server started by 00-setup/server.py answers at {client.url}: "
                         f"{server_command(client.url, 'start')}")
    return warm(client, record, label, prompt)
