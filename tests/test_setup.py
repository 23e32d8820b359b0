"""00-setup: the built server, the installed models and the URL route for a GGUF."""
import hashlib
import subprocess

import pytest
import server
from server import LLAMA_CPP_BUILD, LLAMA_CPP_COMMIT, PACKAGED_MODELS, SERVER_BIN, SetupError, install_url_model, sha256_of


def test_built_server_reports_the_pinned_build_and_commit():
    result = subprocess.run([str(SERVER_BIN), "--version"], capture_output=True, text=True, timeout=60)
    version = result.stdout + result.stderr
    assert f"build {LLAMA_CPP_BUILD}, commit {LLAMA_CPP_COMMIT}" in version


def test_server_fingerprint_names_the_build(client, built):
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
