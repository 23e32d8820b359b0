"""The answers run.py saved, read back: which file, checked line by line.

    from saved_answers import read_split
    loaded = read_split("test")                 # your own complete run, else the reference run
    loaded.path, loaded.records, loaded.errors

run.py writes a reader's own runs to 03-where-confidence-comes-from/results/;
the committed reference runs of the CPU default model are in
results/reference/ (and a later post that adds a kind of run of its own keeps
its reference runs in its folder's reference/). Without --results, a script
reads the reader's own run
once it holds an answer for every message of its split, else a complete
seeded sample of the reader's (run.py --sample N --seed S, in a file of its
own: sample_runs), else the reference run, and describe() says which and why. Each line is checked whole and read
as a ResultsLine (results_record.py); the lines with status "error" (failed requests, not
answers) are kept apart: every script reports them as their own count and
leaves them out of every figure. The options that name the file (--split,
--results, --dataset) are defined here once (add_results_arguments); a later
post that reads more than one split adds its own options in its own folder.
Every reader ends through 00-setup/toolbox/script_exit.py's exit_on_bad_input, so a
reader's mistake is one line.
"""
from __future__ import annotations

import argparse
import glob
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from registry import DATASETS, SPLITS, Dataset, add_dataset_argument
from results_file import is_final, numbered_records, relative, results_folder
from results_record import ResultsLine, answers_and_errors

ROOT = Path(__file__).resolve().parents[1]
# run.py writes a reader's own runs here; the committed reference runs of the CPU default model are below it.
OWN_RESULTS = results_folder(__file__)
REFERENCE_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
REFERENCE = ROOT / "results" / "reference" / REFERENCE_MODEL
# The end of a seeded sample's file name after its split's own name: banking77-test-sample400-seed0.jsonl.
SAMPLE_TAIL = re.compile(r"-sample([1-9][0-9]*)-seed([0-9]+)\.jsonl")


def later_reference_folders() -> list[Path]:
    """The reference/<model>/ folders of the post folders (a later post's own kinds of run; a model of its own,
    or none, has a folder of its own), sorted."""
    return sorted(path for path in ROOT.glob("[0-9][0-9]-*/reference/*") if path.is_dir())


def reference_path(name: str) -> Path:
    """The committed reference run of this file name: in results/reference/, else in a reference/ folder of the
    post folder that holds it (later_reference_folders); results/reference/<name> when none has it."""
    for folder in (REFERENCE, *later_reference_folders()):
        if (folder / name).exists():
            return folder / name
    return REFERENCE / name


def add_results_arguments(parser: argparse.ArgumentParser, dataset: str = "banking77") -> None:
    """--split, --results and --dataset: the same options in every script that reads run.py's files.

    Defaults are the committed reference files of `dataset` (BANKING77
    unless a script is about another).
    """
    parser.add_argument("--split", choices=SPLITS, default="test", help="which reference split (default: test)")
    parser.add_argument("--results", type=Path, help="a results file of run.py (default: your own complete run "
                        "in 03-where-confidence-comes-from/results/, else the committed reference run)")
    add_dataset_argument(parser, dataset)


def own_results_path(dataset: str, split: str) -> Path:
    """Where a reader's own answers go: 03-where-confidence-comes-from/results/<dataset>-<split>.jsonl."""
    return OWN_RESULTS / DATASETS[dataset].results_name(split)


def sample_results_path(dataset: str, split: str, size: int, seed: int) -> Path:
    """Where run.py --sample N --seed S writes: beside the whole split's own file, with -sample<N>-seed<S> added
    to its name (03-where-confidence-comes-from/results/banking77-test-sample400-seed0.jsonl)."""
    own = own_results_path(dataset, split)
    return own.with_name(f"{own.stem}-sample{size}-seed{seed}.jsonl")


def run_command(dataset: str, split: str, out: Path | None = None) -> str:
    """The run.py command that writes the answers file of dataset and split (with --out when `out` is given)."""
    option = "" if dataset == "banking77" else f" --dataset {dataset}"
    return f"python3 03-where-confidence-comes-from/run.py{option} --split {split}{f' --out {out}' if out else ''}"


