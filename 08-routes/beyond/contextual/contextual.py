"""Contextual calibration: each step's distribution divided by the model's prior over the letters (beyond the series).

    python3 08-routes/beyond/contextual/letter_prior.py                        # once per model and prompt: the prior (server)
    python3 08-routes/beyond/contextual/contextual.py                          # BANKING77: corrected answers, before and after
    python3 08-routes/beyond/contextual/contextual.py --dataset card_help      # a task of your own (datasets/your-task.md)
    python3 08-routes/beyond/variants.py 08-routes/routes.py --variant contextual

A model may favour some letters whatever the message says: on a task of
eleven labels in one group, the CPU default model put 0.17-0.18 of its
mean intent-step distribution on E and F, and 0.04 on G. Zhao et al.
(2021, "Calibrate Before Use", ICML) measure that bias with content-free
inputs ("N/A", "", "[MASK]"): the model's distribution when the message
says nothing is its prior over the letters. Each step's renormalized
distribution p (post 03's) is then divided by that prior and renormalized:

    q(letter) = p(letter) / prior(letter) / sum over letters m of p(m) / prior(m)

(their W = diag(prior)^-1, b = 0). No label is used: the prior comes from
letter_prior.py's requests (a few per prompt, once), read here from a JSON
file (LetterPrior). A letter with prior 0 (no content-free input had it
among its top_logprobs candidates) takes the smallest prior of its step
that is not 0: its true prior is below every listed candidate's, so this
is the least it could be divided by (a correction that is, if anything,
too small).

Applied to the answers already saved (post 03's results lines):

- the intent step is exact: its distribution given the decoded group is
  recorded, and the prior of that group's intent step is known. The new
  answer is the most probable intent letter after the correction (on a tie
  the decoded letter stays, else the first in the step's order);
- the group step is not corrected here: a corrected group distribution may
  make another group the most probable, and the intent step after that
  group was never asked. The script counts how often that would happen
  (and how often the move would reach the right group or leave it), which
  says what a live run that asks again would change. On a task with one
  group the group step has one letter, probability 1, and nothing is lost;
- the off-label mass stays as recorded (the division acts on the
  renormalized distribution).

The corrected lines keep post 03's fields (code, correct, confidence =
p_group x p_intent_given_group, the distributions; the model's own code and
confidence move to the extra fields model_code and model_confidence) and go
to 03-where-confidence-comes-from/results/<dataset>-contextual-<split>.jsonl,
so that every post script reads them through variants.py (--variant
contextual). The script prints, for the plain answers and the corrected
ones: accuracy and ECE on calib and test, and on test the ECE after post
06's isotonic fit on calib and post 08's act route at its default target
(thresholds fitted on calib).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from compare import percent
from ece import ece, outcomes
from isotonic import fit_isotonic
from prompt import load_prompt
from registry import DATASETS, add_dataset_argument
from results_file import relative, replace_lines
from results_record import ResultsLine, is_number
from routes import TARGET, fit_calibration, fit_thresholds, report, route_all
from saved_answers import OWN_RESULTS, describe, read_split
from variants import own_results_path

VARIANT = "contextual"
# The content-free inputs of Zhao et al. 2021 (section 5): the message says nothing, so what the model answers is
# its prior over the letters. Averaged over the three.
CONTENT_FREE = ("N/A", "", "[MASK]")
# The priors measured for the committed reference runs: a reader's own go beside the own results (OWN_RESULTS).
COMMITTED_PRIORS = Path(__file__).resolve().parent / "priors"


@dataclass(frozen=True)
class LetterPrior:
    """The model's distribution over the letters at each step for content-free inputs: its prior.

    dataset, model, build, prompt_sha256: what it was measured with (the
    server's model and build, the system prompt's sha256). inputs: the
    content-free messages averaged. top_logprobs: candidates asked per
    token. group: group letter -> mean renormalized probability at the
    group step (sums to 1). intent: group letter -> (intent letter -> mean
    renormalized probability at the intent step after that group; sums to
    1). off_label: "group" and "intent" -> the mean off-label mass of those
    steps over the requests, in [0, 1] (what the division leaves alone).
    """

    dataset: str
    model: str
    build: str | None
    prompt_sha256: str
    inputs: tuple[str, ...]
    top_logprobs: int
    group: Mapping[str, float]
    intent: Mapping[str, Mapping[str, float]]
    off_label: Mapping[str, float]

    def to_json(self) -> dict:
        """The JSON object of the prior (the fields above, inputs as a list)."""
        return {"dataset": self.dataset, "model": self.model, "build": self.build,
                "prompt_sha256": self.prompt_sha256, "inputs": list(self.inputs), "top_logprobs": self.top_logprobs,
                "group": dict(self.group), "intent": {g: dict(d) for g, d in self.intent.items()},
                "off_label": dict(self.off_label)}

    @classmethod
    def from_json(cls, record: object, where: str) -> LetterPrior:
        """The prior of a JSON object as to_json writes it; ValueError naming `where` and the first bad field."""
        def bad(problem: str) -> ValueError:
            return ValueError(f"{where}: {problem}; not a prior written by letter_prior.py")

        if not isinstance(record, dict):
            raise bad("not a JSON object")
        for name in ("dataset", "model", "prompt_sha256"):
            if not isinstance(record.get(name), str) or not record[name]:
                raise bad(f"field {name!r} is not a non-empty string")
        if not isinstance(record.get("inputs"), list) or not all(isinstance(t, str) for t in record["inputs"]):
            raise bad("field 'inputs' is not a list of strings")
        distributions = [("group", record.get("group"))]
        if not isinstance(record.get("intent"), dict) or not record["intent"]:
            raise bad("field 'intent' is not an object of groups")
        distributions += [(f"intent of group {g}", d) for g, d in record["intent"].items()]
        for name, distribution in distributions:
            if not (isinstance(distribution, dict) and distribution
                    and all(re.fullmatch(r"[A-Z]", k) and is_number(p) and 0 <= p <= 1
                            for k, p in distribution.items())):
                raise bad(f"the {name} is not an object of letters and probabilities")
        return cls(record["dataset"], record["model"], record.get("build"), record["prompt_sha256"],
                   tuple(record["inputs"]), record.get("top_logprobs", 0), record["group"], record["intent"],
                   record.get("off_label", {}))


def prior_name(dataset: str, model: str, prompt_sha256: str) -> str:
    """The file name of a prior: <dataset>-prior-<model>-<first 16 hex of the prompt's sha256>.json."""
    return f"{dataset}-prior-{model}-{prompt_sha256[:16]}.json"


