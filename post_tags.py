"""Make the git tags post-00 ... post-08: the repository as a reader of each post needs it.

    python3 post_tags.py               # tags from main, in the repository of the current folder
    python3 post_tags.py --from HEAD   # from another branch, tag or commit

Then `git checkout post-03` gives a reader of post 03 exactly this:
- the post folders 00 ... 03 and datasets/, without the files of a dataset
  that a later post introduces: a label file datasets/<name>.json whose
  "post" is N makes every datasets/ file whose name starts with <name> or
  make_<name> a file of post N; the files of your own task (task.py,
  make_task.py, your-task*: beyond the series, after post 08) are post 08's;
- results/ (the reference results that posts 03+ read), only from post-03 on
  (a later post keeps the reference runs it adds in its own folder);
- the tests of those posts: a tests/test_*.py file belongs to the highest post
  among the folders of the modules it imports (a module name maps to the post
  folder, or datasets/ = post 00, whose top-level .py file has that name, or
  whose beyond/ folder has it: the work beyond a post is in its tag) and
  the post folders its text names ("04-is-the-confidence-honest/ece.py"), and
  the datasets of later posts its text names; conftest.py and
  test files with none of these go in every tag. A helper module of tests/
  (readme_commands.py...) comes with the first tag whose tests or
  conftest.py import it, directly or through another helper. Test files that
  import this script test it against main's marker lines, which no tag
  carries, so they stay on main;
- every .md file and pyproject.toml with the blocks of later posts removed:
  `<!-- from post NN -->` ... `<!-- end -->` in a .md file (the top README,
  and those of 00-setup/, datasets/ and results/, which every tag has) and
  `# from post NN` ... `# end` in pyproject.toml are kept only in tags >= NN
  (the marker lines themselves never), and the top README's rows
  `| [NN-folder](...) | ...` of the posts table only in tags >= NN;
- uv.lock only where pyproject.toml comes out whole (post-04 on, as
  matplotlib comes in with post 04): a lock of dependencies the pyproject.toml
  beside it does not list would be rewritten by the first `uv sync`, leaving
  the reader's checkout changed; before post 04 the scripts need nothing but
  Python, so there is nothing to lock;
- everything else at the top (series.py, run_tests.py, LICENSE, .gitignore,
  .ci/, this script) in every tag.

Tags are lightweight and chained: post-00's parent is the source commit (so
`git log post-03` shows where it came from) and post-NN's parent is
post-(NN-1), so `git log --oneline main..post-03` lists one commit per post
and `git diff post-03 post-04` shows what post 04 adds. Every commit gets a
fixed author and committer, the source commit's committer date and a message
naming the source commit, and its tree is built with git plumbing in a
temporary index file: the same source commit gives byte-identical tags on any
machine, so tags fetched from a published repository and tags made here
agree. The working tree, the index and the current branch are never touched;
only refs/tags/post-NN change, all in one transaction.

Rerunning moves the tags to the newer source and prints one line per tag
(created, unchanged, or moved old..new with `git diff --stat` of the move).
As every chain starts at the source commit, a new main moves every tag; the
tags of posts the change does not reach say "(same files)".
Errors (not a git repository, uncommitted changes, no such branch, marker
lines that do not pair up) are one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

TAG = "post-{:02d}"
RESULTS_FROM = 3  # post 03 writes the reference results that posts 03+ read
IDENTITY = {"NAME": "post_tags.py", "EMAIL": "post-tags@typed-decisions.invalid"}
THIS_MODULE = "post_tags"  # test files importing it test main's marker lines: main only

README_BLOCK = (re.compile(r"\s*<!-- from post (\d+) -->\s*"), re.compile(r"\s*<!-- end -->\s*"))
PYPROJECT_BLOCK = (re.compile(r"\s*# from post (\d+)\s*"), re.compile(r"\s*# end\s*"))
POSTS_TABLE_ROW = re.compile(r"\| \[[^\]]*\]\((\d\d)-")
POST_FOLDER = re.compile(r"(\d\d)-[A-Za-z0-9._-]+")
DATASETS = "datasets"
# A post folder's subfolder of the work that goes beyond the post (its scripts put it on sys.path themselves).
BEYOND = "beyond"
# 00-setup's folder of the toolbox every script uses (series.TOOLBOX): its modules are post 00's.
TOOLBOX = "toolbox"
# The files of datasets/ that make and read a task of your own: beyond the series, its walk-through follows post 08.
OWN_TASK_FILES, OWN_TASK_POST = re.compile(r"(make_)?task\.py|your-task.*"), 8


class TagError(Exception):
    """Bad input: printed as one `error:` line, exit status 2."""


@dataclass(frozen=True)
class Entry:
    """One file of a tree: its git mode ("100644"), blob id and path from the repository root."""
    mode: str
    blob: str
    path: str


@dataclass(frozen=True)
class Outcome:
    """What happened to one tag: old is None when it did not exist; old == new when unchanged."""
    tag: str
    old: str | None
    new: str


# -- filters of README.md and pyproject.toml ------------------------------------------------------

def keep_blocks(text: str, tag: int, block: tuple[re.Pattern, re.Pattern], where: str) -> str:
    """text without the `from post NN` blocks with NN > tag, and without any marker line.

    Blocks do not nest. Raises ValueError naming where and the line when an end
    has no start, a start comes inside a block, or a block is never closed.
    """
    start, end = block
    kept, opened = [], None
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        begins, ends = start.fullmatch(line), end.fullmatch(line)
        if begins:
            if opened:
                raise ValueError(f"{where}:{number}: a block starts inside the block of line {opened[0]}")
            opened = (number, int(begins.group(1)))
        elif ends:
            if not opened:
                raise ValueError(f"{where}:{number}: an end marker without a start")
            opened = None
        elif opened is None or opened[1] <= tag:
            kept.append(line)
    if opened:
        raise ValueError(f"{where}:{opened[0]}: the block starting here has no end marker")
    return "".join(kept)


def readme_for(text: str, tag: int) -> str:
    """README.md for post-`tag`: later blocks and later rows of the posts table dropped."""
    text = keep_blocks(text, tag, README_BLOCK, "README.md")
    return "".join(line for line in text.splitlines(keepends=True)
                   if not ((row := POSTS_TABLE_ROW.match(line)) and int(row.group(1)) > tag))


def pyproject_for(text: str, tag: int) -> str:
    """pyproject.toml for post-`tag`: later `# from post NN` blocks dropped."""
    return keep_blocks(text, tag, PYPROJECT_BLOCK, "pyproject.toml")


# -- which post a module and a test file belong to --------------------------------------------------

def folder_post(folder: str) -> int | None:
    """The post number of a top-level folder: NN for NN-name, 0 for datasets/, None for anything else."""
    if folder == DATASETS:
        return 0
    numbered = POST_FOLDER.fullmatch(folder)
    return int(numbered.group(1)) if numbered else None


def module_folders(paths) -> dict[str, str]:
    """Module name -> post folder (or datasets/) of the top-level .py files among paths, and of the .py files
    of a post folder's beyond/ and its rooms (the work beyond that post: a module there belongs to the post it
    extends).

    series.py puts the post folders on sys.path, then the rooms beyond them
    (beyond/ and its subfolders). A name defined in two folders (run.py in 02
    and 03) maps to the earliest post.
    """
    folders = {}
    for path in sorted(paths, key=lambda p: (folder_post(PurePosixPath(p).parts[0]) or 0, p)):
        parts = PurePosixPath(path).parts
        if (parts[-1].endswith(".py") and folder_post(parts[0]) is not None
                and (len(parts) == 2 or (len(parts) in (3, 4) and parts[1] in (BEYOND, TOOLBOX)))):
            folders.setdefault(parts[-1][:-3], parts[0])
    return folders


def imported_modules(source: str, where: str = "<source>") -> set[str]:
    """Top-level names of every module imported anywhere in source (`import a.b` -> a), relative imports left out."""
    try:
        tree = ast.parse(source, where)
    except SyntaxError as error:
        raise ValueError(f"{where}: cannot be parsed ({error.msg}, line {error.lineno})") from None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def post_of_test_file(source: str, folders: dict[str, str], post_folders, where: str = "<test>",
                      later_datasets: dict[str, int] | None = None) -> int | None:
    """The post a test file belongs to: the highest among the posts of the repository modules it
    imports, of the post folders its text names and of the later posts' datasets it names
    (later_datasets: name -> post); None when it has none of these (it goes in every tag).
    """
    posts = {post_of_dataset_file(f"{name}.py", later_datasets or {}) if folders[name] == DATASETS
             else folder_post(folders[name]) for name in imported_modules(source, where) if name in folders}
    posts |= {folder_post(folder) for folder in post_folders if folder in source}
    posts |= {post for name, post in (later_datasets or {}).items() if name in source}
    return max(posts, default=None)


def later_datasets(label_files: dict[str, str]) -> dict[str, int]:
    """name -> post of every dataset whose label file (path -> its JSON text) has a "post" above 0."""
    posts = {}
    for path, text in label_files.items():
        try:
            post = json.loads(text).get("post", 0)
        except (json.JSONDecodeError, AttributeError):
            raise ValueError(f"{path}: not a JSON label file") from None
        if post:
            posts[PurePosixPath(path).stem] = post
    return posts


def post_of_dataset_file(path: str, datasets: dict[str, int]) -> int:
    """The post a file of datasets/ belongs to: OWN_TASK_POST for the files of your own task, else that of the
    later dataset its name starts with (<name>... or make_<name>...), else 0."""
    name = PurePosixPath(path).name
    if OWN_TASK_FILES.fullmatch(name):
        return OWN_TASK_POST
    return max((post for dataset, post in datasets.items()
                if name.startswith(dataset) or name.startswith(f"make_{dataset}")), default=0)


# -- git ------------------------------------------------------------------------------------------

def git_bytes(*args: str, stdin: bytes | None = None, env: dict | None = None) -> bytes:
    """Run git in the current folder: its stdout, or TagError with the last line git wrote to stderr."""
    result = subprocess.run(["git", *args], input=stdin, capture_output=True, env={**os.environ, **(env or {})})
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {result.returncode}"]
        raise TagError(f"git {args[0]} failed: {message[-1]}")
    return result.stdout


def git(*args: str, stdin: bytes | None = None, env: dict | None = None) -> str:
    """git_bytes as text without the final newline."""
    return git_bytes(*args, stdin=stdin, env=env).decode().rstrip("\n")


def commit_of(ref: str, peel: str = "^{commit}") -> str | None:
    """The full commit id ref names (with peel="": the object id it holds), None when it names none."""
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}{peel}"],
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def read_blobs(blobs: list[str]) -> dict[str, bytes]:
    """Blob id -> content, in one `git cat-file --batch`."""
    out = git_bytes("cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode())
    contents, at = {}, 0
    for blob in blobs:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        contents[blob] = out[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
    return contents


def check_repository(ref: str) -> str:
    """The full id of ref's commit, after checking the folder is a clean git repository."""
    if subprocess.run(["git", "rev-parse", "--git-dir"], capture_output=True).returncode != 0:
        raise TagError(f"{Path.cwd()} is not inside a git repository")
    if git("rev-parse", "--is-inside-work-tree") == "true":
        # --no-optional-locks: status must not rewrite the user's index
        dirty = git("--no-optional-locks", "status", "--porcelain", "--untracked-files=no").splitlines()
        if dirty:
            names = ", ".join(line[3:] for line in dirty[:3]) + (", ..." if len(dirty) > 3 else "")
            raise TagError(f"uncommitted changes ({names}): tags are made from commits; commit or stash them first")
    commit = commit_of(ref)
    if commit is None:
        raise TagError(f"no commit named {ref!r} in this repository (make the tags from another one with --from REF)")
    return commit


