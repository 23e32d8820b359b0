"""What a count of right answers guarantees about new answers: a threshold certified by testing.

Beyond post 08 (its intervals.py gives the exact two-sided interval of a
share). A threshold chosen because its accuracy on these answers reached a
target carries their luck with it: 3 right of 3 reach 99%, and their
one-sided 95% lower bound is 0.368. Fixed-sequence testing ("learn then
test") picks one whose exact lower bound reaches the target, trying
thresholds chosen without the outcomes from the highest down and stopping at
the first that fails, so the promise holds for the threshold it picks.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from intervals import beta_quantile, check_counts, check_probability, number_argument, regularized_beta

if TYPE_CHECKING:  # certify only reads .kept and .hits of a point
    from separation import SweepPoint

DELTA = 0.05          # the chance a certified threshold is allowed to promise too much: 95% confidence


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): the chance of k or more successes in n trials of probability p.

    P(X >= k) = I_p(k, n - k + 1) for 1 <= k <= n (Abramowitz and Stegun 1964,
    26.5.24); 1 for k <= 0 and 0 for k > n. This is the p-value of k right
    answers out of n against "the accuracy is only p". Raises ValueError for n
    < 0 or p outside [0, 1].
    """
    if n < 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"need n >= 0 and p in [0, 1], not n={n!r}, p={p!r}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return regularized_beta(p, k, n - k + 1)


def lower_bound(k: int, n: int, delta: float = DELTA) -> float:
    """The one-sided exact lower confidence bound of a proportion, k successes in n trials, level 1 - delta.

    The p with P(X >= k | p) = delta, X ~ Binomial(n, p): the delta-quantile of
    Beta(k, n - k + 1), and 0 when k = 0 (Clopper and Pearson 1934, "The use of
    confidence or fiducial limits illustrated in the case of the binomial").
    The true proportion is at least this with probability >= 1 - delta. With
    k = n it is delta ** (1 / n): 3 of 3 at delta 0.05 gives 0.368. Raises
    ValueError for counts that are not 0 <= k <= n, n >= 1, or delta outside
    (0, 1).
    """
    check_counts(k, n)
    check_probability(delta, "delta")
    return 0.0 if k == 0 else beta_quantile(delta, k, n - k + 1)


def certified(k: int, n: int, target: float, delta: float = DELTA) -> bool:
    """Whether k right out of n certify an accuracy of at least `target` at level 1 - delta.

    True when the binomial p-value P(X >= k | n, target) is at most delta,
    which is the same as lower_bound(k, n, delta) >= target (the bound is the
    p at which that p-value equals delta, and the p-value rises with p); one
    evaluation of the tail instead of a bisection. Raises ValueError for bad
    counts, a target outside (0, 1] or delta outside (0, 1).
    """
    check_counts(k, n)
    check_probability(delta, "delta")
    if not 0.0 < target <= 1.0:
        raise ValueError(f"the target accuracy must be in (0, 1], not {target!r}")
    return target < 1.0 and binomial_tail(k, n, target) <= delta


@dataclass(frozen=True)
class Certification:
    """The outcome of fixed-sequence testing on an accuracy-coverage curve.

    point: the lowest threshold certified (its SweepPoint: threshold, kept,
    right), None when none is. lower: its lower bound, in [0, 1]. first: the
    first point tested, the highest threshold that keeps enough answers for
    the target to be reachable at all (None: no threshold keeps that many).
    failed: the point where the testing stopped (None: every tested point
    passed) and failed_lower its bound. target, delta: as asked.
    """

    target: float
    delta: float
    point: SweepPoint | None
    lower: float | None
    first: SweepPoint | None
    failed: SweepPoint | None
    failed_lower: float | None

    @property
    def needed(self) -> int | None:
        """The fewest answers that can certify the target (all right, delta ** (1 / n) >= target); None for a
        target of 1, which no count certifies."""
        return None if self.target >= 1.0 else minimum_answers(self.target, self.delta)


