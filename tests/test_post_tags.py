"""post_tags.py: its filters, which post a test file belongs to, and the tags it makes.

The tags are made in clones in tmp_path, never in this repository. Each clone
is a snapshot of this working tree (committed files plus uncommitted edits,
committed in the clone with a fixed identity and date), with `main` at that
snapshot. Every tag is then checked out with `git worktree add` and must pass
its own offline tests and answer --help with each of its scripts: a reader
who checks out post-NN gets a working post. Those checks fail while a post
imports a module of a later post; test_no_post_imports_from_a_later_post
names every such import.

This file imports post_tags, so post_tags.py keeps it out of every tag: it
checks main's marker lines, which the tags no longer carry.
"""
import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from datafiles import DATA_ENV

import post_tags
from post_tags import (folder_post, imported_modules, keep_blocks, later_datasets, module_folders, post_of_dataset_file,
                       post_of_test_file, pyproject_for, readme_for)

ROOT = Path(__file__).resolve().parents[1]
POSTS = sorted(folder_post(path.name) for path in ROOT.iterdir() if post_tags.POST_FOLDER.fullmatch(path.name))
TAGS = [post_tags.TAG.format(post) for post in POSTS]
# The snapshot commit of the working tree: fixed, so two clones make the same commit.
SNAPSHOT = {"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid", "GIT_AUTHOR_DATE": "1700000000 +0000",
            "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_DATE": "1700000000 +0000"}


# -- the filters, on hand-made inputs ---------------------------------------------------------------

README = """# Series
intro
<!-- from post 01 -->
Then run post 01.
<!-- end -->
| folder | what |
|---|---|
| [00-setup](00-setup/README.md) | setup |
| [datasets](datasets/README.md) | data |
| [01-first](01-first/README.md) | first |
| [02-second](02-second/README.md) | second |
<!-- from post 02 -->
## The main job
<!-- end -->
outro
"""


def test_readme_block_of_a_later_post_is_dropped_and_no_marker_line_is_kept():
    assert readme_for(README, 0).splitlines()[:3] == ["# Series", "intro", "| folder | what |"]
    assert "Then run post 01." in readme_for(README, 1) and "## The main job" not in readme_for(README, 1)
    full = readme_for(README, 2)
    assert "<!--" not in full
    # 15 lines less 4 marker lines
    assert len(full.splitlines()) == 11 and full.endswith("outro\n")


def test_readme_rows_of_later_posts_leave_the_posts_table_and_the_datasets_row_stays():
    rows = [line.split("]")[0] for line in readme_for(README, 1).splitlines() if line.startswith("| [")]
    assert rows == ["| [00-setup", "| [datasets", "| [01-first"]


def test_pyproject_block_is_kept_from_its_post_on_and_every_version_is_valid_toml():
    text = ('[project]\nname = "x"\ndependencies = [\n# from post 04\n    "matplotlib>=3.8",  # plots\n# end\n]\n'
            '[project.optional-dependencies]\ntest = [\n    "pytest>=8",\n    # from post 04\n    "uv>=0.5",\n    # end\n]\n')
    early, late = tomllib.loads(pyproject_for(text, 3)), tomllib.loads(pyproject_for(text, 4))
    assert early["project"]["dependencies"] == [] and early["project"]["optional-dependencies"]["test"] == ["pytest>=8"]
    assert late["project"]["dependencies"] == ["matplotlib>=3.8"]
    assert late["project"]["optional-dependencies"]["test"] == ["pytest>=8", "uv>=0.5"]
    assert "# from post" not in pyproject_for(text, 4) and "# end" not in pyproject_for(text, 4)


@pytest.mark.parametrize("text, problem", [
    ("a\n<!-- end -->\n", "README.md:2: an end marker without a start"),
    ("<!-- from post 01 -->\n<!-- from post 02 -->\n", "README.md:2: a block starts inside the block of line 1"),
    ("a\n<!-- from post 01 -->\nb\n", "README.md:2: the block starting here has no end marker"),
])
def test_marker_lines_that_do_not_pair_up_are_an_error_naming_the_line(text, problem):
    with pytest.raises(ValueError, match=problem):
        keep_blocks(text, 8, post_tags.README_BLOCK, "README.md")


# -- which post a test file belongs to -------------------------------------------------------------

FOLDERS = module_folders(["00-setup/server.py", "00-setup/gb10/helper.py", "datasets/banking77.py",
                          "02-forcing-a-valid-answer/prompt.py", "02-forcing-a-valid-answer/run.py",
                          "03-where-confidence-comes-from/run.py", "04-is-the-confidence-honest/ece.py",
                          "04-is-the-confidence-honest/beyond/bins.py", "04-is-the-confidence-honest/other/x.py",
                          "series.py", "tests/conftest.py"])
