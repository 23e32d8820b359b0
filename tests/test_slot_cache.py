"""00-setup: the warmed slot saved once per key and restored on later starts (slot_cache.py, running_server.warm).

The key and the sidecar checks run on files written here. The rest runs on
real llama-servers with the 0.5B test model and two slots, started by
server_start.start_server on free ports with a temporary slot folder. They
warm a short BANKING77 prompt (no examples, no descriptions: about 670
tokens instead of 7,000), so each prefill takes seconds; saving and
restoring do not depend on the prompt's length.
"""
import contextlib
import dataclasses
import json
import os
from pathlib import Path

import models
import pytest
import running_server
import server
import server_start
from llama_http import Client
from setup_steps import SetupError
from slot_cache import (SLOTS_ENV, NotSaved, SlotChanged, SlotFile, SlotKey, Unusable, check_saved,
                        expected_slot_tokens, prune, save, sha256_of, sidecar_record, slots_folder, write_sidecar)
from prompt import load_prompt
from typed_request import TOP_LOGPROBS, request_settings, typed_messages

KEY = SlotKey(build="b11312-0c1e57098", model_sha256="a" * 64, prompt_sha256="b" * 64, n_ctx_slot=10240, slots=1)
MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"
MESSAGE = "I was charged twice for the same coffee this morning"


# ---------------------------------------------------------------- the key and the files

@pytest.mark.parametrize("change", [dict(build="b11313-1234567"), dict(model_sha256="c" * 64),
                                    dict(prompt_sha256="d" * 64), dict(n_ctx_slot=4096), dict(slots=2)])
def test_a_changed_build_model_prompt_or_context_gives_another_key_and_file(change, tmp_path):
    other = dataclasses.replace(KEY, **change)
    assert other.digest != KEY.digest
    assert SlotFile(tmp_path, "banking77", MODEL, other).path != SlotFile(tmp_path, "banking77", MODEL, KEY).path


def test_the_same_key_gives_the_same_file_named_after_dataset_model_and_digest(tmp_path):
    again = SlotKey(**dataclasses.asdict(KEY))
    assert again.digest == KEY.digest and len(KEY.digest) == 16
    slot_file = SlotFile(tmp_path, "banking77", MODEL, KEY)
    assert slot_file.path.name == f"banking77-{MODEL}-{KEY.digest}.bin"
    assert slot_file.sidecar.name == f"banking77-{MODEL}-{KEY.digest}.json"


def test_the_slot_folder_is_in_the_cache_unless_the_environment_names_another(tmp_path, monkeypatch):
    monkeypatch.delenv(SLOTS_ENV, raising=False)
    assert slots_folder(tmp_path) == tmp_path / "slots"
    monkeypatch.setenv(SLOTS_ENV, str(tmp_path / "elsewhere"))
    assert slots_folder(tmp_path) == tmp_path / "elsewhere"


def saved_file(folder, key=KEY, content=b"GGSQ" + bytes(range(256)) * 64) -> SlotFile:
    """A SlotFile whose .bin holds content and whose sidecar records it, as save() leaves them."""
    slot_file = SlotFile(folder, "banking77", MODEL, key)
    slot_file.path.write_bytes(content)
    write_sidecar(slot_file, sidecar_record(slot_file, slot_file.path, tokens=7026))
    return slot_file


def test_a_file_whose_sidecar_matches_key_size_and_sha256_may_be_restored(tmp_path):
    record = check_saved(saved_file(tmp_path))
    assert record["key"] == dataclasses.asdict(KEY) and record["tokens"] == 7026 and record["bytes"] == 4 + 256 * 64


def test_no_file_for_the_key_is_not_saved_yet_and_names_what_changed_since_the_last_one(tmp_path):
    with pytest.raises(NotSaved, match="no saved slot for this key yet"):
        check_saved(SlotFile(tmp_path, "banking77", MODEL, KEY))
    saved_file(tmp_path)  # the slot saved for the old prompt
    new_prompt = SlotFile(tmp_path, "banking77", MODEL, dataclasses.replace(KEY, prompt_sha256="e" * 64))
    with pytest.raises(NotSaved, match="the one saved before was for another prompt_sha256$"):
        check_saved(new_prompt)


def test_a_sidecar_that_records_another_key_is_a_stale_file_and_not_restored(tmp_path):
    slot_file = saved_file(tmp_path)
    record = json.loads(slot_file.sidecar.read_text())
    record["key"]["model_sha256"] = "f" * 64  # the name says one model, the sidecar another
    write_sidecar(slot_file, record)
    with pytest.raises(Unusable, match="saved for another model_sha256 .*a stale file"):
        check_saved(slot_file)


