"""What a shared machine or a careless URL can do: credentials, API keys, pid files, model names, hosts, terminals."""
import json
import os
import subprocess
import sys

import models
import pytest
import running_server
import server_build
import server_start
from labels import printable
from llama_http import Client, ServerError, ServerUnreachable, split_credentials
from models import resolve_model
from running_server import pid_file, running
from server_start import is_loopback
from setup_steps import SetupError


def test_user_info_in_llama_url_is_never_printed(free_port):
    url = f"http://someone:s3cret@127.0.0.1:{free_port()}"
    client = Client(url)
    assert "s3cret" not in client.url and "someone" not in client.url and "s3cret" not in repr(client)
    with pytest.raises(ServerUnreachable) as unreachable:
        client.get("/health")
    assert "s3cret" not in str(unreachable.value) and client.url in str(unreachable.value)
    assert split_credentials(url) == (client.url, "someone:s3cret")


def test_a_script_given_user_info_in_llama_url_keeps_it_out_of_its_output(run_script, free_port):
    result = run_script("02-forcing-a-valid-answer/tokens.py", env={"LLAMA_URL": f"http://u:hunter2@127.0.0.1:{free_port()}"})
    assert result.returncode == 2 and "hunter2" not in result.stdout + result.stderr


def test_a_port_out_of_range_names_llama_url(run_script):
    with pytest.raises(ValueError, match="LLAMA_URL has a port that is not a number from 1 to 65535"):
        Client("http://127.0.0.1:99999")
    # The script turns that ValueError into its one-line error and exit 2 (not a traceback and exit 1).
    result = run_script("02-forcing-a-valid-answer/tokens.py", env={"LLAMA_URL": "http://127.0.0.1:99999"})
    assert result.returncode == 2


def test_the_api_key_is_sent_as_a_bearer_token_and_a_missing_one_is_named(client, free_port, tmp_path, monkeypatch):
    # A real llama-server started with a key (no warm-up: only authentication is under test).
    monkeypatch.setattr(running_server, "RUN", tmp_path / "run")
    monkeypatch.setenv("LLAMA_API_KEY", "the-key-123")
    port = free_port()
    record = server_start.start_server("qwen2.5-coder-0.5b", url=f"http://127.0.0.1:{port}", slots=tmp_path / "slots")
    try:
        assert "the-key-123" not in json.dumps(record)                     # on disk and in `ps`: a file, not the key
        key_file = tmp_path / "run" / f"llama-server-{port}.key"
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert Client(f"http://127.0.0.1:{port}").tokenize("A")           # the key from the environment
        monkeypatch.delenv("LLAMA_API_KEY")
        with pytest.raises(ServerError, match="wants an API key: set LLAMA_API_KEY"):
            Client(f"http://127.0.0.1:{port}").tokenize("A")
    finally:
        running_server.stop_server(port)


def test_stop_never_signals_a_process_this_script_did_not_start(tmp_path, monkeypatch, run_script, free_port):
    monkeypatch.setattr(running_server, "RUN", tmp_path)
    port = free_port()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pid_file(port).write_text(json.dumps({"pid": bystander.pid, "command": [str(server_build.SERVER_BIN)], "model": "x"}))
        with pytest.raises(SetupError, match=f"names pid {bystander.pid}, which is not the llama-server"):
            running(port)
        with pytest.raises(SetupError):
            running_server.stop_server(port)
        assert bystander.poll() is None  # still alive
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.parametrize("name", ["../../../x", "a/b", "..", ".hidden", "x y", ""])
def test_a_model_name_cannot_leave_the_models_folder(name, tmp_path, monkeypatch):
    monkeypatch.setattr(models, "MODELS", tmp_path / "models")
    with pytest.raises(SetupError, match="must be a plain name"):
        resolve_model(name)
    with pytest.raises(SetupError, match="must be a plain name"):
        models.install_url_model((tmp_path / "none.gguf").as_uri(), "0" * 64, name)
    assert not any(tmp_path.rglob("*.gguf"))


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                            ("localhost", True), ("0.0.0.0", False), ("192.168.1.5", False),
                                            ("example.org", False)])
def test_only_loopback_hosts_start_without_a_warning(host, loopback):
    assert is_loopback(host) == loopback


def test_control_characters_of_a_message_are_shown_not_sent_to_the_terminal():
    assert printable("pay\x1b[2J\x07 now\x7f\x9b") == "pay\\x1b[2J\\x07 now\\x7f\\x9b"
    assert printable("two\nlines\tand é ü") == "two\nlines\tand é ü"
    assert os.linesep not in printable("\r") and printable("\r") == "\\x0d"
