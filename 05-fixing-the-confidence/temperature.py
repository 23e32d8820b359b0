"""Temperature scaling, one temperature per step, fitted on the calibration split.

    python3 05-fixing-the-confidence/temperature.py                 # fit on calib, report calib and test
    python3 05-fixing-the-confidence/temperature.py --results my-test-run.jsonl \\
        --calib my-calib-run.jsonl

A code is two decisions, so there are two temperatures: T_group for the group
letter and T_intent for the intent letter. Each divides the log-probabilities
of the valid letters at its step before they are renormalized; T > 1 flattens
the distribution (less confident), T < 1 sharpens it. Each T is the one that
minimizes the negative log-likelihood (NLL) of the right letter at its step on
the calibration split. Dividing by a positive T keeps the order of the
letters, so the predicted code never changes; only the confidence does.
Guo et al. (2017), "On calibration of modern neural networks", section 4.2.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from calib_split import add_fit_arguments, load_fit_and_report
from ece import N_BINS, ece, outcomes, reliability_bins
from plot import add_plot_arguments, draw_figure, has_display, png_path, reliability_figure
from results_record import STEPS, ResultsLine

BOUNDS = (0.05, 20.0)
# Golden-section search stops when the bracket on log T is this narrow.
LOG_T_TOLERANCE = 1e-10


@dataclass(frozen=True)
class StepExample:
    """One step of one answer: the renormalized distribution over the valid letters and the right letter."""

    distribution: dict[str, float]
    right_letter: str


@dataclass(frozen=True)
class TemperatureFit:
    """The fitted temperature of one step.

    temperature: T > 0. nll_before / nll_after: mean NLL in nats of the right
    letter at T = 1 and at T, over `examples` answers. skipped: answers left
    out because the right letter had probability 0 (missing from
    top_logprobs): their NLL is infinite at every T, so they say nothing about
    T. at_bound: "lower" or "upper" when the search ended on a bound of
    BOUNDS (the true optimum may lie beyond it), else None.
    """

    step: str
    temperature: float
    nll_before: float
    nll_after: float
    examples: int
    skipped: int
    at_bound: str | None


def log_scale(distribution: dict[str, float], temperature: float) -> dict[str, float]:
    """log of the scaled distribution: log softmax(log p / T), computed in log space; -inf for a letter at 0.

    distribution: letter -> probability in [0, 1], renormalized over the valid
    letters (post 03). log softmax(z)_i = z_i - (z_max + log1p(sum over the
    other letters of exp(z_j - z_max))): nothing is exponentiated that could
    underflow to 0 and then be logged, so a right letter at p = 1e-300 keeps a
    finite log at every T. A letter at probability 0 (missing from
    top_logprobs) stays at -inf for every T, and so does every letter of a
    step where all were missing. Raises ValueError for T <= 0.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, not {temperature!r}")
    scaled = {letter: math.log(p) / temperature for letter, p in distribution.items() if p > 0}
    if not scaled:
        return dict.fromkeys(distribution, -math.inf)
    top_letter = max(scaled, key=scaled.get)
    top = scaled[top_letter]
    norm = top + math.log1p(sum(math.exp(value - top) for letter, value in scaled.items() if letter != top_letter))
    return {letter: scaled[letter] - norm if letter in scaled else -math.inf for letter in distribution}


def scale(distribution: dict[str, float], temperature: float) -> dict[str, float]:
    """Renormalize p(letter)^(1/T) over the letters: softmax(log p / T), the exp of log_scale.

    A letter at probability 0 stays at 0 for every T. So does a step where
    every valid letter was missing (all of its mass off-label; it happens on
    a calib answer of a later post's dataset): the result is all zeros, and its confidence stays 0.
    Raises ValueError for T <= 0.
    """
    return {letter: math.exp(value) for letter, value in log_scale(distribution, temperature).items()}


