"""Fetch a public data file once, check its sha256, and hand back a local path.

Every dataset loader of the series goes through ``fetch``. A file comes from
one of two places:

- ``$TYPED_DECISIONS_DATA/<dataset>/<filename>`` when that variable is set
  (an offline mirror: tests, CI, machines without internet);
- otherwise a cache at ``${XDG_CACHE_HOME:-~/.cache}/typed-decisions/datasets/``,
  filled from the official URL on first use.

Either way the file's sha256 is checked on every call (the files are a few MB),
so a script never runs on a truncated or edited copy.
"""
import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

DATA_ENV = "TYPED_DECISIONS_DATA"


class DatasetUnavailable(OSError):
    """A data file could not be found, downloaded or verified (one-sentence message)."""


def sha256_of(path: Path) -> str:
    """Hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_dir() -> Path:
    """Folder that holds downloaded files: ``${XDG_CACHE_HOME:-~/.cache}/typed-decisions/datasets``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "typed-decisions" / "datasets"


def verify(path: Path, sha256: str) -> Path:
    """Return ``path`` if its sha256 is ``sha256``; raise DatasetUnavailable otherwise."""
    actual = sha256_of(path)
    if actual != sha256:
        raise DatasetUnavailable(
            f"{path} has sha256 {actual} but {sha256} was expected, "
            f"so it is not the published file (delete it or fix the mirror)."
        )
    return path


def download(url: str, target: Path, sha256: str) -> None:
    """Download ``url`` to a temporary file next to ``target``, verify it, then rename it.

    The rename is atomic, so ``target`` is either absent or complete and verified.
    Raises DatasetUnavailable if the download fails or the checksum differs.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".part")
    partial = Path(name)
    try:
        with os.fdopen(handle, "wb") as file, urllib.request.urlopen(url, timeout=60) as response:
            while block := response.read(1 << 16):
                file.write(block)
        actual = sha256_of(partial)
        if actual != sha256:
            raise DatasetUnavailable(
                f"{target.name} downloaded from {url} has sha256 {actual} but {sha256} was expected."
            )
        os.replace(partial, target)
    except (OSError, ValueError) as error:  # URLError is an OSError; a malformed URL is a ValueError
        raise DatasetUnavailable(
            f"Could not download {url} ({error}); set {DATA_ENV} to a folder that holds "
            f"{target.parent.name}/{target.name}, for example an offline mirror of the datasets."
        ) from error
    finally:
        partial.unlink(missing_ok=True)


def fetch(dataset: str, filename: str, url: str, sha256: str) -> Path:
    """Local path of ``<dataset>/<filename>``, verified against ``sha256`` (hex).

    With ``$TYPED_DECISIONS_DATA`` set, the file must already be in that folder.
    Otherwise it is downloaded from ``url`` into the cache on first use and
    reused afterwards. Raises DatasetUnavailable when the file is missing from
    the mirror, the download fails, or the checksum differs.
    """
    mirror = os.environ.get(DATA_ENV)
    if mirror:
        path = Path(mirror) / dataset / filename
        if not path.is_file():
            raise DatasetUnavailable(
                f"{DATA_ENV} is set to {mirror} but {path} does not exist; "
                f"put {dataset}/{filename} there (from {url}) or unset {DATA_ENV} to download it."
            )
        return verify(path, sha256)
    path = cache_dir() / dataset / filename
    if not path.is_file():
        download(url, path, sha256)
    return verify(path, sha256)
