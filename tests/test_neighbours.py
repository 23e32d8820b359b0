"""The TF-IDF retriever (datasets/neighbours.py), the group check (check_groups.py) and the baseline script.

scikit-learn is the reference for the TF-IDF weights and cosines; the
datasets come from the offline mirror (conftest sets TYPED_DECISIONS_DATA).
No server is needed.
"""
import argparse
import json
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

import banking77
from banking77 import LABELS_FILE, load_labels
from check_groups import by_chance, confusions, group_of, in_group, moved, read_label_set
from labels import LETTERS, Message
from neighbours import TOKEN_PATTERN, Retriever, features, gold_positions, recall_at, tokens
from registry import DATASETS, add_dataset_argument

ROOT = Path(__file__).resolve().parents[1]


def fitted(*pairs: tuple[str, str]) -> Retriever:
    """A retriever fitted on (text, intent) pairs, ids m0, m1..."""
    return Retriever.fit([Message(f"m{i}", text, intent) for i, (text, intent) in enumerate(pairs)])


@pytest.fixture(scope="module")
def banking():
    """The BANKING77 retriever of the posts: train.csv minus the calibration rows."""
    return DATASETS["banking77"].fit_retriever()


# --- definitions on hand-made texts --------------------------------------------

def test_tokens_are_lowercase_runs_of_letters_digits_and_straight_apostrophes():
    assert tokens("I'm £20 SHORT!") == ["i'm", "20", "short"]
    assert tokens("what’s up") == ["what", "s", "up"]  # the curly apostrophe separates
    assert tokens("top-up,card") == ["top", "up", "card"]
    assert tokens("?!") == [] and tokens("") == []


def test_features_are_unigrams_then_bigrams_with_repeats():
    assert features("top up top") == ["top", "up", "top", "top up", "up top"]
    assert features("one") == ["one"]


def test_hand_computed_tfidf_and_cosines_on_three_messages():
    r = fitted(("card lost", "lost_or_stolen_card"), ("Card, card!", "card_not_working"), ("PIN lost", "pin_blocked"))
    # n = 3. df(card) = df(lost) = 2: idf = ln(4/3) + 1 = 1.287682;
    # every other feature has df = 1: idf = ln(4/2) + 1 = 1.693147.
    assert r.idf["card"] == pytest.approx(math.log(4 / 3) + 1) == pytest.approx(1.287682, abs=1e-6)
    assert r.idf["card card"] == r.idf["pin lost"] == pytest.approx(1.693147, abs=1e-6)
    # "Card, card!": tf(card) = 2 -> (1 + ln 2) * 1.287682 = 2.180247; "card card": 1 * 1.693147.
    # Length sqrt(2.180247^2 + 1.693147^2) = 2.760476 -> 0.789807 and 0.613356.
    assert r.postings["card"][1] == pytest.approx(0.789807, abs=1e-6)
    assert r.postings["card card"][1] == pytest.approx(0.613356, abs=1e-6)
    # "card lost": 1.287682, 1.287682, 1.693147; length 2.486563 -> 0.517856, 0.517856, 0.680919.
    assert r.postings["lost"][0] == pytest.approx(0.517856, abs=1e-6)
    # Query "lost card": "lost card" was never fitted and is dropped; lost and card
    # weigh 1.287682 each -> 1/sqrt(2) = 0.707107 each.
    assert r.vector("lost card") == pytest.approx({"lost": 1 / math.sqrt(2), "card": 1 / math.sqrt(2)})
    # cosines: m0 (0.517856 + 0.517856) / sqrt(2) = 0.732359; m1 0.789807 / sqrt(2) = 0.558478;
    # m2 (lost only, 1.287682 / sqrt(1.287682^2 + 2 * 1.693147^2) = 0.473630) / sqrt(2) = 0.334907.
    assert [(n.index, round(n.similarity, 6)) for n in r.neighbours("lost card")] == [
        (0, 0.732359), (1, 0.558478), (2, 0.334907)]
    assert [intent for intent, _ in r.rank("lost card")] == ["lost_or_stolen_card", "card_not_working", "pin_blocked"]
    # k = 2: only the two nearest vote; the third intent scores 0.
    assert r.rank("lost card", k=2)[2] == ("pin_blocked", 0.0)


def test_score_of_an_intent_adds_its_neighbours_similarities():
    r = fitted(("card lost", "a"), ("card lost today", "b"), ("lost card", "a"))
    neighbours = r.neighbours("card lost")
    expected_a = sum(n.similarity for n in neighbours if n.intent == "a")
    assert dict(r.rank("card lost"))["a"] == pytest.approx(expected_a)
    assert r.rank("card lost")[0][0] == "a"


def test_equal_scores_rank_by_intent_name_and_equal_similarities_by_fit_order():
    r = fitted(("hello there", "zeta"), ("hello there", "alpha"), ("goodbye", "Beta"))
    assert [n.index for n in r.neighbours("hello there")] == [0, 1]
    assert r.neighbours("hello there", k=1)[0].intent == "zeta"  # the one fitted first
    # zeta and alpha both score 1.0: name order; Beta (0) last.
    assert [intent for intent, _ in r.rank("hello there")] == ["alpha", "zeta", "Beta"]


