"""The work beyond a post lives in the post's beyond/ folder: it imports the post, the post never imports it."""
import ast
import re
from pathlib import Path

import pytest
import series

ROOT = series.ROOT
BEYOND = sorted(ROOT.glob("[0-9][0-9]-*/beyond"))
# The two lines every script starts with (series.py), then the one line that adds its own beyond/ folder.
PATH_LINES = ("sys.path.insert(0, str(Path(__file__).resolve().parents[2]))\n"
              "import series  # puts the post folders on sys.path\n"
              "sys.path.insert(0, str(Path(__file__).resolve().parent))  # and this beyond folder, for its own modules\n")


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
    return {path.stem: path for folder in BEYOND for path in sorted(folder.glob("*.py"))}


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


def test_module_names_are_unique_across_post_folders_and_beyond_folders():
    top = set(series.module_files())
    names = [path.stem for folder in BEYOND for path in folder.glob("*.py")]
    assert sorted(set(names) & top) == [] and len(names) == len(set(names))


def beyond_scripts() -> list[Path]:
    """The beyond modules a reader runs (they end in the main block); a module only imported, like guarantee.py,
    relies on its importer's path."""
    return [path for path in sorted(beyond_modules().values())
            if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", beyond_scripts(), ids=lambda path: path.name)
def test_every_beyond_script_puts_the_post_folders_and_its_own_folder_on_the_path(path):
    assert path.read_text(encoding="utf-8").count(PATH_LINES) == 1


# make_task.py is itself work beyond the series (your own task, in post 08's tag: post_tags.OWN_TASK_FILES), and
# prints post 01's baselines, so it may import post 01's beyond/linear.py, as 07's beyond/scope_baseline.py does.
BEYOND_WORK_OUTSIDE = {("datasets/make_task.py", "linear")}


def test_no_post_module_imports_beyond_code():
    beyond = beyond_modules()
    offenders = [f"{path.relative_to(ROOT)} imports {name}"
                 for folder in series.FOLDERS for path in sorted(folder.glob("*.py"))
                 for name in sorted(imported(path) & beyond.keys())
                 if (str(path.relative_to(ROOT)), name) not in BEYOND_WORK_OUTSIDE]
    assert offenders == []


# A beyond README that outgrows a page becomes an index of pages, one per topic, beside it (08-routes/beyond/).
INDEX_LINES, PAGE_LINES = 100, 400


def pages(folder: Path) -> list[Path]:
    """The .md pages of a beyond folder beside its README.md."""
    return sorted(path for path in folder.glob("*.md") if path.name != "README.md")


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_08_beyond_readme_is_an_index_of_pages():
    assert len(pages(ROOT / "08-routes" / "beyond")) >= 8


@pytest.mark.parametrize("folder", [folder for folder in BEYOND if pages(folder)], ids=lambda folder: folder.parent.name)
def test_a_beyond_index_is_short_and_links_every_page_which_links_back(folder):
    index = folder / "README.md"
    assert line_count(index) <= INDEX_LINES
    text = index.read_text(encoding="utf-8")
    assert [page.name for page in pages(folder) if f"]({page.name})" not in text] == []
    assert [page.name for page in pages(folder) if "](README.md)" not in page.read_text(encoding="utf-8")] == []


@pytest.mark.parametrize("path", [path for folder in BEYOND for path in sorted(folder.glob("*.md"))],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_every_beyond_page_fits_a_page(path):
    assert line_count(path) <= PAGE_LINES, f"{path.relative_to(ROOT)}: split it into pages an index links"
    title = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert title.startswith("# "), "a page opens with its title"
