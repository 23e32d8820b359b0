"""The datasets of the series, found by their label files: what every script needs to know about one.

    from registry import DATASETS
    dataset = DATASETS["banking77"]
    dataset.load_split("calib"), dataset.split_size("test"), dataset.saved_prompt().system

A dataset is a loader module in this folder and its label file beside it
(banking77.py and banking77.json): every such pair is one, so adding a
dataset takes those two files and nothing here (a label file that extends
another, "extends", needs no module: ExtendingLoader, below, reads it). A script that takes
--dataset adds it with add_dataset_argument, which lists DATASETS (and
hides the option from --help while there is only one). Nothing
is imported until it is needed: a script that only reads results files
learns a split's size from the label file's header ("splits") without
loading the data or the loader.

What a loader module provides: load_split(split) -> list[Message] for
"calib" and "test", load_labels() -> LabelSet, fit_messages() -> the
training messages a retriever may see (never the calibration split), and
optionally PROMPT_INSTRUCTIONS and PROMPT_EXAMPLES for post 02's prompt.
The label file's header names the dataset ("dataset"), the size of each
split ("splits"), the intents that mean "none of these fits"
("out_of_scope_intents", optional), the dataset whose groups come before its
own ("extends", optional: its loader adds them) and, for a dataset that enters the series
after post 00, the post that introduces it ("post"; post_tags.py leaves the
dataset's files out of the tags before it).

A task of your own (made by make_task.py from your labels and messages) is a
dataset too, found the same way in its folder under tasks/ (or
$TYPED_DECISIONS_TASKS): <name>/<name>.json, read by task.py's TaskLoader
instead of a loader module of its own.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from labels import LabelSet, Message, read_label_file

HERE = Path(__file__).resolve().parent
SPLITS = ("calib", "test")
TASKS_ENV = "TYPED_DECISIONS_TASKS"  # where make_task.py writes your tasks (default: tasks/ at the top)


@dataclass(frozen=True)
class SavedPrompt:
    """The system prompt and GBNF grammar that post 02's prompt.py builds for a dataset, saved beside its
    label file (<name>.prompt.txt, <name>.gbnf) so that the setup's warm-up and post 01 send exactly what
    the later posts send. system, grammar: the texts (str)."""

    system: str
    grammar: str

    @property
    def sha256(self) -> str:
        """Hex sha256 of the system prompt (UTF-8): names the prompt a results file or a saved slot was made with."""
        return hashlib.sha256(self.system.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Dataset:
    """One dataset of the series: name is its loader module's and its label file's name ("banking77").
    folder: a task's own folder (None: datasets/, where the series' datasets are)."""

    name: str
    folder: Path | None = None

    @property
    def label_file(self) -> Path:
        return self.home / f"{self.name}.json"

    @property
    def home(self) -> Path:
        """The folder of its label file and saved prompt: datasets/, or a task's folder."""
        return self.folder or HERE

    @property
    def is_task(self) -> bool:
        """A task made by make_task.py: data in its own folder, no loader module."""
        return self.folder is not None

    @property
    def header(self) -> dict:
        """The label file's top-level fields other than its groups and calibration rows."""
        return _header(self.label_file)

    def loader(self):
        """The dataset's loader module (imported on first use); a task's task.TaskLoader."""
        if self.is_task:
            return importlib.import_module("task").TaskLoader(self.label_file)
        if importlib.util.find_spec(self.name) is None:  # a label file that extends another needs no module
            return ExtendingLoader(self.label_file)
        return importlib.import_module(self.name)

    def load_split(self, split: str) -> list:
        """The messages of "calib" or "test" (labels.Message), in split order; ValueError for another split."""
        return self.loader().load_split(_split(split))

    def split_size(self, split: str) -> int:
        """How many messages load_split(split) gives, from the label file's header: no data file is read."""
        return self.header["splits"][_split(split)]

    def load_labels(self):
        """The dataset's label set (labels.LabelSet: codes, groups, descriptions, examples, calibration rows)."""
        return self.loader().load_labels()

    def fit_messages(self) -> list:
        """The training messages a retriever is fitted on (never the calibration split)."""
        return self.loader().fit_messages()

    def fit_retriever(self):
        """Post 01's TF-IDF retriever (neighbours.Retriever) fitted on fit_messages()."""
        from neighbours import Retriever
        return Retriever.fit(self.fit_messages())

    @property
    def out_of_scope_intents(self) -> frozenset[str]:
        """Intent names that mean "none of the intents fits" (none for most datasets)."""
        return frozenset(self.header.get("out_of_scope_intents", ()))

    def out_of_scope_codes(self) -> frozenset[str]:
        """The codes of out_of_scope_intents in the label file (empty when the dataset has none)."""
        if not self.out_of_scope_intents:
            return frozenset()
        return frozenset(i.code for i in self.load_labels().intents if i.name in self.out_of_scope_intents)

    @property
    def base(self) -> str:
        """The dataset whose data files it reads: the one its label file extends ("extends"), else its own name."""
        return self.header.get("extends", self.name)

    @property
    def post(self) -> int:
        """The post of the series that introduces the dataset (0: there from the start)."""
        return self.header.get("post", 0)

    def results_name(self, split: str) -> str:
        """The file name of a results file of run.py: "banking77-test.jsonl"."""
        return f"{self.name}-{_split(split)}.jsonl"

    def codes(self) -> frozenset[str]:
        """Every code of the label file ("A-A", ...), read from it directly (no loader, no data file)."""
        return _codes(self.label_file)

    def prompt_files(self) -> tuple[Path, Path]:
        """Where the saved prompt lives: (<name>.prompt.txt, <name>.gbnf) beside the label file."""
        return self.home / f"{self.name}.prompt.txt", self.home / f"{self.name}.gbnf"

    def saved_prompt(self) -> SavedPrompt:
        """The saved system prompt and grammar; FileNotFoundError naming the command that writes them."""
        system, grammar = self.prompt_files()
        try:
            return SavedPrompt(system.read_text(encoding="utf-8"), grammar.read_text(encoding="utf-8"))
        except FileNotFoundError as error:
            raise FileNotFoundError(f"{error.filename} is missing; write it with: python3 "
                                    f"02-forcing-a-valid-answer/prompt.py {self.name} --save") from None