def test_a_truncated_file_is_not_restored(tmp_path):
    slot_file = saved_file(tmp_path)
    slot_file.path.write_bytes(slot_file.path.read_bytes()[:1000])
    with pytest.raises(Unusable, match="has 1,000 bytes where its sidecar records 16,388: a truncated"):
        check_saved(slot_file)


def test_a_file_with_one_changed_byte_is_not_restored(tmp_path):
    slot_file = saved_file(tmp_path)
    content = bytearray(slot_file.path.read_bytes())
    content[5000] ^= 0x01  # same size, one bit flipped in the middle
    slot_file.path.write_bytes(bytes(content))
    with pytest.raises(Unusable, match="does not have the sha256 its sidecar records: a changed or corrupt file"):
        check_saved(slot_file)


@pytest.mark.parametrize("damage, cause", [
    (lambda f: f.sidecar.unlink(), "has no sidecar .* \\(a save that did not finish\\)"),
    (lambda f: f.path.unlink(), "describes .*, which is missing"),
    (lambda f: f.sidecar.write_text('{"key": '), "is not a sidecar this script wrote \\(JSONDecodeError\\)"),
    (lambda f: f.sidecar.write_text('{"key": {}}'), "is not a sidecar this script wrote \\(KeyError\\)"),
], ids=["no sidecar", "no file", "sidecar not JSON", "sidecar without size"])
def test_a_half_saved_or_unreadable_pair_is_not_restored(tmp_path, damage, cause):
    slot_file = saved_file(tmp_path)
    damage(slot_file)
    with pytest.raises(Unusable, match=cause):
        check_saved(slot_file)


def test_prune_deletes_only_the_same_dataset_and_model_under_another_key(tmp_path):
    old = saved_file(tmp_path, dataclasses.replace(KEY, prompt_sha256="0" * 64))
    other_model = saved_file(tmp_path)
    other_model = SlotFile(tmp_path, "banking77", "another-model", KEY)
    other_model.path.write_bytes(b"x")
    other_dataset = SlotFile(tmp_path, "otherset", MODEL, dataclasses.replace(KEY, prompt_sha256="0" * 64))
    other_dataset.path.write_bytes(b"x")
    current = SlotFile(tmp_path, "banking77", MODEL, KEY)
    assert prune(current) == [old.path, old.sidecar]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [current.path.name, current.sidecar.name, other_model.path.name, other_dataset.path.name])


# ---------------------------------------------------------------- the model's sha256

def test_a_packaged_model_has_its_pinned_sha256_without_reading_the_file():
    model = models.PACKAGED_MODELS[MODEL]
    assert models.model_sha256(models.MODELS / "does-not-matter" / f"{MODEL}.gguf") == model.sha256


def test_a_url_model_keeps_the_sha256_checked_at_install_next_to_it(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "MODELS", tmp_path / "models")
    source = tmp_path / "tiny.gguf"
    source.write_bytes(b"GGUF" + bytes(range(256)) * 40)
    digest = sha256_of(source)
    path = models.install_url_model(source.as_uri(), digest, "tiny")
    assert (tmp_path / "models" / "tiny.gguf.sha256").read_text() == f"{digest}  tiny.gguf\n"
    path.write_bytes(b"changed after the install")  # the record, not the file, names the model
    assert models.model_sha256(path) == digest


def test_a_url_model_without_a_record_is_hashed_once_and_recorded(tmp_path):
    path = tmp_path / "older.gguf"
    path.write_bytes(b"GGUF installed before the record existed")
    digest = sha256_of(path)
    assert models.model_sha256(path) == digest
    assert models.sha256_record(path).read_text() == f"{digest}  older.gguf\n"
    path.write_bytes(b"changed after the record")  # from now on the record, not the file, names the model
    assert models.model_sha256(path) == digest


def test_warm_without_a_server_started_by_this_script_is_one_line_and_exit_2(run_script, free_port, monkeypatch):
    port = free_port()
    monkeypatch.setenv("LLAMA_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(SetupError, match=f"no server started by this script on port {port}; start one with: "
                                    ".*server.py start --dataset banking77$"):
        server.main(["warm", "banking77"])
    result = run_script("00-setup/server.py", "warm", "banking77", env={"LLAMA_URL": f"http://127.0.0.1:{port}"})
    assert result.returncode == 2  # that SetupError, as one error line


# ---------------------------------------------------------------- real servers

SHORT_BANKING77 = load_prompt(examples_per_intent=0, descriptions=False)
# Another prompt that starts like the short one, so the server processes only its end: a swap costs no prefill here.
OTHER = dataclasses.replace(SHORT_BANKING77, system=SHORT_BANKING77.system + "\nAnswer at once.")


