"""Answers of other kinds of run than run.py's (variants), and a post's script run on them.

    python3 08-routes/beyond/variants.py 03-where-confidence-comes-from/summary.py --variant shortlist5 --split calib
    python3 08-routes/beyond/variants.py 07-separation/out_of_scope.py --variant combined5
    python3 08-routes/beyond/variants.py 04-is-the-confidence-honest/ece.py --dataset banking77fields --field scope

    from variants import add_variant_argument, read_variant, reading
    loaded = read_variant("calib", None, "banking77", "combined5")   # a saved_answers.Loaded
    with reading("combined5"):                                        # post 03's reader reads combined5's files
        ...

The scripts of this folder write answers of other kinds than post 03's
run.py, in the same results-line format: shortlist.py (the model choosing
among the retriever's top K: shortlist5, exampleshortlist5, ...), combined.py
(combined5, ...) and baseline_lines.py (a logistic regression alone: linear5,
...). Each kind is a variant, the middle of its file names,
<dataset>-<variant>-<split>.jsonl: a reader's own runs go beside run.py's in
03-where-confidence-comes-from/results/, the committed ones are in
08-routes/reference/.

Post 03's reader (saved_answers.py) knows run.py's files only. This module
wraps it from here, without a branch in it: inside reading(variant), the two
functions that name run.py's file and command (own_results_path,
run_command) name the variant's file and the script that writes it, so that
saved_answers.read_split, default_results and describe, and every post
script that reads through them, read the variant's file where they read
run.py's (your own complete run, else the committed one). Run as a script,
this module runs a post's script that way, --variant added to its options.
A plotting script then saves its figure under the name of run.py's: give
it --png to keep both.
"""
from __future__ import annotations

import argparse
import re
import runpy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
import saved_answers
from registry import DATASETS, SPLITS
from saved_answers import Loaded, later_reference_folders
from script_exit import exit_on_bad_input

# A variant's name: lower-case letters, then digits if any ("abc5"): the middle of its file names.
VARIANT = re.compile(r"[a-z]+[0-9]*")
# post 03's own functions, kept before reading() swaps them
PLAIN_RESULTS_PATH, PLAIN_RUN_COMMAND = saved_answers.own_results_path, saved_answers.run_command


def known_variants() -> list[str]:
    """The variants some results file has: the middle of <dataset>-<variant>-<split>.jsonl names in the reader's
    own results folder and in the reference folders of the post folders (sorted; [] before any is written)."""
    found = set()
    for folder in (saved_answers.OWN_RESULTS, *later_reference_folders()):
        for path in folder.glob("*.jsonl"):
            for dataset in DATASETS:
                for split in SPLITS:
                    head, tail = f"{dataset}-", f"-{split}.jsonl"
                    middle = path.name[len(head):-len(tail)] if path.name.startswith(head) and path.name.endswith(tail) else ""
                    if middle and VARIANT.fullmatch(middle):
                        found.add(middle)
    return sorted(found)


def variant_name(text: str) -> str:
    """--variant's value: "" (run.py's plain answers) or a name of lower-case letters and digits;
    argparse.ArgumentTypeError otherwise."""
    if text and not VARIANT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a variant: lower-case letters, then digits (e.g. abc5)")
    return text


def add_variant_argument(parser: argparse.ArgumentParser) -> None:
    """--variant: which kind of run's answers to read ("" by default: run.py's)."""
    parser.add_argument("--variant", type=variant_name, default="",
                        help=f"answers of another kind of run than run.py's, read from <dataset>-<variant>-<split>.jsonl: "
                             f"{', '.join(known_variants()) or 'none written yet'} (default: run.py's answers)")


def results_name(dataset: str, split: str, variant: str = "") -> str:
    """The file name of a results file: run.py's "banking77-test.jsonl", a variant's "banking77-<variant>-test.jsonl".
    Raises ValueError for an unknown split."""
    plain = DATASETS[dataset].results_name(split)  # checks the split
    return f"{dataset}-{variant}-{split}.jsonl" if variant else plain


