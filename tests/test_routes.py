"""Post 08: the act and ask thresholds, the routes, exact intervals, and both scripts (routes.py, route.py)."""
import argparse
import re
from dataclasses import replace
from pathlib import Path

import pytest
from ece import outcomes
from isotonic import fit_isotonic
from scipy.stats import beta
from prompt import load_prompt
from calib_split import add_calib_arguments
from route import (action_line, answer_lines, ask_answer, calibrated_of, check_model, clarifying_question,
                   hand_over_text, plain_words)
from router_file import default_router_path, read_router
from routes import (act_intervals, add_threshold_arguments, closing_line, cuts, fit_calibration, fit_thresholds,
                    lowest_cut, report, route_all, route_of, threshold_lines, thresholds_from, top_two)
from module_loads import script_modules
from result_lines import partial_line
from saved_answers import load_results

ROOT = Path(__file__).resolve().parents[1]


def IDENTITY(record):  # noqa: N802  (used like a constant: thresholds on the raw confidence, no calibration)
    return record.confidence


def answer(confidence, correct, top_two_right=None, code="A-A", status="ok"):
    """A post 03 line whose fields that routing reads are set (partial_line: the rest are defaults).

    The answer's code is A-A; its runner-up in group A is A-B. A wrong answer
    has gold A-B (right in top two) or A-C (not), as top_two_right says.
    """
    if top_two_right is None:
        top_two_right = correct
    gold = code if correct else ("A-B" if top_two_right else "A-C")
    return partial_line(status=status, code=code if status == "ok" else None, gold_code=gold, correct=correct,
                        confidence=confidence, intent_distribution={"A": 0.6, "B": 0.3, "C": 0.1})


# Six answers, highest confidence first. Precision of the answers at or above each value:
#   >= 0.9: 1/1 = 1.00   >= 0.8: 2/2 = 1.00   >= 0.7: 2/3 = 0.67
#   >= 0.6: 3/4 = 0.75   >= 0.5: 4/5 = 0.80   >= 0.4: 4/6 = 0.67
SIX = [answer(0.9, True), answer(0.8, True), answer(0.7, False), answer(0.6, True), answer(0.5, True),
       answer(0.4, False)]


def test_cuts_count_the_answers_at_or_above_each_distinct_value():
    assert [(c.threshold, c.kept, c.hits) for c in cuts([(r.confidence, r.correct) for r in SIX])] == [
        (0.9, 1, 1), (0.8, 2, 2), (0.7, 3, 2), (0.6, 4, 3), (0.5, 5, 4), (0.4, 6, 4)]


@pytest.mark.parametrize("target, t_act, answers, right", [
    (1.0, 0.8, 2, 2),    # 2/2 at 0.8; 2/3 at 0.7 falls short
    (0.8, 0.5, 5, 4),    # 4/5 = 0.80 at 0.5 reaches it, although 0.7 (0.67) and 0.6 (0.75) do not
    (0.75, 0.5, 5, 4),   # 0.6 (0.75) reaches it too, but 0.5 is lower and also reaches it
])
def test_act_threshold_is_the_lowest_value_whose_precision_reaches_the_target(target, t_act, answers, right):
    thresholds = fit_thresholds(SIX, IDENTITY, target=target)
    assert thresholds.t_act == t_act
    assert (thresholds.act.kept, thresholds.act.hits) == (answers, right)


@pytest.mark.parametrize("target", [0.6, 0.5])
def test_a_target_reached_only_by_acting_on_every_calib_answer_gives_no_act_route(target):
    # 4/6 = 0.67 at 0.4, the lowest confidence: the lowest cut reaching 0.6 (or 0.5) keeps all six answers,
    # although 0.5 (4/5) reaches it too. A threshold at the floor acts on anything: no act route.
    thresholds = fit_thresholds(SIX, IDENTITY, target=target)
    assert thresholds.act is None and thresholds.t_act is None
    assert (thresholds.floor.threshold, thresholds.floor.kept, thresholds.floor.hits) == (0.4, 6, 4)
    assert "acting on all 6 calib answers already reaches" in thresholds.why_no_act()
    assert "more calib messages or a higher --target" in thresholds.why_no_act()
    assert all(route != "act" for route in route_all(SIX, IDENTITY, thresholds))
    assert route_of(answer(1.0, True), 1.0, thresholds) != "act"                 # not even at confidence 1.0
    # one step up, the lowest cut keeps fewer than all: an act route again
    assert fit_thresholds(SIX, IDENTITY, target=0.8).t_act == 0.5


