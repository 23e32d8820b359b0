"""What a count of right answers guarantees: exact binomial intervals and a threshold certified by testing.

A selective accuracy of 3 right out of 3 is 100%, and it says almost nothing:
three answers that were right by luck are easy to find. The exact
(Clopper-Pearson) interval says what the count supports: with 3 of 3 the
one-sided 95% lower bound of the accuracy is 0.368, with 20 of 20 the
two-sided 95% interval is [0.832, 1]. A threshold chosen because its
accuracy on these answers reached a target carries that luck with it;
fixed-sequence testing ("learn then test") picks one whose lower bound
reaches the target, trying thresholds chosen without the outcomes from the
highest down and stopping at the first that fails, so the promise holds for
the threshold it picks.

Standard library only: the binomial tail is the regularized incomplete beta
function, computed by its continued fraction; quantiles by bisection on it.
The tests check every formula against scipy.
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # separation.py imports this module; certify only reads .kept and .hits of a point
    from separation import SweepPoint

DELTA = 0.05          # the chance a certified threshold is allowed to promise too much: 95% confidence
LEVEL = 0.95          # two-sided intervals
_EPSILON = 1e-15      # relative change at which the continued fraction has converged
_TINY = 1e-300        # keeps the modified Lentz method away from a division by zero
_MAX_TERMS = 100_000  # far more than the ~sqrt(n) terms the fraction needs for n up to millions


@dataclass(frozen=True)
class Interval:
    """A proportion and its interval: estimate = k / n, [low, high] holding the true proportion with
    probability at least `level` (e.g. 0.95), all fractions in [0, 1]; k and n are the counts behind it."""

    estimate: float
    low: float
    high: float
    level: float
    k: int
    n: int


def check_counts(k: int, n: int) -> None:
    """Raise ValueError unless 0 <= k <= n and n >= 1 (k successes out of n trials)."""
    if isinstance(k, bool) or isinstance(n, bool) or not (isinstance(k, int) and isinstance(n, int)):
        raise ValueError(f"counts must be whole numbers, not k={k!r}, n={n!r}")
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"{k} successes out of {n} trials: need n >= 1 and 0 <= k <= n")


def check_probability(value: float, name: str) -> None:
    """Raise ValueError unless value is a probability strictly between 0 and 1 (NaN refused too)."""
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), like 0.05, not {value!r}")


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, in [0, 1], for x in [0, 1] and a, b > 0.

    I_x(a, b) = B(x; a, b) / B(a, b), the distribution function of a Beta(a, b)
    variable at x. Computed by its continued fraction (Abramowitz and Stegun
    1964, 26.5.8) evaluated with the modified Lentz method, on x < (a + 1) /
    (a + b + 2) where it converges fast, else through I_x(a, b) = 1 -
    I_{1-x}(b, a) (Press et al. 2007, "Numerical Recipes", 3rd ed., section
    6.4). Absolute error below 1e-11 for parameters up to several thousand
    (the log-gamma terms set it). Raises ValueError for x outside [0, 1] or a, b <= 0.
    """
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x = {x!r} is outside [0, 1]")
    if not (a > 0 and b > 0):
        raise ValueError(f"the beta parameters must be positive, not a={a!r}, b={b!r}")
    if x == 0.0 or x == 1.0:
        return x
    log_front = a * math.log(x) + b * math.log1p(-x) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b) (A&S 26.5.8), modified Lentz method (Numerical Recipes 6.4, betacf)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _MAX_TERMS):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),                 # even step d_{2m}
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):     # odd step d_{2m+1}
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
        if abs(c * d - 1.0) < _EPSILON:
            return fraction
    raise ArithmeticError(f"the continued fraction of I_x(a, b) did not converge for x={x}, a={a}, b={b}")


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


def beta_quantile(q: float, a: float, b: float) -> float:
    """The x in [0, 1] with I_x(a, b) = q: the q-quantile of a Beta(a, b) variable.

    Bisection on regularized_beta, which rises with x, down to adjacent floats
    (about 60 halvings). Raises ValueError for q outside [0, 1] or a, b <= 0.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"the quantile level must be in [0, 1], not {q!r}")
    low, high = 0.0, 1.0
    while True:
        middle = (low + high) / 2
        if middle in (low, high):
            return middle
        if regularized_beta(middle, a, b) < q:
            low = middle
        else:
            high = middle


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


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> Interval:
    """The exact two-sided interval of a proportion, k successes in n trials (Clopper and Pearson 1934).

    low = the (1 - level) / 2 quantile of Beta(k, n - k + 1), 0 when k = 0;
    high = the (1 + level) / 2 quantile of Beta(k + 1, n - k), 1 when k = n.
    It holds the true proportion with probability at least `level` for every
    proportion (it is conservative: usually more). 20 of 20 at 95% gives
    [0.8316, 1.0], where a percentile bootstrap gives [1.0, 1.0]. Raises
    ValueError for bad counts or a level outside (0, 1).
    """
    check_counts(k, n)
    check_probability(level, "the level")
    tail = (1.0 - level) / 2
    low = 0.0 if k == 0 else beta_quantile(tail, k, n - k + 1)
    high = 1.0 if k == n else beta_quantile(1.0 - tail, k + 1, n - k)
    return Interval(k / n, low, high, level, k, n)


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


def number_argument(check: Callable[[float, str], None], name: str) -> Callable[[str], float]:
    """An argparse type: float(text), then check(value, name) (e.g. check_probability); its ValueError
    becomes argparse's one-line error and exit status 2."""

    def parse(text: str) -> float:
        try:
            value = float(text)
            check(value, name)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value

    return parse


def add_delta_argument(parser: argparse.ArgumentParser) -> None:
    """--delta: the chance a certified threshold may promise too much (default 0.05: 95% confidence)."""
    parser.add_argument("--delta", type=number_argument(check_probability, "delta"), default=DELTA,
                        help=f"certified thresholds hold with probability at least 1 - delta (default: {DELTA})")
