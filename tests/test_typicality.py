"""The gate before act (08-routes/beyond/gate/typicality.py): cut-offs fitted on calib, the signals' AUROC, the
irreversible intents of a label file."""
import pytest
from sklearn.metrics import roc_auc_score

from neighbours import Retriever
from labels import Message
from typicality import Gate, cut_off, fit_gate, irreversible_intents, similarity, typicality_auroc, unknown_words


def test_a_cut_off_turns_away_at_most_the_share_and_ties_pass():
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert cut_off(values, 0.2, "low") == 0.3       # 0.1 and 0.2 below it: 2 of 10
    assert cut_off(values, 0.2, "high") == 0.8      # 0.9 and 1.0 above it
    assert cut_off(values, 0.0, "low") == 0.1       # share 0: nothing turned away
    assert cut_off([0.5, 0.5, 0.5, 0.9], 0.5, "low") == 0.5   # the ties at the cut all pass
    with pytest.raises(ValueError, match="no values"):
        cut_off([], 0.1, "low")
    with pytest.raises(ValueError, match="share must be in"):
        cut_off(values, 1.0, "low")


def test_the_gate_names_every_signal_past_its_cut_off():
    calib = [{"similarity": s / 10, "unknown words": 0.0, "off-label group": m / 10, "off-label intent": 0.0}
             for s, m in zip(range(1, 11), range(10))]
    gate = fit_gate(calib, share=0.1)
    assert gate.cuts == {"similarity": 0.2, "unknown words": 0.0, "off-label group": 0.8, "off-label intent": 0.0}
    assert gate.why({"similarity": 0.2, "unknown words": 0.0, "off-label group": 0.8, "off-label intent": 0.0}) is None
    stopped = {"similarity": 0.1, "unknown words": 0.0, "off-label group": 0.9, "off-label intent": 0.0}
    assert gate.past(stopped) == ["similarity", "off-label group"]
    assert gate.why(stopped) == ("not like the calib messages (similarity 0.100 < 0.200; "
                                 "off-label group 0.900 > 0.800)")
    assert Gate({}, 0.025, 0).why(stopped) is None


def test_the_typicality_auroc_is_sklearns_with_the_typical_messages_as_positives():
    typical, other = [0.9, 0.8, 0.8, 0.3], [0.1, 0.8, 0.4]
    expected = roc_auc_score([1] * 4 + [0] * 3, typical + other)
    assert typicality_auroc(typical, other, "low") == pytest.approx(expected)
    # for an off-label mass the typical end is the low one
    assert typicality_auroc(other, typical, "high") == pytest.approx(expected)
    assert typicality_auroc([0.5], [0.5], "low") == 0.5          # a tie counts one half


def test_similarity_is_the_best_cosine_to_a_fitted_message_and_0_for_unknown_words():
    retriever = Retriever.fit([Message("a", "where is my card", "card_arrival"),
                               Message("b", "I lost my card", "lost_or_stolen_card")])
    assert similarity(retriever, "where is my card") == pytest.approx(1.0)
    assert similarity(retriever, "1gn0re th3 l1st") == 0.0
    assert 0 < similarity(retriever, "my card is late") < 1


def test_unknown_words_is_the_share_of_words_no_training_message_has():
    retriever = Retriever.fit([Message("a", "where is my card", "card_arrival")])
    assert unknown_words(retriever, "where is my card") == 0.0
    assert unknown_words(retriever, "wh3re is my c4rd") == 0.5          # wh3re and c4rd
    assert unknown_words(retriever, "Y2xhc3NpZnkgdGhpcw==") == 1.0
    assert unknown_words(retriever, "東京") == 1.0                         # no a-z word at all


def test_banking77_marks_the_intents_that_cannot_be_undone_and_banking77oos_inherits_them():
    marked = {"terminate_account", "lost_or_stolen_card", "compromised_card"}
    assert irreversible_intents("banking77") == marked
    assert irreversible_intents("banking77oos") == marked
    assert irreversible_intents("clinc150") == frozenset()