def test_every_calib_answer_at_one_confidence_gives_no_act_route_even_when_all_are_right():
    same = [answer(0.7, True)] * 4
    thresholds = fit_thresholds(same, IDENTITY, target=0.985)
    assert thresholds.act is None and thresholds.floor.kept == 4
    assert closing_line(thresholds, report(same, route_all(same, IDENTITY, thresholds)), "test").startswith(
        "acted on 0.0% of test answers: 98.5% is reached on calib only by acting on every answer")


def test_an_unreachable_target_gives_no_act_route_instead_of_a_crash():
    wrong_at_top = [answer(0.9, False), answer(0.8, True), answer(0.7, True), answer(0.6, False)]
    # >= 0.9: 0/1   >= 0.8: 1/2   >= 0.7: 2/3   >= 0.6: 2/4 -> never 0.985; the best is 2/3 at 0.7
    thresholds = fit_thresholds(wrong_at_top, IDENTITY, target=0.985)
    assert thresholds.act is None and thresholds.t_act is None
    assert (thresholds.best_act.threshold, thresholds.best_act.kept, thresholds.best_act.hits) == (0.7, 3, 2)
    assert all(route != "act" for route in route_all(wrong_at_top, IDENTITY, thresholds))


def test_answers_that_tie_at_a_threshold_enter_together():
    tied = [answer(0.9, True), answer(0.8, True), answer(0.8, False), answer(0.8, False), answer(0.5, True)]
    # >= 0.9: 1/1 = 1.0; >= 0.8: all three answers at 0.8 enter, 2/4 = 0.5 (taking only the right one
    # at 0.8 would give 2/2, but a threshold cannot split a tie) -> t_act = 0.9
    thresholds = fit_thresholds(tied, IDENTITY, target=0.9)
    assert thresholds.t_act == 0.9
    assert [c.kept for c in cuts([(r.confidence, r.correct) for r in tied])] == [1, 4, 5]
    # and an answer exactly at the threshold takes the route
    assert route_of(answer(0.9, True), 0.9, thresholds) == "act"


def test_ask_threshold_is_fitted_on_the_answers_below_t_act_only():
    records = [answer(0.9, True), answer(0.8, True),                             # acted on with target 1.0
               answer(0.7, False, top_two_right=True), answer(0.6, True),
               answer(0.5, False, top_two_right=False), answer(0.4, False, top_two_right=True),
               answer(0.3, False, top_two_right=False)]
    # t_act = 0.8 (2/2). Below it, right intent among the two named, at or above each value:
    #   >= 0.7: 1/1   >= 0.6: 2/2   >= 0.5: 2/3 = 0.67   >= 0.4: 3/4 = 0.75   >= 0.3: 3/5 = 0.6
    thresholds = fit_thresholds(records, IDENTITY, target=1.0, ask_target=0.75)
    assert thresholds.t_act == 0.8
    assert thresholds.t_ask == 0.4 and (thresholds.ask.kept, thresholds.ask.hits) == (4, 3)
    assert route_all(records, IDENTITY, thresholds) == ["act", "act", "ask", "ask", "ask", "ask", "hand_over"]
    assert fit_thresholds(records, IDENTITY, target=1.0, ask_target=1.0).t_ask == 0.6


def test_without_an_act_route_every_answer_can_be_asked():
    records = [answer(0.9, False, top_two_right=True), answer(0.5, False, top_two_right=False)]
    # act: 0/1 and 0/2 -> none. Ask: >= 0.9: 1/1 -> t_ask = 0.9; >= 0.5: 1/2 falls short of 0.9
    thresholds = fit_thresholds(records, IDENTITY, ask_target=0.9)
    assert thresholds.t_act is None and thresholds.t_ask == 0.9
    assert route_all(records, IDENTITY, thresholds) == ["ask", "hand_over"]


