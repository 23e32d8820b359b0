"""The datasets of the series, each described once: what every script needs to know about it.

    from registry import DATASETS
    dataset = DATASETS["clinc150"]
    dataset.load_split("calib"), dataset.load_prompt(), dataset.out_of_scope_codes()

A script that takes --dataset looks the name up here, and only here: its
splits and their sizes, its label file, its prompt and grammar, the codes
that mean "none of the intents fits", the training messages a retriever is
fitted on, and the names of its results files. Adding a dataset means one
module next to banking77.py, a label file, and one entry below.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import banking77
import clinc150
import neighbours
from labels import LabelSet, Message
from typed_prompt import BuiltPrompt, load_clinc150_prompt, load_prompt

SPLITS = ("calib", "test")


@dataclass(frozen=True)
class Dataset:
    """One dataset of the series.

    name: as on the command line and in file names ("banking77").
    load_split(split): the messages of "calib" or "test", in split order.
    split_size(split): how many messages load_split gives, without the data files.
    load_labels(): its label set (codes, groups, descriptions, examples, calibration rows).
    load_prompt(**options): its system prompt, grammar and code table (typed_prompt.build_prompt).
    out_of_scope_intents: intent names that mean "none of the intents fits" (CLINC150: oos).
    fit_retriever(): post 01's TF-IDF retriever fitted on its training messages (not the calibration split).
    """

    name: str
    load_split: Callable[[str], list[Message]]
    split_size: Callable[[str], int]
    load_labels: Callable[[], LabelSet]
    load_prompt: Callable[..., BuiltPrompt]
    out_of_scope_intents: frozenset[str]
    fit_retriever: Callable[[], neighbours.Retriever]

    def out_of_scope_codes(self) -> frozenset[str]:
        """The codes of out_of_scope_intents in the label file: {"K-A"} for CLINC150, none for BANKING77."""
        return frozenset(i.code for i in self.load_labels().intents if i.name in self.out_of_scope_intents)

    def results_name(self, split: str, variant: str = "") -> str:
        """The file name of a results file: "banking77-test.jsonl", or with a variant "banking77-shortlist5-test.jsonl"."""
        return f"{self.name}-{variant + '-' if variant else ''}{split}.jsonl"


DATASETS: dict[str, Dataset] = {
    dataset.name: dataset
    for dataset in (
        Dataset("banking77", banking77.load_split, banking77.split_size, banking77.load_labels, load_prompt,
                frozenset(), neighbours.fit_banking77),
        Dataset("clinc150", clinc150.load_split, clinc150.split_size, clinc150.load_labels, load_clinc150_prompt,
                frozenset({clinc150.OUT_OF_SCOPE}), neighbours.fit_clinc150),
    )
}


def dataset_named(name: str) -> Dataset:
    """DATASETS[name]; raises ValueError naming the known datasets for another name."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}: expected one of {', '.join(DATASETS)}")
    return DATASETS[name]
