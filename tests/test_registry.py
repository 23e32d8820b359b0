"""datasets/registry.py: a dataset is a loader module and its label file; what it says about one."""
import argparse
import json

import pytest
import registry
from registry import DATASETS, Dataset, dataset_named, discover


def test_a_dataset_is_a_label_file_beside_a_loader_module(tmp_path):
    (tmp_path / "alpha.json").write_text("{}")
    (tmp_path / "alpha.py").write_text("")
    (tmp_path / "beta.json").write_text("{}")      # no loader: not a dataset
    (tmp_path / "gamma.py").write_text("")         # no label file: not a dataset
    assert discover(tmp_path) == {"alpha": Dataset("alpha")}


def test_banking77_is_there_from_post_00_with_its_split_sizes_and_no_out_of_scope_code():
    banking = DATASETS["banking77"]
    assert banking.post == 0 and banking.split_size("calib") == 770 and banking.split_size("test") == 3080
    assert banking.out_of_scope_intents == frozenset() and banking.out_of_scope_codes() == frozenset()
    assert banking.results_name("test") == "banking77-test.jsonl"


def test_another_split_or_dataset_is_refused_naming_what_there_is():
    with pytest.raises(ValueError, match="split must be one of calib, test, not 'train'"):
        DATASETS["banking77"].split_size("train")
    with pytest.raises(ValueError, match=f"unknown dataset 'snips': expected one of {', '.join(DATASETS)}"):
        dataset_named("snips")


def test_the_header_is_read_from_the_label_file_without_its_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "HERE", tmp_path)
    (tmp_path / "alpha.json").write_text(json.dumps({"dataset": "alpha", "splits": {"calib": 3, "test": 5},
                                                     "out_of_scope_intents": ["none"], "post": 4, "groups": []}))
    alpha = Dataset("alpha")
    assert alpha.header == {"dataset": "alpha", "splits": {"calib": 3, "test": 5}, "out_of_scope_intents": ["none"],
                            "post": 4}
    assert (alpha.split_size("test"), alpha.post, alpha.out_of_scope_intents) == (5, 4, frozenset({"none"}))


def test_a_missing_saved_prompt_names_the_command_that_writes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "HERE", tmp_path)
    with pytest.raises(FileNotFoundError, match="banking77.prompt.txt is missing; write it with: python3 "
                                                "02-forcing-a-valid-answer/prompt.py banking77 --save"):
        Dataset("banking77").saved_prompt()


def test_the_saved_prompt_names_itself_by_the_sha256_of_its_system_prompt():
    import hashlib
    saved = DATASETS["banking77"].saved_prompt()
    assert saved.sha256 == hashlib.sha256(saved.system.encode("utf-8")).hexdigest()
    assert saved.grammar.startswith("root ::= ") and saved.grammar.endswith("\n")


def dataset_option(parser):
    """The --dataset action of a parser."""
    return next(action for action in parser._actions if "--dataset" in action.option_strings)


def test_the_dataset_option_is_left_out_of_help_while_there_is_one_dataset(monkeypatch):
    monkeypatch.setattr(registry, "DATASETS", {"banking77": Dataset("banking77")})
    parser = argparse.ArgumentParser()
    registry.add_dataset_argument(parser)
    assert dataset_option(parser).help == argparse.SUPPRESS
    assert parser.parse_args(["--dataset", "banking77"]).dataset == "banking77"   # hidden, still accepted


def test_the_dataset_option_is_in_help_once_there_are_two(monkeypatch):
    monkeypatch.setattr(registry, "DATASETS", {"banking77": Dataset("banking77"), "alpha": Dataset("alpha")})
    parser = argparse.ArgumentParser()
    registry.add_dataset_argument(parser, "alpha")
    option = dataset_option(parser)
    assert (option.help, option.choices, option.default) == ("which dataset (default: alpha)", ["alpha", "banking77"],
                                                             "alpha")
