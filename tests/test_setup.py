"""00-setup: the built server, the installed models and the URL route for a GGUF."""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import models
import pytest
import running_server
import server_build
import server_start
from models import PACKAGED_MODELS, install_url_model
from server_build import LLAMA_CPP_BUILD, LLAMA_CPP_COMMIT, SERVER_BIN
from setup_steps import SetupError
from datafiles import sha256_of


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
    monkeypatch.setattr(models, "MODELS", tmp_path / "models")
    source = tmp_path / "tiny.gguf"
    source.write_bytes(b"GGUF" + bytes(range(256)) * 40)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    path = install_url_model(source.as_uri(), digest.upper(), "tiny")
    assert path == tmp_path / "models" / "tiny.gguf"
    assert path.read_bytes() == source.read_bytes()
    assert install_url_model(source.as_uri(), digest, "tiny") == path  # second call: already there


def test_gguf_with_a_wrong_sha256_is_refused_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "MODELS", tmp_path / "models")
    source = tmp_path / "tiny.gguf"
    source.write_bytes(b"GGUF not the file you wanted")
    with pytest.raises(SetupError, match="expected " + "0" * 64):
        install_url_model(source.as_uri(), "0" * 64, "tiny")
    assert list((tmp_path / "models").iterdir()) == []


def test_gguf_from_a_url_that_does_not_answer_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "MODELS", tmp_path / "models")
    with pytest.raises(SetupError, match="could not download"):
        install_url_model((tmp_path / "missing.gguf").as_uri(), "0" * 64, "missing")
    assert list((tmp_path / "models").iterdir()) == []


def test_unknown_model_name_lists_the_known_ones():
    with pytest.raises(SetupError, match="qwen2.5-coder-1.5b"):
        models.install_model("no-such-model")


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
        server_build.unpack_tar(archive, dest)
    assert list(dest.iterdir()) == []  # not even the good file: every member is checked first
    assert not (tmp_path / "evil.txt").exists()


def test_plain_files_are_unpacked_without_setuid_bits_and_owned_by_whoever_unpacks(tmp_path, tar_filter):
    archive = tar_with(tmp_path, member("pkg/bin/tool", mode=0o4755, uid=12345, gid=12345, uname="x", gname="y"))
    server_build.unpack_tar(archive, tmp_path / "out")
    tool = tmp_path / "out" / "pkg" / "bin" / "tool"
    assert tool.read_bytes() == b"bad" and (tmp_path / "out" / "pkg" / "ok.txt").read_bytes() == b"ok"
    assert tool.stat().st_mode & 0o7777 == 0o755
    assert (tool.stat().st_uid, tool.stat().st_gid) == (os.getuid(), os.getgid())


