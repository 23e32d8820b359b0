"""The house: the work beyond a post lives in the post's beyond/ folder, one room per idea; it imports the post, the
post never imports it; pages fit a page, modules a file, folders a glance; a name means one thing."""
import ast
import re
from pathlib import Path

import pytest
import series

ROOT = series.ROOT
BEYOND = sorted(ROOT.glob("[0-9][0-9]-*/beyond"))
ROOMS = [folder for folder in sorted(ROOT.glob("[0-9][0-9]-*/beyond/*")) if folder.is_dir()
         and any(folder.glob("*.py"))]


def preamble(path: Path) -> str:
    """The two lines every script starts with (series.py), with the number of folders up to the root."""
    depth = len(path.relative_to(ROOT).parts) - 1
    return (f"sys.path.insert(0, str(Path(__file__).resolve().parents[{depth}]))\n"
            "import series  # puts the post folders on sys.path\n")


def imported(path: Path) -> set[str]:
    """Top-level names of the modules a file imports anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def beyond_modules() -> dict[str, Path]:
    return {path.stem: path for folder in BEYOND for path in sorted(folder.glob("**/*.py"))}


SPLIT_POSTS = ("01-why-typed-decisions", "02-forcing-a-valid-answer", "03-where-confidence-comes-from", "07-separation",
               "08-routes")


@pytest.mark.parametrize("post", SPLIT_POSTS)
def test_a_split_post_has_a_beyond_folder_with_its_readme_and_no_beyond_md(post):
    assert ROOT / post / "beyond" in BEYOND
    assert (ROOT / post / "beyond" / "README.md").exists()
    assert not (ROOT / post / "BEYOND.md").exists()


@pytest.mark.parametrize("folder", BEYOND, ids=lambda folder: folder.parent.name)
def test_every_beyond_readme_opens_with_the_post_it_extends_and_the_post_readme_links_it(folder):
    number = folder.parent.name[:2]
    title, first_paragraph = folder.joinpath("README.md").read_text(encoding="utf-8").split("\n\n")[:2]
    assert title.startswith(f"# {number} Beyond the post")
    assert re.search(rf"\bpost 0?{int(number)}\b", first_paragraph)
    assert "](beyond/README.md)" in folder.parent.joinpath("README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("room", ROOMS, ids=lambda room: str(room.relative_to(ROOT)))
def test_every_room_has_a_readme_that_links_back_and_names_its_command_and_its_pages(room):
    readme = room / "README.md"
    assert readme.exists(), f"{room.relative_to(ROOT)} has no README.md"
    text = readme.read_text(encoding="utf-8")
    assert "](../README.md)" in text.split("\n\n", 2)[1], "the first paragraph links the beyond index"
    assert re.search(r"```sh\npython3 \S+\.py", text), "the one command to run, in an sh block"
    assert [page.name for page in pages(room) if f"]({page.name}" not in text] == []
    assert f"]({room.name}/README.md)" in (room.parent / "README.md").read_text(encoding="utf-8")


def test_the_service_is_one_step_from_the_08_beyond_index():
    index = (ROOT / "08-routes" / "beyond" / "README.md").read_text(encoding="utf-8")
    assert "](service/README.md)" in index.split("\n\n", 3)[2]


def test_module_names_are_unique_across_post_folders_and_rooms():
    clashes = {name: paths for name, paths in series.module_files().items()
               if len(paths) > 1 and name not in series.SCRIPT_NAMES}
    assert clashes == {}
    assert set(series.ROOMS) >= set(ROOMS) | {folder for folder in BEYOND if any(folder.glob("*.py"))}


def beyond_scripts() -> list[Path]:
    """The beyond modules a reader runs (they end in the main block); a module only imported, like guarantee.py,
    relies on its importer's path."""
    return [path for path in sorted(beyond_modules().values())
            if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", beyond_scripts(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_beyond_script_starts_with_the_two_lines_and_adds_no_folder_of_its_own(path):
    text = path.read_text(encoding="utf-8")
    assert text.count(preamble(path)) == 1 and text.count("sys.path.insert") == 1


# make_task.py is itself work beyond the series (your own task, in post 08's tag: post_tags.OWN_TASK_FILES), and
# prints post 01's baselines and what post 08's beyond rules need of a task, and writes a task's fields (--fields,
# checked and prompted by 08-routes/beyond/fields), so it may import them.
BEYOND_WORK_OUTSIDE = {("datasets/make_task.py", "linear"), ("datasets/make_task.py", "harm"),
                       ("datasets/make_task.py", "guarantee"), ("datasets/make_task.py", "fields")}


def test_no_post_module_imports_beyond_code():
    beyond = beyond_modules()
    offenders = [f"{path.relative_to(ROOT)} imports {name}"
                 for folder in series.FOLDERS for path in sorted(folder.glob("*.py"))
                 for name in sorted(imported(path) & beyond.keys())
                 if (str(path.relative_to(ROOT)), name) not in BEYOND_WORK_OUTSIDE]
    assert offenders == []


# ---------------------------------------------------------------- sizes: a page, a module, a folder

PAGE_LINES, INDEX_LINES, MODULE_LINES, FOLDER_FILES = 400, 100, 650, 15


def pages(folder: Path) -> list[Path]:
    """The .md pages of a folder beside its README.md."""
    return sorted(path for path in folder.glob("*.md") if path.name != "README.md")


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def tracked(pattern: str) -> list[Path]:
    """The repository's files matching a glob from the root, outside .venv, .git and .pytest_cache."""
    return sorted(path for path in ROOT.glob(pattern) if not {".venv", ".git", ".pytest_cache"} & set(path.parts))


@pytest.mark.parametrize("path", tracked("**/*.md"), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_markdown_page_fits_a_page(path):
    assert line_count(path) <= PAGE_LINES, f"{path.relative_to(ROOT)}: split it into pages an index links"
    title = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert title.startswith("# "), "a page opens with its title"


def test_no_python_module_is_longer_than_a_file_should_be():
    long = [f"{path.relative_to(ROOT)}: {line_count(path)}" for path in tracked("**/*.py")
            if line_count(path) > MODULE_LINES]  # the tests too
    assert long == []
    assert line_count(ROOT / "00-setup" / "server.py") < 500


def test_no_folder_under_08_routes_holds_more_than_15_files():
    crowded = [f"{folder.relative_to(ROOT)}: {n}" for folder in [ROOT / "08-routes", *ROOT.glob("08-routes/**/")]
               if folder.is_dir() and "__pycache__" not in folder.parts
               and (n := sum(1 for p in folder.iterdir() if p.name != "__pycache__")) > FOLDER_FILES]
    assert crowded == []
    assert not (ROOT / "08-routes" / "beyond" / "route_fitted.py").exists()


# ---------------------------------------------------------------- one meaning per name

# Top-level names defined in more than one module on purpose, each with the one meaning they share:
SAME_MEANING = {
    "main": "every script's entry point",
    # the loader interface a dataset's module provides (registry.py's docstring): the same function for each dataset
    "check_labels": "a loader's check of its label file", "fit_messages": "a loader's training messages",
    "load_labels": "a loader's label set", "load_rows": "a loader's data rows", "load_split": "a loader's split",
    # variants.py swaps these into post 03's reader inside reading(variant): the same function for a variant's files
    "default_results": "the results file a reader reads", "own_results_path": "where a reader's own run goes",
    "run_command": "the command that writes a results file",
}


def test_no_name_is_defined_in_two_modules_with_different_meanings():
    defined: dict[str, list[str]] = {}
    for path in tracked("**/*.py"):
        if "tests" in path.relative_to(ROOT).parts:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    twice = {name: paths for name, paths in defined.items() if len(paths) > 1 and name not in SAME_MEANING}
    assert twice == {}, "rename one, or add the name to SAME_MEANING with the meaning both share"