def own_prior_path(dataset: str, model: str, prompt_sha256: str) -> Path:
    """Where letter_prior.py writes a reader's prior: beside the own results (03-where-confidence-comes-from/results/)."""
    return OWN_RESULTS / prior_name(dataset, model, prompt_sha256)


def find_prior(dataset: str, model: str, prompt_sha256: str, given: Path | None = None) -> tuple[Path, LetterPrior]:
    """The prior for dataset, model and prompt: `given` if named, else the reader's own (own_prior_path), else the
    committed one (priors/ in this folder). Raises FileNotFoundError naming the command that measures it, and
    ValueError when the file is not a prior or one of another dataset, model or prompt."""
    name = prior_name(dataset, model, prompt_sha256)
    candidates = [given] if given else [OWN_RESULTS / name, COMMITTED_PRIORS / name]
    path = next((p for p in candidates if p.exists()), None)
    if path is None:
        option = "" if dataset == "banking77" else f" --dataset {dataset}"
        raise FileNotFoundError(f"no prior at {relative(candidates[0])}: measure it with the server running "
                                f"{model}: python3 08-routes/beyond/letter_prior.py{option}")
    try:
        prior = LetterPrior.from_json(json.loads(path.read_text(encoding="utf-8")), str(relative(path)))
    except json.JSONDecodeError as error:
        raise ValueError(f"{relative(path)}: not JSON ({error.msg}, line {error.lineno})") from None
    if (prior.dataset, prior.model, prior.prompt_sha256) != (dataset, model, prompt_sha256):
        raise ValueError(f"{relative(path)} is the prior of {prior.dataset}, model {prior.model}, prompt "
                         f"{prior.prompt_sha256[:16]}, not of {dataset}, model {model}, prompt {prompt_sha256[:16]}")
    return path, prior