@pytest.fixture
def sdist(tmp_path, monkeypatch):
    """A small stand-in for the llama-cpp-python sdist at a file:// URL, with server_build.py's pins pointed at it."""
    archive = tmp_path / "upstream" / f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON}.tar.gz"
    archive.parent.mkdir()
    cmake = member(f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON}/vendor/llama.cpp/CMakeLists.txt")
    tar_with(archive.parent, cmake, name=archive.name)
    monkeypatch.setattr(server_build, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(server_build, "SDIST_URL", archive.as_uri())
    monkeypatch.setattr(server_build, "SDIST_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    monkeypatch.setattr(server_build, "SDIST_BYTES", archive.stat().st_size)
    return archive


def test_the_sdist_is_fetched_checked_and_unpacked_then_the_cached_file_is_reused(sdist, tmp_path):
    tree = server_build.fetch_source()
    assert (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").read_bytes() == b"bad"
    cached = tmp_path / "cache" / "src" / sdist.name
    assert cached.read_bytes() == sdist.read_bytes()  # the fetched file is kept next to the tree
    shutil.rmtree(tree)  # the unpacked tree is gone, the fetched file is not
    sdist.unlink()       # and the URL no longer answers: the cached file must serve
    assert server_build.fetch_source() == tree
    assert (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").read_bytes() == b"bad"


def test_an_sdist_with_another_sha256_is_refused_and_not_kept(sdist, tmp_path, monkeypatch):
    monkeypatch.setattr(server_build, "SDIST_SHA256", "0" * 64)
    with pytest.raises(SetupError, match="expected 0{64}.*put a copy of that file at"):
        server_build.fetch_source()
    assert list((tmp_path / "cache" / "src").iterdir()) == []


def test_pip_is_asked_for_wheels_only_and_prints_no_version_notice(monkeypatch, tmp_path):
    commands = []
    monkeypatch.setattr(models, "run", lambda command, **kw: commands.append(command) or (tmp_path / "x_y-1.whl").touch())
    models.pip_download("x-y==1", tmp_path)
    assert {"--only-binary", ":all:", "--no-deps", "--disable-pip-version-check"} <= set(commands[0])
    assert "--no-binary" not in commands[0]


# ---------------------------------------------------------------- AMX off, and a binary trusted once it answered

AMX_MACROS = ("__AMX_TILE__", "__AMX_INT8__", "__AMX_BF16__")


def predefined_macros(*flags: str) -> str:
    result = subprocess.run(["c++", *flags, "-dM", "-E", "-x", "c++", os.devnull], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_no_amx_flags_win_over_an_amx_target_whatever_their_order():
    # -march=native adds the AMX macros on a Sapphire Rapids Xeon; sapphirerapids stands in for it on any x86 CPU.
    if "x86_64" not in predefined_macros():
        pytest.skip("the AMX flags exist on x86-64 only")
    assert all(macro in predefined_macros("-march=sapphirerapids") for macro in AMX_MACROS)
    flags = server_build.NO_AMX_FLAGS.split()
    for order in (flags + ["-march=sapphirerapids"], ["-march=sapphirerapids"] + flags):
        assert not [macro for macro in AMX_MACROS if macro in predefined_macros(*order)], order


def test_the_build_turns_amx_off_on_x86_64_only():
    assert server_build.build_options("x86_64")["CMAKE_CXX_FLAGS"] == server_build.NO_AMX_FLAGS
    assert server_build.build_options("x86_64")["CMAKE_C_FLAGS"] == server_build.NO_AMX_FLAGS
    assert "CMAKE_CXX_FLAGS" not in server_build.build_options("aarch64")
    assert server_build.build_options("aarch64")["GGML_NATIVE"] == "ON"


def test_the_amx_check_finds_tile_instructions_in_a_binary_that_has_them(tmp_path):
    source = tmp_path / "tiles.c"
    source.write_text('void f(const void *config) { __asm__ volatile ("ldtilecfg (%0)\\n\\t'
                      'tdpbssd %%tmm2, %%tmm1, %%tmm0\\n\\ttilerelease" :: "r"(config)); }\n')
    result = subprocess.run(["cc", "-c", str(source), "-o", str(tmp_path / "tiles.o")], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"this assembler cannot write AMX instructions: {result.stderr.strip()[:200]}")
    found = server_build.amx_instructions(tmp_path / "tiles.o")
    assert [line.split()[1] for line in found] == ["ldtilecfg", "tdpbssd", "tilerelease"]


def test_the_built_server_holds_no_amx_instruction_and_its_stamp_says_how_it_was_built():
    assert server_build.amx_instructions(SERVER_BIN) == []
    stamp = server_build.read_stamp(SERVER_BIN)
    assert stamp["options"] == server_build.build_options() and stamp["amx_instructions"] == 0


def fake_binary(path: Path, body: str) -> Path:
    """An executable Python script at path that prints a version and runs body (a server, or nothing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys\nif '--version' in sys.argv:\n    print('version: fake')\n"
                    f"    sys.exit(0)\n{body}")
    path.chmod(0o755)
    return path


@pytest.fixture
def cached_binary(tmp_path, monkeypatch):
    """A cached llama-server (a script that answers --version) in a temporary cache, as an older server.py left it."""
    monkeypatch.setattr(server_build, "CACHE", tmp_path / "cache")
    binary = fake_binary(tmp_path / "cache" / "bin" / "llama-server-b1", "")
    monkeypatch.setattr(server_build, "SERVER_BIN", binary)
    return binary


def test_a_cached_binary_is_reused_only_with_a_stamp_of_todays_options(cached_binary):
    options = server_build.build_options()
    assert "no build stamp" in server_build.why_rebuild(cached_binary, options)
    server_build.build_stamp(cached_binary).write_text(json.dumps({"options": {**options, "GGML_NATIVE": "OFF"}}))
    assert server_build.why_rebuild(cached_binary, options).endswith("built with other options (GGML_NATIVE)")
    server_build.build_stamp(cached_binary).write_text(json.dumps({"options": options}))
    assert server_build.why_rebuild(cached_binary, options) is None


def test_a_cached_binary_from_before_the_stamp_is_rebuilt_and_stamped(cached_binary, tmp_path, monkeypatch):
    commands = []

    def build(command, **kw):
        commands.append(command[:2])
        built = server_build.CACHE / "build" / f"llama-cpp-python-{server_build.LLAMA_CPP_PYTHON}" / "bin" / "llama-server"
        fake_binary(built, "")

    monkeypatch.setattr(server_build, "fetch_source", lambda: tmp_path / "src")
    monkeypatch.setattr(server_build, "run", build)
    monkeypatch.setattr(server_build, "amx_instructions", lambda binary: [])  # a script, not machine code
    assert server_build.build_server() == cached_binary
    assert commands == [["cmake", "-S"], ["cmake", "--build"]]
    stamp = server_build.read_stamp(cached_binary)
    assert stamp.pop("build_s") >= 0
    assert stamp == {"options": server_build.build_options(), "amx": False, "patch": None, "amx_instructions": 0,
                     "answered": None}
    assert server_build.build_server() == cached_binary and len(commands) == 2  # now reused as it is


# A stand-in for a binary that starts, says it is healthy, and dies by a signal on the first real request,
# as the AMX build did: a real llama-server cannot be made to do this on a CPU without AMX.
DIES_ON_FIRST_REQUEST = """
import http.server, os, signal
port = int(sys.argv[sys.argv.index('--port') + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', '15')
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')
    def do_POST(self):
        print('ggml_backend_amx_mul_mat: about to fault', flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
http.server.HTTPServer(('127.0.0.1', port), Handler).serve_forever()
"""


def test_a_server_that_dies_on_its_first_request_is_one_line_naming_the_signal_and_the_log(tmp_path, monkeypatch,
                                                                                           free_port):
    binary = fake_binary(tmp_path / "llama-server", DIES_ON_FIRST_REQUEST)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(running_server, "RUN", tmp_path / "run")
    monkeypatch.setattr(server_start, "build_server", lambda amx=None: binary)
    monkeypatch.setattr(server_start, "install_model", lambda name: model)
    port = free_port()
    with pytest.raises(SetupError) as died:  # a SetupError is one `error:` line and exit 2 (exit_on_server_errors)
        server_start.start_server("tiny", url=f"http://127.0.0.1:{port}", slots=tmp_path / "slots")
    log = tmp_path / "run" / f"llama-server-{port}.log"
    assert str(died.value).startswith("llama-server was killed by SIGSEGV (signal 11) on its first request; "
                                      f"log: {log}; this build cannot run here; delete {binary} and rerun")
    assert "\n" not in str(died.value)
    assert "about to fault" in log.read_text()
    assert running_server.running(port) is None  # no record of a server that is gone