def step_nll(examples: list[StepExample], temperature: float) -> float:
    """Mean negative log-likelihood (nats) of the right letter after scaling by T, from log_scale.

    Every example's right letter must have probability > 0 (see step_examples).
    Raises ValueError on an empty list.
    """
    if not examples:
        raise ValueError("no examples to score")
    return -sum(log_scale(e.distribution, temperature)[e.right_letter] for e in examples) / len(examples)


def step_examples(records: list[ResultsLine], step: str) -> tuple[list[StepExample], int]:
    """The examples that can be scored at one step, and how many were skipped for a right letter at 0.

    group step: every answer with status ok; the right letter is the gold
    group letter. intent step: only answers whose group was right, because
    only then is the gold intent letter among the letters on offer.
    """
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, not {step!r}")
    examples, skipped = [], 0
    for record in records:
        if record.status != "ok" or (step == "intent" and not record.right_group):
            continue
        example = StepExample(record.distribution(step), record.gold_letter(step))
        if example.distribution.get(example.right_letter, 0.0) > 0:
            examples.append(example)
        else:
            skipped += 1
    return examples, skipped


def golden_section(function, low: float, high: float, tolerance: float) -> float:
    """The x in [low, high] that minimizes a unimodal function, to within `tolerance`.

    Golden-section search (Kiefer 1953): each step keeps the part of the
    bracket that must hold the minimum and shrinks it by 0.618.
    """
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = function(c), function(d)
    while b - a > tolerance:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = function(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = function(d)
    return (a + b) / 2


def fit_temperature(examples: list[StepExample], step: str = "", bounds: tuple[float, float] = BOUNDS,
                    skipped: int = 0) -> TemperatureFit:
    """The T in `bounds` that minimizes step_nll on the examples.

    NLL is convex in 1/T (a log-sum-exp minus a linear term), hence unimodal
    in log T, so a golden-section search on log T finds the minimum. Where the
    NLL is flat (every example right with a top letter far ahead: the NLL is
    0 to the last digit for every small T), the search can stop anywhere on
    the flat stretch; so a bound whose NLL is no higher than the one found is
    taken instead, and flagged: the best T lies at it or beyond. Raises
    ValueError on no examples or bounds that are not 0 < low < high.
    """
    low, high = bounds
    if not 0 < low < high:
        raise ValueError(f"bounds must satisfy 0 < low < high, not {bounds}")
    if not examples:
        raise ValueError(f"no answers to fit the {step or 'step'} temperature on")
    log_t = golden_section(lambda x: step_nll(examples, math.exp(x)), math.log(low), math.log(high), LOG_T_TOLERANCE)
    temperature, at_bound = math.exp(log_t), None
    found = step_nll(examples, temperature)
    if step_nll(examples, low) <= found or log_t - math.log(low) < 1e-6:
        temperature, at_bound = low, "lower"
    elif step_nll(examples, high) <= found or math.log(high) - log_t < 1e-6:
        temperature, at_bound = high, "upper"
    return TemperatureFit(step, temperature, step_nll(examples, 1.0), step_nll(examples, temperature),
                          len(examples), skipped, at_bound)


def fit_temperatures(records: list[ResultsLine], bounds: tuple[float, float] = BOUNDS) -> dict[str, TemperatureFit]:
    """One fit per step ("group", "intent") on the calibration records."""
    fits = {}
    for step in STEPS:
        examples, skipped = step_examples(records, step)
        fits[step] = fit_temperature(examples, step, bounds, skipped)
    return fits


def scaled_confidence(record: ResultsLine, t_group: float, t_intent: float) -> float:
    """The confidence of a post 03 record after temperature scaling: P_T(group) x P_T(intent | group).

    The code stays the one in the record. A record without a code (status not
    ok) keeps confidence 0. With both temperatures 1 this gives back the
    record's own confidence.
    """
    if record.status != "ok":
        return 0.0
    return (scale(record.group_distribution, t_group)[record.group_letter]
            * scale(record.intent_distribution, t_intent)[record.intent_letter])


def scaled_confidences(records: list[ResultsLine], fits: dict[str, TemperatureFit]) -> list[float]:
    """scaled_confidence for every record with the fitted temperatures."""
    return [scaled_confidence(r, fits["group"].temperature, fits["intent"].temperature) for r in records]


def step_honesty(records: list[ResultsLine], step: str, temperature: float) -> tuple[int, float, float]:
    """One step on its own: (answers, how often the chosen letter was right, mean P_T(chosen letter)).

    group step: every answer with status ok. intent step: answers whose group
    was right (the only ones where the intent letter can be right). A step is
    honest on average when the two fractions (in [0, 1]) agree.
    """
    rows = [r for r in records if r.status == "ok" and (step == "group" or r.right_group)]
    if not rows:
        return 0, 0.0, 0.0
    right = sum(r.letter(step) == r.gold_letter(step) for r in rows)
    mean_p = sum(scale(r.distribution(step), temperature)[r.letter(step)] for r in rows)
    return len(rows), right / len(rows), mean_p / len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fit_arguments(parser)
    add_plot_arguments(parser, "temperature")
    args = parser.parse_args()

    calib_path, calib, path, records = load_fit_and_report(args)
    print()
    fits = fit_temperatures(calib)

    print(f"{'step':<7} {'T':>7} {'answers':>8} {'skipped':>8} {'NLL calib':>17}")
    for fit in fits.values():
        bound = f"  (hit the {fit.at_bound} bound of {BOUNDS}: the best T may lie beyond)" if fit.at_bound else ""
        print(f"{fit.step:<7} {fit.temperature:7.3f} {fit.examples:8d} {fit.skipped:8d} "
              f"{fit.nll_before:7.4f} -> {fit.nll_after:.4f}{bound}")
    print("\neach step alone on calib: how often the chosen letter was right, and its mean probability")
    print(f"{'step':<7} {'answers':>7} {'right':>7} {'mean P at T = 1':>16} {'at the fitted T':>16}")
    for step, fit in fits.items():
        answers, right, before = step_honesty(calib, step, 1.0)
        after = step_honesty(calib, step, fit.temperature)[2]
        print(f"{step:<7} {answers:7d} {right:7.3f} {before:16.3f} {after:16.3f}")
    if args.split != "calib":
        print(f"\n{'step':<7} NLL {args.split} at T = 1 -> at the fitted T")
        for step, fit in fits.items():
            examples, _ = step_examples(records, step)
            if examples:
                print(f"{step:<7} {step_nll(examples, 1.0):.4f} -> {step_nll(examples, fit.temperature):.4f}")

    print(f"\n{'split':<6} {'answers':>7} {'ECE before':>11} {'ECE after':>10} {'mean conf before':>17} {'after':>6} {'accuracy':>9}")
    panels = []
    for name, rows in (("calib", calib), (args.split, records)) if args.split != "calib" else (("calib", calib),):
        before, corrects = outcomes(rows)
        after = scaled_confidences(rows, fits)
        print(f"{name:<6} {len(rows):7d} {ece(before, corrects):11.4f} {ece(after, corrects):10.4f} "
              f"{sum(before) / len(rows):17.3f} {sum(after) / len(rows):6.3f} {sum(corrects) / len(rows):9.3f}")
        if name == args.split:
            panels = [(f"{name}, raw: ECE {ece(before, corrects):.3f}", reliability_bins(before, corrects, N_BINS)),
                      (f"{name}, temperature: ECE {ece(after, corrects):.3f}", reliability_bins(after, corrects, N_BINS))]

    before, corrects = outcomes(records)
    print(f"\nECE on {args.split}: {ece(before, corrects):.4f} raw -> {ece(scaled_confidences(records, fits), corrects):.4f} "
          f"with T_group {fits['group'].temperature:.3f}, T_intent {fits['intent'].temperature:.3f}")

    show = has_display() and not args.no_show
    draw_figure(lambda: reliability_figure(panels), png_path(args, "temperature", __file__), show)
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