def mean_distribution(distributions: list[Mapping[str, float]]) -> dict[str, float]:
    """The letter-by-letter mean of distributions (a letter missing from one counts as 0 there), in the order the
    letters first appear. Raises ValueError for no distributions."""
    if not distributions:
        raise ValueError("no distributions to average")
    letters = list(dict.fromkeys(letter for d in distributions for letter in d))
    return {letter: sum(d.get(letter, 0.0) for d in distributions) / len(distributions) for letter in letters}


def divide_by_prior(distribution: Mapping[str, float], prior: Mapping[str, float]) -> dict[str, float]:
    """q(l) = p(l) / prior(l), renormalized over the letters: contextual calibration of one step (Zhao et al. 2021).

    distribution: letter -> p (post 03's renormalized step; a letter of the
    prior missing here counts as p = 0). prior: letter -> the content-free
    probability. A prior of 0 is replaced by the smallest prior of the step
    above 0 (see the module docstring). Returns letter -> q over the
    distribution's letters then the prior's others, in that order, summing to
    1; all 0 when p is 0 everywhere (no letter among the candidates: nothing
    to correct). Raises ValueError when the distribution has a letter the
    prior lacks (a prior of another prompt) or the prior is 0 everywhere.
    """
    unknown = [letter for letter in distribution if letter not in prior]
    if unknown:
        raise ValueError(f"the letters {''.join(unknown)} have no prior: a prior of another prompt or step")
    lowest = min((p for p in prior.values() if p > 0), default=None)
    if lowest is None:
        raise ValueError("the prior is 0 for every letter: no content-free input put any mass on them")
    letters = list(dict.fromkeys([*distribution, *prior]))
    weighted = {letter: distribution.get(letter, 0.0) / (prior[letter] or lowest) for letter in letters}
    total = sum(weighted.values())
    return {letter: (w / total if total > 0 else 0.0) for letter, w in weighted.items()}


def most_probable(distribution: Mapping[str, float], keep: str | None = None) -> str:
    """The letter of highest probability: `keep` when it is among the highest (the answer stays on a tie), else
    the first of them in the distribution's order. Raises ValueError for an empty distribution."""
    if not distribution:
        raise ValueError("an empty distribution has no most probable letter")
    top = max(distribution.values())
    if keep is not None and distribution.get(keep) == top:
        return keep
    return next(letter for letter, p in distribution.items() if p == top)


@dataclass(frozen=True)
class GroupMove:
    """What dividing the group step by its prior would do to one answer, found without asking again.

    moves: the corrected group distribution's most probable letter is not the
    decoded group. to_right: it moves from a wrong group to the right one.
    from_right: it moves away from the right group.
    """

    moves: bool
    to_right: bool
    from_right: bool


def group_move(record: ResultsLine, prior: LetterPrior) -> GroupMove:
    """GroupMove of an answer (status ok); all False for one without a code. Raises ValueError as divide_by_prior."""
    if record.status != "ok":
        return GroupMove(False, False, False)
    corrected = divide_by_prior(record.group_distribution, prior.group)
    letter = most_probable(corrected, record.group_letter)
    moves = letter != record.group_letter
    right = record.gold_group_letter
    return GroupMove(moves, moves and letter == right, moves and record.group_letter == right)


def contextual_line(record: ResultsLine, prior: LetterPrior, intent_of: Mapping[str, str]) -> ResultsLine:
    """The answer with its intent step divided by the prior of the decoded group's intent step.

    The new intent letter is the most probable after the correction (the
    decoded one on a tie); code, intent, correct, p_intent_given_group,
    intent_distribution and confidence = p_group x p_intent_given_group
    follow; the group step and the off-label mass stay as recorded. The
    model's own code and confidence go to the extra fields model_code and
    model_confidence. A line without a code (status not ok) keeps every field
    and gets those two (null, 0), so that every line of the variant's file is
    of one kind. intent_of: code -> intent name (the prompt's). Raises
    ValueError when the prior has no intent step for the decoded group, or as
    divide_by_prior.
    """
    own = {**record.extra, "model_code": record.code, "model_confidence": record.confidence}
    if record.status != "ok":
        return replace(record, extra=own)
    group = record.group_letter
    if group not in prior.intent:
        raise ValueError(f"the prior has no intent step for group {group}: a prior of another prompt")
    corrected = divide_by_prior(record.intent_distribution, prior.intent[group])
    letter = most_probable(corrected, record.intent_letter)
    code = f"{group}-{letter}"
    return replace(record, code=code, intent=intent_of[code], correct=code == record.gold_code,
                   p_intent_given_group=corrected[letter], intent_distribution=corrected,
                   confidence=record.p_group * corrected[letter], extra=own)


