"""A TF-IDF nearest-neighbour retriever: the cheap baseline with no model at all.

Every training message becomes a sparse vector of word weights; a new message
gets the intents of the training messages closest to it. No server, no
training loop, only the standard library. Post 01's beyond/baseline.py prints
what it gets right; check_groups.py uses its mistakes to test a grouping.

The definitions, exactly:

- **tokens**: the text lower-cased with ``str.lower``, then every run of the
  characters ``a-z``, ``0-9`` and the straight apostrophe ``'`` (TOKEN_PATTERN).
  Everything else separates words: ``"I'm £20 short!"`` gives ``i'm``, ``20``,
  ``short``. The curly apostrophe ``’`` is a separator too (``what’s`` gives
  ``what`` and ``s``); neither dataset has a letter outside a-z.
- **features**: the word unigrams, then the bigrams of neighbouring words
  joined by one space (``"top up"``), as scikit-learn's
  ``ngram_range=(1, 2)``.
- **weight** of feature t in a text: ``(1 + ln tf) * idf(t)``, tf = how often t
  occurs in the text (sublinear tf), ``idf(t) = ln((1 + n) / (1 + df(t))) + 1``,
  n = messages fitted on, df(t) = fitted messages that hold t (scikit-learn's
  ``smooth_idf=True``; its user guide, section "Tf-idf term weighting").
  Features never seen in fitting are dropped, then the vector is divided by
  its Euclidean (L2) length; a text without a known feature is the zero vector.
- **similarity**: the dot product of two such vectors, i.e. their cosine, in
  [0, 1] (every weight is positive).
- **neighbours** of a query: the K = 10 fitted messages with the highest
  similarity, among those with similarity above 0; equal similarities go to
  the message fitted first. A query with no known feature has none.
- **score** of an intent: the sum of the similarities of the neighbours that
  carry it (0 for an intent none of them carries), added best neighbour first.
- **ranking**: every intent fitted on, highest score first; equal scores in
  alphabetical order of the intent name (Python's ``str`` order, so
  ``Refund_not_showing_up`` comes before ``activate_my_card``). So a query
  with no known word ranks every intent at 0, in that order.
- **top-K recall** of a list of messages: the share whose own intent is among
  the first K of the ranking *with a score above 0* (gold_positions,
  recall_at); top-1 recall is the accuracy. An intent at 0 is never counted
  as found, wherever the tie rule puts it.

Which messages to fit on matters: each dataset's fit_messages() leaves out
the calibration split (later posts fit thresholds on it, so their figures
must not come from a retriever that has seen it); registry.Dataset.fit_retriever()
fits on them.

Ranking uses an inverted index (feature -> the fitted messages that hold it,
with their weights), so a query only touches the messages that share a
feature with it, and skips most of those that share only common words (see
Retriever.neighbours): 3,080 BANKING77 test messages against 9,233 fitted
ones take about 5 seconds on a 2-core machine, against about 24 when every
posting is walked (datasets/README.md).
"""
from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Protocol


TOKEN_PATTERN = r"[a-z0-9']+"
K = 10  # neighbours that vote
SAFETY = 1e-9  # margin on the max-score cut (Retriever.neighbours), far above float rounding


class Labelled(Protocol):
    """Anything with a text and an intent, such as Message."""
    text: str
    intent: str


def tokens(text: str) -> list[str]:
    """The words of a text: runs of a-z, 0-9 and ' in ``text.lower()``, in order.

    ``tokens("Where's my card?")`` -> ``["where's", "my", "card"]``; ``[]`` for a
    text without any.
    """
    return re.findall(TOKEN_PATTERN, text.lower())