POST_FOLDERS = ["00-setup", "02-forcing-a-valid-answer", "03-where-confidence-comes-from", "04-is-the-confidence-honest"]


def test_module_names_map_to_the_top_level_py_files_of_post_folders_and_datasets():
    assert FOLDERS == {"server": "00-setup", "banking77": "datasets", "prompt": "02-forcing-a-valid-answer",
                       "run": "02-forcing-a-valid-answer", "ece": "04-is-the-confidence-honest",
                       "bins": "04-is-the-confidence-honest"}
    # run.py is in 02 and 03: the earliest post wins; gb10/helper.py and other/x.py are not on sys.path (a
    # beyond/ folder is, put there by its own scripts: its modules are its post's), series.py not a post's
    assert folder_post("datasets") == 0 and folder_post("results") is None


def test_imports_are_found_anywhere_in_a_file_and_relative_ones_left_out():
    source = "import os.path\nfrom prompt import x\ndef f():\n    import ece\n    from . import run\n"
    assert imported_modules(source) == {"os", "prompt", "ece"}


@pytest.mark.parametrize("source, post", [
    ("import pytest\n", None),                                        # no post dependency: every tag
    ("from banking77 import load_labels\n", 0),                       # datasets counts as 00
    ("from prompt import build_prompt\nimport server\n", 2),          # the highest imported post
    ("import prompt\nPATH = '04-is-the-confidence-honest/ece.py'\n", 4),  # a post folder named in the text
    ("def test():\n    from ece import ece\n", 4),                     # an import inside a test
])
def test_a_test_file_belongs_to_the_highest_post_it_imports_or_names(source, post):
    assert post_of_test_file(source, FOLDERS, POST_FOLDERS) == post


def test_a_test_helper_comes_with_the_first_tag_whose_tests_need_it():
    texts = {
        "tests/conftest.py": "from sandbox import FakePath\n",
        "tests/test_early.py": "from shared import x\n",
        "tests/test_late.py": "from late_tool import y\nfrom shared import z\n",
        "tests/test_by_path.py": "run('tests/runner.py')\n",
        "tests/shared.py": "", "tests/sandbox.py": "", "tests/runner.py": "", "tests/lone.py": "",
        "tests/late_tool.py": "from deep import w\n", "tests/deep.py": "",
    }
    source = post_tags.Source("c" * 40, "0 +0000", tuple(post_tags.Entry("100644", "b", path) for path in texts), texts)
    tests = {"tests/test_early.py": 3, "tests/test_late.py": 7, "tests/test_by_path.py": 5}
    assert post_tags.posts_of_test_helpers(source, tests) == {
        "tests/shared.py": 3,        # the lowest post among its users
        "tests/sandbox.py": None,    # conftest.py is in every tag
        "tests/late_tool.py": 7,
        "tests/deep.py": 7,          # through the helper that imports it
        "tests/runner.py": 5,        # run by its path
        "tests/lone.py": None,       # nothing needs it: a tool of its own, every tag
    }


def is_script(source: str) -> bool:
    """A script a reader runs: it defines main() and runs it under `if __name__ == "__main__":`.

    A module that only uses argparse to add shared options (batch.py, saved_answers.py) is imported, not run.
    """
    tree = ast.parse(source)
    defines_main = any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)
    runs_main = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)
    return defines_main and runs_main


def post_files(root: Path) -> list[Path]:
    """Every .py file of the post folders and datasets/ under root."""
    return sorted(path for folder in root.iterdir() if folder_post(folder.name) is not None
                  for path in folder.rglob("*.py"))


def test_no_post_imports_from_a_later_post():
    paths = [path.relative_to(ROOT).as_posix() for path in post_files(ROOT)]
    folders = module_folders(paths)
    datasets = later_datasets({str(path): path.read_text() for path in (ROOT / "datasets").glob("*.json")})

    def post_of(path: str) -> int:  # a file of datasets/ may come with a later post (post_tags' rule)
        top = path.split("/")[0]
        return post_of_dataset_file(path, datasets) if top == "datasets" else folder_post(top)

    later = [f"{path} imports {name} ({folders[name]})"
             for path in paths
             for name in sorted(imported_modules((ROOT / path).read_text(), path))
             if name in folders and post_of(f"{folders[name]}/{name}.py") > post_of(path)]
    assert later == [], "a post may import only from its own and earlier posts:\n" + "\n".join(later)


