"""The summary block of post 03: accuracy, confidence when right and wrong, off-label mass, ranges.

Read by run.py after a run; later posts print it for any results file.
"""
from __future__ import annotations

import statistics

RANGES = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 0.99), (0.99, 1.0))


def in_range(confidence: float, low: float, high: float) -> bool:
    """Ranges are [low, high), the last one [0.99, 1.0] with 1.0 included."""
    return low <= confidence < high or (high == 1.0 and confidence == 1.0)


def percentile_95(values: list[float]) -> float:
    """The 95th percentile, interpolated between order statistics (statistics.quantiles, inclusive)."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=20, method="inclusive")[-1]


def print_summary(records: list[dict]) -> None:
    """The summary block of post 03; seconds are the requests' wall time added up (a resumed run counts all)."""
    n = len(records)
    if n == 0:
        print("\nno messages")
        return
    seconds = sum(r["wall_ms"] for r in records) / 1000
    right = [r for r in records if r["correct"]]
    wrong = [r for r in records if not r["correct"]]
    ok = [r for r in records if r["status"] == "ok"]
    rate = f" ({n / seconds:.2f} messages/s)" if seconds > 0 else ""
    print(f"\n{n} messages, {seconds:.0f} s of requests{rate}")
    failed = {s: sum(r["status"] == s for r in records) for s in ("invalid", "too_long", "error")}
    print(f"valid codes {len(ok)} ({100 * len(ok) / n:.1f}%)" + "".join(f", {s} {c}" for s, c in failed.items() if c))
    print(f"correct {len(right)} ({100 * len(right) / n:.1f}%), right group {sum(r['right_group'] for r in records)} "
          f"({100 * sum(r['right_group'] for r in records) / n:.1f}%)")
    for label, group in (("right", right), ("wrong", wrong)):
        if group:
            print(f"median confidence when {label}: {statistics.median(r['confidence'] for r in group):.3f}")
    for step in ("group", "intent"):
        masses = [r[f"off_label_{step}"] for r in ok]
        if masses:
            print(f"off-label mass, {step} step: median {statistics.median(masses):.4f}, "
                  f"95th percentile {percentile_95(masses):.4f}, max {max(masses):.4f}")
    print(f"\n{'confidence':<12} {'answers':>7} {'accuracy':>9}")
    for low, high in RANGES:
        inside = [r for r in records if in_range(r["confidence"], low, high)]
        accuracy = f"{100 * sum(r['correct'] for r in inside) / len(inside):8.1f}%" if inside else "        -"
        print(f"{low:.2f}-{high:<7.2f} {len(inside):7d} {accuracy}")