def sample_command(dataset: str, split: str, size: int | str = "N", seed: int | None = None) -> str:
    """The run.py command that writes (or finishes) a seeded sample of dataset and split ("--sample N" as a
    placeholder when no size is given)."""
    return f"{run_command(dataset, split)} --sample {size}" + ("" if seed is None else f" --seed {seed}")


def count_answers(path: Path) -> int:
    """The lines of a results file with a final outcome (not an error line); a line that is not JSON counts as none
    (the loader names it when the file is read)."""
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            try:
                record = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                record = None
            count += isinstance(record, dict) and is_final(record)
    return count


def answered_ids(path: Path) -> set[str]:
    """The ids of the lines of a results file with a final outcome (error lines and lines that are not JSON
    objects are no answers)."""
    ids = set()
    with open(path, "rb") as handle:
        for line in handle:
            try:
                record = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                record = None
            if isinstance(record, dict) and is_final(record):
                ids.add(record.get("id"))
    return ids


@cache
def sample_ids(dataset: Dataset, split: str, size: int, seed: int) -> frozenset[str]:
    """The ids of labels.seeded_sample(split, size, seed): the messages a sample run asks, recomputed from the data
    (cached per process). Raises ValueError for a size the split does not allow."""
    from labels import seeded_sample  # only when a sample file is there: a reader loads no more modules otherwise
    return frozenset(m.id for m in seeded_sample(dataset.load_split(split), size, seed))


@dataclass(frozen=True)
class SampleRun:
    """A seeded sample run of the reader's (run.py --sample N --seed S, in its own file).

    path: its file. size: N, the messages of its sample. seed: S.
    answered: how many of its sample's messages the file answers (error
    lines are not answers). foreign: its answers to messages outside its
    sample (none unless a file was written with --out under this name).
    """

    path: Path
    size: int
    seed: int
    answered: int
    foreign: int

    @property
    def complete(self) -> bool:
        """Every message of its sample answered, and nothing else: read like a whole split's run."""
        return self.answered == self.size and not self.foreign


def sample_runs(dataset: str, split: str) -> list[SampleRun]:
    """The reader's seeded sample runs of dataset and split (sample_results_path names), largest N first, then
    lowest seed. Each file's answers are checked against its sample, recomputed from N and seed (sample_ids);
    a file whose N the split cannot give is not a sample of it and left out."""
    own = own_results_path(dataset, split)
    runs = []
    for path in own.parent.glob(f"{glob.escape(own.stem)}-sample*-seed*.jsonl"):
        match = SAMPLE_TAIL.fullmatch(path.name[len(own.stem):])
        if not match or int(match[1]) > DATASETS[dataset].split_size(split):
            continue
        size, seed = int(match[1]), int(match[2])
        wanted, found = sample_ids(DATASETS[dataset], split, size, seed), answered_ids(path)
        runs.append(SampleRun(path, size, seed, len(found & wanted), len(found - wanted)))
    return sorted(runs, key=lambda run: (-run.size, run.seed))


def sample_named(path: Path) -> tuple[str, str, int, int] | None:
    """(dataset, split, N, seed) when a file's name is a seeded sample's (sample_results_path), else None."""
    for dataset in DATASETS:
        for split in SPLITS:
            stem = own_results_path(dataset, split).stem
            match = SAMPLE_TAIL.fullmatch(Path(path).name[len(stem):]) if Path(path).name.startswith(stem) else None
            if match:
                return dataset, split, int(match[1]), int(match[2])
    return None


