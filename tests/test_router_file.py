"""Post 08's router file: written once by routes.py, read by route.py; round trip, atomic write, refusals."""
import argparse
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from ece import outcomes
from isotonic import fit_isotonic
from prompt import load_prompt
from registry import dataset_named
from route import (LiveAnswer, Routed, check_model, check_router, jsonl_object, messages_of, print_route)
from router_file import (FORMAT, calib_state, read_router, route_of, router_from, router_json, router_name,
                         text_sha256, write_router)
from routes import fit_from
from saved_answers import read_split

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fitted():
    """(calib Loaded, calibrate, thresholds, router) of the reference BANKING77 calib file at targets 0.80/0.75."""
    calib = read_split("calib", None, "banking77")
    args = argparse.Namespace(dataset="banking77", target=0.80, ask_target=0.75)
    calibrate, thresholds = fit_from(calib.records, args)
    router = router_from(calib.path, calib.records, fit_isotonic(*outcomes(calib.records)), thresholds,
                         dataset_named("banking77"))
    return calib, calibrate, thresholds, router


def test_a_router_holds_the_fit_and_what_it_was_fitted_for(fitted):
    calib, _, thresholds, router = fitted
    assert router.format == FORMAT and router.dataset == "banking77"
    assert router.calib_answers == len(calib.records) and router.calib_file.endswith("banking77-calib.jsonl")
    assert (router.t_act, router.t_ask) == (thresholds.t_act, thresholds.t_ask)
    assert (router.act_answers, router.ask_answers) == (thresholds.act.kept, thresholds.ask.kept)
    assert router.prompt_sha256 == text_sha256(load_prompt().system)
    assert router.model == calib.records[0].model


def test_the_rebuilt_map_gives_the_fitted_calibration_bit_for_bit(fitted):
    calib, calibrate, _, router = fitted
    probes = [r.confidence for r in calib.records] + [0.0, 0.05, 0.5, 0.99, 1.0]
    fit = fit_isotonic(*outcomes(calib.records))
    assert [router.calibrate(c) for c in probes] == [fit(c) for c in probes]
    assert [router.calibrate(r.confidence) for r in calib.records] == [calibrate(r) for r in calib.records]


def test_a_router_routes_every_calib_answer_as_the_thresholds_do(fitted):
    calib, calibrate, thresholds, router = fitted
    assert [route_of(r, router.calibrate(r.confidence), router) for r in calib.records] == \
           [route_of(r, calibrate(r), thresholds) for r in calib.records]


def test_round_trip_gives_the_same_router(fitted, tmp_path):
    router = fitted[3]
    path = write_router(router, tmp_path / "sub" / "banking77-router.json")
    assert read_router(path) == router
    assert path.read_text() == router_json(router) and list(path.parent.iterdir()) == [path]


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_file(fitted, tmp_path, monkeypatch):
    router = fitted[3]
    path = write_router(router, tmp_path / "banking77-router.json")
    before = path.read_bytes()

    def fail(*_):
        raise OSError("disk full")
    monkeypatch.setattr("os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_router(replace(router, target=0.5), path)
    assert path.read_bytes() == before and list(tmp_path.iterdir()) == [path]


def test_router_name_follows_the_calib_file():
    assert router_name(Path("banking77-calib.jsonl")) == "banking77-router.json"
    assert router_name(Path("banking77-combined5-calib.jsonl")) == "banking77-combined5-router.json"


@pytest.mark.parametrize("text, words", [
    ("{not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
])
def test_a_corrupt_file_is_refused(tmp_path, text, words):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=words):
        read_router(path)


def test_a_missing_or_unreadable_file_is_one_line_naming_what_writes_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="^no router file at .*missing.json: python3 08-routes/routes.py writes one$"):
        read_router(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="cannot be read as a router file"):
        read_router(tmp_path)  # a folder


def test_route_py_names_a_missing_router_in_one_line(run_script, tmp_path):
    result = run_script("08-routes/route.py", "--router", tmp_path / "missing.json", "where is my card?")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: no router file at {tmp_path / 'missing.json'}: "
                                                  "python3 08-routes/routes.py writes one"]


def edited(fitted, tmp_path, **changes) -> Path:
    """The fitted router's file with some JSON fields changed (a None value removes the field)."""
    data = json.loads(router_json(fitted[3]))
    for name, value in changes.items():
        if value is None:
            del data[name]
        else:
            data[name] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("changes, words", [
    ({"format": 2}, "format version 2"),
    ({"t_act": None}, "no t_act"),
    ({"extra": 1}, "unknown field extra"),
    ({"t_act": 1.5}, "t_act is neither null nor in"),
    ({"calib_sha256": "abc"}, "calib_sha256 is not a hex sha256"),
    ({"isotonic": [[0.1, 0.2, 0.5], [0.3, 0.4, 0.4]]}, "do not rise"),
    ({"isotonic": []}, "no stretch"),
])
def test_a_field_no_fit_can_give_is_refused(fitted, tmp_path, changes, words):
    with pytest.raises(ValueError, match=words):
        read_router(edited(fitted, tmp_path, **changes))