def test_no_code_and_out_of_scope_codes_always_hand_over():
    records = [answer(0.9, True), answer(0.9, True, code="B-A"), answer(0.0, False, status="invalid"),
               answer(0.2, False)]
    thresholds = fit_thresholds(records, IDENTITY, target=0.6, out_of_scope={"B-A"})
    # only the first and last answers are eligible: 1/1 at 0.9, 1/2 at 0.2
    assert thresholds.eligible == 2 and thresholds.t_act == 0.9
    assert route_of(records[1], 1.0, thresholds) == "hand_over"             # out of scope, however sure
    assert route_of(records[2], 1.0, thresholds) == "hand_over"             # no code, whatever the calibrated value
    assert route_of(records[0], 1.0, thresholds) == "act"


def test_top_two_is_the_answer_then_the_runner_up_of_its_group():
    record = partial_line(code="C-B", intent_distribution={"A": 0.2, "B": 0.5, "C": 0.2, "D": 0.1})
    assert top_two(record) == ("C-B", "C-A")                                 # A and C tie at 0.2: A first
    # a chosen letter that is not the most likely (missing from top_logprobs) still comes first
    assert top_two(partial_line(code="C-D", intent_distribution={"A": 0.9, "B": 0.1, "D": 0.0})) == ("C-D", "C-A")
    assert top_two(partial_line(code="C-A", intent_distribution={"A": 1.0})) == ("C-A",)


def test_report_counts_by_hand():
    routes = route_all(SIX, IDENTITY, fit_thresholds(SIX, IDENTITY, target=1.0, ask_target=0.6))
    # act >= 0.8: 0.9, 0.8 (both right). Below it, the right intent among the two named (only the right answers):
    #   >= 0.7: 0/1   >= 0.6: 1/2 = 0.5   >= 0.5: 2/3 = 0.67   >= 0.4: 2/4 = 0.5 -> t_ask = 0.5, the lowest reaching 0.6
    assert routes == ["act", "act", "ask", "ask", "ask", "hand_over"]
    result = report(SIX, routes)
    assert result.answers == {"act": 2, "ask": 3, "hand_over": 1}
    assert result.right == {"act": 2, "ask": 2, "hand_over": 0}
    assert result.coverage == pytest.approx(2 / 6) and result.act_precision == 1.0 and result.wrong_actions == 0


def test_an_ask_threshold_that_keeps_every_answer_not_acted_on_is_no_ask_route():
    # SIX at target 1.0: act >= 0.8; the four below it name the right intent among two at >= 0.4 in 2/4 = 0.5: at an
    # ask target of 0.5 the lowest cut reaching it is 0.4, which asks about every answer not acted on (a greeting
    # too): no ask route, they are handed over
    thresholds = fit_thresholds(SIX, IDENTITY, target=1.0, ask_target=0.5)
    assert thresholds.t_act == 0.8 and thresholds.ask is None and thresholds.t_ask is None
    assert (thresholds.ask_floor.threshold, thresholds.ask_floor.kept, thresholds.ask_floor.hits) == (0.4, 4, 2)
    assert route_all(SIX, IDENTITY, thresholds) == ["act", "act", "hand_over", "hand_over", "hand_over", "hand_over"]
    assert threshold_lines(thresholds)[1].startswith("  ask        none: asking about all 4 calib answers not acted on")


def test_report_counts_out_of_scope_messages_by_route():
    records = [answer(0.9, True), replace(answer(0.9, False), gold_code="K-A"),
               replace(answer(0.9, True, code="K-A"), gold_code="K-A")]
    # fitted with one wrong answer below them, so that acting at 0.9 (1/2) is not acting on every calib answer
    thresholds = fit_thresholds(records + [answer(0.2, False)], IDENTITY, target=0.5, out_of_scope={"K-A"})
    routes = route_all(records, IDENTITY, thresholds)
    # the in-scope answer A-A to an out-of-scope message is acted on: a wrong action
    assert routes == ["act", "act", "hand_over"]
    result = report(records, routes, thresholds.out_of_scope)
    assert result.out_of_scope == {"act": 1, "ask": 0, "hand_over": 1}
    assert result.wrong_actions == 1
    assert report(records, routes).out_of_scope == {"act": 0, "ask": 0, "hand_over": 0}


@pytest.mark.parametrize("bad, message", [
    ({"calib": []}, "in-scope code"),
    ({"target": 0.0}, "act target"),
    ({"target": 98.5}, "act target"),
    ({"ask_target": 1.5}, "ask target"),
])
def test_bad_inputs_raise_a_sentence(bad, message):
    arguments = {"calib": SIX, "target": 0.985, "ask_target": 0.9, **bad}
    with pytest.raises(ValueError, match=message):
        fit_thresholds(arguments["calib"], IDENTITY, arguments["target"], arguments["ask_target"])


