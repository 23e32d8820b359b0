"""A strong cheap baseline (beyond the series): multinomial logistic regression on word and character n-gram TF-IDF.

    classifier = fit_classifier(messages)           # labels.Message list: text and intent
    classifier.probabilities("where is my card?")   # intent -> P, summing to 1
    classifier.predict("where is my card?")         # the most probable intent

The standard library only, and no server: each message becomes a sparse
TF-IDF vector, and one weight per (feature, intent) scores it; a softmax over
the intents turns the scores into probabilities. The definitions, exactly:

- **features**: the word unigrams and bigrams of datasets/neighbours.py
  (`w:`/`b:` below: lower-cased runs of a-z, 0-9 and ') and the character
  2- to 5-grams of each word padded with one space on each side (`c:`), as
  scikit-learn's `analyzer="char_wb", ngram_range=(2, 5)` makes them;
- **weight** of a feature in a text: (1 + ln tf) x idf, idf = ln((1 + n) /
  (1 + df)) + 1 over the n training texts (sublinear tf, smooth idf), the
  vector divided by its Euclidean length; features never seen in training
  are dropped;
- **model**: P(intent | x) = softmax(W x + b), fitted by minimizing
  C x (sum of the log-losses) + 1/2 ||W||^2 (scikit-learn's
  LogisticRegression objective; the bias is not penalized) with stochastic
  gradient descent: every message once per epoch in a shuffled order
  (random.Random(seed)), step size 1 / (lambda (t0 + t)) with lambda = 1 /
  (C n) and t0 = 1 / lambda (Bottou 2012, "Stochastic Gradient Descent
  Tricks"), the L2 shrinkage applied through one scale factor so that each
  step touches only the message's features, and the classes whose gradient
  is below GRADIENT_FLOOR in absolute value skipped (they would move their
  weights by less than that).

tests/test_linear.py holds it to scikit-learn on the same features (accuracy
within a point, probabilities close). Fitting 10,003 BANKING77 messages in
EPOCHS passes takes minutes on 2 cores, so fits are cached on disk under
~/.cache/typed-decisions/linear/, keyed by the sha256 of the training texts,
their intents and the settings.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import random
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from neighbours import Labelled, features as word_features

C = 10.0            # inverse regularization strength, as scikit-learn's C
EPOCHS = 5
SEED = 0
CHAR_NGRAMS = (2, 5)
GRADIENT_FLOOR = 1e-6
VERSION = 1         # of the features and the fit: part of the cache key
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "typed-decisions" / "linear"


def ngram_features(text: str) -> dict[str, int]:
    """Feature -> count: word unigrams (w:), bigrams (b:) and in-word character n-grams (c:) of text."""
    counts: dict[str, int] = {}
    words = word_features(text)
    for feature in words:
        key = ("b:" if " " in feature else "w:") + feature
        counts[key] = counts.get(key, 0) + 1
    low, high = CHAR_NGRAMS
    for word in (f for f in words if " " not in f):
        padded = f" {word} "
        for n in range(low, high + 1):
            for start in range(len(padded) - n + 1):
                key = "c:" + padded[start:start + n]
                counts[key] = counts.get(key, 0) + 1
    return counts


@dataclass(frozen=True)
class Vectorizer:
    """The TF-IDF of the training texts: feature -> column, and each column's idf."""

    columns: dict[str, int]
    idf: tuple[float, ...]

    @classmethod
    def fit(cls, texts: Iterable[str]) -> Vectorizer:
        """The vocabulary (sorted features) and smooth idf of texts; ValueError for no texts."""
        frequency: dict[str, int] = {}
        n = 0
        for text in texts:
            n += 1
            for feature in ngram_features(text):
                frequency[feature] = frequency.get(feature, 0) + 1
        if n == 0:
            raise ValueError("no texts to fit a vectorizer on")
        vocabulary = sorted(frequency)
        return cls({feature: column for column, feature in enumerate(vocabulary)},
                   tuple(math.log((1 + n) / (1 + frequency[f])) + 1 for f in vocabulary))

    def vector(self, text: str) -> list[tuple[int, float]]:
        """The text's (column, weight) pairs: sublinear tf x idf, unit length; [] when no feature is known."""
        pairs = [(self.columns[f], (1 + math.log(count)) * self.idf[self.columns[f]])
                 for f, count in ngram_features(text).items() if f in self.columns]
        length = math.sqrt(sum(value * value for _, value in pairs))
        return [(column, value / length) for column, value in pairs] if length else []