def default_results(dataset: str, split: str) -> tuple[Path, str]:
    """Which file a script reads when no --results is given, and why (one clause, for describe()).

    Your own run (own_results_path) when it holds an answer for every message
    of the split (error lines are not answers); else your largest complete
    seeded sample (sample_runs: every message of its sample answered; of two
    the same size, the lower seed), a part of the split but drawn evenly from
    all of it; else the committed reference run. A partial run is never mixed
    with another file: it is named with its count, and the next file is read.
    """
    own = own_results_path(dataset, split)
    size = DATASETS[dataset].split_size(split)
    if own.exists() and count_answers(own) >= size:
        return own, f"your own run, all {size:,} messages"
    for run in sample_runs(dataset, split):
        if run.complete:
            return run.path, f"your own seeded sample, {run.size:,} of {size:,} messages (seed {run.seed})"
    return reference_path(own.name), f"the committed reference run; {own_run_state(dataset, split)}"


def own_run_state(dataset: str, split: str) -> str:
    """Where the reader's own run of a split goes and how far it got, as a clause.

    "no run of yours at <path>", or for a partial run "yours at <path> has N
    of M messages (...)" with the three ways on: finish it (the run.py
    command), read it as it is (--results <path>; --calib for a script that
    fits on calib), or answer a seeded sample instead (run.py ... --sample
    N). An unfinished seeded sample (sample_runs) is named too, with the
    command that finishes it.
    """
    own = own_results_path(dataset, split)
    size = DATASETS[dataset].split_size(split)
    if not own.exists():
        state = f"no run of yours at {relative(own)}"
    else:
        given = "--results" if split == "test" else "--calib (--results with --split calib)"
        # a kind of run of a later post (08's variants rename own_results_path) has no --sample
        sample = (f"; or answer a seeded sample instead: {sample_command(dataset, split)}"
                  if own.name == DATASETS[dataset].results_name(split) else "")
        state = (f"yours at {relative(own)} has {count_answers(own):,} of {size:,} messages (finish it with: "
                 f"{run_command(dataset, split)}; or read it as it is with {given} {relative(own)}{sample})")
    unfinished = [run for run in sample_runs(dataset, split) if not run.complete]
    if unfinished:
        run = unfinished[0]
        state += (f"; your seeded sample at {relative(run.path)} has {run.answered:,} of {run.size:,} messages "
                  f"(finish it with: {sample_command(dataset, split, run.size, run.seed)})")
    return state


@dataclass(frozen=True)
class Loaded:
    """One results file as read_split reads it.

    path: the file read. records: its answers (status ok, invalid or
    too_long), one ResultsLine per message, each checked whole;
    every figure is taken over these. errors: its error lines (failed
    requests), also checked, reported as their own count and left out of every
    figure; run.py asks them again.
    """

    path: Path
    records: list[ResultsLine]
    errors: list[ResultsLine]


def read_split(split: str, results: Path | None = None, dataset: str = "banking77", given_by: str = "") -> Loaded:
    """The results of one split: `results` if given, else default_results() of dataset and split.

    given_by: the option that named `results` ("--results"), for the messages.
    Raises FileNotFoundError naming the run.py command that writes a missing
    file, and ValueError naming file, line and field for a line that is not a
    results line (ResultsLine.from_json), for an id on two lines, for a file
    without a single answer, and for a file that does not belong to dataset
    (check_belongs: another prompt, a code not in its table, several models
    or kinds of line in one file).
    """
    path = Path(results) if results else default_results(dataset, split)[0]
    command = run_command(dataset, split, path if results else None)
    if not results and not path.exists():  # neither a complete run of the reader's nor a committed one
        # a partial run's state already names the commands that finish it or read it as it is
        plain = own_results_path(dataset, split).name == DATASETS[dataset].results_name(split)
        sample = f" (or a seeded sample of it: {sample_command(dataset, split)})" if plain else ""
        write = "" if own_results_path(dataset, split).exists() else f"; write it with: {command}{sample}"
        raise FileNotFoundError(f"no {dataset} {split} answers: no reference run, and {own_run_state(dataset, split)}"
                                f"{write}")
    lines: list[ResultsLine] = []
    seen: dict[str, int] = {}
    for number, record in numbered_records(path, command, given_by):
        where = f"{path} line {number}"
        line = ResultsLine.from_json(record, where)
        if line.id in seen:
            raise ValueError(f"{where}: field 'id' is {line.id!r}, already on line {seen[line.id]}: a results "
                             "file holds one line per message")
        seen[line.id] = number
        lines.append(line)
    records, errors = answers_and_errors(lines)
    if not records:
        failed = f" ({len(errors)} lines are failed requests, which the same command asks again)" if errors else ""
        raise ValueError(f"{path} holds no answers{failed}; write it with: {command}")
    check_belongs(path, lines, dataset, given_by)
    return Loaded(path, records, errors)


