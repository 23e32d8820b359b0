"""The HTTP client: a request goes out once; a timeout, a broken connection and a dead server are three errors.

The fake server (fake_server.py) stands in only where a real llama-server
cannot be made to do the thing: answer after a set delay, hang up without an
answer, close every kept-alive connection at once. The same behaviour on the
real server is checked at the end.
"""
import time

import pytest
from fake_server import FakeServer
from server_start import free_port
from llama_http import (DEFAULT_TIMEOUT_S, Client, ConnectionLost, ServerTimeout, ServerUnreachable, closed_by_server,
                        timeout_seconds)

OK = (200, {"status": "ok"})


def slow(seconds: float):
    """An answer() that answers every POST after `seconds`, GETs at once."""
    def answer(method, path, body):
        if method == "POST":
            time.sleep(seconds)
        return OK
    return answer


def test_a_read_timeout_is_its_own_error_and_the_post_is_sent_once():
    # Issue 12, case 1: a server that answers after 3 s, a client that waits 1 s.
    with FakeServer(slow(3.0)) as fake:
        client = Client(fake.url, timeout_s=1.0)
        with pytest.raises(ServerTimeout) as timeout:
            client.post("/v1/chat/completions", {"messages": []})
        time.sleep(2.5)  # long enough for a second copy to have arrived
        assert fake.count("POST", "/v1/chat/completions") == 1
    message = str(timeout.value)
    assert "did not answer POST /v1/chat/completions within 1 s" in message
    assert "may still" in message and "not sent again" in message and "LLAMA_TIMEOUT=" in message
    assert "not reachable" not in message and "server.py start" not in message


def test_a_connection_that_breaks_after_sending_is_not_sent_again():
    with FakeServer(lambda method, path, body: None) as fake:
        with pytest.raises(ConnectionLost, match="broke after POST /tokenize was sent.*not sent again"):
            Client(fake.url, timeout_s=5.0).post("/tokenize", {"content": "x"})
        assert fake.count("POST", "/tokenize") == 1


def test_a_kept_alive_connection_the_server_closed_is_replaced_before_anything_is_sent():
    # The server closes after every answer without saying so: each POST must go out once, on a new connection.
    with FakeServer(lambda method, path, body: OK, close_after_each=True) as fake:
        client = Client(fake.url, timeout_s=5.0)
        for _ in range(3):
            assert client.post("/tokenize", {"content": "x"}).body == {"status": "ok"}
            time.sleep(0.2)  # the server's close reaches the client
        assert fake.count("POST", "/tokenize") == 3 and fake.connections == 3


def test_nothing_listening_is_unreachable_with_the_command_that_starts_the_server():
    with pytest.raises(ServerUnreachable, match="not reachable at .*start it with: LLAMA_URL=.* python3 00-setup/server.py start"):
        Client(f"http://127.0.0.1:{free_port()}").post("/tokenize", {"content": "x"})


def test_the_timeout_comes_from_llama_timeout_and_a_bad_value_is_refused(monkeypatch):
    monkeypatch.delenv("LLAMA_TIMEOUT", raising=False)
    assert timeout_seconds() == DEFAULT_TIMEOUT_S == 1200.0
    assert Client("http://127.0.0.1:9").timeout_s == 1200.0
    monkeypatch.setenv("LLAMA_TIMEOUT", "2400")
    assert Client("http://127.0.0.1:9").timeout_s == 2400.0
    for bad in ("soon", "0", "-5", "nan", "inf"):
        monkeypatch.setenv("LLAMA_TIMEOUT", bad)
        with pytest.raises(ValueError, match="LLAMA_TIMEOUT must be a number of seconds above 0"):
            timeout_seconds()


def test_a_script_whose_server_times_out_exits_2_with_one_line_that_is_not_about_starting_it(run_script):
    def answer(method, path, body):
        if path == "/props":
            return 200, {"model_alias": "fake", "build_info": "b0"}
        time.sleep(3.0)
        return OK
    with FakeServer(answer) as fake:
        result = run_script("01-why-typed-decisions/typed.py", "where is my card?",
                            env={"LLAMA_URL": fake.url, "LLAMA_TIMEOUT": "1"})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "LLAMA_TIMEOUT" in lines[0] and "not reachable" not in lines[0]


# ---------------------------------------------------------------- the same on the real server

def test_a_read_timeout_on_the_real_server_says_it_may_still_be_processing(client, saved_prompt):
    impatient = Client(client.url, timeout_s=0.05)
    messages = [{"role": "system", "content": saved_prompt.system},
                {"role": "user", "content": f"a message the server has not seen yet {time.time()}"}]
    with pytest.raises(ServerTimeout, match="may still"):
        impatient.chat(messages, temperature=0.0, max_tokens=2, grammar=saved_prompt.grammar)
    assert client.get("/health")["status"] == "ok"  # the server goes on


def test_after_the_real_server_closes_an_idle_connection_the_next_request_goes_out_on_a_new_one(client):
    fresh = Client(client.url)
    assert fresh.tokenize("A")
    socket_before = fresh._local.conn.sock
    time.sleep(6.5)  # llama-server (cpp-httplib) closes a kept-alive connection after 5 s idle
    assert closed_by_server(socket_before)
    assert fresh.tokenize("B")
    assert fresh._local.conn.sock is not socket_before
