"""Puts every post folder of the series on sys.path.

Post folders start with digits and contain hyphens, so they are not Python
packages. A script reaches an earlier post's module by importing this file
first; after that, ``from decision import ask_code`` finds
01-why-typed-decisions/decision.py. Module names are unique across folders,
so the order of the folders on sys.path does not matter.

Every script starts with the same two lines::

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import series  # noqa: F401  (puts the post folders on sys.path)
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
FOLDERS = sorted(
    path for path in ROOT.iterdir()
    if path.is_dir() and (path.name[:2].isdigit() or path.name == "datasets")
)
for folder in FOLDERS:
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