def check_belongs(path: Path, lines: list[ResultsLine], dataset: str, given_by: str = "") -> None:
    """Raise ValueError when the lines of one file do not belong together or to dataset.

    Every line asked with a prompt (prompt_sha256) must have dataset's saved
    prompt (a file of another dataset names it); every code and right code
    must be one of dataset's codes; the file must hold one model's answers,
    and one kind of line (the same extra fields on every line).
    """
    named = f"{path} (given with {given_by})" if given_by else str(path)
    expected = DATASETS[dataset].saved_prompt().sha256
    prompts = {line.prompt_sha256 for line in lines if line.prompt_sha256 is not None}
    if prompts - {expected}:
        owner = [name for name, other in DATASETS.items() if other.saved_prompt().sha256 in prompts]
        whose = f"{owner[0]}'s prompt" if owner else f"another prompt (sha256 {sorted(prompts - {expected})[0][:12]})"
        advice = "" if owner == [dataset] or not owner else f"; give --dataset {owner[0]} to read it"
        raise ValueError(f"{named} holds answers asked with {whose}, not {dataset}'s: it is not a {dataset} file{advice}")
    codes = DATASETS[dataset].codes()
    unknown = sorted({code for line in lines for code in (line.code, line.gold_code) if code and code not in codes})
    if unknown:
        raise ValueError(f"{named} holds the code {unknown[0]}, which {dataset} does not have: not a {dataset} file")
    models = sorted({line.model for line in lines})
    if len(models) > 1:
        raise ValueError(f"{named} mixes the answers of {len(models)} models ({', '.join(models)}): one run, one model")
    kinds = {tuple(sorted(line.extra)) for line in lines}
    if len(kinds) > 1:
        raise ValueError(f"{named} mixes lines of different kinds of run (extra fields {' / '.join(map(str, kinds))})")


def load_results(split: str, results: Path | None = None, dataset: str = "banking77") -> tuple[Path, list[ResultsLine]]:
    """(path, answers) of read_split(): the error lines are left out, so use read_split where they are reported."""
    loaded = read_split(split, results, dataset)
    return loaded.path, loaded.records


def describe(path: Path, records: list[ResultsLine], errors: int = 0) -> str:
    """One line naming the file, the model(s) it holds, why this file was read, and its error lines if any.

    The reason is one of: your own complete run, your own complete seeded
    sample (N of M messages, seed S), the committed reference run (and what
    is wrong with yours, if anything), or a file given on the command line
    (with "a seeded sample, N of M messages (seed S)" when its name is a
    sample's, and how many of them it answers when not all). errors: how many
    failed requests the file holds (Loaded.errors).
    """
    models = ", ".join(sorted({r.model for r in records}))
    why = "given on the command line"
    sample = sample_named(path)
    if sample:
        dataset, split, size, seed = sample
        answered = "" if len(records) >= size else f", {len(records):,} of them answered"
        why += f"; a seeded sample, {size:,} of {DATASETS[dataset].split_size(split):,} messages (seed {seed}){answered}"
    for dataset in DATASETS:
        for split in SPLITS:
            # every file default_results gives is named after own_results_path: skip the others unread
            if not Path(path).name.startswith(own_results_path(dataset, split).stem):
                continue
            default, reason = default_results(dataset, split)
            if Path(path).resolve() == default.resolve():
                why = reason
    left_out = f"; {errors} failed requests left out (run.py asks them again)" if errors else ""
    return f"{relative(path)}: model {models} ({why}){left_out}"
