"""Fit on the calibration split, report on another: the files a calibrating script reads, and the checks on them.

    from calib_split import add_fit_arguments, load_fit_and_report
    add_fit_arguments(parser)                                  # --split, --results, --dataset, --calib, --other-model
    calib_path, calib, path, records = load_fit_and_report(parser.parse_args())

Post 05 is the first to fit something (a temperature per step) on one
split and judge it on another, so the calibration split's options are
defined here, on top of post 03's results reader (saved_answers.py), which
reads one split: --calib names the file to fit on (default: your own
complete calib run, else the reference one), and two refusals guard the
pair: a report that shares messages with the calibration file (in-sample)
and answers of two models or builds (unless --other-model asks for it).
Every later script that fits something on calib reads its files through
this module.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from registry import add_dataset_argument
from results_record import ResultsLine
from saved_answers import Loaded, add_results_arguments, describe, read_split


def add_calib_files(parser: argparse.ArgumentParser) -> None:
    """--calib (the calibration file a script fits on) and --other-model (fit one model, report another)."""
    parser.add_argument("--calib", type=Path, help="results file to fit on (default: your own complete calib run, "
                        "else the reference one)")
    parser.add_argument("--other-model", action="store_true",
                        help="fit on one model's calibration answers and report on another model's, on purpose "
                             "(refused otherwise: a calibration does not carry over)")


def add_fit_arguments(parser: argparse.ArgumentParser, dataset: str = "banking77") -> None:
    """post 03's --split, --results and --dataset (saved_answers.add_results_arguments), then --calib and
    --other-model: the options of a script that fits on calib and reports on --split."""
    add_results_arguments(parser, dataset)
    add_calib_files(parser)


def add_calib_arguments(parser: argparse.ArgumentParser, dataset: str = "banking77") -> None:
    """--dataset, --calib and --other-model, for a script that fits on calib and reports on no file (it
    answers a message of its own)."""
    add_dataset_argument(parser, dataset)
    add_calib_files(parser)


def load_fit_and_report(args: argparse.Namespace) -> tuple[Path, list[ResultsLine], Path, list[ResultsLine]]:
    """The calibration records to fit on and the records to report on, named by add_fit_arguments.

    Returns (calib path, calib answers, path, answers) and prints one line
    naming each file, its model and its error lines. Raises as read_split does.
    """
    # The file named on the command line first: a missing --results is the error to see, not the default calib's.
    report = read_split(args.split, args.results, args.dataset, "--results")
    calib = read_split("calib", args.calib, args.dataset, "--calib")
    check_fit_and_report(calib, report, getattr(args, "other_model", False), args.split)
    print(f"fit on    {describe(calib.path, calib.records, len(calib.errors))}")
    print(f"report on {describe(report.path, report.records, len(report.errors))}")
    return calib.path, calib.records, report.path, report.records


def check_fit_and_report(calib: Loaded, report: Loaded, other_model: bool = False, split: str = "test") -> None:
    """Raise ValueError when the split fitted on and the split reported on do not go together: the report on
    the test split sharing a message with the calibration file (a calibration judged on the answers it was
    fitted on: in-sample, always refused; --split calib asks for the calibration split itself, in-sample on
    purpose), or answers of two models or builds (refused unless other_model, then one warning line: a
    model's calibration does not carry over to another)."""
    shared = {line.id for line in calib.records + calib.errors} & {line.id for line in report.records + report.errors}
    if shared and split != "calib":
        raise ValueError(f"{calib.path} and {report.path} share {len(shared)} messages (e.g. {sorted(shared)[0]!r}): "
                         "a calibration fitted on the answers it is judged on is in-sample; give the calibration "
                         "split's file to --calib")
    fitted = sorted({(line.model, line.build) for line in calib.records})
    reported = sorted({(line.model, line.build) for line in report.records})
    if fitted != reported:
        which = f"{', '.join(f'{m} ({b})' for m, b in fitted)} against {', '.join(f'{m} ({b})' for m, b in reported)}"
        if not other_model:
            raise ValueError(f"the calibration and the report come from different runs: {which}; a fit does not carry "
                             "over to another model or build (give --other-model to do it on purpose)")
        print(f"warning: fitting on one model's answers and reporting on another's ({which}), as --other-model asks")