@contextlib.contextmanager
def own_server(slots, parallel: int = 2):
    """A real llama-server with the 0.5B test model on a free port, saving slots in `slots`; stopped afterwards."""
    port = server_start.free_port()
    record = server_start.start_server(MODEL, parallel=parallel, context_per_slot=2048, url=f"http://127.0.0.1:{port}",
                                       slots=slots)
    try:
        yield Client(record["url"]), record
    finally:
        running_server.stop_server(port)
        os.unlink(record["log"])


def candidates(client: Client, prompt, slot: int = 0) -> tuple[list, dict]:
    """The top_logprobs of every generated token of MESSAGE's typed request on `slot`, as (token id, logprob)
    pairs, and the server's timings."""
    body = client.chat(typed_messages(prompt, MESSAGE), **request_settings(prompt, True, TOP_LOGPROBS), id_slot=slot).body
    steps = body["choices"][0]["logprobs"]["content"]
    return [[(c["id"], c["logprob"]) for c in step["top_logprobs"]] for step in steps], body["timings"]


@pytest.fixture(scope="module")
def slot_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("slots")


@pytest.fixture(scope="module")
def restarted(client, slot_folder):
    """A two-slot server warmed cold (slot 0 prefilled and saved, slot 1 restored), asked MESSAGE, stopped,
    started again and warmed from the file.

    Yields (client, record, what each warm-up did, the candidates on slot 0 after the first warm-up).
    """
    with own_server(slot_folder) as (first_client, first_record):
        cold = running_server.warm(first_client, first_record, "banking77", SHORT_BANKING77)
        after_warm_up, _ = candidates(first_client, SHORT_BANKING77)
    with own_server(slot_folder) as (again, record):
        warm = running_server.warm(again, record, "banking77", SHORT_BANKING77)
        yield again, record, cold, warm, after_warm_up


def test_the_first_start_prefills_slot_0_saves_it_with_its_sidecar_and_restores_slot_1(restarted):
    _, _, cold, _, _ = restarted
    assert cold.how == "prefilled" and cold.prefill_s > 0 and cold.tokens > 600 and len(cold.restore_ms) == 1
    record = check_saved(SlotFile(cold.file.parent, "banking77", MODEL, json_key(cold.file)))
    assert record["bytes"] == cold.bytes == cold.file.stat().st_size


def json_key(path) -> SlotKey:
    return SlotKey(**json.loads(path.with_suffix(".json").read_text())["key"])


def test_the_second_start_restores_both_slots_instead_of_prefilling(restarted):
    _, _, cold, warm, _ = restarted
    assert warm.how == "restored" and warm.file == cold.file and warm.tokens == cold.tokens
    assert warm.prefill_s == 0 and len(warm.restore_ms) == 2 and warm.why == ""
    assert warm.probe_ms > 0  # the probe ran after the restore


@pytest.mark.parametrize("slot", [0, 1])
def test_a_restored_server_answers_exactly_as_right_after_the_warm_up_that_saved_it(restarted, slot):
    client, _, _, _, after_warm_up = restarted
    after_restore, timings = candidates(client, SHORT_BANKING77, slot)
    assert timings["prompt_n"] < 30  # only the message was processed: the prompt came from the file
    assert timings["cache_n"] > 600
    assert after_restore == after_warm_up  # every candidate's token and logprob, to the last bit


def test_warm_swaps_the_prompt_of_a_running_server_and_back_by_restoring(restarted):
    client, record, _, _, after_warm_up = restarted
    assert running_server.warm(client, record, "other", OTHER).how == "prefilled"  # first time: processed, saved
    back = running_server.warm(client, record, "banking77", SHORT_BANKING77)
    assert back.how == "restored"
    assert candidates(client, SHORT_BANKING77, slot=1)[0] == after_warm_up
    assert running_server.warm(client, record, "other", OTHER).how == "restored"


@pytest.mark.parametrize("damage, why", [
    (lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]), "a truncated or overwritten file"),
    (lambda path: flip_a_byte(path), "a changed or corrupt file"),
], ids=["truncated", "one byte changed"])
def test_a_truncated_or_corrupt_file_is_not_restored_but_prefilled_and_replaced(restarted, damage, why):
    client, record, cold, _, after_warm_up = restarted
    running_server.warm(client, record, "banking77", SHORT_BANKING77)
    damage(cold.file)
    warmed = running_server.warm(client, record, "banking77", SHORT_BANKING77)
    assert warmed.how == "prefilled" and why in warmed.why
    assert warmed.file == cold.file and warmed.save_ms > 0  # saved again over the damaged file
    check_saved(SlotFile(cold.file.parent, "banking77", MODEL, json_key(cold.file)))  # replaced: whole again


