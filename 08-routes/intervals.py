"""How much a count of right answers supports: the exact (Clopper-Pearson) interval of a proportion.

Post 08 fits its act threshold on the calibration split and reports, on the
test split, the share of answers acted on (coverage) and the share of those
that were right (precision). A share of 3 right out of 3 is 100% and says
almost nothing; the exact interval says what the counts support: 20 of 20
give [0.831, 1] at 95%, 300 of 310 give [0.941, 0.985]. routes.py prints
both shares with these intervals.

Standard library only: the binomial distribution's tail is the regularized
incomplete beta function, computed by its continued fraction; quantiles by
bisection on it. The tests check every formula against scipy.
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

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


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> Interval:
    """The exact two-sided interval of a proportion, k successes in n trials (Clopper and Pearson 1934).

    low = the (1 - level) / 2 quantile of Beta(k, n - k + 1), 0 when k = 0;
    high = the (1 + level) / 2 quantile of Beta(k + 1, n - k), 1 when k = n.
    It holds the true proportion with probability at least `level` for every
    proportion (it is conservative: usually more). 20 of 20 at 95% gives
    [0.8315, 1.0], where a percentile bootstrap gives [1.0, 1.0]. Raises
    ValueError for bad counts or a level outside (0, 1).
    """
    check_counts(k, n)
    check_probability(level, "the level")
    tail = (1.0 - level) / 2
    low = 0.0 if k == 0 else beta_quantile(tail, k, n - k + 1)
    high = 1.0 if k == n else beta_quantile(1.0 - tail, k + 1, n - k)
    return Interval(k / n, low, high, level, k, n)


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


def percent_down(value: float) -> str:
    """A lower bound as a percentage with one decimal, rounded down: 0.98467 is '98.4%', never '98.5%'.

    A bound printed beside a target must not claim more than it is. The 1e-9
    keeps a value stored just below a boundary (0.985 as 0.98499...) at it.
    """
    return f"{math.floor(1000 * value + 1e-9) / 10:.1f}%"


def percent_up(value: float) -> str:
    """An upper bound as a percentage with one decimal, rounded up: 0.98412 is '98.5%', never '98.4%'."""
    return f"{math.ceil(1000 * value - 1e-9) / 10:.1f}%"
