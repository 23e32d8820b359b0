"""Post 07, out-of-scope detection: ROC points, FPR at 95% recall and the detectors, by hand and against scikit-learn."""
import json
from pathlib import Path

import numpy as np
import pytest
from isotonic import confidence_variants
from out_of_scope import (code_decision, detectors, fpr_at_recall, out_of_scope_codes, out_of_scope_probability,
                          out_of_scope_step, print_detectors, roc_points)
from separation import SweepPoint
from separation import SingleClassError, auroc
from sklearn.metrics import roc_auc_score, roc_curve
from result_lines import partial_line
from saved_answers import load_results

ROOT = Path(__file__).resolve().parents[1]
OUT_OF_SCOPE = ROOT / "07-separation" / "out_of_scope.py"

# Six messages, out of scope = True; ties at 0.7 (two) and at 0.4 (two).
SCORES = [0.9, 0.7, 0.7, 0.4, 0.4, 0.1]
POSITIVES = [True, True, False, True, False, False]


def test_roc_points_by_hand_with_ties():
    # 3 positives, 3 negatives. Flag >= 0.9: 1 TP. >= 0.7: + one TP and one FP, together.
    # >= 0.4: + one TP and one FP. >= 0.1: everything.
    points = roc_points(SCORES, POSITIVES)
    assert [(p.threshold, p.kept, p.recall, p.fpr) for p in points] == [
        (0.9, 1, 1 / 3, 0.0),
        (0.7, 3, 2 / 3, 1 / 3),
        (0.4, 5, 1.0, 2 / 3),
        (0.1, 6, 1.0, 1.0),
    ]


def test_fpr_at_recall_is_the_highest_threshold_that_reaches_the_recall():
    points = roc_points(SCORES, POSITIVES)
    assert fpr_at_recall(points, 0.95) == SweepPoint(0.4, 5, 3, 6, 3)   # 2/3 recall is not enough
    assert fpr_at_recall(points, 2 / 3).threshold == 0.7
    assert fpr_at_recall(points, 0.3).fpr == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_points_and_auroc_match_scikit_learn_with_ties(seed):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(400), 1)          # 11 distinct values: most messages tied
    positives = rng.random(400) < 0.3 + 0.4 * scores
    fpr, tpr, thresholds = roc_curve(positives, scores, drop_intermediate=False)
    points = roc_points(scores.tolist(), positives.tolist())
    # scikit-learn adds a first point at threshold +inf that flags nothing
    assert [p.threshold for p in points] == thresholds[1:].tolist()
    assert np.allclose([p.recall for p in points], tpr[1:]) and np.allclose([p.fpr for p in points], fpr[1:])
    first = np.argmax(tpr >= 0.95)
    assert fpr_at_recall(points).fpr == pytest.approx(fpr[first])
    assert auroc(scores.tolist(), positives.tolist()) == pytest.approx(roc_auc_score(positives, scores), abs=1e-12)


@pytest.mark.parametrize("positives, which", [([True, True], "negatives"), ([False, False, False], "positives")])
def test_one_kind_of_message_only_is_a_clear_error(positives, which):
    with pytest.raises(SingleClassError, match=f"have no {which}"):
        roc_points([0.2, 0.5, 0.9][:len(positives)], positives)


def test_bad_arguments_raise_a_sentence():
    with pytest.raises(ValueError, match="empty"):
        roc_points([], [])
    with pytest.raises(ValueError, match="outside"):
        fpr_at_recall(roc_points(SCORES, POSITIVES), 0.0)
    with pytest.raises(ValueError, match="empty"):
        fpr_at_recall([])


def test_out_of_scope_codes_come_from_the_label_files():
    assert out_of_scope_codes("clinc150") == {"K-A"}
    assert out_of_scope_codes("banking77") == frozenset()
    with pytest.raises(ValueError, match="unknown dataset"):
        out_of_scope_codes("snips")


def record(code, group_k, status="ok"):
    return partial_line(code=code, status=status, group_distribution={"A": 1 - group_k, "K": group_k})


