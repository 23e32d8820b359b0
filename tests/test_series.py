"""series.py: the post folders come first on sys.path, module names are unique, and the code lints clean."""
import subprocess
import sys
from pathlib import Path

import pytest
import series

ROOT = Path(__file__).resolve().parents[1]


def test_a_post_module_wins_over_an_installed_package_of_the_same_name(tmp_path):
    # A stand-in for an installed package called `routes`, on the path before the repository.
    (tmp_path / "routes.py").write_text("WHERE = 'installed'\n")
    found = tmp_path / "found.txt"  # where the child writes the file `import routes` loaded
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import series, routes; "
            "open(sys.argv[3], 'w').write(routes.__file__)")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(ROOT), str(found)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert Path(found.read_text()) == ROOT / "08-routes" / "routes.py"


def test_two_post_modules_with_one_name_are_refused_naming_both(tmp_path, monkeypatch):
    for folder in ("01-a", "02-b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helpers.py").write_text("")
        (tmp_path / folder / "run.py").write_text("")  # entry points may share the name
    monkeypatch.setattr(series, "ROOT", tmp_path)
    monkeypatch.setattr(series, "FOLDERS", sorted(p for p in tmp_path.iterdir()))
    with pytest.raises(ImportError, match=r"helpers: 01-a/helpers.py, 02-b/helpers.py; rename one"):
        series.check_unique_names()


def test_the_repository_has_no_two_post_modules_of_one_name():
    series.check_unique_names()
    assert [p.parent.name for p in series.module_files()["run"]] == ["02-forcing-a-valid-answer",
                                                                     "03-where-confidence-comes-from"]


def test_the_code_passes_ruff_with_the_projects_settings(venv_tool):
    result = subprocess.run([venv_tool("ruff"), "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
