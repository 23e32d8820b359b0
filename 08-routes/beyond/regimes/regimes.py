"""Beyond the series: the model, the cheap baseline and the combined decision, each in its regime of labelled messages.

    python3 08-routes/beyond/regimes/regimes.py                     # BANKING77
    python3 08-routes/beyond/regimes/regimes.py --dataset clinc150

One table of the whole decisions, read as posts 04-08 read them (no
server; your own complete run of a row, else its committed reference run,
files not named): the model alone (post 03's run), post 01's
logistic regression (08-routes/beyond/regimes/baseline_lines.py: linear5, linear15,
linearall) and the combined decisions of combined.py (shortlists from the
retriever fitted on the prompt's examples, from post 01's nearest
neighbours, from the full-data logistic regression), each followed by
the same product without the model (its exponents 0, the retriever's
exponent fitted on calib: what the model's share of the combined
confidence is measured against). Each row says how many
labelled messages it used: those its decision was fitted on (the prompt's
examples for the model) and the calib split's, on which every row fits its
calibration and thresholds; a message used for both is counted once. The
columns, on the test split:

- accuracy (CLINC150: on its in-scope messages);
- ECE, 15 bins (post 04), of the raw confidence and after post 06's
  isotonic fit on calib;
- AUROC of the raw confidence for right against wrong answers (post 07);
  for CLINC150 also the AUROC of P(out-of-scope group) for flagging the
  out-of-scope messages (07's out_of_scope.py, detector P(K-A));
- act at 98.5%: coverage and precision of the act route of post 08, point
  rule (isotonic, fitted on calib) and certified rule (exact lower bound at
  95%, README.md), with the default ask target.

On BANKING77 a last row quotes the GB10 reference of the series' posts (the
27B model in the series' regime; labelled as quoted, not measured
here). A row whose files are missing names the command that writes them.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from certified_routes import RULES, fit_rule
from combined import combined_decisions, combined_variant, labelled_messages, shortlist_variant
from ece import ece, outcomes
from labels import split_code
from linear import example_messages, regime_messages
from prompt import prompt_examples
from registry import DATASETS, Dataset, add_dataset_argument
from results_record import ResultsLine
from routes import TARGET, fit_calibration, report, route_all
from separation import SingleClassError, auroc
from variants import read_variant


@dataclass(frozen=True)
class Row:
    """One decision of the table: its name, the variant of its results files ("" for post 03's run), the
    messages its decision was fitted on besides calib ("prompt", or a regime of linear.py), and the command
    that writes its files ({dataset}: where --dataset goes). without_model: the variant is a shortlist run,
    and the row is combined.py's product fitted on it with the model's exponents 0 (combined_decisions).
    full_name: the name where the row above it is not there to say what "the same" is ("" for name)."""

    name: str
    variant: str
    fitted_on: str
    command: str
    without_model: bool = False
    full_name: str = ""


def shortlist_rows(name: str, source: str, fitted_on: str) -> tuple[Row, Row]:
    """The combined decision on shortlist.py's runs from `source`, and the same product without the model."""
    option = "" if source == "knn" else f" --source {source}"
    runs = (f"python3 08-routes/beyond/shortlist.py{{dataset}}{option} --split calib, the same with --split test")
    return (Row(f"combined, {name}", combined_variant(5, source), fitted_on,
                f"{runs}, then python3 08-routes/beyond/combined.py{{dataset}}{option}"),
            Row("  the same without the model", shortlist_variant(5, source), fitted_on, runs, without_model=True,
                full_name=f"combined without the model, {name}"))


ROWS = (
    Row("model alone (CPU default)", "", "prompt", "python3 03-where-confidence-comes-from/run.py{dataset} --split calib, the same with --split test"),
    Row("logistic regression, the examples", "linear5", "examples", "python3 08-routes/beyond/baseline_lines.py{dataset}"),
    Row("logistic regression, the examples and calib", "linear15", "examples+calib", "python3 08-routes/beyond/baseline_lines.py{dataset}"),
    *shortlist_rows("shortlists of the 5-per-intent classifier", "examples", "examples"),
    Row("logistic regression, all training messages", "linearall", "full", "python3 08-routes/beyond/baseline_lines.py{dataset}"),
    *shortlist_rows("shortlists of post 01's nearest neighbours", "knn", "full"),
    *shortlist_rows("shortlists of the full logistic regression", "linear", "full"),
)


def fitted_messages(dataset: Dataset, fitted_on: str) -> list:
    """The labelled messages a row's decision was fitted on besides calib: "prompt", the examples the prompt
    shows; else linear.regime_messages of that regime."""
    if fitted_on == "prompt":
        return example_messages(dataset.load_labels(), prompt_examples(dataset.name))
    return regime_messages(dataset, fitted_on)


@dataclass(frozen=True)
class Figures:
    """The table's cells for one row (fractions in [0, 1]; None where a figure does not exist)."""

    accuracy: float
    ece_raw: float
    ece_isotonic: float
    auroc: float | None
    out_of_scope_auroc: float | None
    # rule -> (coverage, precision or None when nothing is acted on); a rule missing: a figure not given
    act: dict[str, tuple[float, float | None]]


# The GB10 reference, quoted (not measured here): Ternary Bonsai 2 27B in the series' regime, the prompt's 5
# examples per intent and the calib split (1,155 labelled messages), BANKING77 test. Accuracy and act: the
# series' post 1 (1,566 of 3,080 acted on, 98.7% right); ECE 0.041 raw: post 4, which also gives 0.011 as
# post 6's figure after isotonic regression. The posts give no AUROC and no certified rule.
GB10_NAME = "27B on the GB10 (quoted from the series' posts 1, 4)"
GB10_LABELLED = 1_155
GB10_REFERENCE = {"banking77": Figures(0.869, 0.041, 0.011, None, None, {"point": (1566 / 3080, 0.987)})}


def figures(calib: list[ResultsLine], test: list[ResultsLine], out_of_scope: frozenset[str]) -> Figures:
    """The columns of one row from its calib and test answers (post 03's lines, error lines left out)."""
    confidences, corrects = outcomes(test)
    inside = [r for r in test if r.gold_code not in out_of_scope]
    try:
        separation = auroc(confidences, corrects)
    except SingleClassError:
        separation = None
    flagged = None
    if out_of_scope:
        (letter,) = {split_code(code)[0] for code in out_of_scope}
        scores = [r.group_distribution[letter] if r.status == "ok" else 0.0 for r in test]
        flagged = auroc(scores, [r.gold_code in out_of_scope for r in test])
    calibrate = fit_calibration(calib)
    act = {}
    for rule in RULES:
        thresholds = fit_rule(calib, calibrate, out_of_scope=out_of_scope, rule=rule)
        result = report(test, route_all(test, calibrate, thresholds), out_of_scope)
        act[rule] = (result.coverage, result.act_precision)
    return Figures(sum(r.correct for r in inside) / len(inside), ece(confidences, corrects),
                   ece([calibrate(r) for r in test], corrects), separation, flagged, act)


def cell(value: float | None, digits: int = 1, percent: bool = True) -> str:
    """A table cell: a fraction as a percentage (or a plain number with percent=False), "-" for None."""
    if value is None:
        return "-"
    return f"{100 * value:.{digits}f}%" if percent else f"{value:.{digits}f}"


def row_text(name: str, labelled: int, got: Figures, out_of_scope: bool) -> str:
    """One line of the table: a row's name, its labelled messages and its figures (with the OOS AUROC column
    on a dataset with an out-of-scope code)."""
    acts = "  ".join(f"{'-':>17}" if rule not in got.act else f"{'none':>17}" if got.act[rule][1] is None
                     else f"{cell(got.act[rule][0]):>7} at {cell(got.act[rule][1]):>6}" for rule in RULES)
    return (f"{name:<52} {labelled:>8,} {cell(got.accuracy):>8} {cell(got.ece_raw, 3, False):>7} "
            f"{cell(got.ece_isotonic, 3, False):>7} {cell(got.auroc, 3, False):>6}"
            + (f" {cell(got.out_of_scope_auroc, 3, False):>9}" if out_of_scope else "") + f"  {acts}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    args = parser.parse_args()
    dataset = DATASETS[args.dataset]
    scope = dataset.out_of_scope_codes()
    print(f"{dataset.name.upper()} test split; every calibration and threshold fitted on the calib split; "
          f"act target {100 * TARGET:.1f}%\n")
    header = (f"{'decision':<52} {'labelled':>8} {'accuracy':>8} {'ECE raw':>7} {'ECE iso':>7} {'AUROC':>6}"
              + (f" {'OOS AUROC':>9}" if scope else "")
              + f"  {'act, point rule':>17}  {'act, certified':>17}")
    print(header)
    missing = []
    for row in ROWS:
        try:
            calib, test = (read_variant(split, None, dataset.name, row.variant).records for split in ("calib", "test"))
            if row.without_model:
                _, decided = combined_decisions(calib, test, dataset, with_model=False)
                calib, test = decided["calib"], decided["test"]
        except FileNotFoundError:
            option = "" if dataset.name == "banking77" else f" --dataset {dataset.name}"
            missing.append(f"{row.full_name or row.name}: no answers yet; write them with: "
                           f"{row.command.format(dataset=option)}")
            continue
        labelled = labelled_messages(dataset, fitted_messages(dataset, row.fitted_on))
        print(row_text(row.name, labelled, figures(calib, test, scope), bool(scope)))
    if dataset.name in GB10_REFERENCE:
        print(row_text(GB10_NAME, GB10_LABELLED, GB10_REFERENCE[dataset.name], bool(scope)))
        print("  (quoted, not measured here; -: a figure the posts do not give)")
    print("\nlabelled: the messages a row was fitted on and the calib split's, each once. act: coverage at precision "
          "on test (none: nothing acted on). ECE iso: after isotonic regression fitted on calib." + ("" if not scope else
                       f"\naccuracy on the in-scope messages, ECE and AUROC on all (the right answer of an out-of-scope "
                       f"message is {', '.join(sorted(scope))}); OOS AUROC: P(out-of-scope group) flagging the "
                       "out-of-scope messages."))
    for line in missing:
        print(f"not in the table: {line}")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