def test_detectors_by_hand():
    records = [record("K-A", 0.8), record("A-B", 0.3), record("A-A", 0.0), record(None, 0.0, status="invalid")]
    raw = [0.8, 0.6, 1.0, 0.0]     # a confidence of exactly 1 and the 0 of a line without a code
    found = {d.name: d for d in detectors(records, {"raw": raw}, frozenset({"K-A"}))}
    assert list(found) == ["P(K-A)", "1 - raw", "K-A, then 1 - raw"]
    assert found["P(K-A)"].scores == [0.8, 0.3, 0.0, 0.0]
    assert found["1 - raw"].scores == pytest.approx([0.2, 0.4, 0.0, 1.0])
    # the K-A answer first (1), then (1 - confidence) / 2
    assert found["K-A, then 1 - raw"].scores == pytest.approx([1.0, 0.2, 0.0, 0.5])
    assert found["1 - raw"].rule(0.75) == "raw <= 0.250"
    assert found["K-A, then 1 - raw"].rule(0.2) == "K-A or raw <= 0.600"
    assert found["K-A, then 1 - raw"].rule(1.0) == "K-A only"
    with pytest.raises(ValueError, match="one group letter"):
        detectors(records, {"raw": raw}, frozenset({"K-A", "J-A"}))


def test_the_explicit_code_as_a_decision_on_the_clinc150_reference_calib_file():
    _, records = load_results("calib", dataset="clinc150")
    decision = code_decision(records, frozenset({"K-A"}))
    out_of_scope = sum(r.gold_code == "K-A" for r in records)
    assert (decision.out_of_scope, decision.in_scope) == (out_of_scope, len(records) - out_of_scope)
    assert decision.answered == sum(r.code == "K-A" for r in records)
    assert decision.caught == sum(r.gold_code == "K-A" and r.code == "K-A" for r in records)
    assert decision.false_alarms == decision.answered - decision.caught


def test_the_detectors_aurocs_on_the_clinc150_reference_calib_file_match_scikit_learn():
    _, records = load_results("calib", dataset="clinc150")
    positives = [r.gold_code == "K-A" for r in records]
    aurocs = print_detectors(detectors(records, confidence_variants(records, records), frozenset({"K-A"})), positives)
    assert list(aurocs) == ["P(K-A)", "1 - raw", "1 - temperature", "1 - isotonic", "K-A, then 1 - raw",
                            "K-A, then 1 - temperature", "K-A, then 1 - isotonic"]
    assert aurocs["1 - raw"] == pytest.approx(roc_auc_score(positives, [1 - r.confidence for r in records]))


def test_script_runs_on_the_clinc150_reference_calib_file(run_script):
    # its printout on the test split is pinned by 07's README block
    assert run_script("07-separation/out_of_scope.py", "--split", "calib").returncode == 0


def test_script_refuses_a_dataset_without_out_of_scope_messages(run_script):
    result = run_script("07-separation/out_of_scope.py", "--dataset", "banking77")
    assert result.returncode == 2 and "no out-of-scope code" in result.stderr


def test_script_says_so_when_a_file_has_no_out_of_scope_message(tmp_path, run_script):
    _, records = load_results("calib", dataset="clinc150")
    path = tmp_path / "in-scope.jsonl"
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in records if r.gold_code != "K-A"), encoding="utf-8")
    result = run_script("07-separation/out_of_scope.py", "--split", "calib", "--results", path)
    # bad input exits 2 with one line, as in every other script (issue 12, case 11)
    assert (result.returncode, result.stderr.count("\n"), "has 0 out-of-scope messages of 750" in result.stderr) == (
        2, 1, True)


def test_the_out_of_scope_code_is_decided_at_the_group_step_only_where_its_group_holds_nothing_else():
    clinc150 = frozenset({"A-A", "A-B", "K-A"})
    assert out_of_scope_step(frozenset({"K-A"}), clinc150) == "group"
    # a one-group task (the grammar writes A-): P(group A) is always 1, the label is decided at the intent step
    assert out_of_scope_step(frozenset({"A-K"}), frozenset({"A-A", "A-B", "A-K"})) == "intent"
    # groups of your own, the out-of-scope label sharing B with another label
    assert out_of_scope_step(frozenset({"B-B"}), frozenset({"A-A", "B-A", "B-B"})) == "intent"
    with pytest.raises(ValueError, match="not codes of the label set"):
        out_of_scope_step(frozenset({"K-A"}), frozenset({"A-A"}))
    with pytest.raises(ValueError, match="one group letter"):
        out_of_scope_step(frozenset({"K-A", "J-A"}), frozenset({"K-A", "J-A"}))


