"""A run of 03's run.py that cannot work stops before its first line, or after three error lines in a row; a
rerun fills the holes of the last.

Issue 12, cases 2 and 3. The servers that refuse every request are fakes
(llama-server folds a system message its template refuses into the user
turn, so it never answers HTTP 500 "System role not supported", and it cannot
be made to pass the probe and then refuse every message); the rerun that
fills error lines runs against the real test server.
"""
import json

from banking77 import load_split
from fake_server import SYSTEM_REFUSED, FakeServer, fake_llama, reply_body
from result_lines import result_line

RUN = "03-where-confidence-comes-from/run.py"


def test_a_run_against_a_server_that_refuses_every_request_stops_at_the_probe_and_writes_nothing(run_script, tmp_path):
    out = tmp_path / "banking77-test.jsonl"
    with FakeServer(fake_llama(chat=lambda body: SYSTEM_REFUSED)) as fake:
        result = run_script(RUN, "--limit", "5", "--out", str(out), env={"LLAMA_URL": fake.url})
        chats = fake.count("POST", "/v1/chat/completions")
    # exit 2, and the one line says why: the server's own reason
    assert (result.returncode, result.stderr.count("\n"), "System role not supported" in result.stderr) == (2, 1, True)
    assert not out.exists() and chats == 1  # the probe's request, then nothing


def test_a_server_that_breaks_after_the_probe_stops_the_run_after_three_error_lines(run_script, tmp_path):
    def broken_after_the_probe(body):
        if body["messages"][1]["content"] == "hello":  # the probe's message
            return 200, reply_body(body["top_logprobs"])
        return 500, {"error": {"code": 500, "message": "the server broke", "type": "server_error"}}
    out = tmp_path / "banking77-calib.jsonl"
    with FakeServer(fake_llama(chat=broken_after_the_probe)) as fake:
        result = run_script(RUN, "--split", "calib", "--limit", "10", "--out", str(out), env={"LLAMA_URL": fake.url})
        chats = fake.count("POST", "/v1/chat/completions")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == ["error: 3 requests in a row failed (the last: the server broke); stopped after 3 of 10 messages. "
                     "The same command asks the failed ones again"]
    assert [json.loads(line)["status"] for line in out.read_text().splitlines()] == ["error"] * 3
    assert chats == 1 + 3


def test_a_rerun_asks_the_error_lines_again_and_replaces_them(client, run_script, tmp_path):
    # 3 error lines for the first 3 calibration messages, as a run against a broken server leaves them
    out = tmp_path / "banking77-calib.jsonl"
    ids = [message.id for message in load_split("calib")[:3]]
    out.write_text("".join(json.dumps({**result_line(k, False, status="error"), "id": i}) + "\n"
                           for k, i in enumerate(ids)))
    result = run_script(RUN, "--split", "calib", "--limit", "3", "--out", str(out), env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ids and all(r["status"] == "ok" for r in records)
    assert all(r["flagged_logprobs"] == 0 for r in records)  # llama-server's logprobs are all numbers