def own_results_path(dataset: str, split: str, variant: str = "") -> Path:
    """Where a reader's own answers of `variant` go: 03-where-confidence-comes-from/results/<results_name>, beside
    run.py's, so that every post reads them alike."""
    return saved_answers.OWN_RESULTS / results_name(dataset, split, variant)


# shortlist.py's and combined.py's variants: the source's prefix ("" for knn), then the shortlist's K
SHORTLIST_RUN = re.compile(r"(linear|example)?(shortlist|combined)([0-9]+)")


def run_command(dataset: str, split: str, variant: str = "", out: Path | None = None) -> str:
    """The command that writes the answers of dataset, split and variant: run.py's for plain answers;
    shortlist.py's and combined.py's for theirs (shortlist5, linearcombined5...), with --dataset for any dataset
    but BANKING77, as a task needs; for another variant, the script of this folder that writes it."""
    if not variant:
        return PLAIN_RUN_COMMAND(dataset, split, out)
    run = SHORTLIST_RUN.fullmatch(variant)
    if not run:
        return f"the script that writes {variant} answers (08-routes/beyond/README.md names it)"
    prefix, kind, k = run.groups()
    options = ([f"--dataset {dataset}"] if dataset != "banking77" else []) + (
        [f"--shortlist {k}"] if k != "5" else []) + ([f"--source {prefix}{'s' if prefix == 'example' else ''}"]
                                                    if prefix else [])
    if kind == "combined":  # from both shortlist runs, which it names if they are missing
        return " ".join(["python3 08-routes/beyond/combined/combined.py", *options])
    split_option = ["--split calib"] if split == "calib" else []
    return " ".join(["python3 08-routes/beyond/combined/shortlist.py", *options, *split_option])


@contextmanager
def reading(variant: str) -> Iterator[None]:
    """Inside the block, post 03's reader reads `variant`'s files where it reads run.py's ("" changes nothing):
    saved_answers' own_results_path and run_command name the variant's file and writer, and are put back after."""
    if not variant:
        yield
        return
    plain = saved_answers.own_results_path, saved_answers.run_command
    saved_answers.own_results_path = lambda dataset, split: own_results_path(dataset, split, variant)
    saved_answers.run_command = lambda dataset, split, out=None: run_command(dataset, split, variant, out)
    try:
        yield
    finally:
        saved_answers.own_results_path, saved_answers.run_command = plain


def default_results(dataset: str, split: str, variant: str = "") -> tuple[Path, str]:
    """saved_answers.default_results for the files of `variant`: (path, why it is the one read)."""
    with reading(variant):
        return saved_answers.default_results(dataset, split)


def read_variant(split: str, results: Path | None = None, dataset: str = "banking77", variant: str = "",
                 given_by: str = "") -> Loaded:
    """saved_answers.read_split of `variant`'s file. Raises as read_split does; a missing file of a variant no
    file has also names the variants there are."""
    with reading(variant):
        try:
            return saved_answers.read_split(split, results, dataset, given_by)
        except FileNotFoundError as missing:
            known = known_variants()
            if not variant or variant in known:
                raise
            raise FileNotFoundError(f"{missing} (the kinds of run there are: {', '.join(known) or 'none'})") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("script", type=Path, help="a post's script that reads saved answers, with its own options "
                        "after it (e.g. 03-where-confidence-comes-from/summary.py --split calib)")
    add_variant_argument(parser)
    parser.add_argument("--field", metavar="KEY", help="a field's answers (fields/field_report.py writes them): "
                        "the same as --variant field<KEY>")
    args, options = parser.parse_known_args()
    if not args.script.is_file():
        parser.error(f"{args.script} is not a script")
    if args.field:
        if args.variant:
            parser.error("give --field or --variant, not both")
        args.variant = variant_name(f"field{args.field}")
    known = known_variants()
    if args.variant and args.variant not in known:  # the script would only say that its file is missing
        parser.error(f"no answers of kind {args.variant!r}; the kinds of run there are: {', '.join(known) or 'none'}")
    sys.argv = [str(args.script), *options]  # the script parses its own options as if run directly
    with reading(args.variant):
        runpy.run_path(str(args.script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_bad_input(main))
