"""The start-of-run probe: one real typed request that shows whether a server can give a confidence at all.

Against the real test server the probe passes, and against a second real
llama-server started with speculative decoding it stops with the cause. The
shapes llama-server never sends (HTTP 500 "System role not supported" on
every request: this build folds a system message its template refuses into
the user turn; "logprobs": null; a shortened candidate list) come from a
small fake server or hand-made bodies.
"""
import contextlib
import math
import re
import subprocess

import pytest
import running_server as server
from server_start import free_port
from fake_server import PROPS, SYSTEM_REFUSED, FakeServer, fake_llama, reply_body
from llama_http import Client, ServerUnfit
from typed_request import TOP_LOGPROBS, check_reply, probe

# ---------------------------------------------------------------- the real server

def test_the_probe_passes_on_the_test_server_with_one_entry_and_30_candidates_per_token(client, saved_prompt):
    reply = probe(client, saved_prompt)
    steps = reply.body["choices"][0]["logprobs"]["content"]
    assert len(steps) == reply.body["usage"]["completion_tokens"]
    assert all(len(s["top_logprobs"]) == TOP_LOGPROBS for s in steps)


def test_the_warm_up_probes_the_server(client):
    reply = server.warm_up(client)  # BANKING77's saved prompt, as the probe test above sends it
    steps = reply.body["choices"][0]["logprobs"]["content"]
    assert len(steps) == reply.body["usage"]["completion_tokens"]
    assert all(len(s["top_logprobs"]) == TOP_LOGPROBS for s in steps)
    assert re.fullmatch(r"[A-Z]-[A-Z]", reply.body["choices"][0]["message"]["content"])  # a typed code


@contextlib.contextmanager
def second_server(client, *extra: str):
    """A second real llama-server with the test model and `extra` options, on a free port; stopped afterwards."""
    record = server.running(client.port)
    assert record, "the test server was not started by 00-setup/server.py"
    port = free_port()
    command = [record["command"][0], "--model", record["model_path"], "--host", "127.0.0.1", "--port", str(port),
               "--ctx-size", "1024", "--parallel", "1", "--no-webui", "--jinja", *extra]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        other = Client(f"http://127.0.0.1:{port}")
        other.wait_ready(timeout_s=120)
        yield other
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_probe_stops_a_server_that_decodes_speculatively(client, saved_prompt):
    with second_server(client, "--spec-type", "ngram-simple") as speculative:
        with pytest.raises(ServerUnfit, match="speculative decoding is on \\(/slots says speculative: true\\)"):
            probe(speculative, saved_prompt)


# ---------------------------------------------------------------- shapes llama-server does not send

def test_a_template_that_refuses_the_system_role_is_named(saved_prompt):
    with FakeServer(fake_llama(chat=lambda body: SYSTEM_REFUSED)) as fake:
        with pytest.raises(ServerUnfit, match="the chat template refuses the system message "
                                              "\\(HTTP 500: System role not supported\\)"):
            probe(Client(fake.url), saved_prompt)
        assert fake.count("POST", "/v1/chat/completions") == 1  # one probe request, not a run of them


def test_the_warm_up_reports_a_refused_request_instead_of_success(saved_prompt):
    with FakeServer(fake_llama(chat=lambda body: SYSTEM_REFUSED)) as fake:
        with pytest.raises(ServerUnfit, match="refuses the system message"):
            server.warm_up(Client(fake.url))
        assert fake.count("POST", "/v1/chat/completions") == 1  # refused once, and not asked again


def test_a_template_that_drops_the_system_message_is_named(saved_prompt):
    dropped = fake_llama(template=lambda body: (200, {"prompt": "<|im_start|>user\nhello<|im_end|>\n"}))
    with FakeServer(dropped) as fake:
        with pytest.raises(ServerUnfit, match="leaves the system message out of the prompt"):
            probe(Client(fake.url), saved_prompt)


def test_logprobs_null_is_named_as_the_missing_feature(saved_prompt):
    def no_logprobs(body):
        status, answer = 200, reply_body()
        answer["choices"][0]["logprobs"] = None
        return status, answer
    with FakeServer(fake_llama(chat=no_logprobs)) as fake:
        with pytest.raises(ServerUnfit, match='"logprobs": null'):
            probe(Client(fake.url), saved_prompt)


def test_speculative_types_in_props_count_where_slots_are_off(saved_prompt):
    props = {**PROPS, "default_generation_settings": {"params": {"speculative.types": "draft-simple"}}}
    with FakeServer(fake_llama(props=props, slots=(501, {"error": {"message": "no slots"}}))) as fake:
        with pytest.raises(ServerUnfit, match="speculative.types 'draft-simple'"):
            probe(Client(fake.url), saved_prompt)


def test_a_backend_with_bytes_but_no_ids_passes():
    body = reply_body(3)
    for entry in body["choices"][0]["logprobs"]["content"]:
        for candidate in [entry, *entry["top_logprobs"]]:
            del candidate["id"]
    check_reply(body, 3)


@pytest.mark.parametrize("change, cause", [
    (lambda b: b["choices"][0]["logprobs"]["content"].pop(), "1 entries for 2 generated tokens"),
    (lambda b: b["choices"][0]["logprobs"]["content"][1].update(top_logprobs=[]), "0 candidates at token 2 where 3"),
    (lambda b: b["choices"][0]["logprobs"]["content"][0]["top_logprobs"].pop(), "2 candidates at token 1 where 3"),
    (lambda b: b["choices"][0]["logprobs"]["content"][0]["top_logprobs"][2].update(logprob=None), "logprob None for "
                                                                                                  "candidate 3 of token 1"),
    (lambda b: b["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1].update(logprob=0.3), "logprob 0.3"),
    (lambda b: b["choices"][0]["logprobs"]["content"][1].update(logprob=math.nan), "logprob nan for token 2"),
    (lambda b: [b["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1].pop(k) for k in ("id", "bytes")],
     "neither a token id nor its bytes"),
    (lambda b: (b.pop("usage"), b.pop("timings")), "does not say how many tokens it generated"),
])
def test_a_reply_a_confidence_cannot_be_read_from_names_the_cause(change, cause):
    body = reply_body(3)
    change(body)
    with pytest.raises(ServerUnfit, match=cause.replace("(", "\\(")):
        check_reply(body, 3)


def test_the_lowest_float_is_a_finite_logprob_the_probe_accepts():
    body = reply_body(3)
    body["choices"][0]["logprobs"]["content"][0]["top_logprobs"][2]["logprob"] = -3.4028234663852886e38
    check_reply(body, 3)