def features(text: str) -> list[str]:
    """The unigrams of ``tokens(text)``, then its bigrams (two words and one space), with repeats.

    ``features("top up top")`` -> ``["top", "up", "top", "top up", "up top"]``.
    The same list as scikit-learn's analyzer with ``ngram_range=(1, 2)`` and
    ``token_pattern=TOKEN_PATTERN``.
    """
    words = tokens(text)
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def _unit_vector(counts: Counter, idf: dict[str, float]) -> dict[str, float]:
    """{feature: weight} for the known features of ``counts``, L2-normalised; {} if none is known.

    weight = (1 + ln tf) * idf, then divided by the vector's length.
    """
    weights = {term: (1.0 + math.log(tf)) * idf[term] for term, tf in counts.items() if term in idf}
    length = math.sqrt(sum(w * w for w in weights.values()))
    return {term: w / length for term, w in weights.items()} if length else {}


@dataclass(frozen=True)
class Neighbour:
    """One fitted message close to a query.

    index: its position in the list given to Retriever.fit (0-based).
    intent: its intent. similarity: cosine with the query, in (0, 1].
    """
    index: int
    intent: str
    similarity: float


@dataclass(frozen=True)
class Retriever:
    """A fitted TF-IDF index over labelled messages (the module docstring defines every step).

    texts, intents: the fitted messages' texts and intents, in fit order.
    idf: inverse document frequency of every feature seen in fitting.
    postings: the inverted index, feature -> {index: weight} for each fitted
    message that holds it, in index order; weight = that message's
    L2-normalised weight of the feature. peak: feature -> its largest weight
    in postings. labels: the distinct intents, sorted. The dicts are not to be
    changed after fit.
    """
    texts: tuple[str, ...]
    intents: tuple[str, ...]
    idf: dict[str, float]
    postings: dict[str, dict[int, float]]
    peak: dict[str, float]
    labels: tuple[str, ...]

    @classmethod
    def fit(cls, messages: Iterable[Labelled]) -> Retriever:
        """Index ``messages`` (objects with ``.text`` and ``.intent``), in the order given.

        Raises ValueError when there are none. A message without a word
        (empty, or only punctuation) is kept but never a neighbour.
        """
        messages = list(messages)
        if not messages:
            raise ValueError("cannot fit a retriever on no messages.")
        counts = [Counter(features(m.text)) for m in messages]
        df = Counter(term for c in counts for term in c)
        n = len(messages)
        idf = {term: math.log((1 + n) / (1 + d)) + 1.0 for term, d in df.items()}
        postings: dict[str, dict[int, float]] = {}
        for index, c in enumerate(counts):
            for term, weight in _unit_vector(c, idf).items():
                postings.setdefault(term, {})[index] = weight
        return cls(texts=tuple(m.text for m in messages), intents=tuple(m.intent for m in messages),
                   idf=idf, postings=postings, peak={term: max(p.values()) for term, p in postings.items()},
                   labels=tuple(sorted({m.intent for m in messages})))

    def vector(self, text: str) -> dict[str, float]:
        """The query vector of ``text``: {feature: weight}, unit length, known features only; {} if none."""
        return _unit_vector(Counter(features(text)), self.idf)

    def neighbours(self, text: str, k: int = K, exclude: int | None = None) -> list[Neighbour]:
        """The at most ``k`` fitted messages most similar to ``text``, best first.

        Only messages with similarity above 0 count; equal similarities go to
        the lower index. ``exclude``: the index of a fitted message that may not
        be a neighbour (leave-one-out: a message is not its own neighbour).
        Raises ValueError when k < 1.

        The query's features are taken in decreasing order of their largest
        possible contribution, q * peak (the "max-score" strategy of Turtle and
        Flood, "Query evaluation: strategies and optimizations", Information
        Processing & Management 31(6), 1995). Once the contributions still to
        come add up to less than the k-th best similarity so far, a message not
        yet met cannot reach the top k: the remaining features only update the
        messages already met, and those that cannot catch up with the k-th best
        are dropped. The similarities returned are the full dot products; the
        cut keeps a margin of SAFETY so that float rounding cannot change the result.
        """
        if k < 1:
            raise ValueError(f"k must be 1 or more, not {k}.")
        query = sorted(self.vector(text).items(), key=lambda item: -item[1] * self.peak[item[0]])
        to_come = sum(q * self.peak[term] for term, q in query)
        similarity: dict[int, float] = {}
        closed = False  # True once no message outside `similarity` can enter the top k
        for term, q in query:
            postings = self.postings[term]
            if closed:
                for index in similarity.keys() & postings.keys():
                    similarity[index] += q * postings[index]
            else:
                get = similarity.get
                for index, weight in postings.items():
                    similarity[index] = get(index, 0.0) + q * weight
                similarity.pop(exclude, None)
            to_come -= q * self.peak[term]
            if len(similarity) > k and to_come < 1:  # a similarity is at most 1
                kth = heapq.nlargest(k, similarity.values())[-1]
                closed = closed or to_come + SAFETY < kth
                if closed:
                    similarity = {i: sim for i, sim in similarity.items() if sim + to_come + SAFETY >= kth}
        if not similarity:
            return []
        kth = heapq.nlargest(k, similarity.values())[-1]
        best = sorted((item for item in similarity.items() if item[1] >= kth), key=lambda item: (-item[1], item[0]))
        return [Neighbour(index, self.intents[index], sim) for index, sim in best[:k]]

    def rank(self, text: str, k: int = K, exclude: int | None = None) -> list[tuple[str, float]]:
        """Every fitted intent with its score, (intent, score) best first (see ``ranking``)."""
        return self.ranking(self.neighbours(text, k, exclude))

    def rank_left_out(self, index: int, k: int = K) -> list[tuple[str, float]]:
        """The ranking for fitted message ``index`` with that message left out of its neighbours.

        The idf still counts the message (exact leave-one-out would refit on
        the others: n - 1 messages, df lower by one for its features); for
        telling which intents a message is confused with, the difference does
        not matter. Raises IndexError for an index outside the fitted messages.
        """
        return self.rank(self.texts[index], k, exclude=index)

    def ranking(self, neighbours: list[Neighbour]) -> list[tuple[str, float]]:
        """(intent, score) for every fitted intent: score = sum of its neighbours' similarities.

        Sorted by score, highest first, then by intent name; an intent without
        a neighbour scores 0.0.
        """
        scores = dict.fromkeys(self.labels, 0.0)
        for neighbour in neighbours:
            scores[neighbour.intent] += neighbour.similarity
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def gold_positions(retriever: Retriever, messages: Iterable[Labelled], k: int = K) -> list[int | None]:
    """For each message, the 1-based place of its own intent in retriever.rank(message.text, k).

    1 means ranked first (right). None when its intent scores 0, i.e. no
    neighbour carries it: the intent is not found, whatever place the tie
    rule gives it among the other intents at 0 (its place there says nothing
    about the message). Raises ValueError for a message whose intent the
    retriever was not fitted on.
    """
    positions = []
    for message in messages:
        if message.intent not in retriever.labels:
            raise ValueError(f"intent {message.intent!r} is not among the {len(retriever.labels)} fitted intents.")
        ranked = retriever.rank(message.text, k)
        place = next(place for place, (intent, _) in enumerate(ranked, start=1) if intent == message.intent)
        positions.append(place if ranked[place - 1][1] > 0 else None)
    return positions


def recall_at(positions: list[int | None], cutoff: int) -> float:
    """Top-``cutoff`` recall: the share (0 to 1) of positions that are at most ``cutoff`` (None never is).

    With cutoff 1 it is the accuracy. Since at most k intents score above 0,
    a cutoff above k gives the same as k. Raises ValueError for no positions
    or a cutoff below 1.
    """
    if not positions:
        raise ValueError("no positions to take a recall of.")
    if cutoff < 1:
        raise ValueError(f"cutoff must be 1 or more, not {cutoff}.")
    return sum(p is not None and p <= cutoff for p in positions) / len(positions)