def test_a_calibrated_confidence_outside_0_1_is_refused():
    with pytest.raises(ValueError, match="outside"):
        fit_thresholds(SIX, lambda record: record.confidence + 0.5)


def test_lowest_cut_of_nothing_reaching_is_none():
    assert lowest_cut([(0.5, False), (0.4, False)], 0.1) is None


def test_act_intervals_are_clopper_pearson_of_coverage_and_precision():
    records = [answer(0.9, True)] * 20 + [answer(0.1, False)] * 80
    result = report(records, ["act"] * 20 + ["hand_over"] * 80)
    coverage, precision = act_intervals(result)
    # 20 of 20 acted on were right: [0.025 ** (1 / 20), 1] = [0.8316, 1.0], where a percentile bootstrap says [1, 1]
    assert round(precision.low, 4) == 0.8316 and precision.high == 1.0
    assert coverage.low == pytest.approx(beta.ppf(0.025, 20, 81), abs=1e-9)
    assert coverage.high == pytest.approx(beta.ppf(0.975, 21, 80), abs=1e-9)
    assert act_intervals(report(records, ["hand_over"] * 100))[1] is None


def test_the_calibration_is_post_06_isotonic_fit_on_calib():
    _, calib = load_results("calib")
    calibrate = fit_calibration(calib)
    fit = fit_isotonic(*outcomes(calib))
    for record in calib[:50]:
        assert calibrate(record) == fit(record.confidence)


def test_routes_on_the_reference_files_act_above_a_threshold_worked_out_without_routes_py():
    # The act threshold, worked out here without routes.py: post 06's isotonic fit on calib, then the lowest
    # calibrated value whose calib answers at or above it are right at least 98.5% of the time.
    _, calib = load_results("calib")
    _, test = load_results("test")
    fit = fit_isotonic(*outcomes(calib))
    calibrated = [(fit(r.confidence), r.correct) for r in calib]
    reaching = [t for t in sorted({c for c, _ in calibrated})
                if sum(right for c, right in calibrated if c >= t) >= 0.985 * sum(1 for c, _ in calibrated if c >= t)]
    calibrate = fit_calibration(calib)
    thresholds = fit_thresholds(calib, calibrate)
    result = report(test, route_all(test, calibrate, thresholds))
    if not reaching:
        assert thresholds.act is None and result.answers["act"] == 0
        assert closing_line(thresholds, result, "test").startswith("acted on 0.0% of test answers: 98.5% precision")
        return
    on_calib = [right for c, right in calibrated if c >= reaching[0]]
    assert thresholds.t_act == reaching[0] and (thresholds.act.kept, thresholds.act.hits) == (len(on_calib), sum(on_calib))
    acted = [r.correct for r in test if fit(r.confidence) >= reaching[0]]
    assert (result.answers["act"], result.right["act"], result.total) == (len(acted), sum(acted), len(test))
    # the closing line reads those counts: share of test acted on, precision, wrong actions
    wrong = len(acted) - sum(acted)
    assert closing_line(thresholds, result, "test") == (
        f"acted on {100 * len(acted) / len(test):.1f}% of test answers at {100 * sum(acted) / len(acted):.1f}% "
        f"precision (target 98.5%), {wrong} wrong action{'' if wrong == 1 else 's'}")


def test_routes_script_runs_end_to_end_on_the_reference_files(run_script, tmp_path):
    # its printout is pinned by the README block check of 08-routes/README.md
    result = run_script("08-routes/routes.py", "--router-out", tmp_path / "banking77-router.json")
    assert result.returncode == 0, result.stderr


