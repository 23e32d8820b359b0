"""The plotting scripts of posts 04-07 without matplotlib: every number printed, the figure skipped in one line, exit 0."""
import pytest

PLOTTING = ("04-is-the-confidence-honest/plot.py", "05-fixing-the-confidence/temperature.py",
            "06-isotonic/isotonic.py", "07-separation/coverage_plot.py")


@pytest.fixture
def without_matplotlib(tmp_path):
    """env entries under which `import matplotlib` fails, as it does in a python without it: a package of that
    name first on the path whose import raises ImportError."""
    blocker = tmp_path / "blocker" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("No module named \'matplotlib\'")\n')
    return {"PYTHONPATH": str(blocker.parent)}


@pytest.mark.parametrize("script", PLOTTING)
def test_a_plotting_script_without_matplotlib_prints_every_number_skips_the_figure_and_exits_0(
        script, tmp_path, run_script, without_matplotlib):
    pytest.importorskip("matplotlib")  # the run with it is what the run without it is compared with
    drawn, skipped = tmp_path / "drawn.png", tmp_path / "skipped.png"
    with_it = run_script(script, "--no-show", "--png", drawn)
    without = run_script(script, "--no-show", "--png", skipped, env=without_matplotlib)
    assert with_it.returncode == 0, with_it.stderr
    assert without.returncode == 0, without.stderr
    assert drawn.exists() and not skipped.exists()
    # the same lines but the last: where one saved the figure, the other says in one line why it did not
    assert with_it.stdout.splitlines()[:-1] == without.stdout.splitlines()[:-1]
    assert with_it.stdout.splitlines()[-1] == f"saved {drawn}"
    assert without.stdout.splitlines()[-1].startswith("no figure: the plots need matplotlib: pip install matplotlib")
    assert without.stderr == ""