def one_group(code, intents, status="ok"):
    return partial_line(code=code, status=status, group_distribution={"A": 1.0}, intent_distribution=intents)


def test_in_a_one_group_task_the_out_of_scope_score_is_the_intent_steps_probability_not_the_group_steps_1():
    codes = frozenset({"A-K"})
    records = [one_group("A-A", {"A": 0.7, "K": 0.3}), one_group("A-K", {"A": 0.1, "K": 0.9}),
               one_group("A-B", {"A": 0.2, "B": 0.8}),            # K not among the letters read: 0
               one_group(None, None, status="invalid")]
    assert [out_of_scope_probability(r, codes, "intent") for r in records] == [0.3, 0.9, 0.0, 0.0]
    # read at the group step, every answer scores P(group A) = 1 and nothing is separated
    assert [out_of_scope_probability(r, codes, "group") for r in records] == [1.0, 1.0, 1.0, 0.0]
    found = detectors(records, {"raw": [0.7, 0.9, 0.8, 0.0]}, codes, "intent")
    assert found[0].name == "P(A-K)" and found[0].scores == [0.3, 0.9, 0.0, 0.0]


def test_a_shared_group_scores_p_group_times_p_intent_and_p_group_alone_where_another_group_was_chosen():
    codes = frozenset({"B-B"})
    chose_b = partial_line(code="B-A", status="ok", group_distribution={"A": 0.6, "B": 0.4},
                           intent_distribution={"A": 0.25, "B": 0.75})
    chose_a = partial_line(code="A-A", status="ok", group_distribution={"A": 0.7, "B": 0.3},
                           intent_distribution={"A": 1.0})
    assert out_of_scope_probability(chose_b, codes, "intent") == pytest.approx(0.4 * 0.75)  # 0.3
    assert out_of_scope_probability(chose_a, codes, "intent") == 0.3   # P(group B): the intent step never read B


def test_script_reads_a_one_group_tasks_out_of_scope_label_at_the_intent_step(tmp_path, run_script):
    # A task of 3 labels and out_of_scope (one group, A-A to A-D), with hand-made answers: out-of-scope messages
    # get P(A-D | A) 0.6, the others 0.1. Read at the group step every score would be 1 (AUROC 0.5).
    import csv
    from make_task import make_task, write_task
    from result_lines import result_line
    names = ["card", "refund", "transfer", "none_of_these"]
    with open(tmp_path / "labels.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([["label", "description"]] + [[n, f"about {n}"] for n in names])
    with open(tmp_path / "messages.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([["text", "label"]] + [[f"message {i} on {n}", n] for n in names for i in range(90)])
    made = make_task("onegroup", tmp_path / "labels.csv", tmp_path / "messages.csv", out_of_scope="none_of_these")
    write_task(made, tmp_path / "tasks" / "onegroup")
    env = {"TYPED_DECISIONS_TASKS": str(tmp_path / "tasks")}
    from task import TaskLoader
    loader = TaskLoader(tmp_path / "tasks" / "onegroup" / "onegroup.json")
    code = {i.name: i.code for i in loader.load_labels().intents}
    files = {}
    for split in ("calib", "test"):
        lines = []
        for n, message in enumerate(loader.load_split(split)):
            gold = code[message.intent]
            p_out = 0.6 if message.intent == "none_of_these" else 0.1
            line = result_line(n, right=True, confidence=0.5)
            intents = {letter: (1 - p_out) / 3 for letter in "ABC"} | {"D": p_out}
            answer = max(intents, key=intents.get)
            lines.append({**line, "id": message.id, "text": message.text, "gold_intent": message.intent,
                          "gold_code": gold, "code": f"A-{answer}", "intent": names["ABCD".index(answer)],
                          "correct": f"A-{answer}" == gold, "right_group": True, "content": f"A-{answer}",
                          "confidence": intents[answer], "p_group": 1.0, "p_intent_given_group": intents[answer],
                          "group_distribution": {"A": 1.0}, "intent_distribution": intents})
        files[split] = tmp_path / f"onegroup-{split}.jsonl"
        files[split].write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_script("07-separation/out_of_scope.py", "--dataset", "onegroup", "--results", files["test"],
                        "--calib", files["calib"], env=env)
    assert result.returncode == 0, result.stderr
    assert "P(A-D) read at the intent step" in result.stdout
    assert "best AUROC on test: P(A-D) 1.000" in result.stdout
