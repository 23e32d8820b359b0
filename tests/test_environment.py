"""Where the tests read the datasets: one rule (run_tests.dataset_mirror), set up in conftest.py only.

Issue 12, case 10: test files that pointed the dataset variable at
../shared/datasets themselves failed in a clone without that folder, although
the data sat in the download cache.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from datafiles import DATA_ENV, cache_dir
from readme_commands import repository_copy
from registry import DATASETS
from run_tests import dataset_mirror

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def test_the_rule_takes_the_mirror_next_to_the_repository_only_when_nothing_else_is_set(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    assert dataset_mirror({}, root) == {}  # no mirror: the loaders use their download cache
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    assert dataset_mirror({}, root) == {DATA_ENV: str(tmp_path / "shared" / "datasets")}
    assert dataset_mirror({DATA_ENV: "/elsewhere"}, root) == {}  # the caller's choice wins


def test_no_test_file_but_conftest_sets_up_where_the_datasets_are():
    data = r'(DATA_ENV|"TYPED_DECISIONS_DATA")'
    setting = re.compile(rf'"shared" / "datasets"|environ\[{data}\]\s*=|setdefault\({data}|dataset_mirror\(')
    offenders = [path.name for path in sorted(TESTS.glob("*.py"))
                 if path.name not in ("conftest.py", "readme_commands.py", Path(__file__).name)
                 and setting.search(path.read_text())]
    assert offenders == []


def test_the_dataset_tests_pass_in_a_clone_without_the_mirror_with_the_data_in_the_download_cache(tmp_path):
    checkout = repository_copy(tmp_path / "clone")  # nothing called shared/ next to it
    source = Path(os.environ[DATA_ENV]) if DATA_ENV in os.environ else cache_dir()
    cache = tmp_path / "cache"
    # the series' datasets only: a task the reader made (tasks/, git-ignored) reads its own CSVs, not downloads
    series = [name for name, dataset in DATASETS.items() if not dataset.is_task]
    for name in sorted({DATASETS[name].base for name in series}):  # a dataset that extends another reads its files
        shutil.copytree(source / name, cache / "typed-decisions" / "datasets" / name)
    env = {name: value for name, value in os.environ.items() if name != DATA_ENV}
    env.update(XDG_CACHE_HOME=str(cache), PYTHONDONTWRITEBYTECODE="1",
               PATH=os.pathsep.join([str(Path(sys.prefix) / "bin"), os.environ.get("PATH", "")]))
    report = tmp_path / "report.xml"
    result = subprocess.run([sys.executable, "-m", "pytest", "--offline", "-q", "-p", "no:cacheprovider",
                             f"--junitxml={report}", *(f"tests/test_{name}.py" for name in series)],
                            cwd=checkout, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, "\n".join((result.stdout + result.stderr).splitlines()[-30:])
    suite = ElementTree.parse(report).getroot().find("testsuite")
    counts = {name: int(suite.get(name)) for name in ("tests", "failures", "errors", "skipped")}
    # The tests ran and read the data: none failed, and none was skipped for want of it.
    assert counts["tests"] > 0 and counts == {**counts, "failures": 0, "errors": 0, "skipped": 0}