@pytest.mark.parametrize("text", ["", "?!", "xyzzy plugh"])
def test_query_without_a_known_word_scores_every_intent_0_in_name_order(text):
    r = fitted(("card lost", "lost_or_stolen_card"), ("top up", "Refund_not_showing_up"), ("pin", "activate_my_card"))
    assert r.neighbours(text) == []
    # str order: capitals before lower case.
    assert r.rank(text) == [("Refund_not_showing_up", 0.0), ("activate_my_card", 0.0), ("lost_or_stolen_card", 0.0)]


def test_own_intent_at_score_0_is_not_found_whatever_its_place():
    r = fitted(("card lost", "b_lost"), ("top up", "a_top_up"))
    # "?" has no word: both intents at 0, a_top_up placed first by name, yet not found.
    assert gold_positions(r, [Message("q0", "card lost", "b_lost"), Message("q1", "?", "a_top_up")]) == [1, None]
    assert recall_at([1, None, 3], 1) == pytest.approx(1 / 3)
    assert recall_at([1, None, 3], 10) == pytest.approx(2 / 3)


def test_bad_inputs_raise_value_error():
    r = fitted(("card lost", "a"))
    with pytest.raises(ValueError, match="no messages"):
        Retriever.fit([])
    with pytest.raises(ValueError, match="k must be"):
        r.neighbours("card", k=0)
    with pytest.raises(ValueError, match="not among"):
        gold_positions(r, [Message("q", "card", "zzz")])
    with pytest.raises(ValueError, match="no positions"):
        recall_at([], 1)


# --- scikit-learn as the reference -----------------------------------------------

def sklearn_tfidf(texts):
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, smooth_idf=True,
                                 token_pattern=TOKEN_PATTERN, lowercase=True)
    return vectorizer, vectorizer.fit_transform(texts)


def dense(vectors: list[dict[str, float]], vocabulary: dict[str, int]) -> np.ndarray:
    """{feature: weight} vectors as the rows of a matrix with scikit-learn's columns."""
    array = np.zeros((len(vectors), len(vocabulary)))
    for row, vector in enumerate(vectors):
        for term, weight in vector.items():
            array[row, vocabulary[term]] = weight
    return array


def test_weights_and_cosines_agree_with_scikit_learn_on_real_messages():
    train = banking77.load_rows("train")
    chosen = random.Random(7).sample(train, 300)
    queries = [m.text for m in random.Random(8).sample(banking77.load_rows("test"), 100)]
    r = Retriever.fit(chosen)
    vectorizer, matrix = sklearn_tfidf([m.text for m in chosen])
    vocabulary = vectorizer.vocabulary_
    assert set(r.idf) == set(vocabulary)
    for term, column in vocabulary.items():
        assert r.idf[term] == pytest.approx(vectorizer.idf_[column], abs=1e-9)
    fitted_vectors = [{} for _ in chosen]
    for term, postings in r.postings.items():
        for index, weight in postings.items():
            fitted_vectors[index][term] = weight
    np.testing.assert_allclose(dense(fitted_vectors, vocabulary), matrix.toarray(), rtol=0, atol=1e-9)
    reference = vectorizer.transform(queries)
    np.testing.assert_allclose(dense([r.vector(text) for text in queries], vocabulary), reference.toarray(), rtol=0, atol=1e-9)
    cosines = (reference @ matrix.T).toarray()
    for row, text in enumerate(queries):
        neighbours = r.neighbours(text, k=300)
        for neighbour in neighbours:
            assert neighbour.similarity == pytest.approx(cosines[row, neighbour.index], abs=1e-9)
        # every message with a positive cosine is a neighbour when k is the whole corpus
        assert len(neighbours) == int((cosines[row] > 1e-12).sum())


def test_pruned_search_finds_the_same_neighbours_as_a_full_scan(banking):
    # The max-score cut must not change the result: compare with all cosines from
    # scikit-learn on the full BANKING77 fit (9,233 messages).
    vectorizer, matrix = sklearn_tfidf(list(banking.texts))
    queries = [m.text for m in random.Random(9).sample(banking77.load_rows("test"), 300)]
    cosines = (vectorizer.transform(queries) @ matrix.T).toarray()
    same_order = 0
    for row, text in enumerate(queries):
        ours = banking.neighbours(text)
        order = list(np.lexsort((np.arange(matrix.shape[0]), -cosines[row]))[:10])  # ties: lower index
        np.testing.assert_allclose([n.similarity for n in ours], cosines[row, order], rtol=0, atol=1e-9)
        # every message clearly above the 10th cosine is found (a float-level tie may go either way)
        clearly = {i for i in order if cosines[row, i] > cosines[row, order[-1]] + 1e-12}
        assert clearly <= {n.index for n in ours}
        same_order += [n.index for n in ours] == order
    assert same_order >= 295