@dataclass(frozen=True)
class Measures:
    """One kind of answer (plain or corrected) on one split: the numbers this script prints.

    answers: how many. accuracy and ece_raw: fractions in [0, 1]. On the
    report split only (None on calib): ece_isotonic, post 06's fit on calib
    applied here; coverage, precision: post 08's act route at `TARGET`, its
    thresholds fitted on calib (precision None when nothing is acted on).
    """

    answers: int
    accuracy: float
    ece_raw: float
    ece_isotonic: float | None = None
    coverage: float | None = None
    precision: float | None = None


def measures(calib: list[ResultsLine], records: list[ResultsLine], out_of_scope: frozenset[str],
             fitted: bool = True) -> Measures:
    """Measures of `records`, with the isotonic fit and the routes fitted on `calib` when `fitted`.
    Raises ValueError on no records (ece's check)."""
    confidences, corrects = outcomes(records)
    plain = Measures(len(records), sum(corrects) / len(corrects) if corrects else 0.0, ece(confidences, corrects))
    if not fitted:
        return plain
    isotonic = fit_isotonic(*outcomes(calib))
    calibrate = fit_calibration(calib)
    thresholds = fit_thresholds(calib, calibrate, TARGET, out_of_scope=out_of_scope)
    routed = report(records, route_all(records, calibrate, thresholds), out_of_scope)
    return replace(plain, ece_isotonic=ece([isotonic(c) for c in confidences], corrects),
                   coverage=routed.coverage, precision=routed.act_precision)


