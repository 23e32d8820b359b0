"""08-routes/beyond/decisions: a router for any decision, the choice among them, and the decision at request time.

The routers are fitted on the committed reference runs (no server): the
nearest neighbours' shortlists of BANKING77's calib split, whose ranking is
post 01's retriever (seconds to fit). A decision made for a live message must
be the one the router was fitted on: Decider.line on a calib message equals
the decision's answer derived from the saved line of that message.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from choose import candidates, choice_lines, choose, paired_acts, rank_key
from combined import Weights
from decision_router import (FORMAT, decision_json, fit_decision_router, read_decision_router, ready_router,
                             weights_sha256, write_decision_router)
from decisions import DECISIONS, Decision, decision_named, derived_answers, unasked_line
from oos_cost import PairedCost
from prompt import load_prompt


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """(folder, {name: (router, Fitted, path)}) for the model alone, model+neighbours and neighbours, fitted on the
    committed runs without off-topic answers, written to a temporary folder."""
    folder = tmp_path_factory.mktemp("routers")
    made = {}
    for name in ("model", "model+neighbours", "neighbours"):
        router, fit = fit_decision_router("banking77", DECISIONS[name], offtopic_share=0)
        made[name] = (router, fit, write_decision_router(router, folder / f"banking77-{name}-decision-router.json"))
    return folder, made


def test_every_decision_has_a_twin_but_the_model_alone_and_the_twins_pair_up():
    assert DECISIONS["model"].twin is None
    for decision in DECISIONS.values():
        if decision.source:
            twin = DECISIONS[decision.twin]
            assert twin.source == decision.source and twin.model != decision.model and twin.twin == decision.name
    assert DECISIONS["model+regression"].run_variant == DECISIONS["regression"].run_variant == "linearshortlist5"
    assert DECISIONS["regression"].variant == "linearalonecombined5"
    with pytest.raises(ValueError, match="no decision 'best'"):
        decision_named("best")


def test_a_decision_without_the_model_decides_a_line_the_model_never_answered():
    # an unasked line has no code; the combined product with the model's exponent 0 picks the ranking's first code
    line = unasked_line("where is my card?")
    assert line.status == "error" and line.code is None and line.confidence == 0.0
    shortlisted = replace(line, id="x", gold_code="A-A", gold_intent="card_arrival",
                          extra={"shortlist": [["A-B", 0.2], ["A-A", 0.6], ["C-J", 0.2]]})
    (made,) = derived_answers(DECISIONS["neighbours"], [shortlisted], Weights(0.0, 1.0), {"A-A": "card_arrival",
                              "A-B": "card_delivery_estimate", "C-J": "x"}, frozenset())
    # retriever^1 renormalized over the shortlist: 0.6 / (0.2 + 0.6 + 0.2) = 0.6
    assert made.status == "ok" and made.code == "A-A" and made.correct and made.confidence == pytest.approx(0.6)
    with pytest.raises(ValueError, match="needs weights"):
        derived_answers(DECISIONS["neighbours"], [shortlisted], None, {}, frozenset())


def test_the_router_file_reads_back_what_was_written_and_post_08_s_reader_refuses_it(fitted, tmp_path):
    from router_file import read_router
    _, made = fitted
    router, _, path = made["model+neighbours"]
    again = read_decision_router(path)
    assert again == router and decision_json(again) == path.read_text()
    assert json.loads(path.read_text())["format"] == FORMAT and again.weights.model > 0
    with pytest.raises(ValueError, match="format version 'decision-router 1'"):
        read_router(path)
    with pytest.raises(ValueError, match="post 08's router: route.py reads it"):
        post = tmp_path / "post.json"
        post.write_text(json.dumps({"format": 1}))
        read_decision_router(post)


@pytest.mark.parametrize("change, words", [
    (lambda d: d["decision"].update(name="best"), "no decision 'best'"),
    (lambda d: d["decision"].update(weights=None), "needs weights"),
    (lambda d: d["decision"].update(model=False), "source 'knn' and model False"),
    (lambda d: d.pop("calib_acted"), "'calib_acted'"),
    (lambda d: d["router"].update(t_act=2.0), "t_act is neither null nor in"),
])
def test_a_router_file_no_fit_can_give_is_refused_in_one_line(fitted, tmp_path, change, words):
    _, made = fitted
    data = json.loads(made["model+neighbours"][2].read_text())
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=words) as raised:
        read_decision_router(path)
    assert "\n" not in str(raised.value)


def test_a_live_message_gets_the_answer_the_router_was_fitted_on(fitted):
    # the neighbours' decision needs no server: every calib message decided anew equals its line from the saved run
    _, made = fitted
    router, fit, path = made["neighbours"]
    ready = ready_router(router, path)
    for saved in fit.calib[:40]:
        live = ready.decider.line(saved.text, None)
        assert (live.code, live.confidence) == (saved.code, pytest.approx(saved.confidence, abs=1e-12))
    assert ready.calib == fit.calib and ready.safety.describe() == fit.safety.describe()


def test_a_router_whose_calib_run_or_ranking_changed_is_refused(fitted, tmp_path):
    _, made = fitted
    router, _, path = made["neighbours"]
    data = json.loads(path.read_text())
    data["files"]["ranking"]["sha256"] = "0" * 64  # weights or an index other than those of the fit
    changed = tmp_path / "ranking.json"
    changed.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="is not the one the router was fitted with"):
        ready_router(read_decision_router(changed), changed)
    calib = tmp_path / "calib.jsonl"
    calib.write_text(Path(router.files["calib"]["path"]).read_text() if Path(router.files["calib"]["path"]).is_absolute()
                     else (Path(__file__).resolve().parents[1] / router.files["calib"]["path"]).read_text() + "\n")
    data = json.loads(path.read_text())
    data["files"]["calib"]["path"] = str(calib)  # the same answers and one more byte: another sha256
    moved = tmp_path / "calib.json"
    moved.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="has changed since the router was fitted"):
        ready_router(read_decision_router(moved), moved)


def test_a_router_whose_regression_weights_changed_is_refused(tmp_path):
    # the regression of the prompt's examples (seconds to fit; linear.py caches it), as the served decisions use one
    router, _ = fit_decision_router("banking77", DECISIONS["examples"], offtopic_share=0)
    path = write_decision_router(router, tmp_path / "examples.json")
    assert ready_router(read_decision_router(path), path).decider.ranking is not None  # the weights as fitted
    cache = Path(router.files["ranking"]["path"])
    copy = tmp_path / cache.name
    for suffix in (".json", ".bin"):
        Path(f"{copy}{suffix}").write_bytes(Path(f"{cache}{suffix}").read_bytes())
    assert weights_sha256(copy) == router.files["ranking"]["sha256"]
    weights = bytearray(Path(f"{copy}.bin").read_bytes())
    weights[len(weights) // 2] ^= 1  # one bit of one weight
    Path(f"{copy}.bin").write_bytes(bytes(weights))
    data = json.loads(path.read_text())
    data["files"]["ranking"]["sha256"] = weights_sha256(copy)  # a router fitted on those weights
    assert data["files"]["ranking"]["sha256"] != router.files["ranking"]["sha256"]
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="the regression this machine has for examples .* is not the one"):
        ready_router(read_decision_router(changed), changed)


def test_the_choice_is_the_most_calib_acts_and_the_model_s_share_is_paired(fitted):
    folder, made = fitted
    found = {name: path for name, (_, _, path) in made.items()}
    choice = choose("banking77", found)
    coverage = {name: len(router.calib_acted) / router.router.calib_answers for name, (router, _, _) in made.items()}
    assert choice.chosen.name == max(coverage, key=coverage.get)
    assert [c.name for c in sorted(candidates("banking77", found), key=rank_key)][0] == choice.chosen.name
    with_model, without = made["model+neighbours"][0], made["neighbours"][0]
    added = paired_acts(with_model, without)
    both = set(with_model.calib_acted) & set(without.calib_acted)
    assert added.right_with - added.right_without == added.only_with - added.only_without
    assert added.only_with == len(with_model.calib_acted) - len(both)
    lines = choice_lines(choice)
    assert lines[0].startswith(f"decision: {choice.chosen.name}:") and lines[1].startswith("runner-up: ")


def test_equal_coverage_goes_to_the_decision_without_the_model_and_an_interval_with_0_says_so(fitted, tmp_path):
    _, made = fitted
    router = made["model+neighbours"][0]
    same = {}
    for name in ("model+neighbours", "neighbours"):
        data = json.loads(made[name][2].read_text())
        data["calib_acted"] = list(router.calib_acted)  # both act on the same calib messages
        same[name] = tmp_path / f"banking77-{name}-decision-router.json"
        same[name].write_text(json.dumps(data))
    choice = choose("banking77", same)
    assert choice.chosen.name == "neighbours" and choice.twin.name == "model+neighbours"
    assert choice.added.difference == 0 and choice_lines(choice, 1200.0, 4.0)[-1].startswith(
        "the model adds nothing on calib (its interval holds 0); without it a message takes 4.0 ms here against "
        "1200 ms")


def test_a_paired_difference_of_acts_has_agresti_s_interval():
    # 100 messages: 30 acted on by both, 10 only with the model, 2 only without: difference (40 - 32) / 100 = 0.08;
    # se = sqrt(10 + 2 - (10 - 2)^2 / 100) / 100 = sqrt(11.36) / 100 = 0.033705; 0.08 +- 1.96 x 0.033705
    added = PairedCost(100, 32, 40, 2, 10, 0, 0, 0)
    low, high = added.interval()
    assert added.difference == pytest.approx(0.08)
    assert (low, high) == (pytest.approx(0.08 - 1.959964 * 0.0337046, abs=1e-5),
                           pytest.approx(0.08 + 1.959964 * 0.0337046, abs=1e-5))


def test_off_topic_answers_join_the_thresholds_not_the_calibration(fitted, tmp_path):
    # the model alone's calib answers, and as many off-topic answers: copies of the surest calib answers, made wrong
    _, made = fitted
    _, fit, _ = made["model"]
    surest = sorted(fit.calib, key=lambda r: -r.confidence)[:40]
    offtopic = tmp_path / "offtopic.jsonl"
    offtopic.write_text("".join(json.dumps({**r.to_json(), "id": f"off-{i}", "gold_intent": "out_of_scope",
                                            "gold_code": "I-A", "correct": False, "right_group": False}) + "\n"
                                for i, r in enumerate(surest)))
    before, _ = fit_decision_router("banking77", DECISIONS["model"], offtopic_share=0)
    after, after_fit = fit_decision_router("banking77", DECISIONS["model"], offtopic=offtopic)
    assert after.offtopic_answers == 40 and "offtopic" in after.files and len(after_fit.offtopic) == 40
    assert after.router.isotonic == before.router.isotonic  # the calibration is the calib answers' alone
    # forty wrong answers at the top: no cut keeps 98.5% with them, or a higher one than before
    assert after.router.t_act is None or after.router.t_act >= (before.router.t_act or 0.0)


def test_the_off_topic_answers_make_their_share_of_the_fit_by_a_sample_of_their_ids():
    from decision_router import offtopic_count, offtopic_sample
    # 770 calib answers: 5% off topic is 770 x 0.05 / 0.95 = 40.53 -> 41; 10% is 85.56 -> 86; never more than there are
    assert [offtopic_count(770, 400, share) for share in (0.0, 0.05, 0.10)] == [0, 41, 86]
    assert offtopic_count(770, 30, 0.10) == 30
    with pytest.raises(ValueError, match="off-topic share must be in"):
        offtopic_count(770, 400, 1.0)
    lines = [unasked_line(str(i)) for i in range(10)]
    lines = [replace(line, id=f"offtopic-{i}") for i, line in enumerate(lines)]
    first = [line.id for line in offtopic_sample(lines, 4)]
    assert first == [line.id for line in offtopic_sample(list(reversed(lines)), 4)] and len(set(first)) == 4


def test_a_router_names_the_prompt_its_answers_were_made_with(fitted):
    _, made = fitted
    router = made["model"][0]
    from router_file import text_sha256
    assert router.router.prompt_sha256 == text_sha256(load_prompt("banking77").system)
    assert isinstance(router.decision, Decision)