def test_a_router_of_another_dataset_prompt_or_grammar_is_refused(fitted, tmp_path):
    router, prompt = fitted[3], load_prompt()
    check_router(router, Path("r.json"), "banking77", prompt)                     # the right one passes
    with pytest.raises(ValueError, match="is a router for banking77, not clinc150"):
        check_router(router, Path("r.json"), "clinc150", load_prompt("clinc150"))
    with pytest.raises(ValueError, match="another prompt"):
        check_router(router, Path("r.json"), "banking77", replace(prompt, system=prompt.system + " "))
    with pytest.raises(ValueError, match="another grammar"):
        check_router(router, Path("r.json"), "banking77", replace(prompt, grammar=prompt.grammar + " "))
    with pytest.raises(ValueError, match="another label file"):
        check_router(replace(router, label_sha256="0" * 64), Path("r.json"), "banking77", prompt)


def test_a_changed_calib_file_is_refused_and_an_absent_one_is_said(fitted, tmp_path):
    router = fitted[3]
    copy = tmp_path / "banking77-calib.jsonl"
    copy.write_bytes(router.calib_path.read_bytes())
    moved = replace(router, calib_file=str(copy))
    assert calib_state(moved).endswith("unchanged")
    copy.write_bytes(copy.read_bytes()[:-10])
    with pytest.raises(ValueError, match="has changed since the router was fitted"):
        calib_state(moved)
    copy.unlink()
    assert "not here, not checked" in calib_state(moved)


def test_another_model_is_refused_unless_other_model(fitted):
    router = fitted[3]
    assert check_model(router, Path("r.json"), {"model": router.model}, False) is None
    with pytest.raises(ValueError, match="does not carry over"):
        check_model(router, Path("r.json"), {"model": "other"}, False)
    assert check_model(router, Path("r.json"), {"model": "other"}, True).startswith("warning: the server runs other")


def test_messages_come_from_arguments_or_standard_input_with_empty_lines_skipped_and_counted():
    assert messages_of(["a", "b"], io.StringIO("")) == (["a", "b"], 0)
    assert messages_of(["-"], io.StringIO("first\n\n  \nsecond\r\n")) == (["first", "second"], 2)
    with pytest.raises(ValueError, match="a message is empty"):
        messages_of(["a", " "], io.StringIO(""))
    with pytest.raises(ValueError, match="give it alone"):
        messages_of(["-", "a"], io.StringIO("b\n"))
    with pytest.raises(ValueError, match="no message"):
        messages_of(["-"], io.StringIO("\n\n"))


def test_a_jsonl_line_gives_the_route_the_text_prints(fitted, capsys):
    router, prompt = fitted[3], load_prompt()
    distribution = {letter: 0.0 for letter in prompt.intent_letters["A"]} | {"A": 0.9, "B": 0.1}
    for confidence in (0.99, 0.7, 0.1):
        answer = LiveAnswer("ok", "A-A", "card_arrival", confidence, distribution, "A", "A")
        calibrated = router.calibrate(confidence)
        routed = Routed(answer, calibrated, route_of(answer, calibrated, router))
        row = jsonl_object(3, "where is my card?", routed, prompt, router, "f" * 64)
        print_route("where is my card?", routed, prompt, router)
        printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("route: ")]
        assert printed == [f"route: {row['route'].replace('_', ' ')}"]
        assert row["index"] == 3 and row["message_sha256"] == text_sha256("where is my card?")
        assert "message" not in row and row["router_sha256"] == "f" * 64
        assert (row["question"] is not None) == (row["route"] == "ask")
        assert (row["hand_over_text"] is not None) == (row["route"] == "hand_over")


def test_an_answer_without_a_code_hands_over_in_jsonl_too(fitted):
    router, prompt = fitted[3], load_prompt()
    routed = Routed(LiveAnswer("too_long"), 0.0, route_of(LiveAnswer("too_long"), 0.0, router))
    row = jsonl_object(0, "x", routed, prompt, router, "0" * 64, with_text=True)
    assert row["route"] == "hand_over" and row["code"] is None and row["message"] == "x"
    assert "gave no code (too_long)" in row["hand_over_text"]


def test_the_committed_reference_routers_match_their_calib_files():
    for path in (ROOT / "results/reference").glob("*/*-router.json"):
        assert calib_state(read_router(path)).endswith("unchanged")
    for path in ROOT.glob("[0-9][0-9]-*/reference/*/*-router.json"):
        assert calib_state(read_router(path)).endswith("unchanged")


def test_route_py_refuses_a_corrupt_router_in_one_line(run_script, tmp_path):
    path = tmp_path / "r.json"
    path.write_text("{")
    result = run_script("08-routes/route.py", "--router", path, "where is my card?")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "not JSON" in result.stderr