def route_args(*argv: str) -> argparse.Namespace:
    """routes.py's fit arguments as a parser reads argv (messages, --dataset, --calib, --target, ...)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("messages", nargs="*")
    add_calib_arguments(parser)
    add_threshold_arguments(parser)
    return parser.parse_args(argv)


def test_routes_on_clinc150_hand_every_out_of_scope_answer_over(run_script, tmp_path):
    calib, calibrate, thresholds = thresholds_from(route_args("--dataset", "clinc150", "--target", "0.5",
                                                              "--ask-target", "0.5"))
    assert calib.path.name == "clinc150-calib.jsonl" and thresholds.out_of_scope == {"K-A"}
    in_scope = sum(r.status == "ok" and r.code != "K-A" for r in calib.records)
    assert thresholds.eligible == in_scope
    assert threshold_lines(thresholds)[2].endswith("and every K-A answer (out of scope)")
    routes = route_all(calib.records, calibrate, thresholds)
    assert all(route == "hand_over" for r, route in zip(calib.records, routes) if r.code == "K-A")
    outside = sum(r.gold_code == "K-A" for r in calib.records)
    assert sum(report(calib.records, routes, thresholds.out_of_scope).out_of_scope.values()) == outside > 0
    result = run_script("08-routes/routes.py", "--dataset", "clinc150", "--split", "calib", "--target", "0.5",
                        "--ask-target", "0.5", "--router-out", tmp_path / "clinc150-router.json")
    assert result.returncode == 0, result.stderr
    assert read_router(tmp_path / "clinc150-router.json").target == 0.5


def test_routes_script_refuses_a_target_that_is_not_a_fraction(run_script):
    result = run_script("08-routes/routes.py", "--target", "98.5")
    assert result.returncode == 2 and "fraction in (0, 1]" in result.stderr


# route.py without the server: its printout for each route, from hand-made records.

def test_plain_words_read_like_a_sentence():
    prompt = load_prompt()
    assert plain_words(prompt.intents["A-A"]) == "card arrival (a card already ordered or sent has not come)"
    assert plain_words(prompt.by_intent["pin_blocked"]).startswith("pin blocked (PIN or card")  # capitals kept
    virtual = prompt.by_intent["virtual_card_not_working"]  # its description says "e.g. a gym subscription"
    assert "e.g" not in plain_words(virtual) and "for example" in plain_words(virtual)


def test_each_route_says_what_it_does():
    prompt = load_prompt()
    thresholds = fit_thresholds(SIX, IDENTITY, target=1.0, ask_target=0.6)     # act >= 0.8, ask >= 0.5
    record = replace(answer(0.85, True), intent="card_arrival")
    assert route_of(record, 0.85, thresholds) == "act"
    assert answer_lines("where is my card?", record, 0.85) == [
        "message: where is my card?", "intent: card_arrival  code A-A", "confidence: raw 0.850 -> calibrated 0.850"]
    assert action_line("act", record, prompt, 0.85, frozenset()) == "action: handle the message as card_arrival"
    question = action_line("ask", replace(record, confidence=0.5), prompt, 0.5, frozenset())
    assert question == f"question: {clarifying_question(prompt.intents['A-A'], prompt.intents['A-B'])}"
    assert "card delivery estimate" in question                             # A-B, the runner-up, in plain words
    assert action_line("hand_over", record, prompt, 0.1, frozenset()) == (
        "hand-over text: Handed over to a person: the model's best guess is "
        f"{plain_words(prompt.intents['A-A'])}, code A-A, only 10% sure: too unsure to act or to ask.")
    failed = answer(0.0, False, status="too_long")
    assert answer_lines("?", failed, 0.0)[1:] == ["no code: status too_long"]


def test_clarifying_question_names_two_or_three_intents():
    prompt = load_prompt()
    a, b, c = (prompt.intents[code] for code in ("A-A", "A-B", "A-C"))
    assert clarifying_question(a, b) == (f"Just to be sure: is your message about {plain_words(a)}, "
                                         f"or about {plain_words(b)}?")
    assert clarifying_question(a, b, c).endswith(f"about {plain_words(b)}, or about {plain_words(c)}?")


def test_hand_over_text_names_the_reason():
    prompt = load_prompt()
    failed = answer(0.0, False, status="too_long")
    assert "gave no code (too_long)" in hand_over_text(failed, prompt, 0.0, frozenset())
    assert "out of scope" in hand_over_text(answer(0.9, True), prompt, 0.9, frozenset({"A-A"}))


def test_route_script_without_a_server_says_how_to_start_it_and_exits_2(run_script, free_port):
    result = run_script("08-routes/route.py", "where is my card?", env={"LLAMA_URL": f"http://127.0.0.1:{free_port()}"})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not reachable" in lines[0] and "00-setup/server.py start" in lines[0]


def test_route_py_routes_a_message_with_the_real_server(client, run_script):
    # Integration: the test server runs the 0.5B model, so the thresholds (fitted on the 1.5B
    # model's calib answers) do not carry over: refused, unless --other-model, then said and routed.
    message = "my card still hasn't arrived, it's been two weeks"
    path = default_router_path("banking77")
    router = read_router(path)
    info = client.model_info()
    if router.model != info["model"]:
        with pytest.raises(ValueError, match="a calibration does not carry over"):
            check_model(router, path, info, other_model=False)
        assert run_script("08-routes/route.py", message, env={"LLAMA_URL": client.url}).returncode == 2
        assert check_model(router, path, info, other_model=True).startswith(f"warning: the server runs {info['model']}")
    prompt = load_prompt()
    record = ask_answer(client, prompt, message)
    assert record.status != "ok" or (record.code in prompt.codes and 0.0 <= record.confidence <= 1.0)
    assert route_of(record, calibrated_of(record, router), router) in ("act", "ask", "hand_over")
    result = run_script("08-routes/route.py", "--other-model", message, env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr


def test_route_py_routes_a_clinc150_message_with_the_real_server(client, run_script):
    # Integration: the CLINC150 prompt and grammar (with the out-of-scope code K-A) and thresholds
    # fitted on the CLINC150 calib file; the 0.5B model may or may not call the message out of scope.
    message = "how many moons does jupiter have"
    calib, calibrate, thresholds = thresholds_from(route_args("--dataset", "clinc150", message))
    assert calib.path.name == "clinc150-calib.jsonl"
    prompt = load_prompt("clinc150")
    record = ask_answer(client, prompt, message)
    assert record.status != "ok" or re.fullmatch(r"[A-K]-[A-Z]", record.code)
    calibrated = calibrate(record) if record.status == "ok" else 0.0
    route = route_of(record, calibrated, thresholds)
    if record.code == "K-A":
        assert route == "hand_over"
        assert "says the message is out of scope" in hand_over_text(record, prompt, calibrated, thresholds.out_of_scope)
    result = run_script("08-routes/route.py", "--other-model", "--dataset", "clinc150", message,
                        env={"LLAMA_URL": client.url})
    assert result.returncode == 0, result.stderr


# What each post script loads: the post's own modules and the earlier posts' they need, never beyond/ code.
# Counted with tests/module_loads.py (the script itself left out). Before the split from beyond/: route.py 28,
# routes.py 13; after it 22 and 11. route.py now reads a router file (router_file.py, and 06's isotonic.py for
# the map) instead of fitting, so it loads the typed request's chain (the HTTP client, 02's decision and prompt,
# 03's confidence) and nothing else: 12; routes.py writes the file, one module more. Since the one sha256_of
# (datasets/datafiles.py) and the one relative (02's results_file.py) replaced route.py's own copies: 14, and routes.py
# reads the one percent formatter from 02's compare.py: 14. routes.py exits on bad input through the toolbox's
# script_exit.py (00-setup/toolbox/, no server code): 15.
MOST_MODULES = {"08-routes/route.py": 14, "08-routes/routes.py": 15}


def repository_modules(script: str) -> dict[str, str]:
    """module name -> path (relative to the repository) of every repository module `script --help` loads."""
    return {Path(path).stem: path for path in script_modules(ROOT / script)}


@pytest.mark.parametrize("script", sorted(MOST_MODULES))
def test_a_post_script_loads_few_modules_and_none_beyond_the_post(script):
    loaded = repository_modules(script)
    assert len(loaded) <= MOST_MODULES[script], sorted(loaded)
    assert not [path for path in loaded.values() if "/beyond/" in path]
    assert "series" in loaded and "isotonic" in loaded                  # the post folders, post 06's calibration


def test_routes_py_needs_no_server_code():
    assert not [name for name, path in repository_modules("08-routes/routes.py").items()
                if path.startswith("00-setup/") and not path.startswith("00-setup/toolbox/")]


def test_the_line_after_the_router_names_the_route_command_that_reads_it():
    from router_file import own_router_path
    from routes import route_command
    assert route_command(own_router_path("banking77"), "banking77") == "python3 08-routes/route.py"
    assert route_command(own_router_path("clinc150"), "clinc150") == "python3 08-routes/route.py --dataset clinc150"
    elsewhere = own_router_path("banking77").with_name("banking77-router-80.json")
    assert route_command(elsewhere, "banking77") == (
        "python3 08-routes/route.py --router 03-where-confidence-comes-from/results/banking77-router-80.json")
