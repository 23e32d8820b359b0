"""The summary block of post 03: accuracy, confidence when right and wrong, off-label mass, ranges.

    python3 03-where-confidence-comes-from/summary.py                   # reference test split
    python3 03-where-confidence-comes-from/summary.py --split calib
    python3 03-where-confidence-comes-from/summary.py --results results/banking77-test.jsonl

run.py prints it at the end of a run; this prints it for any results file,
without a server.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from results_file import RESULTS, read_results  # noqa: E402

REFERENCE = RESULTS / "reference" / "qwen2.5-coder-1.5b-instruct-q4_k_m"
SPLITS = ("calib", "test")
DATASETS = ("banking77", "clinc150")

RANGES = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 0.99), (0.99, 1.0))


def in_range(confidence: float, low: float, high: float) -> bool:
    """Ranges are [low, high), the last one [0.99, 1.0] with 1.0 included."""
    return low <= confidence < high or (high == 1.0 and confidence == 1.0)


def percentile(values: list[float], fraction: float) -> float:
    """The `fraction` quantile of values, interpolated linearly between order statistics.

    Position fraction x (n - 1) in the sorted values, as numpy.percentile's
    default ("linear", Hyndman and Fan 1996, definition 7). Raises ValueError on
    no values or a fraction outside [0, 1].
    """
    if not values:
        raise ValueError("no values to take a percentile of")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"the fraction must be in [0, 1], not {fraction!r}")
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])



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
                  f"95th percentile {percentile(masses, 0.95):.4f}, max {max(masses):.4f}")
    print(f"\n{'confidence':<12} {'answers':>7} {'accuracy':>9}")
    for low, high in RANGES:
        inside = [r for r in records if in_range(r["confidence"], low, high)]
        accuracy = f"{100 * sum(r['correct'] for r in inside) / len(inside):8.1f}%" if inside else "        -"
        print(f"{low:.2f}-{high:<7.2f} {len(inside):7d} {accuracy}")


def add_results_arguments(parser: argparse.ArgumentParser, fits_on_calib: bool = False,
                          dataset: str = "banking77") -> None:
    """--dataset, --split and --results (and --calib for scripts that fit on the calibration split).

    The same options in every script that reads run.py's files; defaults are
    the committed reference files of `dataset` (BANKING77 unless a script is
    about another).
    """
    parser.add_argument("--split", choices=SPLITS, default="test", help="which reference split (default: test)")
    parser.add_argument("--results", type=Path, help="a results file of run.py instead of the reference one")
    if fits_on_calib:
        add_calib_arguments(parser, dataset)
    else:
        add_dataset_argument(parser, dataset)


def add_dataset_argument(parser: argparse.ArgumentParser, dataset: str = "banking77") -> None:
    """--dataset: banking77 or clinc150 (default: `dataset`)."""
    parser.add_argument("--dataset", choices=DATASETS, default=dataset, help=f"which dataset (default: {dataset})")


def add_calib_arguments(parser: argparse.ArgumentParser, dataset: str = "banking77") -> None:
    """--dataset and --calib: the calibration split a script fits on."""
    add_dataset_argument(parser, dataset)
    parser.add_argument("--calib", type=Path, help="results file to fit on (default: the reference calib split)")


# The fields every later post reads from a line of run.py's results file.
REQUIRED_FIELDS = ("id", "status", "code", "gold_code", "correct", "right_group", "confidence", "model")


def check_record(record: dict, where: str) -> None:
    """Raise ValueError naming `where` (file and line) when a results line lacks a field or has a bad confidence."""
    missing = [name for name in REQUIRED_FIELDS if name not in record]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}: not a line written by 03's run.py")
    confidence = record["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
        raise ValueError(f"{where} has confidence {confidence!r}: it must be a number in [0, 1]")


def load_results(split: str, results: Path | None = None, dataset: str = "banking77") -> tuple[Path, list[dict]]:
    """The records of one split: `results` if given, else the committed reference file of `dataset`.

    Returns (path read, list of record dicts, one per message). Raises
    FileNotFoundError naming the run.py command that writes a missing file,
    and ValueError for an empty file or a line that is not a results record
    (check_record).
    """
    option = "" if dataset == "banking77" else f" --dataset {dataset}"
    command = f"python3 03-where-confidence-comes-from/run.py{option} --split {split}"
    if results:
        path = Path(results)
        command += f" --out {path}"
    else:
        path = REFERENCE / f"{dataset}-{split}.jsonl"
        # run.py writes to results/, not over the reference: say how to point a script at that file
        command += f", then pass --results results/{dataset}-{split}.jsonl"
    records = read_results(path, command)
    if not records:
        raise ValueError(f"{path} holds no answers; write it with: {command}")
    for number, record in enumerate(records, start=1):
        check_record(record, f"{path} record {number}")
    return path, records


def load_fit_and_report(args: argparse.Namespace) -> tuple[Path, list[dict], Path, list[dict]]:
    """The calibration records to fit on and the records to report on, named by add_results_arguments(fits_on_calib=True).

    Returns (calib path, calib records, path, records) and prints one line
    naming each file and its model. Raises as load_results does.
    """
    calib_path, calib = load_results("calib", args.calib, args.dataset)
    path, records = load_results(args.split, args.results, args.dataset)
    print(f"fit on    {describe(calib_path, calib)}")
    print(f"report on {describe(path, records)}")
    return calib_path, calib, path, records


def describe(path: Path, records: list[dict]) -> str:
    """One line naming the file (relative to the repository when inside it) and the model(s) it holds."""
    root = RESULTS.parent
    path = Path(path).resolve()
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    return f"{shown}: model {', '.join(sorted({r['model'] for r in records}))}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    args = parser.parse_args()
    path, records = load_results(args.split, args.results, args.dataset)
    print(describe(path, records))
    print_summary(records)
    return 0


if __name__ == "__main__":
    from llama_http import exit_on_server_errors
    sys.exit(exit_on_server_errors(main))