@dataclass
class Classifier:
    """A fitted model: the vectorizer, the intents (sorted), the weights (one row of len(intents) per column,
    times `scale`) and the biases."""

    vectorizer: Vectorizer
    intents: tuple[str, ...]
    rows: list[list[float]]
    bias: list[float]
    scale: float = 1.0

    def scores(self, vector: list[tuple[int, float]]) -> list[float]:
        """W x + b for one vector: a score per intent (intents' order)."""
        total = self.bias[:]
        for column, value in vector:
            weight = value * self.scale
            total = [t + weight * w for t, w in zip(total, self.rows[column])]
        return total

    def probability_list(self, vector: list[tuple[int, float]]) -> list[float]:
        """softmax(scores): probabilities in [0, 1] in the intents' order, summing to 1."""
        scores = self.scores(vector)
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return [e / total for e in exps]

    def probabilities(self, text: str) -> dict[str, float]:
        """intent -> P(intent | text) for every intent fitted on."""
        return dict(zip(self.intents, self.probability_list(self.vectorizer.vector(text))))

    def predict(self, text: str) -> str:
        """The most probable intent (the first in sorted order on a tie)."""
        probabilities = self.probability_list(self.vectorizer.vector(text))
        return self.intents[max(range(len(probabilities)), key=probabilities.__getitem__)]


def train(messages: list[Labelled], c: float = C, epochs: int = EPOCHS, seed: int = SEED) -> Classifier:
    """Fit the vectorizer and the weights on messages (the module docstring has the method).

    Raises ValueError for no messages, fewer than two intents, c <= 0 or epochs < 1.
    """
    if c <= 0 or epochs < 1:
        raise ValueError(f"C must be above 0 and epochs at least 1, not C={c}, epochs={epochs}")
    intents = tuple(sorted({m.intent for m in messages}))
    if len(intents) < 2:
        raise ValueError(f"a classifier needs at least two intents, not {len(intents)}")
    vectorizer = Vectorizer.fit(m.text for m in messages)
    vectors = [vectorizer.vector(m.text) for m in messages]
    targets = [intents.index(m.intent) for m in messages]
    model = Classifier(vectorizer, intents, [[0.0] * len(intents) for _ in vectorizer.idf], [0.0] * len(intents))
    lam = 1.0 / (c * len(messages))
    t0, step = 1.0 / lam, 0
    order = list(range(len(messages)))
    rng = random.Random(seed)
    for _ in range(epochs):
        rng.shuffle(order)
        for index in order:
            eta = 1.0 / (lam * (t0 + step))
            step += 1
            gradient = model.probability_list(vectors[index])
            gradient[targets[index]] -= 1.0
            model.scale *= 1.0 - eta * lam
            active = [(k, g) for k, g in enumerate(gradient) if abs(g) > GRADIENT_FLOOR]
            for column, value in vectors[index]:
                row, step_size = model.rows[column], eta * value / model.scale
                for k, g in active:
                    row[k] -= step_size * g
            for k, g in active:
                model.bias[k] -= eta * g
            if model.scale < 1e-9:  # fold the scale into the weights before it underflows
                model.rows = [[w * model.scale for w in row] for row in model.rows]
                model.scale = 1.0
    return model


def cache_key(messages: list[Labelled], c: float, epochs: int, seed: int) -> str:
    """Hex sha256 of the training texts and intents (in order), the settings and VERSION."""
    digest = hashlib.sha256(json.dumps([VERSION, c, epochs, seed, CHAR_NGRAMS, GRADIENT_FLOOR]).encode())
    for message in messages:
        digest.update(json.dumps([message.text, message.intent]).encode())
    return digest.hexdigest()