def minimum_answers(target: float, delta: float = DELTA) -> int:
    """The smallest n whose n right out of n certify `target` at level 1 - delta: n >= ln(delta) / ln(target).

    (The lower bound of n out of n is delta ** (1 / n).) 199 for 98.5% at delta
    0.05, 29 for 90%. Raises ValueError for a target outside (0, 1) or delta
    outside (0, 1).
    """
    check_probability(target, "the target accuracy")
    check_probability(delta, "delta")
    n = max(1, math.ceil(math.log(delta) / math.log(target)))
    while n > 1 and certified(n - 1, n - 1, target, delta):   # guard against rounding of the logarithms
        n -= 1
    while not certified(n, n, target, delta):
        n += 1
    return n


def certify(points: list[SweepPoint], target: float, delta: float = DELTA) -> Certification:
    """The lowest of these thresholds whose selective accuracy is certified to reach `target` at level 1 - delta.

    points: the thresholds to try, highest first, each with the answers it
    keeps and how many of them were right (separation.SweepPoint; post 07's
    certified_coverage picks them). Fixed-sequence testing (Angelopoulos et
    al. 2021, "Learn then test: calibrating predictive algorithms to achieve
    risk control", section 3): test the thresholds in their order, each with
    the exact binomial test of "its accuracy is below the target"
    (certified()), and stop at the first that fails; the lowest one that
    passed is returned. A threshold whose accuracy is below the target can be
    returned only if the first such threshold in the order passed its test,
    which happens with probability at most delta: so the returned threshold's
    accuracy on new answers reaches the target with probability at least 1 -
    delta, if those answers and these are exchangeable (drawn from the same
    distribution). The accuracy of a threshold is P(right | confidence >=
    threshold); the test is conditional on the number kept, and so is the
    bound. The order, and so the thresholds, must not depend on which
    answers were right: learn-then-test fixes them before the outcomes are
    seen.

    Thresholds that keep so few answers that even all right could not pass
    (fewer than minimum_answers) carry no evidence; they are passed over, not
    counted as failures, or nothing could ever pass. That too depends on the
    number of answers only. Raises ValueError for a target outside (0, 1],
    delta outside (0, 1) or no points; a target of 1 is never certified (no
    count rules out an accuracy just below it).
    """
    if not points:
        raise ValueError("no points: there are no thresholds to test")
    check_probability(delta, "delta")
    if not 0.0 < target <= 1.0:
        raise ValueError(f"the target accuracy must be in (0, 1], not {target!r}")
    if target == 1.0:  # no count of right answers rules out an accuracy just below 1
        return Certification(target, delta, None, None, None, None, None)
    needed = minimum_answers(target, delta)
    tested = [p for p in points if p.kept >= needed]
    passed = None
    for point in tested:
        if not certified(point.hits, point.kept, target, delta):
            return Certification(target, delta, passed, bound_of(passed, delta), tested[0], point,
                                 lower_bound(point.hits, point.kept, delta))
        passed = point
    return Certification(target, delta, passed, bound_of(passed, delta), tested[0] if tested else None, None, None)


def bound_of(point: SweepPoint | None, delta: float = DELTA) -> float | None:
    """lower_bound of a point's right answers among those it keeps; None for no point."""
    return None if point is None else lower_bound(point.hits, point.kept, delta)


def confidence_percent(delta: float) -> str:
    """The confidence level 1 - delta as the scripts print it: "95%" for 0.05, "99.5%" for 0.005."""
    return f"{100 * (1 - delta):.10g}%"


def add_delta_argument(parser: argparse.ArgumentParser) -> None:
    """--delta: the chance a certified threshold may promise too much (default 0.05: 95% confidence)."""
    parser.add_argument("--delta", type=number_argument(check_probability, "delta"), default=DELTA,
                        help=f"certified thresholds hold with probability at least 1 - delta (default: {DELTA})")
