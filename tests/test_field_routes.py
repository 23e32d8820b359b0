"""08-routes/beyond/fields/fields_route.py: each field calibrated and thresholded on its own calib view, the route of a
message with fields, what a route object says of each field, and a router's stored gates rebuilt as fitted."""
from __future__ import annotations

import json

import numpy as np
import pytest
from decision_router import field_gates_of
from fields import parse_field
from fields_route import FieldGate, fit_field_gate, route_with_fields, served_fields, view_line
from isotonic import IsotonicFit
from result_lines import partial_line
from results_record import parse_lines
from sklearn.isotonic import IsotonicRegression

SCOPE = parse_field({"key": "scope", "question": "A request to this bank?", "options": [
    {"id": "bank", "description": "yes"}, {"id": "other", "description": "no"}],
    "safe": "bank", "gates": "all", "out_of_scope": "other"}, "a test field")
REQUESTER = parse_field({"key": "requester", "question": "Whose account?", "options": [
    {"id": "holder", "description": "the writer's"}, {"id": "someone_else", "description": "another's"},
    {"id": "unclear", "description": "not said"}], "safe": ["holder", "unclear"], "gates": "change"}, "a test field")
KINDS = {"card_arrival": "inform", "change_pin": "change", "terminate_account": "irreversible"}
# scope's calib answers: (option said, its confidence, the right option)
SCOPE_CALIB = [("bank", 0.95, "bank"), ("bank", 0.9, "bank"), ("bank", 0.8, "other"), ("other", 0.7, "other"),
               ("bank", 0.6, "other")]


def with_fields(number: int, answers: dict[str, tuple[str, float]], gold: dict[str, str] | None = None,
                intent: str = "card_arrival"):
    """A results line whose fields said `answers` (key -> (option, confidence)), the right options `gold`."""
    def distribution(field, option, confidence):  # the rest shared by the other letters
        others = [o.letter for o in field.options if o.id != option]
        return {field.letter_of(option): confidence, **{letter: (1 - confidence) / len(others) for letter in others}}
    known = {"scope": SCOPE, "requester": REQUESTER}
    fields = {key: {"option": option, "confidence": confidence, "off_label": 0.0,
                    "distribution": distribution(known[key], option, confidence)}
              for key, (option, confidence) in answers.items()}
    return partial_line(id=f"calib-{number}", intent=intent, extra={"fields": fields, "gold_fields": gold or {}})


def scope_view():
    lines = [with_fields(n, {"scope": (said, c)}, {"scope": gold}) for n, (said, c, gold) in enumerate(SCOPE_CALIB)]
    return parse_lines([view_line(line, SCOPE) for line in lines], "the scope view")


def test_a_field_s_view_is_its_option_as_a_code_right_where_the_message_set_says():
    view = scope_view()
    assert [(v.code, v.intent, v.correct, v.confidence) for v in view] == [
        ("A-A", "bank", True, 0.95), ("A-A", "bank", True, 0.9), ("A-A", "bank", False, 0.8),
        ("A-B", "other", True, 0.7), ("A-A", "bank", False, 0.6)]
    # no right option for the field in the message set, or no answer: no view line
    assert view_line(with_fields(9, {"scope": ("bank", 0.9)}), SCOPE) is None
    assert view_line(partial_line(extra={"fields": None, "gold_fields": {"scope": "bank"}}), SCOPE) is None


def test_each_field_is_calibrated_by_isotonic_regression_and_thresholded_on_its_own_view():
    gate = fit_field_gate(SCOPE, scope_view(), target=0.985)
    # pool adjacent violators on (0.6 wrong, 0.7 right, 0.8 wrong, 0.9 right, 0.95 right): 0.7 and 0.8 pool to 0.5
    assert gate.calibration.values == (0.0, 0.5, 0.5, 1.0, 1.0)
    oracle = IsotonicRegression(out_of_bounds="clip").fit([c for _, c, _ in SCOPE_CALIB],
                                                          [said == gold for said, _, gold in SCOPE_CALIB])
    grid = np.linspace(0.0, 1.0, 41)
    assert [gate.calibration(x) for x in grid] == pytest.approx(oracle.predict(grid))
    # said bank: calibrated 1.0 right, 1.0 right, 0.5 wrong, 0.0 wrong -> >= 1.0: 2/2; >= 0.5: 2/3 < 0.985
    assert gate.threshold == 1.0 and gate.answers == 5
    assert gate.why("bank", 0.92) is None                       # calibrated 1.0, at the threshold: let through
    route, reason = gate.why("bank", 0.85)                      # calibrated 0.75: sure of bank, not enough
    assert route == "ask" and reason.startswith("scope: bank but only 0.750 sure")
    assert gate.why("other", 0.99)[0] == "hand_over"           # not a request to the bank at all
    assert fit_field_gate(SCOPE, scope_view(), target=0.6).threshold == 0.5  # 2/3 >= 0.6