def save_classifier(model: Classifier, path: Path) -> None:
    """The model in two files: <path>.json (vocabulary, idf, intents, bias, scale) and <path>.bin (the weights,
    float64), each written under a temporary name and moved into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = array("d", (w for row in model.rows for w in row))
    for suffix, write in ((".bin", lambda f: weights.tofile(f)),
                          (".json", lambda f: f.write(json.dumps({
                              "vocabulary": sorted(model.vectorizer.columns, key=model.vectorizer.columns.get),
                              "idf": model.vectorizer.idf, "intents": model.intents, "bias": model.bias,
                              "scale": model.scale}).encode()))):
        partial = path.with_name(path.name + suffix + ".partial")
        with open(partial, "wb") as out:
            write(out)
        partial.replace(path.with_name(path.name + suffix))


def load_classifier(path: Path) -> Classifier:
    """The model save_classifier() wrote at path; OSError or ValueError when the files are missing or do not fit together."""
    header = json.loads(path.with_name(path.name + ".json").read_text())
    weights = array("d")
    with open(path.with_name(path.name + ".bin"), "rb") as handle:
        weights.frombytes(handle.read())
    k, vocabulary = len(header["intents"]), header["vocabulary"]
    if len(weights) != k * len(vocabulary):
        raise ValueError(f"{path}: {len(weights)} weights for {len(vocabulary)} features and {k} intents")
    rows = [list(weights[i * k:(i + 1) * k]) for i in range(len(vocabulary))]
    vectorizer = Vectorizer({f: column for column, f in enumerate(vocabulary)}, tuple(header["idf"]))
    return Classifier(vectorizer, tuple(header["intents"]), rows, list(header["bias"]), header["scale"])


def fit_classifier(messages: list[Labelled], c: float = C, epochs: int = EPOCHS, seed: int = SEED,
                   cache: Path | None = CACHE) -> Classifier:
    """train(), or the cached fit of the same messages and settings (cache None: always train)."""
    if cache is None:
        return train(messages, c, epochs, seed)
    path = cache / cache_key(messages, c, epochs, seed)
    try:
        return load_classifier(path)
    except (OSError, ValueError):
        model = train(messages, c, epochs, seed)
        save_classifier(model, path)
        return model


# ---------------------------------------------------------------- how many labelled messages a fit may use

# The regimes of post 01's bargain: five labelled messages per intent go into the prompt, ten more fit the
# calibration; and, for comparison, every training message.
REGIMES = ("examples", "examples+calib", "full")


def example_messages(labels, per_intent: int | None = None) -> list:
    """The label file's examples as labelled messages (id "example-<intent>-<k>"): 5 per intent in the shipped
    files, the ones BANKING77's prompt shows; per_intent: only the first that many of each intent (None: all)."""
    from labels import Message
    return [Message(f"example-{intent.name}-{k}", text, intent.name)
            for intent in labels.intents for k, text in enumerate(intent.examples[:per_intent])]


def regime_messages(dataset, regime: str) -> list:
    """The labelled messages a fit of `regime` uses (registry.Dataset): "examples" the label file's examples,
    "examples+calib" those and the calibration split, "full" the dataset's fit_messages() (every training
    message but the calibration split). ValueError for another regime."""
    if regime == "examples":
        return example_messages(dataset.load_labels())
    if regime == "examples+calib":
        return example_messages(dataset.load_labels()) + dataset.load_split("calib")
    if regime == "full":
        return dataset.fit_messages()
    raise ValueError(f"regime must be one of {', '.join(REGIMES)}, not {regime!r}")


FOLDS = 5  # cross-fitting of the calibration split when it is also training data


def regime_fits(dataset, regime: str, folds: int = FOLDS) -> tuple[list[Classifier], Classifier]:
    """(the fits that score calib, the fit that scores test) of `regime` (regime_messages): message i of calib
    is scored by fits[i mod len(fits)]. In "examples+calib" the calibration split is training data, so its
    own probabilities are cross-fitted: one fit per fold on the examples and the calib messages of the other
    folds (i mod folds), and test by a fit on all of them; otherwise one fit scores both. Fits are cached
    (fit_classifier)."""
    if regime != "examples+calib":
        model = fit_classifier(regime_messages(dataset, regime))
        return [model], model
    examples, calib = regime_messages(dataset, "examples"), dataset.load_split("calib")
    by_fold = [fit_classifier(examples + [m for i, m in enumerate(calib) if i % folds != fold]) for fold in range(folds)]
    return by_fold, fit_classifier(examples + calib)


def fits_probabilities(dataset, fits: tuple[list[Classifier], Classifier]) -> dict[str, list[dict[str, float]]]:
    """split -> the class probabilities (intent -> P) of every message of "calib" and "test", in split order,
    scored by regime_fits' fits."""
    by_fold, model = fits
    return {"calib": [by_fold[i % len(by_fold)].probabilities(m.text) for i, m in enumerate(dataset.load_split("calib"))],
            "test": [model.probabilities(m.text) for m in dataset.load_split("test")]}


def regime_probabilities(dataset, regime: str, folds: int = FOLDS) -> dict[str, list[dict[str, float]]]:
    """split -> the class probabilities (intent -> P) of every message of "calib" and "test", in split order,
    from the fits of `regime` (regime_fits: calib cross-fitted in "examples+calib")."""
    return fits_probabilities(dataset, regime_fits(dataset, regime, folds))
