"""Puts every post folder of the series on sys.path, ahead of installed packages, then the rooms beyond the posts.

Post folders start with digits and contain hyphens, so they are not Python
packages. A script reaches an earlier post's module by importing this file
first; after that, ``from decision import ask_code`` finds
01-why-typed-decisions/decision.py. Every script starts with the same two
lines (linters accept imports after a sys.path change, so they need no
exception), the number being how many folders up the repository root is
(1 in a post folder, 2 in a post's beyond/, 3 in a room of it)::

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import series  # puts the post folders on sys.path

00-setup/toolbox/ is a folder of the path too: the modules every folder's
scripts use that are neither data nor a post's idea (script_exit.py,
logprob_format.py). The work beyond a post lives in its beyond/ folder, one room (a subfolder)
per idea; every folder there that holds Python modules goes on the path
too, after the post folders (ROOMS), so a room imports its own modules, the
posts' and a sibling room's public functions by name alike. A post's own
modules never import a room's (tests/test_beyond_folders.py checks it).

The folders go right after the repository root, before site-packages, so an
installed package that happens to share a module's name (say, one called
`routes`) never wins the import. Module names must be unique across the
folders and rooms, since only the first of two equal names could ever be
imported: a second one raises ImportError here, naming both files. The one
exception is `run.py`, the entry point of posts 02 and 03, which nothing
imports.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# The toolbox every folder's scripts use and that is neither data nor a post's idea (how a script exits on bad
# input, what a reply's logprobs look like), named as such, inside the setup floor.
TOOLBOX = ROOT / "00-setup" / "toolbox"
FOLDERS = sorted(
    [path for path in ROOT.iterdir() if path.is_dir() and (path.name[:2].isdigit() or path.name == "datasets")]
    + [TOOLBOX]
)
# beyond/ of each post and its rooms: the folders under it that hold a Python module
ROOMS = sorted({path.parent for folder in FOLDERS for path in folder.glob("beyond/**/*.py")})
# Entry points that several posts have and nothing imports.
SCRIPT_NAMES = {"run"}


def module_files() -> dict[str, list[Path]]:
    """Module name -> the .py files of that name in the post folders and rooms (more than one is an error)."""
    found: dict[str, list[Path]] = {}
    for folder in FOLDERS + ROOMS:
        for path in sorted(folder.glob("*.py")):
            found.setdefault(path.stem, []).append(path)
    return found


def check_unique_names() -> None:
    """Raise ImportError naming every module name that two folders share (run.py excepted)."""
    clashes = {name: paths for name, paths in module_files().items() if len(paths) > 1 and name not in SCRIPT_NAMES}
    if clashes:
        listed = "; ".join(f"{name}: {', '.join(str(p.relative_to(ROOT)) for p in paths)}"
                           for name, paths in sorted(clashes.items()))
        raise ImportError(f"two modules share a name, so only one could be imported: {listed}; rename one")


check_unique_names()
for folder in map(str, FOLDERS + ROOMS):
    if folder in sys.path:
        sys.path.remove(folder)
position = sys.path.index(str(ROOT)) + 1 if str(ROOT) in sys.path else 0
sys.path[position:position] = [str(folder) for folder in FOLDERS + ROOMS]