def test_a_field_with_no_calib_answers_is_refused_and_one_never_right_enough_lets_nothing_through():
    with pytest.raises(ValueError, match="no calib answers of field 'scope'"):
        fit_field_gate(SCOPE, [])
    wrong = parse_lines([view_line(with_fields(0, {"scope": ("bank", 0.9)}, {"scope": "other"}), SCOPE)], "v")
    gate = fit_field_gate(SCOPE, wrong)
    assert gate.threshold is None and gate.why("bank", 1.0)[0] == "ask"


def gates():
    """A scope gate at 0.9 and a requester gate at 0.5, both calibrated as the identity."""
    identity = IsotonicFit((0.0, 1.0), (0.0, 1.0))
    return [FieldGate(SCOPE, identity, 0.9, 10), FieldGate(REQUESTER, identity, 0.5, 10)]


@pytest.mark.parametrize("intent, requester, route, reason", [
    ("card_arrival", ("someone_else", 0.99), "act", None),           # requester gates changes only
    ("change_pin", ("someone_else", 0.99), "hand_over", "requester: someone_else"),
    ("change_pin", ("holder", 0.4), "ask", "requester: holder but only 0.400 sure"),
    ("change_pin", ("unclear", 0.8), "act", None),                   # a safe option, sure enough
    ("terminate_account", ("someone_else", 0.99), "hand_over", "requester: someone_else"),
])
def test_an_act_stands_only_where_every_gate_that_applies_lets_it_through(intent, requester, route, reason):
    line = with_fields(0, {"scope": ("bank", 0.95), "requester": requester}, intent=intent)
    start = "confirm" if intent == "terminate_account" else "act"
    got, why = route_with_fields(start, line, gates(), KINDS)
    assert got == (start if route == "act" else route)
    assert (why is None) if reason is None else why.startswith(reason)


def test_a_hand_over_comes_before_a_question_and_other_routes_pass_unchanged():
    line = with_fields(0, {"scope": ("bank", 0.5), "requester": ("someone_else", 0.99)}, intent="change_pin")
    route, why = route_with_fields("act", line, gates(), KINDS)
    first, second = why.split("; ")  # the hand-over's reason first, then the question's
    assert route == "hand_over" and first.startswith("requester: someone_else") and second.startswith("scope: bank")
    assert route_with_fields("ask", line, gates(), KINDS) == ("ask", None)
    assert route_with_fields("act", partial_line(extra={}), gates(), KINDS) == ("hand_over", "the fields gave no answer")


def test_the_route_object_gives_each_field_s_option_and_its_calibrated_confidence():
    line = with_fields(0, {"scope": ("bank", 0.95), "requester": ("holder", 0.7)})
    scope_only = [FieldGate(SCOPE, IsotonicFit((0.0, 1.0), (0.2, 0.6)), 0.5, 3)]
    assert served_fields(line, scope_only) == {
        "scope": {"option": "bank", "confidence": 0.95, "calibrated": pytest.approx(0.2 + 0.95 * 0.4)},
        "requester": {"option": "holder", "confidence": 0.7, "calibrated": None}}
    assert served_fields(partial_line(extra={}), scope_only) is None


def test_a_router_s_stored_gates_are_rebuilt_as_fitted():
    stored = [{"key": "scope", "thresholds": [0.6, 0.7, 0.9], "values": [0.0, 0.5, 1.0], "threshold": 1.0,
               "answers": 5},
              {"key": "requester", "thresholds": [0.5], "values": [0.9], "threshold": None, "answers": 2}]
    rebuilt = field_gates_of("banking77fields", json.loads(json.dumps(stored)))
    assert [g.field.key for g in rebuilt] == ["scope", "requester"] and rebuilt[1].field.safe == ("holder", "unclear")
    assert rebuilt[0].calibration(0.8) == pytest.approx(0.75) and rebuilt[0].threshold == 1.0
    assert rebuilt[1].threshold is None and rebuilt[1].why("holder", 1.0)[0] == "ask"


def test_the_biggest_seeded_sample_of_a_split_comes_first_and_the_test_side_takes_it(tmp_path, monkeypatch):
    import fields_route
    monkeypatch.setattr(fields_route, "OWN_RESULTS", tmp_path)
    monkeypatch.setattr(fields_route, "later_reference_folders", lambda: [])
    assert fields_route.fields_sample_runs("banking77fields", "test") == []
    assert fields_route.test_sources("banking77fields") == ("requester-test",)
    for name in ("test-sample200-seed0", "test-sample1000-seed0", "oos-test-sample300-seed0", "calib"):
        (tmp_path / f"banking77fields-{name}.jsonl").write_text("", encoding="utf-8")
    assert fields_route.fields_sample_runs("banking77fields", "test") == ["test-sample1000-seed0", "test-sample200-seed0"]
    assert fields_route.test_sources("banking77fields") == ("test-sample1000-seed0", "oos-test-sample300-seed0",
                                                            "requester-test")
