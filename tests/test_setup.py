"""00-setup: the built server, the installed models and the URL route for a GGUF."""
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import server
from server import LLAMA_CPP_BUILD, LLAMA_CPP_COMMIT, PACKAGED_MODELS, SERVER_BIN, SetupError, install_url_model, sha256_of


def test_built_server_reports_the_pinned_build_and_commit():
    result = subprocess.run([str(SERVER_BIN), "--version"], capture_output=True, text=True, timeout=60)
    version = result.stdout + result.stderr
    assert f"build {LLAMA_CPP_BUILD}, commit {LLAMA_CPP_COMMIT}" in version


def test_server_fingerprint_names_the_build(client, saved_prompt):
    reply = client.chat([{"role": "user", "content": "hi"}], max_tokens=1)
    assert reply.body["system_fingerprint"] == f"b{LLAMA_CPP_BUILD}-{LLAMA_CPP_COMMIT}"
    assert client.model_info()["build"] == f"b{LLAMA_CPP_BUILD}-{LLAMA_CPP_COMMIT}"


def test_the_test_model_on_disk_matches_its_pinned_sha256(client):
    model = PACKAGED_MODELS[client.model_info()["model"]]
    assert model.path.stat().st_size == model.size_bytes
    assert sha256_of(model.path) == model.sha256


def test_gguf_from_a_file_url_is_installed_when_its_sha256_matches(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "MODELS", tmp_path / "models")
    source = tmp_path / "tiny.gguf"
    source.write_bytes(b"GGUF" + bytes(range(256)) * 40)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    path = install_url_model(source.as_uri(), digest.upper(), "tiny")
    assert path == tmp_path / "models" / "tiny.gguf"
    assert path.read_bytes() == source.read_bytes()
    assert install_url_model(source.as_uri(), digest, "tiny") == path  # second call: already there


def test_gguf_with_a_wrong_sha256_is_refused_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "MODELS", tmp_path / "models")
    source = tmp_path / "tiny.gguf"
    source.write_bytes(b"GGUF not the file you wanted")
    with pytest.raises(SetupError, match="expected " + "0" * 64):
        install_url_model(source.as_uri(), "0" * 64, "tiny")
    assert list((tmp_path / "models").iterdir()) == []


def test_gguf_from_a_url_that_does_not_answer_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "MODELS", tmp_path / "models")
    with pytest.raises(SetupError, match="could not download"):
        install_url_model((tmp_path / "missing.gguf").as_uri(), "0" * 64, "missing")
    assert list((tmp_path / "models").iterdir()) == []


def test_unknown_model_name_lists_the_known_ones():
    with pytest.raises(SetupError, match="qwen2.5-coder-1.5b"):
        server.install_model("no-such-model")


# ---------------------------------------------------------------- the sdist: fetched, checked, unpacked safely

def tar_with(tmp_path, *members: tarfile.TarInfo, name: str = "bad.tar.gz") -> Path:
    """A .tar.gz holding one good file, then the given members (file members get 3 bytes of data)."""
    path = tmp_path / name
    with tarfile.open(path, "w:gz") as archive:
        good = tarfile.TarInfo("pkg/ok.txt")
        good.size = 2
        archive.addfile(good, io.BytesIO(b"ok"))
        for member in members:
            archive.addfile(member, io.BytesIO(b"bad") if member.isfile() else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, **fields) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = 3 if kind == tarfile.REGTYPE else 0
    for key, value in fields.items():
        setattr(info, key, value)
    return info


HOSTILE_MEMBERS = {
    "absolute name": member("/tmp/evil.txt"),
    "dot-dot": member("pkg/../../evil.txt"),
    "symbolic link": member("pkg/link", tarfile.SYMTYPE, linkname="/etc/passwd"),
    "hard link": member("pkg/hard", tarfile.LNKTYPE, linkname="pkg/ok.txt"),
    "character device": member("pkg/tty", tarfile.CHRTYPE, devmajor=5, devminor=0),
    "fifo": member("pkg/pipe", tarfile.FIFOTYPE),
}


