"""08-routes/beyond/service/service_measure.py's paired comparison of two services' acts, against the Wald
interval of a paired difference (Agresti 2013, 11.1) computed by hand."""
import math

from service_measure import paired_act_line


def rows(routes: str) -> list[dict]:
    """A service's rows for messages m0, m1, ...: 'a' act, anything else another route."""
    return [{"id": f"m{k}", "route": "act" if r == "a" else "ask"} for k, r in enumerate(routes)]


def test_the_paired_difference_of_acts_and_its_interval_by_hand():
    # 10 messages: both act on 3, only the first on 4, only the other on 1, neither on 2
    first, other = rows("aaaaaaa--" + "-"), rows("aaa----a--")
    line = paired_act_line("model+regression", first, "regression", other)
    # difference (7 - 4) / 10 = +30 points; se = sqrt(4 + 1 - 3^2 / 10) / 10 = sqrt(4.1) / 10
    half = 1.959963984540054 * math.sqrt(4.1) / 10
    assert line == (f"model+regression acts on 70.0%, regression on 40.0% of the same 10 messages: +30.0 points "
                    f"(95% interval {100 * (0.3 - half):+.1f} to {100 * (0.3 + half):+.1f}; acted on by one only: "
                    f"4 and 1)")


def test_only_the_messages_both_services_answered_are_paired_and_none_is_said():
    assert paired_act_line("a", rows("aa"), "b", rows("a-")[:1]).startswith("a acts on 100.0%, b on 100.0% of the same 1")
    assert paired_act_line("a", rows("aa"), "b", []) == "a against b: no message answered by both"
