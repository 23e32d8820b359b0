"""The summary block of post 03: accuracy, confidence when right and wrong, off-label mass, ranges.

    python3 03-where-confidence-comes-from/summary.py                   # test split: your run, else the reference
    python3 03-where-confidence-comes-from/summary.py --split calib
    python3 03-where-confidence-comes-from/summary.py --results my-run.jsonl

run.py prints it at the end of a run; this prints it for any results file,
without a server.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
import banking77
import clinc150
from results_file import read_results, results_folder

ROOT = Path(__file__).resolve().parents[1]
# run.py writes a reader's own runs here; the committed reference runs of the CPU default model are below it.
OWN_RESULTS = results_folder(__file__)
REFERENCE = ROOT / "results" / "reference" / "qwen2.5-coder-1.5b-instruct-q4_k_m"
SPLITS = ("calib", "test")
DATASETS = ("banking77", "clinc150")
SPLIT_SIZES = {"banking77": banking77.split_size, "clinc150": clinc150.split_size}

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



def print_summary(records: list[dict], title: str = "") -> None:
    """The summary block of post 03 for one results file; title names it ("banking77 test").

    Seconds are the requests' wall time added up (a resumed run counts all).
    Off-label masses are over the answers with a code, in percent.
    """
    n = len(records)
    if n == 0:
        print(f"\n{title}: no messages")
        return
    seconds = sum(r["wall_ms"] for r in records) / 1000
    right = [r for r in records if r["correct"]]
    wrong = [r for r in records if not r["correct"]]
    ok = [r for r in records if r["status"] == "ok"]
    rate = f" ({n / seconds:.2f} messages/s)" if seconds > 0 else ""
    print(f"\n{title}: {n} messages in {seconds:.0f} s of requests{rate}")
    failed = {s: sum(r["status"] == s for r in records) for s in ("invalid", "too_long", "error")}
    print(f"  valid codes: {len(ok)} ({100 * len(ok) / n:.1f}%)" + "".join(f", {s} {c}" for s, c in failed.items() if c))
    print(f"  correct: {len(right)} ({100 * len(right) / n:.1f}%), right group: "
          f"{sum(r['right_group'] for r in records)} ({100 * sum(r['right_group'] for r in records) / n:.1f}%)")
    for label, group in (("right", right), ("wrong", wrong)):
        if group:
            print(f"  median confidence when {label}: {statistics.median(r['confidence'] for r in group):.3f}")
    for step in ("group", "intent"):
        masses = [100 * r[f"off_label_{step}"] for r in ok]
        if masses:
            print(f"  off-label mass at the {step} step: median {statistics.median(masses):.2f}%, "
                  f"95th percentile {percentile(masses, 0.95):.2f}%, max {max(masses):.2f}%")
    print(f"\n  {'confidence':<12} {'messages':>8} {'correct':>9}")
    for low, high in RANGES:
        inside = [r for r in records if in_range(r["confidence"], low, high)]
        accuracy = f"{100 * sum(r['correct'] for r in inside) / len(inside):8.1f}%" if inside else "        -"
        print(f"  {low:.2f}-{high:<7.2f} {len(inside):8d} {accuracy}")


def add_results_arguments(parser: argparse.ArgumentParser, fits_on_calib: bool = False,
                          dataset: str = "banking77") -> None:
    """--dataset, --split and --results (and --calib for scripts that fit on the calibration split).

    The same options in every script that reads run.py's files; defaults are
    the committed reference files of `dataset` (BANKING77 unless a script is
    about another).
    """
    parser.add_argument("--split", choices=SPLITS, default="test", help="which reference split (default: test)")
    parser.add_argument("--results", type=Path, help="a results file of run.py (default: your own complete run "
                        "in 03-where-confidence-comes-from/results/, else the committed reference run)")
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
    parser.add_argument("--calib", type=Path, help="results file to fit on (default: your own complete calib run, "
                        "else the reference one)")


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


def own_results_path(dataset: str, split: str) -> Path:
    """Where run.py writes a reader's own run: 03-where-confidence-comes-from/results/<dataset>-<split>.jsonl."""
    return OWN_RESULTS / f"{dataset}-{split}.jsonl"


def run_command(dataset: str, split: str) -> str:
    """The run.py command that writes the default results file of dataset and split."""
    option = "" if dataset == "banking77" else f" --dataset {dataset}"
    return f"python3 03-where-confidence-comes-from/run.py{option} --split {split}"


def count_lines(path: Path) -> int:
    """Non-empty lines of a file: the answers of a results file, without parsing them."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def default_results(dataset: str, split: str) -> tuple[Path, str]:
    """Which file a script reads when no --results is given, and why (one clause, for describe()).

    Your own run (own_results_path) when it holds every message of the split,
    else the committed reference run. A partial own run is never mixed with
    the reference: it is named with its count, and the reference is read.
    """
    own = own_results_path(dataset, split)
    shown = relative(own)
    if not own.exists():
        return REFERENCE / own.name, f"the committed reference run; no run of yours at {shown}"
    size, done = SPLIT_SIZES[dataset](split), count_lines(own)
    if done >= size:
        return own, f"your own run, all {size:,} messages"
    return REFERENCE / own.name, (f"the committed reference run; yours at {shown} has {done:,} of {size:,} "
                                  f"messages (finish it with: {run_command(dataset, split)})")


def load_results(split: str, results: Path | None = None, dataset: str = "banking77") -> tuple[Path, list[dict]]:
    """The records of one split: `results` if given, else default_results() of dataset and split.

    Returns (path read, list of record dicts, one per message). Raises
    FileNotFoundError naming the run.py command that writes a missing file,
    and ValueError for an empty file or a line that is not a results record
    (check_record).
    """
    command = run_command(dataset, split)
    path = Path(results) if results else default_results(dataset, split)[0]
    if results:
        command += f" --out {path}"
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


def relative(path: Path) -> Path:
    """path relative to the repository when it is inside it, else absolute."""
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def describe(path: Path, records: list[dict]) -> str:
    """One line naming the file, the model(s) it holds, and why this file was read.

    The reason is one of: your own complete run, the committed reference run
    (and what is wrong with yours, if anything), or a file given on the
    command line.
    """
    models = ", ".join(sorted({r["model"] for r in records}))
    why = "given on the command line"
    for dataset in DATASETS:
        for split in SPLITS:
            default, reason = default_results(dataset, split)
            if Path(path).resolve() == default.resolve():
                why = reason
    return f"{relative(path)}: model {models} ({why})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_results_arguments(parser)
    args = parser.parse_args()
    path, records = load_results(args.split, args.results, args.dataset)
    print(describe(path, records))
    print_summary(records, f"{args.dataset} {args.split}")
    return 0


if __name__ == "__main__":
    from llama_http import exit_on_server_errors
    sys.exit(exit_on_server_errors(main))
