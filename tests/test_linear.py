"""01's linear.py: the features, the TF-IDF and the logistic regression, held to scikit-learn on the same features."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

import linear
from labels import Message
from linear import Vectorizer, fit_classifier, load_classifier, ngram_features, regime_messages, save_classifier, train
from registry import DATASETS


def test_features_are_words_word_pairs_and_in_word_character_ngrams():
    counts = ngram_features("Top up")
    assert counts["w:top"] == 1 and counts["w:up"] == 1 and counts["b:top up"] == 1
    # " top " gives 2-grams " t", "to", "op", "p " ... up to the whole padded word (5 characters)
    assert {"c: t", "c:to", "c:op", "c:p ", "c: top", "c:top ", "c: top "} <= set(counts)
    assert "c:top u" not in counts  # n-grams stay inside a word
    assert ngram_features("") == {}


def test_the_tfidf_is_scikit_learns_with_the_same_analyzer():
    texts = ["top up my card", "my card is lost", "top up failed again", "lost card, top up"]
    ours = Vectorizer.fit(texts)
    theirs = TfidfVectorizer(analyzer=lambda text: [f for f, n in ngram_features(text).items() for _ in range(n)],
                             sublinear_tf=True, smooth_idf=True).fit(texts)
    assert sorted(ours.columns) == sorted(theirs.vocabulary_)
    matrix = theirs.transform(texts).toarray()
    for row, text in enumerate(texts):
        vector = dict(ours.vector(text))
        for feature, column in theirs.vocabulary_.items():
            assert vector.get(ours.columns[feature], 0.0) == pytest.approx(matrix[row, column], abs=1e-12)
    assert ours.vector("zebra") == []


@pytest.fixture(scope="module")
def twenty_intents():
    """The training and test messages of 20 BANKING77 intents: big enough to compare, small enough to fit fast."""
    dataset = DATASETS["banking77"]
    chosen = sorted({m.intent for m in dataset.fit_messages()})[:20]
    train_messages = [m for m in dataset.fit_messages() if m.intent in chosen]
    test_messages = [m for m in dataset.load_split("test") if m.intent in chosen]
    return train_messages, test_messages


def test_the_fit_is_within_a_point_of_scikit_learns_and_its_probabilities_close(twenty_intents):
    train_messages, test_messages = twenty_intents
    ours = train(train_messages)
    vectorizer = ours.vectorizer

    def matrix(messages):
        rows, cols, values = [], [], []
        for row, message in enumerate(messages):
            for column, value in vectorizer.vector(message.text):
                rows.append(row), cols.append(column), values.append(value)
        return sp.csr_matrix((values, (rows, cols)), shape=(len(messages), len(vectorizer.idf)))

    theirs = LogisticRegression(C=linear.C, max_iter=3000).fit(matrix(train_messages), [m.intent for m in train_messages])
    assert list(theirs.classes_) == list(ours.intents)
    gold = [m.intent for m in test_messages]
    their_accuracy = np.mean(theirs.predict(matrix(test_messages)) == np.array(gold))
    our_accuracy = np.mean([ours.predict(m.text) == g for m, g in zip(test_messages, gold)])
    assert abs(our_accuracy - their_accuracy) <= 0.01, (our_accuracy, their_accuracy)
    their_p = theirs.predict_proba(matrix(test_messages))
    our_p = np.array([[ours.probabilities(m.text)[i] for i in ours.intents] for m in test_messages])
    assert np.abs(our_p - their_p).mean() < 0.01 and np.allclose(our_p.sum(axis=1), 1.0)


def test_a_saved_fit_loads_with_the_same_probabilities_and_the_cache_key_names_the_data(tmp_path):
    messages = [Message(f"m{i}", text, intent) for i, (text, intent) in
                enumerate([("lost my card", "lost"), ("card stolen", "lost"), ("top up failed", "top"),
                           ("cannot top up", "top"), ("where is my card", "arrival"), ("card not arrived", "arrival")])]
    model = train(messages, epochs=3)
    save_classifier(model, tmp_path / "fit")
    again = load_classifier(tmp_path / "fit")
    assert again.probabilities("my card is lost") == pytest.approx(model.probabilities("my card is lost"), abs=1e-15)
    cached = fit_classifier(messages, epochs=3, cache=tmp_path)
    assert fit_classifier(messages, epochs=3, cache=tmp_path).probabilities("top up") == cached.probabilities("top up")
    key = linear.cache_key(messages, linear.C, 3, linear.SEED)
    assert key != linear.cache_key(messages[:-1], linear.C, 3, linear.SEED) != linear.cache_key(messages, 1.0, 3, 0)
    assert (tmp_path / f"{key}.bin").exists() and (tmp_path / f"{key}.json").exists()


def test_bad_settings_and_too_few_intents_are_refused():
    with pytest.raises(ValueError, match="at least two intents"):
        train([Message("a", "x", "one")])
    with pytest.raises(ValueError, match="C must be above 0"):
        train([Message("a", "x", "one"), Message("b", "y", "two")], c=0)


def test_the_regimes_use_5_15_and_every_training_message_per_intent():
    dataset = DATASETS["banking77"]
    assert len(regime_messages(dataset, "examples")) == 77 * 5
    assert len(regime_messages(dataset, "examples+calib")) == 77 * 5 + 770
    assert len(regime_messages(dataset, "full")) == 10_003 - 770
    with pytest.raises(ValueError, match="regime must be one of"):
        regime_messages(dataset, "all")
    assert math.isclose(len({m.intent for m in regime_messages(dataset, "examples")}), 77)
