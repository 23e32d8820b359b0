"""A warmed slot saved to disk and restored: a server start in seconds instead of minutes.

A slot that has processed the ~7k-token system prompt holds its KV cache: the
keys and values of every prompt token (86 MB for the 0.5B model, 202 MB for
the 1.5B). llama-server writes a slot to a file and reads it back
(--slot-save-path; POST /slots/{id}?action=save and ?action=restore, in
llama.cpp's tools/server/README.md) in milliseconds, where processing the
prompt again takes minutes on 2 CPU cores. A restored slot holds the same bits
as the saved one, so the answers after a restore repeat the answers after the
warm-up that saved it, exactly.

A file is only worth restoring on a server of the same build, with the same
model file, for the same system prompt and the same context: the key
(SlotKey). llama-server itself refuses some mismatches (another number of
slots: "n_stream mismatch") and not others (another prompt restores fine and
then misses the cache; a changed byte restores silently as a changed number).
So the key is in the file's name, as a digest, and in full in a JSON sidecar
next to it, with the file's size and sha256; check_saved() compares both
before a restore and says why a file must not be used.

Files: <folder>/<label>-<model>-<digest>.bin and .json, where label is the
dataset whose prompt the slot holds ("banking77"). The folder is
~/.cache/typed-decisions/slots unless $TYPED_DECISIONS_SLOTS names another
(the tests and the benchmark use a temporary one).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from datafiles import sha256_of  # read in 1 MiB chunks: about 0.1 s for a 200 MB slot file here
from llama_http import Client

SLOTS_ENV = "TYPED_DECISIONS_SLOTS"


def slots_folder(cache: Path) -> Path:
    """Where saved slots go: $TYPED_DECISIONS_SLOTS when set, else cache/"slots" (cache: the setup's cache folder)."""
    return Path(os.environ[SLOTS_ENV]) if os.environ.get(SLOTS_ENV) else cache / "slots"


@dataclass(frozen=True)
class SlotKey:
    """What a saved slot is valid for; any change gives another digest, so another file.

    build: the server's build_info ("b11312-0c1e57098"); model_sha256: hex
    sha256 of the GGUF file; prompt_sha256: the sha256 of the system
    prompt; n_ctx_slot: the context of one slot, in tokens; slots: the
    server's number of slots (llama-server keeps one KV stream per slot and
    refuses a file saved with another count).
    """

    build: str
    model_sha256: str
    prompt_sha256: str
    n_ctx_slot: int
    slots: int

    @property
    def digest(self) -> str:
        """The first 16 hex digits of the sha256 of the key's fields as sorted JSON."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def server_key(client: Client, model_sha256: str, prompt_sha256: str) -> SlotKey:
    """The key for the server at client: build, context per slot and slot count read from its /props.

    Raises what Client.get raises (ServerUnreachable, ServerError...), and
    KeyError when /props has no default_generation_settings.n_ctx (not a
    llama-server).
    """
    props = client.get("/props")
    return SlotKey(props.get("build_info", "unknown"), model_sha256, prompt_sha256,
                   int(props["default_generation_settings"]["n_ctx"]), int(props.get("total_slots", 1)))


@dataclass(frozen=True)
class SlotFile:
    """Where the slot of one key lives: folder, label (the dataset, "banking77"), model (its alias), key."""

    folder: Path
    label: str
    model: str
    key: SlotKey

    @property
    def path(self) -> Path:
        return self.folder / f"{self.label}-{self.model}-{self.key.digest}.bin"

    @property
    def sidecar(self) -> Path:
        return self.path.with_suffix(".json")


class NotSaved(Exception):
    """No slot is saved for this key yet (the first start with it: nothing is wrong)."""


class Unusable(Exception):
    """A file for this key is there but must not be restored; the message says why."""


class SlotChanged(Exception):
    """The slot held other tokens than expected when it was saved: another client's request ran on it in between."""


def check_saved(slot_file: SlotFile) -> dict:
    """The sidecar record of slot_file after checking that the file may be restored.

    Checks, in order: both files are there (else NotSaved; a file without a
    sidecar is a save that never finished: Unusable), the sidecar is JSON
    and holds exactly this key, the file has the size the sidecar records
    (a truncated file) and the same sha256 (a changed one). Raises Unusable
    naming the first failure.
    """
    if not slot_file.path.exists() and not slot_file.sidecar.exists():
        older = [changed_fields(path, slot_file.key) for path in siblings(slot_file) if path.suffix == ".json"]
        why = f"; the one saved before was for another {', '.join(older[0])}" if older and older[0] else ""
        raise NotSaved(f"no saved slot for this key yet ({slot_file.path}){why}")
    name = slot_file.path.name
    if not slot_file.sidecar.exists():
        raise Unusable(f"{name} has no sidecar {slot_file.sidecar.name} (a save that did not finish)")
    if not slot_file.path.exists():
        raise Unusable(f"{slot_file.sidecar.name} describes {name}, which is missing")
    try:
        record = json.loads(slot_file.sidecar.read_text())
        size, digest = record["bytes"], record["sha256"]
    except (ValueError, KeyError, TypeError) as error:
        raise Unusable(f"{slot_file.sidecar.name} is not a sidecar this script wrote ({error.__class__.__name__})") from None
    changed = changed_fields(slot_file.sidecar, slot_file.key)
    if changed:
        raise Unusable(f"{name} was saved for another {', '.join(changed)} (its sidecar says so): a stale file")
    actual = slot_file.path.stat().st_size
    if actual != size:
        raise Unusable(f"{name} has {actual:,} bytes where its sidecar records {size:,}: a truncated or overwritten file")
    if sha256_of(slot_file.path) != digest:
        raise Unusable(f"{name} does not have the sha256 its sidecar records: a changed or corrupt file")
    return record


def changed_fields(sidecar: Path, key: SlotKey) -> list[str]:
    """The fields of key that the sidecar records differently (["key"] when it records none readable); [] when equal."""
    try:
        recorded = json.loads(sidecar.read_text())["key"]
    except (OSError, ValueError, KeyError, TypeError):
        return ["key"]
    if not isinstance(recorded, dict):
        return ["key"]
    return [field for field, value in asdict(key).items() if recorded.get(field) != value]


def siblings(slot_file: SlotFile) -> list[Path]:
    """The saved files (.bin, .json) of the same label and model under another key, in name order."""
    ours = re.compile(rf"{re.escape(slot_file.label)}-{re.escape(slot_file.model)}-([0-9a-f]{{16}})\.(bin|json)")
    if not slot_file.folder.is_dir():
        return []
    return [path for path in sorted(slot_file.folder.iterdir())
            if (match := ours.fullmatch(path.name)) and match.group(1) != slot_file.key.digest]


@dataclass(frozen=True)
class SlotTransfer:
    """One save or restore as the server reports it.

    slot: the slot's id; tokens: tokens the slot holds (n_saved, n_restored);
    bytes: bytes written or read; ms: the server's own time for it (save_ms or
    restore_ms), in milliseconds.
    """

    slot: int
    tokens: int
    bytes: int
    ms: float


def restore(client: Client, slot: int, slot_file: SlotFile) -> SlotTransfer:
    """POST /slots/{slot}?action=restore with slot_file's name (the server reads it from its --slot-save-path).

    Raises ServerError when the server refuses: no --slot-save-path (HTTP
    501), or a file it cannot load (HTTP 400 "Unable to restore slot": a
    truncated file, another slot count). The server then empties the slot.
    """
    body = client.post(f"/slots/{slot}?action=restore", {"filename": slot_file.path.name}).body
    return SlotTransfer(slot, body["n_restored"], body["n_read"], body["timings"]["restore_ms"])


def sidecar_record(slot_file: SlotFile, saved: Path, tokens: int, details: dict | None = None) -> dict:
    """What the sidecar of slot_file records about the file `saved`: the key in full, label, model, its size in
    bytes and sha256, the tokens it holds, the date (UTC), and `details` (such as the save's time)."""
    return {"key": asdict(slot_file.key), "label": slot_file.label, "model": slot_file.model,
            "bytes": saved.stat().st_size, "sha256": sha256_of(saved), "tokens": tokens,
            "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **(details or {})}


def write_sidecar(slot_file: SlotFile, record: dict) -> None:
    """Write the sidecar of slot_file atomically (a temporary file moved over it): never half a JSON."""
    written = slot_file.sidecar.with_name(slot_file.sidecar.name + ".partial")
    written.write_text(json.dumps(record, indent=1) + "\n")
    written.replace(slot_file.sidecar)


def save(client: Client, slot: int, slot_file: SlotFile, details: dict | None = None,
         expected_tokens: range | None = None) -> SlotTransfer:
    """Save the slot to slot_file and write its sidecar; return what the server reports.

    The server writes to a temporary name first; the file is hashed, moved
    to its own name, and only then is the sidecar written (sidecar_record,
    with the server's save time and `details`), so a save cut short never
    leaves a file with a sidecar. The folder must be the server's
    --slot-save-path. expected_tokens: the token counts (n_saved) the slot
    may hold, from the request that filled it (expected_slot_tokens); a
    count outside it means another client's request ran on the slot since,
    and its context would be saved under this prompt's name. Raises
    SlotChanged then (nothing is written), ServerError when the server
    refuses, OSError when the folder cannot be written.
    """
    partial = slot_file.path.with_name(f"{slot_file.path.stem}.saving-{os.getpid()}.bin")
    slot_file.sidecar.unlink(missing_ok=True)
    try:
        body = client.post(f"/slots/{slot}?action=save", {"filename": partial.name}).body
        if expected_tokens is not None and body["n_saved"] not in expected_tokens:
            raise SlotChanged(f"slot {slot} held {body['n_saved']:,} tokens, not the {expected_tokens.start:,} to "
                              f"{expected_tokens.stop - 1:,} of the warm-up: another client's request ran on it")
        record = sidecar_record(slot_file, partial, body["n_saved"], {"save_ms": body["timings"]["save_ms"], **(details or {})})
        partial.replace(slot_file.path)
    finally:
        partial.unlink(missing_ok=True)
    write_sidecar(slot_file, record)
    return SlotTransfer(slot, body["n_saved"], body["n_written"], body["timings"]["save_ms"])


def expected_slot_tokens(timings: dict) -> range | None:
    """The token counts a slot holds right after a request with these timings (the server's "timings": cache_n,
    prompt_n, predicted_n): its prompt's tokens, plus up to every generated one (llama-server keeps all but the
    last: 670 prompt and 2 generated tokens saved 671 with the 0.5B model). None when the timings lack them."""
    try:
        prompt = timings["cache_n"] + timings["prompt_n"]
        return range(prompt, prompt + timings["predicted_n"] + 1)
    except (KeyError, TypeError):
        return None


def prune(slot_file: SlotFile) -> list[Path]:
    """Delete the saved slots of the same label and model under another key (an older prompt or build); return them.

    They can never be restored again by this code, and each is 86-202 MB.
    """
    removed = siblings(slot_file)
    for path in removed:
        path.unlink(missing_ok=True)
    return removed