@pytest.fixture(params=["tarfile's filter", "no filter (Python before 3.11.4)"])
def tar_filter(request, monkeypatch):
    """Both ways unpack_tar runs: with tarfile's data filter, and as on Debian 12's python3 3.11.2, without it."""
    if request.param.startswith("no filter"):
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return request.param


@pytest.mark.parametrize("kind", HOSTILE_MEMBERS)
def test_an_archive_member_that_is_not_plain_data_is_refused_before_anything_is_written(tmp_path, tar_filter, kind):
    archive = tar_with(tmp_path, HOSTILE_MEMBERS[kind])
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(SetupError, match=r"bad\.tar\.gz: member"):
        server.unpack_tar(archive, dest)
    assert list(dest.iterdir()) == []  # not even the good file: every member is checked first
    assert not (tmp_path / "evil.txt").exists()


def test_plain_files_are_unpacked_without_setuid_bits_and_owned_by_whoever_unpacks(tmp_path, tar_filter):
    archive = tar_with(tmp_path, member("pkg/bin/tool", mode=0o4755, uid=12345, gid=12345, uname="x", gname="y"))
    server.unpack_tar(archive, tmp_path / "out")
    tool = tmp_path / "out" / "pkg" / "bin" / "tool"
    assert tool.read_bytes() == b"bad" and (tmp_path / "out" / "pkg" / "ok.txt").read_bytes() == b"ok"
    assert tool.stat().st_mode & 0o7777 == 0o755
    assert (tool.stat().st_uid, tool.stat().st_gid) == (os.getuid(), os.getgid())


@pytest.fixture
def sdist(tmp_path, monkeypatch):
    """A small stand-in for the llama-cpp-python sdist at a file:// URL, with server.py's pins pointed at it."""
    archive = tmp_path / "upstream" / f"llama_cpp_python-{server.LLAMA_CPP_PYTHON}.tar.gz"
    archive.parent.mkdir()
    cmake = member(f"llama_cpp_python-{server.LLAMA_CPP_PYTHON}/vendor/llama.cpp/CMakeLists.txt")
    tar_with(archive.parent, cmake, name=archive.name)
    monkeypatch.setattr(server, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(server, "SDIST_URL", archive.as_uri())
    monkeypatch.setattr(server, "SDIST_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    monkeypatch.setattr(server, "SDIST_BYTES", archive.stat().st_size)
    return archive


def test_the_sdist_is_fetched_checked_and_unpacked_then_the_cached_file_is_reused(sdist, tmp_path, capsys):
    tree = server.fetch_source()
    assert (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").read_bytes() == b"bad"
    assert "downloading" in capsys.readouterr().out
    shutil.rmtree(tree)  # the unpacked tree is gone, the fetched file is not
    sdist.unlink()       # and the URL no longer answers: the cached file must serve
    assert server.fetch_source() == tree
    assert "sha256 checked" in capsys.readouterr().out


def test_an_sdist_with_another_sha256_is_refused_and_not_kept(sdist, tmp_path, monkeypatch):
    monkeypatch.setattr(server, "SDIST_SHA256", "0" * 64)
    with pytest.raises(SetupError, match="expected 0{64}.*put a copy of that file at"):
        server.fetch_source()
    assert list((tmp_path / "cache" / "src").iterdir()) == []


def test_pip_is_asked_for_wheels_only_and_prints_no_version_notice(monkeypatch, tmp_path):
    commands = []
    monkeypatch.setattr(server, "run", lambda command, **kw: commands.append(command) or (tmp_path / "x_y-1.whl").touch())
    server.pip_download("x-y==1", tmp_path)
    assert {"--only-binary", ":all:", "--no-deps", "--disable-pip-version-check"} <= set(commands[0])
    assert "--no-binary" not in commands[0]