@dataclass(frozen=True)
class Source:
    """The source commit, read once: its id, committer date (git's raw format) and files."""
    commit: str
    date: str
    entries: tuple[Entry, ...]
    texts: dict  # path -> text of every README.md, pyproject.toml, the label files and the tests/*.py files

    @property
    def post_folders(self) -> list[str]:
        """The numbered post folders, in order."""
        return sorted({e.path.split("/")[0] for e in self.entries if POST_FOLDER.fullmatch(e.path.split("/")[0])})

    @property
    def posts(self) -> list[int]:
        return sorted({folder_post(folder) for folder in self.post_folders})

    @property
    def later_datasets(self) -> dict[str, int]:
        """name -> post of the datasets a later post introduces (from their label files)."""
        return later_datasets({path: text for path, text in self.texts.items() if is_label_file(path)})


def read_source(commit: str) -> Source:
    """The files of commit, with the texts the tags are filtered and sorted by."""
    listing = git("ls-tree", "-r", "-z", "--full-tree", commit).split("\0")
    entries = []
    for line in filter(None, listing):
        info, path = line.split("\t", 1)
        mode, _kind, blob = info.split()
        entries.append(Entry(mode, blob, path))
    wanted = [e for e in entries if e.path == "pyproject.toml" or is_readme(e.path) or is_test_file(e.path)
              or is_test_helper(e.path) or e.path == CONFTEST or is_label_file(e.path)]
    blobs = read_blobs(sorted({e.blob for e in wanted}))
    texts = {e.path: blobs[e.blob].decode() for e in wanted}
    date = git("show", "-s", "--format=%cd", "--date=raw", commit)
    source = Source(commit, date, tuple(entries), texts)
    if not source.posts:
        raise TagError(f"commit {commit[:12]} has no post folders (NN-name/): is this the typed decisions repository?")
    return source