# -- the tags, on clones of this repository --------------------------------------------------------

def environment(**extra: str) -> dict:
    """This process's environment without the caller's GIT_* variables (a hook's GIT_DIR, say), plus extra."""
    return {**{key: value for key, value in os.environ.items() if not key.startswith("GIT_")}, **extra}


def git(repo: Path, *args: str, env: dict | None = None) -> str:
    """git in repo; its stdout stripped. Fails the test on an error."""
    result = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, capture_output=True, text=True,
                            env=environment(**(env or {})))
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout.strip()


def snapshot_clone(target: Path) -> Path:
    """A clone of this repository whose main branch is checked out at a snapshot of this working tree."""
    git(ROOT, "clone", "--quiet", "--no-tags", str(ROOT), str(target))
    wanted = set(filter(None, git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")))
    for name in set(filter(None, git(target, "ls-files", "-z").split("\0"))) - wanted:
        (target / name).unlink()
    for name in wanted:
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    git(target, "checkout", "--quiet", "-B", "main")
    git(target, "add", "--all")
    if git(target, "status", "--porcelain"):
        git(target, "commit", "--quiet", "-m", "uncommitted edits of the tested working tree", env=SNAPSHOT)
    return target


def run_post_tags(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(repo / "post_tags.py"), *args], cwd=repo, capture_output=True,
                          text=True, env=environment(), timeout=120)


def make_tags_in(repo: Path, monkeypatch) -> list:
    """post_tags.make_tags("main") run in repo, in this process, without the caller's GIT_* variables: the outcomes."""
    monkeypatch.chdir(repo)
    for key in [key for key in os.environ if key.startswith("GIT_")]:
        monkeypatch.delenv(key)
    return post_tags.make_tags("main")[1]


def tag_ids(repo: Path) -> dict[str, str]:
    return {tag: git(repo, "rev-parse", f"refs/tags/{tag}") for tag in TAGS}


def files(repo: Path, tag: str, under: str = "") -> list[str]:
    return git(repo, "ls-tree", "-r", "--name-only", tag, *([under] if under else [])).splitlines()


def show(repo: Path, tag: str, path: str) -> str:
    return git(repo, "show", f"{tag}:{path}")


@dataclass
class Tagged:
    """A snapshot clone after one run of post_tags.py; checkout(tag) adds a worktree once per tag."""
    repo: Path
    output: str
    checkouts: Path
    worktrees: dict = field(default_factory=dict)

    def checkout(self, tag: str) -> Path:
        if tag not in self.worktrees:
            path = self.checkouts / tag
            git(self.repo, "worktree", "add", "--quiet", "--detach", str(path), tag)
            self.worktrees[tag] = path
        return self.worktrees[tag]


@pytest.fixture(scope="module")
def tagged(tmp_path_factory):
    repo = snapshot_clone(tmp_path_factory.mktemp("tags") / "repo")
    made = run_post_tags(repo)
    assert made.returncode == 0, made.stderr
    return Tagged(repo, made.stdout, tmp_path_factory.mktemp("checkouts"))


def test_every_post_gets_a_tag_created_from_main(tagged):
    lines = tagged.output.splitlines()
    assert lines[0].startswith("tags from main (commit ")
    assert [line.split()[:2] for line in lines[1:-1]] == [[tag, "created"] for tag in TAGS]
    assert lines[-1] == f"{len(TAGS)} tags, {len(TAGS)} created or moved"


def test_a_tag_holds_the_post_folders_up_to_its_post_and_results_from_post_03(tagged):
    for post, tag in zip(POSTS, TAGS):
        top = {name.split("/")[0] for name in files(tagged.repo, tag)}
        numbered = sorted(name[:2] for name in top if post_tags.POST_FOLDER.fullmatch(name))
        assert numbered == [f"{n:02d}" for n in POSTS if n <= post], tag
        assert {"datasets", "tests", "series.py", "run_tests.py", "post_tags.py", "README.md", "pyproject.toml",
                "LICENSE", ".gitignore", ".ci"} <= top, tag
        assert ("results" in top) == (post >= 3), tag
    post_01 = {name.split("/")[0] for name in files(tagged.repo, "post-01")}
    assert {"00-setup", "01-why-typed-decisions", "datasets"} <= post_01 and "02-forcing-a-valid-answer" not in post_01


def test_a_tag_holds_the_tests_of_its_posts_and_conftest_in_every_one(tagged):
    main = set(files(tagged.repo, "main", "tests"))
    for tag in TAGS:
        tests = set(files(tagged.repo, tag, "tests"))
        assert "tests/conftest.py" in tests and "tests/test_post_tags.py" not in tests, tag
    # the test files that import post_tags (this one, test_tag_contents.py) check main's marker lines: main only
    main_only = {path for path in main if path.endswith(".py")
                 and "post_tags" in imported_modules(show(tagged.repo, "main", path), path)}
    assert "tests/test_post_tags.py" in main_only
    assert set(files(tagged.repo, TAGS[-1], "tests")) == main - main_only
    assert "tests/test_ece.py" not in files(tagged.repo, "post-03", "tests")  # imports ece of post 04
    assert "tests/test_ece.py" in files(tagged.repo, "post-04", "tests")


def test_readme_and_pyproject_of_a_tag_list_only_its_posts(tagged):
    main_readme, main_pyproject = show(tagged.repo, "main", "README.md"), show(tagged.repo, "main", "pyproject.toml")
    for post, tag in zip(POSTS, TAGS):
        readme, pyproject = show(tagged.repo, tag, "README.md"), show(tagged.repo, tag, "pyproject.toml")
        assert readme == readme_for(main_readme + "\n", post).rstrip("\n") and "<!-- from post" not in readme, tag
        assert pyproject == pyproject_for(main_pyproject + "\n", post).rstrip("\n"), tag
        dependencies = tomllib.loads(pyproject)["project"]["dependencies"]
        assert dependencies == ([] if post < 4 else ["matplotlib>=3.8"]), tag
        # uv.lock locks matplotlib: only where pyproject.toml lists it
        assert ("uv.lock" in files(tagged.repo, tag)) == (post >= 4), tag
    post_00 = show(tagged.repo, "post-00", "README.md")
    assert "| [00-setup]" in post_00 and "| [01-" not in post_00 and "typed.py" not in post_00
    assert "08-routes/route.py" not in show(tagged.repo, "post-07", "README.md")
    assert "08-routes/route.py" in show(tagged.repo, "post-08", "README.md")
    # the work beyond a post is in the post's tag, in the post's own folder, and in no earlier tag
    beyond = [name for name in files(tagged.repo, "post-08") if name.startswith("08-routes/beyond/")]
    assert "08-routes/beyond/README.md" in beyond and "08-routes/beyond/guarantees/certified_routes.py" in beyond
    assert not any(name.startswith("08-routes/beyond/") for name in files(tagged.repo, "post-07"))
    post_01 = files(tagged.repo, "post-01")
    assert "01-why-typed-decisions/beyond/baseline.py" in post_01 and "01-why-typed-decisions/beyond/linear.py" in post_01
    assert [name for name in post_01 if "/beyond/" in name and not name.startswith("01-why-typed-decisions/")] == []
    assert "02-forcing-a-valid-answer/beyond/benchmark.py" in files(tagged.repo, "post-02")
    assert "03-where-confidence-comes-from/beyond/readout.py" not in files(tagged.repo, "post-02")
    assert "tests/test_certified_routes.py" not in files(tagged.repo, "post-07", "tests")
    assert "tests/test_shortlist.py" not in files(tagged.repo, "post-07", "tests")   # imports only beyond and 02


def test_tags_are_chained_from_the_source_commit_with_a_fixed_identity_and_its_date(tagged):
    source = git(tagged.repo, "rev-parse", "main")
    parents = [source, *(git(tagged.repo, "rev-parse", tag) for tag in TAGS[:-1])]
    date = git(tagged.repo, "show", "-s", "--format=%cd", "--date=raw", "main")
    who = f"post_tags.py <post-tags@typed-decisions.invalid> {date}"
    for tag, parent in zip(TAGS, parents):
        assert git(tagged.repo, "rev-parse", f"{tag}^@") == parent, tag
        assert git(tagged.repo, "show", "-s", "--format=%an <%ae> %ad|%cn <%ce> %cd", "--date=raw", tag) == \
            f"{who}|{who}", tag
        assert source in git(tagged.repo, "show", "-s", "--format=%B", tag), tag
    stat = git(tagged.repo, "diff", "--stat", "post-03", "post-04")
    assert "04-is-the-confidence-honest/ece.py" in stat and "tests/test_ece.py" in stat


def test_the_same_main_gives_the_same_tags_again_and_in_another_clone(tagged, tmp_path, monkeypatch):
    first = tag_ids(tagged.repo)
    again = make_tags_in(tagged.repo, monkeypatch)
    assert [(outcome.tag, outcome.old, outcome.new) for outcome in again] == [(tag, first[tag], first[tag]) for tag in TAGS]
    assert tag_ids(tagged.repo) == first
    other = snapshot_clone(tmp_path / "other")
    assert run_post_tags(other).returncode == 0
    assert tag_ids(other) == first


def test_rerun_after_a_new_commit_on_main_moves_the_tags_and_only_later_posts_change_files(tmp_path, monkeypatch):
    repo = snapshot_clone(tmp_path / "repo")
    assert run_post_tags(repo).returncode == 0
    before = tag_ids(repo)
    readme = repo / "05-fixing-the-confidence" / "README.md"
    readme.write_text(readme.read_text() + "\nOne more line.\n")
    git(repo, "commit", "--quiet", "--all", "-m", "post 05: one more line", env=SNAPSHOT)
    index = (repo / ".git" / "index").read_bytes()
    moved = make_tags_in(repo, monkeypatch)
    after = tag_ids(repo)
    assert [(outcome.tag, outcome.old, outcome.new) for outcome in moved] == [(tag, before[tag], after[tag]) for tag in TAGS]
    assert all(before[tag] != after[tag] for tag in TAGS)
    # the tags before post 05 only get the new history (same files), from post 05 on the new line too
    changed = {tag: git(repo, "diff", "--name-only", before[tag], after[tag]) for tag in TAGS}
    assert changed == {tag: "05-fixing-the-confidence/README.md" if post >= 5 else "" for post, tag in zip(POSTS, TAGS)}
    # the user's branch, index and working tree are untouched
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/main" and git(repo, "status", "--porcelain") == ""
    assert (repo / ".git" / "index").read_bytes() == index


def test_help_says_what_the_tags_hold_and_makes_none():
    before = git(ROOT, "tag", "--list", "post-*")
    result = run_post_tags(ROOT, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: post_tags.py") and "--from REF" in result.stdout and "post-03" in result.stdout
    assert git(ROOT, "tag", "--list", "post-*") == before


@pytest.mark.parametrize("setup, message", [
    ("no repository", "is not inside a git repository"),
    ("uncommitted change", "uncommitted changes (README.md): tags are made from commits"),
    ("no main branch", "no commit named 'main'"),
])
def test_bad_input_is_one_error_line_and_exit_2(tmp_path, monkeypatch, setup, message):
    repo = tmp_path / "repo"
    if setup == "no repository":
        repo.mkdir()
        shutil.copy2(ROOT / "post_tags.py", repo)
    else:
        snapshot_clone(repo)
        if setup == "uncommitted change":
            (repo / "README.md").write_text("changed\n")
        else:
            git(repo, "branch", "--quiet", "-m", "main", "trunk")
    result = run_post_tags(repo)
    with pytest.raises(post_tags.TagError, match=re.escape(message)) as refused:
        make_tags_in(repo, monkeypatch)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: {refused.value}"]  # the script's one line is that error
    assert not list(repo.glob(".git/refs/tags/*"))


@pytest.mark.parametrize("tag", TAGS)
def test_a_tag_passes_its_offline_tests(tagged, tag):
    checkout = tagged.checkout(tag)
    # The test programs (shellcheck, uv) from this test environment, as run_tests.py does; the dataset
    # mirror conftest found (a checkout in tmp has no ../shared/datasets next to it).
    env = environment(PATH=os.pathsep.join([str(Path(sys.prefix) / "bin"), os.environ.get("PATH", "")]),
                      PYTHONDONTWRITEBYTECODE="1")
    if DATA_ENV in os.environ:
        env[DATA_ENV] = os.environ[DATA_ENV]
    result = subprocess.run([sys.executable, "-m", "pytest", "--offline", "-q", "-p", "no:cacheprovider"],
                            cwd=checkout, capture_output=True, text=True, env=env, timeout=1800)
    assert result.returncode == 0, f"{tag}: pytest --offline exit {result.returncode}\n" + \
        "\n".join((result.stdout + result.stderr).splitlines()[-40:])


@pytest.mark.parametrize("tag", TAGS)
def test_every_script_of_a_tag_answers_help(tagged, tag):
    checkout = tagged.checkout(tag)
    scripts = [path for path in post_files(checkout) if is_script(path.read_text())]
    assert scripts, tag
    failed = []
    for script in scripts:
        result = subprocess.run([sys.executable, str(script), "--help"], cwd=checkout, capture_output=True, text=True,
                                timeout=120)
        if result.returncode != 0 or "usage:" not in result.stdout:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            failed.append(f"{script.relative_to(checkout)}: exit {result.returncode}: {last}")
    assert failed == [], f"{tag}: scripts that do not answer --help:\n" + "\n".join(failed)