# --- what is fitted on ---------------------------------------------------------------

def test_fitted_banking77_retriever_leaves_out_every_calibration_row(banking):
    labels = load_labels()
    calib_ids = {m.id for m in banking77.load_split("calib", labels)}
    fit_ids = [m.id for m in banking77.fit_messages(labels)]
    assert len(fit_ids) == len(banking.texts) == 10_003 - 770
    assert calib_ids.isdisjoint(fit_ids)
    assert set(fit_ids) | calib_ids == {m.id for m in banking77.load_rows("train")}
    assert len(banking77.fit_messages(labels, all_train=True)) == 10_003


# --- leave-one-out and the group check ---------------------------------------------------

def test_a_message_is_never_among_its_own_neighbours_when_left_out(banking):
    for index in range(0, len(banking.texts), 37):
        assert index not in {n.index for n in banking.neighbours(banking.texts[index], exclude=index)}
        assert banking.rank_left_out(index) == banking.rank(banking.texts[index], exclude=index)
    # without leaving it out, a message is its own nearest neighbour (or ties with an earlier copy)
    first = banking.neighbours(banking.texts[5])[0]
    assert first.similarity == pytest.approx(1.0) and first.index <= 5


def test_confusions_count_the_intent_ranked_first_with_the_message_left_out():
    r = fitted(("card lost", "a"), ("card lost", "b"), ("card lost", "b"), ("zebra", "c"))
    confused, alone = confusions(r)
    # m0 (a) sees m1 and m2 (b): a -> b. m1 (b) sees m0 (a) and m2 (b), b scores 1.0 = a's 1.0,
    # tie to the name: a first -> b -> a. Likewise m2. m3 shares no word: no neighbour.
    assert confused == Counter({("a", "b"): 1, ("b", "a"): 2})
    assert alone == 1


def moved_copy(tmp_path, moves: dict[str, str]) -> Path:
    """A copy of banking77.json with intents moved to the end of other groups (intent -> group letter)."""
    data = json.loads(LABELS_FILE.read_text(encoding="utf-8"))
    for name, letter in moves.items():
        source = next(g for g in data["groups"] if any(i["intent"] == name for i in g["intents"]))
        item = next(i for i in source["intents"] if i["intent"] == name)
        source["intents"].remove(item)
        next(g for g in data["groups"] if g["letter"] == letter)["intents"].append(item)
    for group in data["groups"]:  # letters run A, B, C... again
        for i, item in enumerate(group["intents"]):
            item["letter"] = LETTERS[i]
    path = tmp_path / "moved.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_moved_names_the_intents_another_file_groups_differently(tmp_path):
    labels = load_labels()
    other = load_labels(moved_copy(tmp_path, {"card_swallowed": "D", "exchange_rate": "C"}))
    assert moved(labels, other) == [("card_swallowed", "B", "D"), ("exchange_rate", "G", "C")]
    assert moved(labels, labels) == []


def test_in_group_share_and_its_chance_level():
    labels = load_labels()
    groups = group_of(labels)
    confused = Counter({("card_arrival", "card_delivery_estimate"): 3, ("card_arrival", "exchange_rate"): 1})
    assert in_group(confused, groups) == 3  # both A; exchange_rate is in G
    sizes = [len(g.intents) for g in labels.groups]  # 11 + 11 + 10 + 7 + 14 + 10 + 4 + 10 = 77
    assert by_chance(labels) == pytest.approx(sum(s * (s - 1) for s in sizes) / (77 * 76))


# --- the scripts' doors ---------------------------------------------------------------


def test_read_labels_names_a_file_that_is_not_json(tmp_path):
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json is not a JSON label file"):
        read_label_set(tmp_path / "bad.json")


@pytest.mark.parametrize("name, content", [("nope.json", None), ("bad.json", "{")])
def test_check_groups_refuses_a_missing_or_broken_compare_file_in_one_line(tmp_path, run_script, name, content):
    if content is not None:
        (tmp_path / name).write_text(content, encoding="utf-8")
    result = run_script("datasets/check_groups.py", "--compare", str(tmp_path / name))
    # exit 2 before any output, one error line that names the file
    assert (result.returncode, result.stdout, result.stderr.count("\n"), name in result.stderr) == (2, "", 1, True)


def test_check_groups_has_help(run_script):
    assert run_script("datasets/check_groups.py", "--help").returncode == 0


def test_baseline_has_help_and_refuses_a_dataset_it_does_not_know(run_script):
    assert run_script("01-why-typed-decisions/beyond/baseline.py", "--help").returncode == 0
    # --dataset takes only the registry's datasets (argparse's usage error, exit 2), in baseline.py as everywhere
    parser = argparse.ArgumentParser()
    add_dataset_argument(parser)
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(["--dataset", "snips"])
    assert refused.value.code == 2 and "snips" not in DATASETS
    assert run_script("01-why-typed-decisions/beyond/baseline.py", "--dataset", "snips").returncode == 2