class ExtendingLoader:
    """The loader of a label file that extends a dataset of the series ("extends": its name; banking77oos): that
    dataset's messages, splits, calibration rows and groups, then the file's own groups, and the prompt's opening
    paragraph from the file's "instructions". No loader module is needed for it. label_file: its <name>.json."""

    def __init__(self, label_file: Path):
        self.label_file = Path(label_file)
        self.data = json.loads(self.label_file.read_text(encoding="utf-8"))

    def base(self) -> Dataset:
        """The registry's Dataset that the label file extends."""
        return dataset_named(self.data["extends"])

    @property
    def PROMPT_INSTRUCTIONS(self) -> str:  # noqa: N802 (a loader module's constant)
        """The prompt's opening paragraph, from the label file."""
        return self.data["instructions"]

    def load_labels(self, path: Path | None = None) -> LabelSet:
        """The base's label set with the groups of the label file (default: this one) after its own.

        Raises ValueError when the file's structure is wrong (labels.read_label_file)
        or when it reuses a group letter or an intent name of the base.
        """
        path = Path(path or self.label_file)
        own_count = sum(len(group["intents"]) for group in json.loads(path.read_text(encoding="utf-8"))["groups"])
        base, own = self.base().load_labels(), read_label_file(path, own_count, self.data["dataset"])
        letters = {group.letter for group in base.groups} & {group.letter for group in own.groups}
        names = set(base.by_intent) & set(own.by_intent)
        if letters or names:
            raise ValueError(f"{path}: reuses {self.data['extends'].upper()}'s "
                             f"{'group letters' if letters else 'intent names'} {sorted(letters or names)}")
        return LabelSet(base.groups + own.groups, base.calibration_rows)

    def load_split(self, split: str) -> list[Message]:
        """The base's split of that name: the messages and calibration rows are the same."""
        return self.base().load_split(split)

    def fit_messages(self) -> list[Message]:
        """The base's training messages minus its calibration rows."""
        return self.base().fit_messages()


@cache
def _header(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: value for key, value in data.items() if key not in ("groups", "calibration", "test")}


@cache
def _codes(path: Path) -> frozenset[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    own = frozenset(f"{group['letter']}-{intent['letter']}" for group in data["groups"] for intent in group["intents"])
    # a label file with "extends" adds its groups to those of the label file it names
    return own | _codes(path.with_name(f"{data['extends']}.json")) if "extends" in data else own


def _split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    return split


def tasks_dir() -> Path:
    """Where your tasks live: $TYPED_DECISIONS_TASKS, else tasks/ at the top of the repository."""
    return Path(os.environ.get(TASKS_ENV) or HERE.parent / "tasks")


def discover(folder: Path = HERE, tasks: Path | None = None) -> dict[str, Dataset]:
    """Every dataset in folder (a label file <name>.json beside a loader module <name>.py, or one that extends
    another), then every task in
    tasks (default tasks_dir(): a folder <name>/ holding <name>.json), by name; a series dataset keeps its name."""
    found = {path.stem: Dataset(path.stem) for path in sorted(folder.glob("*.json"))
             if path.with_suffix(".py").exists() or "extends" in _header(path)}
    for path in sorted((tasks or tasks_dir()).glob("*/*.json")):
        if path.stem == path.parent.name and path.stem not in found:
            found[path.stem] = Dataset(path.stem, path.parent)
    return found


DATASETS: dict[str, Dataset] = discover()


def dataset_named(name: str) -> Dataset:
    """DATASETS[name]; raises ValueError naming the known datasets for another name."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}: expected one of {', '.join(DATASETS)}")
    return DATASETS[name]


def add_dataset_argument(parser: argparse.ArgumentParser, dataset: str = "banking77", what: str = "which dataset") -> None:
    """--dataset: one of DATASETS, default `dataset` (BANKING77 unless a script is about another); every script
    that takes the option adds it here, so the choices and the help read the same everywhere (`what`: the
    help's words before the default).

    With a single dataset registered (the tags before a second one comes in) the option is still
    accepted but left out of --help: a choice of one is nothing a reader has to decide.
    """
    shown = f"{what} (default: {dataset})" if len(DATASETS) > 1 else argparse.SUPPRESS
    parser.add_argument("--dataset", choices=sorted(DATASETS), default=dataset, help=shown)