def is_readme(path: str) -> bool:
    """A .md file anywhere in the tree (a README.md, a post's beyond/README.md...): its blocks of later
    posts are filtered."""
    return PurePosixPath(path).suffix == ".md"


def is_label_file(path: str) -> bool:
    """A JSON file right in datasets/ (a label file; its "post" says which post introduces the dataset)."""
    parts = PurePosixPath(path).parts
    return len(parts) == 2 and parts[0] == DATASETS and parts[1].endswith(".json")


def is_test_file(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return parts[0] == "tests" and parts[-1].startswith("test_") and parts[-1].endswith(".py")


CONFTEST = "tests/conftest.py"


def is_test_helper(path: str) -> bool:
    """A module right in tests/ that is neither a test file nor conftest.py (readme_commands.py, fake_server.py...)."""
    parts = PurePosixPath(path).parts
    return (len(parts) == 2 and parts[0] == "tests" and parts[1].endswith(".py") and not is_test_file(path)
            and path != CONFTEST)


# -- one tag --------------------------------------------------------------------------------------

def posts_of_test_files(source: Source) -> dict[str, int | None]:
    """tests/test_*.py path -> its post (None: every tag); files importing this script are left out (main only)."""
    folders = module_folders(e.path for e in source.entries)
    posts = {}
    for path, text in source.texts.items():
        if is_test_file(path) and THIS_MODULE not in imported_modules(text, path):
            posts[path] = post_of_test_file(text, folders, source.post_folders, path, source.later_datasets)
    return posts


def posts_of_test_helpers(source: Source, tests: dict[str, int | None]) -> dict[str, int | None]:
    """tests/<helper>.py path -> the first post whose tag needs it (None: every tag).

    A helper is needed from the lowest post among the test files that import
    it (tests: their posts, None for every tag; conftest.py is in every tag) and the helpers that import
    it, so that a tag's tests find every helper they load; a helper that no
    test file of a tag needs (tests/module_loads.py before post 03) is left
    out of that tag. A helper nothing imports is a tool of its own: every tag.
    """
    helpers = {PurePosixPath(e.path).stem: e.path for e in source.entries if is_test_helper(e.path)}
    needed: dict[str, set[int | None]] = {path: set() for path in helpers.values()}
    users = {**tests, CONFTEST: None} if CONFTEST in source.texts else tests  # conftest.py is in every tag
    for path, post in users.items():
        text = source.texts[path]
        named = {name for name, helper in helpers.items() if PurePosixPath(helper).name in text}  # run by path
        for name in (imported_modules(text, path) & helpers.keys()) | named:
            needed[helpers[name]].add(post)
    imports = {path: imported_modules(source.texts[path], path) & helpers.keys() for path in helpers.values()}
    changed = True
    while changed:  # a helper that another helper imports is needed wherever that one is
        changed = False
        for path, names in imports.items():
            for name in names:
                before = len(needed[helpers[name]])
                needed[helpers[name]] |= needed[path]
                changed = changed or len(needed[helpers[name]]) != before
    return {path: None if not posts or None in posts else min(posts) for path, posts in needed.items()}


def tag_entries(source: Source, tag: int, tests: dict[str, int | None]) -> list[Entry]:
    """The files of post-`tag`, README.md and pyproject.toml filtered (their new blobs written)."""
    pyproject = source.texts.get("pyproject.toml", "")
    whole_pyproject = pyproject_for(pyproject, tag) == pyproject_for(pyproject, source.posts[-1])
    datasets = source.later_datasets
    helpers = posts_of_test_helpers(source, tests)
    entries = []
    for entry in source.entries:
        top = entry.path.split("/")[0]
        post = post_of_dataset_file(entry.path, datasets) if top == DATASETS else folder_post(top)
        if ((post is not None and post > tag) or (top == "results" and tag < RESULTS_FROM)
                or (is_test_file(entry.path) and (entry.path not in tests or (tests[entry.path] or 0) > tag))
                or (helpers.get(entry.path) or 0) > tag
                or (entry.path == "uv.lock" and not whole_pyproject)):
            continue
        if entry.path == "pyproject.toml" or is_readme(entry.path):
            text = source.texts[entry.path]
            if entry.path == "pyproject.toml":
                filtered = pyproject_for(text, tag)
            elif entry.path == "README.md":
                filtered = readme_for(text, tag)
            else:
                filtered = keep_blocks(text, tag, README_BLOCK, entry.path)
            if filtered != text:
                entry = Entry(entry.mode, git("hash-object", "-w", "--stdin", stdin=filtered.encode()), entry.path)
        entries.append(entry)
    return entries


def commit_tag(source: Source, tag: int, entries: list[Entry], parent: str) -> str:
    """The commit of post-`tag`: a tree made in a temporary index, fixed identity and date."""
    with tempfile.TemporaryDirectory(prefix="post-tags-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git("read-tree", "--empty", env=index)
        git("update-index", "-z", "--index-info", env=index,
            stdin="".join(f"{e.mode} {e.blob}\t{e.path}\0" for e in entries).encode())
        tree = git("write-tree", env=index)
    who = {f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER") for key, value in IDENTITY.items()}
    who |= {"GIT_AUTHOR_DATE": source.date, "GIT_COMMITTER_DATE": source.date}
    message = (f"{TAG.format(tag)}: the repository as a reader of post {tag:02d} needs it\n\n"
               f"Made by post_tags.py from commit {source.commit}: post folders\n"
               f"{source.posts[0]:02d}-{tag:02d}, datasets/{', results/' if tag >= RESULTS_FROM else ''} "
               f"and the tests of those posts.\n")
    return git("-c", "i18n.commitEncoding=UTF-8", "commit-tree", "--no-gpg-sign", tree, "-p", parent,
               env=who, stdin=message.encode())


def make_tags(ref: str) -> tuple[str, list[Outcome]]:
    """Build every tag from ref and move refs/tags/post-NN in one transaction: (source commit, outcomes)."""
    source = read_source(check_repository(ref))
    tests = posts_of_test_files(source)
    outcomes, parent = [], source.commit
    for tag in source.posts:
        parent = commit_tag(source, tag, tag_entries(source, tag, tests), parent)
        name = TAG.format(tag)
        outcomes.append(Outcome(name, commit_of(f"refs/tags/{name}", peel=""), parent))
    zero = "0" * len(source.commit)
    git("update-ref", "--stdin", stdin="".join(f"update refs/tags/{o.tag} {o.new} {o.old or zero}\n"
                                               for o in outcomes).encode())
    return source.commit, outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="ref", default="main", metavar="REF",
                        help="the branch, tag or commit the tags are made from (default: main)")
    args = parser.parse_args()
    try:
        commit, outcomes = make_tags(args.ref)  # ValueError: marker lines or a test file that do not parse
    except (TagError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"tags from {args.ref} (commit {commit[:12]}):")
    for outcome in outcomes:
        new = outcome.new[:12]
        if outcome.old is None:
            print(f"  {outcome.tag}  created    {new}")
        elif outcome.old == outcome.new:
            print(f"  {outcome.tag}  unchanged  {new}")
        else:
            stat = git("diff", "--stat", "--no-color", outcome.old, outcome.new).splitlines()
            print(f"  {outcome.tag}  moved      {outcome.old[:12]}..{new}{'' if stat else '  (same files)'}")
            for line in stat:
                print(f"      {line}")
    changed = sum(outcome.old != outcome.new for outcome in outcomes)
    print(f"{len(outcomes)} tags, {changed} created or moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