def letter_table(records: list[ResultsLine], prior: LetterPrior, step: str, group: str | None = None) -> list[str]:
    """Lines of a table, one per letter of a step (the group step, or the intent step after `group`): the prior,
    the mean renormalized distribution over the answers (of that group, for the intent step), the share of those
    answers that chose the letter, and the share whose right letter it is. The letters the model over-chooses
    show as a chosen share above the right one."""
    if step == "group":
        answers = [r for r in records if r.status == "ok"]
        letters = prior.group
    else:
        answers = [r for r in records if r.status == "ok" and r.group_letter == group]
        letters = prior.intent[group]
    if not answers:
        return []
    mean = mean_distribution([r.distribution(step) for r in answers])
    lines = [f"  {'letter':<7} {'prior':>6} {'mean p':>7} {'chosen':>7} {'right':>7}"]
    for letter in letters:
        chosen = sum(r.letter(step) == letter for r in answers) / len(answers)
        right = sum(r.gold_letter(step) == letter for r in answers) / len(answers)
        lines.append(f"  {letter:<7} {letters[letter]:6.3f} {mean.get(letter, 0.0):7.3f} {chosen:7.1%} {right:7.1%}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--calib", type=Path, help="calib results file (default: your own complete run, else the "
                        "committed one)")
    parser.add_argument("--results", type=Path, help="test results file (default: your own complete run, else the "
                        "committed one)")
    parser.add_argument("--prior", type=Path, help="the prior file (default: letter_prior.py's for the results' model "
                        "and prompt, yours in 03-where-confidence-comes-from/results/, else the committed one)")
    parser.add_argument("--letters", action="store_true", help="print the letter tables of every group's intent step")
    args = parser.parse_args()

    loaded = {"calib": read_split("calib", args.calib, args.dataset, "--calib"),
              "test": read_split("test", args.results, args.dataset, "--results")}
    for split, split_loaded in loaded.items():
        print(f"{split:<5} {describe(split_loaded.path, split_loaded.records, len(split_loaded.errors))}")
    prompt = load_prompt(args.dataset)
    lines = [r for split_loaded in loaded.values() for r in split_loaded.records]
    models = {r.model for r in lines}
    shas = {r.prompt_sha256 for r in lines} - {None}
    if len(models) != 1:
        raise ValueError(f"the results hold answers of {len(models)} models: one prior is one model's")
    if shas - {prompt.sha256}:
        raise ValueError(f"the results were asked with another prompt ({', '.join(s[:16] for s in shas)}) than "
                         f"{args.dataset}'s now ({prompt.sha256[:16]}): the prior would not be theirs")
    model = models.pop()
    path, prior = find_prior(args.dataset, model, prompt.sha256, args.prior)
    builds = {r.build for r in lines}
    print(f"prior {relative(path)}: {len(prior.inputs)} content-free inputs {list(prior.inputs)}, build {prior.build}"
          + ("" if builds == {prior.build} else f" (the answers': {', '.join(sorted(map(str, builds)))})"))
    print(f"mean off-label mass of the content-free requests: group step {percent(prior.off_label.get('group'))}, "
          f"intent step {percent(prior.off_label.get('intent'))}\n")

    calib = loaded["calib"].records
    if len(prompt.group_letters) > 1:
        print("group step (not corrected; calib answers):")
        print("\n".join(letter_table(calib, prior, "group")))
    for group in (prompt.group_letters if args.letters or len(prompt.group_letters) == 1 else ""):
        print(f"intent step after group {group} (calib answers):")
        print("\n".join(letter_table(calib, prior, "intent", group)))
    if len(prompt.group_letters) > 1 and not args.letters:
        spread = {g: max(d.values()) / max(min(d.values()), 1e-12) for g, d in prior.intent.items()}
        print("intent step: highest / lowest prior per group: "
              + ", ".join(f"{g} {ratio:.0f}x" for g, ratio in spread.items()) + " (--letters prints each)")

    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}
    corrected = {split: [contextual_line(r, prior, intent_of) for r in split_loaded.records]
                 for split, split_loaded in loaded.items()}
    out_of_scope = DATASETS[args.dataset].out_of_scope_codes()
    print(f"\n{'split':<6} {'answers':<10} {'n':>5} {'accuracy':>9} {'ECE':>7} {'ECE iso':>8} {'act':>7} "
          f"{'act prec':>9}")
    for split in loaded:
        for name, kind in (("plain", {s: x.records for s, x in loaded.items()}), (VARIANT, corrected)):
            m = measures(kind["calib"], kind[split], out_of_scope, fitted=split == "test")
            iso = "-" if m.ece_isotonic is None else f"{m.ece_isotonic:.4f}"
            print(f"{split:<6} {name:<10} {m.answers:5d} {percent(m.accuracy):>9} {m.ece_raw:7.4f} {iso:>8} "
                  f"{percent(m.coverage):>7} {percent(m.precision):>9}")
    print(f"(ECE: 15 bins; ECE iso: post 06's isotonic fit on calib; act: share of test answers acted on at post 08's "
          f"target {TARGET:.1%}, thresholds fitted on calib; act prec: right among them)")

    if len(prompt.group_letters) > 1:
        print("\nthe group step divided by its prior (not applied: the intent step after a new group was not asked):")
        for split, split_loaded in loaded.items():
            moved = [group_move(r, prior) for r in split_loaded.records]
            print(f"  {split}: the most probable group changes for {sum(m.moves for m in moved)} of "
                  f"{len(moved)} answers: {sum(m.to_right for m in moved)} to the right group, "
                  f"{sum(m.from_right for m in moved)} away from it")
    changed = {split: sum(r.code != r.extra.get("model_code", r.code) for r in records)
               for split, records in corrected.items()}
    print(f"\nanswers whose code the correction changed: calib {changed['calib']}, test {changed['test']}")
    for split, records in corrected.items():
        out = own_results_path(args.dataset, split, VARIANT)
        out.parent.mkdir(parents=True, exist_ok=True)
        errors = [contextual_line(r, prior, intent_of) for r in loaded[split].errors]
        replace_lines(out, [json.dumps(r.to_json(), ensure_ascii=False).encode() for r in records + errors])
        print(f"wrote {relative(out)} ({len(records)} answers)")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