def flip_a_byte(path) -> None:
    with open(path, "r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))


def test_a_file_the_server_refuses_is_prefilled_and_replaced(restarted):
    # Size and sha256 match the sidecar, but the content is not a slot: only the server can tell.
    client, record, cold, _, after_warm_up = restarted
    slot_file = SlotFile(cold.file.parent, "banking77", MODEL, json_key(cold.file))
    slot_file.path.write_bytes(b"not a llama.cpp sequence state file")
    write_sidecar(slot_file, sidecar_record(slot_file, slot_file.path, tokens=7026))
    warmed = running_server.warm(client, record, "banking77", SHORT_BANKING77)
    assert warmed.why.startswith(f"the server refused {slot_file.path.name} (") and "Unable to restore slot" in warmed.why
    assert warmed.how == "prefilled" and warmed.prefill_s > 0
    check_saved(slot_file)
    assert candidates(client, SHORT_BANKING77)[0] == after_warm_up


def test_a_file_holding_another_context_under_the_key_is_replaced_by_the_slot_the_probe_left(restarted, slot_folder):
    # Saves before the token check could put another prompt's context under a key (card_help's file once held
    # 7,034 tokens); the sidecar and sha256 are then right, so only the probe's reuse of the prompt can tell. A
    # server that processed the prompt before keeps it in its own prompt cache and would heal the probe: the file
    # is read by a server started afresh, as at a real start.
    client, record, cold, _, _ = restarted
    slot_file = SlotFile(cold.file.parent, "banking77", MODEL, json_key(cold.file))
    client.post("/completion", {"prompt": "One, two, three,", "n_predict": 1, "id_slot": 0, "cache_prompt": True})
    assert save(client, 0, slot_file).tokens < 30
    with own_server(slot_folder) as (fresh, fresh_record):
        warmed = running_server.warm(fresh, fresh_record, "banking77", SHORT_BANKING77)
        assert warmed.how == "prefilled" and "held another context" in warmed.why
        assert warmed.tokens > 600 and check_saved(slot_file)["tokens"] == warmed.tokens
        again = running_server.warm(fresh, fresh_record, "banking77", SHORT_BANKING77)
        assert again.how == "restored" and again.why == ""


def test_the_warm_command_puts_the_prompt_back_into_the_test_server_from_its_saved_slot(client, run_script):
    record = running_server.running(client.port)
    assert record and record.get("slots"), "the test server was not started by this version of 00-setup/server.py"
    result = run_script("00-setup/server.py", "warm", "banking77")
    assert result.returncode == 0, result.stderr
    assert "banking77 prompt: restored into slot 0 in " in result.stdout  # not processed again: restored


def test_a_slot_another_request_ran_on_after_the_warm_up_is_not_saved(restarted):
    # A second client's request on slot 0 between the warm-up and its save would be saved under the prompt's name
    # (a card_help file once held 7,034 tokens of BANKING77's prompt): the count the warm-up left is checked first.
    client, record, cold, _, _ = restarted
    reply = running_server.warm_up(client, SHORT_BANKING77, slot=0)
    expected = expected_slot_tokens(reply.body["timings"])
    assert len(expected) >= 2 and expected.start > 600
    client.post("/completion", {"prompt": "One, two, three,", "n_predict": 1, "id_slot": 0, "cache_prompt": True})
    slot_file = SlotFile(Path(record["slots"]), "interleaved", MODEL, json_key(cold.file))
    with pytest.raises(SlotChanged, match="another client's request ran on it"):
        save(client, 0, slot_file, expected_tokens=expected)
    assert not slot_file.path.exists() and not slot_file.sidecar.exists()
    assert list(Path(record["slots"]).glob("*.saving-*")) == []
    # the warm-up's own count passes: save right after it
    reply = running_server.warm_up(client, SHORT_BANKING77, slot=0)
    assert save(client, 0, slot_file, expected_tokens=expected_slot_tokens(reply.body["timings"])).tokens > 600
    slot_file.path.unlink()
    slot_file.sidecar.unlink()


def test_the_expected_slot_tokens_run_from_the_prompt_to_every_generated_token():
    assert expected_slot_tokens({"cache_n": 600, "prompt_n": 70, "predicted_n": 2}) == range(670, 673)
    assert 671 in expected_slot_tokens({"cache_n": 0, "prompt_n": 670, "predicted_n": 2})  # measured: 671 saved
    assert expected_slot_tokens({"prompt_n": 670}) is None and expected_slot_tokens({}) is None

