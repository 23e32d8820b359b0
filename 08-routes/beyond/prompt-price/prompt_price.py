"""The prompt's length priced: examples per intent against accuracy, calibration, act coverage and milliseconds.

    python3 08-routes/beyond/prompt-price/prompt_price.py --examples 5 3 1 0          # BANKING77 calib, each setting
    python3 08-routes/beyond/prompt-price/prompt_price.py --examples 5 1 --split test --sample 1000
    python3 08-routes/beyond/prompt-price/prompt_price.py --examples 5 0 --source linear   # the shortlist grammar
    python3 08-routes/beyond/prompt-price/prompt_price.py --dataset clinc150 --examples 3 1 0
    python3 08-routes/beyond/prompt-price/prompt_price.py --report                    # the tables from the saved runs

A typed request's message attends over every token of the cached system
prompt, so on a CPU the prompt's length is most of a request's time. The
prompt of post 02 lists every code with its description and 5 example
messages (CLINC150's with 3); build_prompt's examples_per_intent makes the
same prompt with fewer. For each --examples setting this script warms the
running server's slot with that prompt (00-setup/running_server.py's warm: restored
from disk when saved, else processed once and saved, under the label
<dataset>-prompt<k>), asks the messages of the split (post 03's typed
request and readout, resumable like every run) and writes them to
03-where-confidence-comes-from/results/<dataset>-prompt<k>[-<source>shortlist5]-<split>[-sample<N>-seed<S>].jsonl,
with the machine's load average at its start and end in a .load.json beside it.
At the end the post's prompt is put back in the slot.

--source linear asks, instead, among the logistic regression's top 5 (the
combined decision's request, 08-routes/beyond/combined/combined.py): does the
shortlist grammar need the examples at all?

The report has one row per saved run of a split: prompt tokens (by the
server's tokenizer when one answers, else characters / 4, marked ~),
accuracy, ECE after isotonic regression (2-fold cross-fitted on the split
itself: each half calibrated by a fit on the other), AUROC (post 07), act
coverage at 98.5% by post 08's point rule on the split itself, and the
median and p95 ms of the typed requests, with the load beside. Where a
seeded test sample was run with the post's prompt and another, it then
pairs them message by message: accuracy and act coverage (each prompt's
thresholds fitted on its own calib run) with exact 95% intervals, the
difference from the post's prompt with its paired interval, and the ms of
the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from batch import RunStopped, pick_messages, sample_of
from ece import ece, outcomes
from intervals import clopper_pearson
from isotonic import fit_isotonic
from llama_http import Client, exit_on_server_errors
from oos_cost import PairedCost
from prompt import load_prompt, prompt_examples
from registry import DATASETS, SavedPrompt, add_dataset_argument
from results_record import parse_lines
from running_server import warm_running
from router_file import route_of
from routes import TARGET, fit_calibration, fit_thresholds, interval_text
from saved_answers import OWN_RESULTS
from separation import auroc
from typed_lines import typed_line
from typed_request import TOP_LOGPROBS, request_settings

K = 5


def run_path(dataset: str, examples: int, split: str, source: str | None = None,
             sample: tuple[int, int] | None = None) -> Path:
    """03-where-confidence-comes-from/results/<dataset>-prompt<k>[-<source>shortlist5]-<split>[-sample<N>-seed<S>].jsonl"""
    middle = f"-prompt{examples}" + (f"-{source}shortlist{K}" if source else "")
    tail = f"-sample{sample[0]}-seed{sample[1]}" if sample else ""
    return OWN_RESULTS / f"{dataset}{middle}-{split}{tail}.jsonl"


def load_note(path: Path, when: str) -> None:
    """Append the machine's load average (1, 5, 15 min) at `when` ("start", "end") to <path>.load.json."""
    notes = path.with_name(path.name + ".load.json")
    record = json.loads(notes.read_text()) if notes.exists() else []
    record.append({"when": when, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "load": [round(x, 2) for x in os.getloadavg()]})
    notes.write_text(json.dumps(record) + "\n")


def run_setting(args: argparse.Namespace, examples: int, client: Client, messages: list) -> Path:
    """Warm the slot with the prompt of `examples` per intent and ask every message; return the results file."""
    from batch import run_messages
    dataset = DATASETS[args.dataset]
    prompt = load_prompt(args.dataset, examples)
    out = run_path(args.dataset, examples, args.split, args.source, sample_of(args))
    post = examples == prompt_examples(args.dataset)  # the post's own prompt keeps the setup's saved slot
    warm_running(client, args.dataset if post else f"{args.dataset}-prompt{examples}", SavedPrompt(prompt.system, prompt.grammar))
    info = client.model_info()
    settings = request_settings(prompt, True, TOP_LOGPROBS)
    if args.source:
        from shortlist import ranking, shortlist_field, shortlist_of, shortlisted
        rank, always = ranking(dataset, args.source), dataset.out_of_scope_codes()

    def make_record(message):
        if not args.source:
            return typed_line(client, prompt, message, info["model"], settings, TOP_LOGPROBS)
        shortlist = shortlist_of(rank(message.text), prompt, K, always)
        narrowed = shortlisted(prompt, [code for code, _ in shortlist])
        return {**typed_line(client, prompt, message, info["model"], settings, TOP_LOGPROBS, narrowed),
                "shortlist": shortlist_field(shortlist)}
    load_note(out, "start")
    run_messages(messages, out, make_record, f"{args.dataset} {args.split}, {examples} examples per intent"
                 + (f", {args.source} shortlists" if args.source else ""))
    load_note(out, "end")
    return out


# ---------------------------------------------------------------- the report

def cross_fitted_ece(lines: list) -> float:
    """ECE (post 04, 10 bins) of the isotonic-calibrated confidences, 2-fold cross-fitted: lines at even places
    calibrated by a fit on the odd ones and the other way round, so no answer is calibrated by a fit on itself."""
    halves = [lines[0::2], lines[1::2]]
    calibrated, corrects = [], []
    for mine, other in ((halves[0], halves[1]), (halves[1], halves[0])):
        fit = fit_isotonic(*outcomes(other))
        calibrated += [fit(r.confidence) for r in mine]
        corrects += [r.correct for r in mine]
    return ece(calibrated, corrects)


def act_coverage(lines: list, target: float = TARGET) -> float:
    """The share of the lines post 08's point rule acts on at `target`, fitted on the lines themselves (0.0 when
    no threshold reaches it, or only the floor)."""
    calibrate = fit_calibration(lines)
    thresholds = fit_thresholds(lines, calibrate, target, 0.9)
    if thresholds.act is None:
        return 0.0
    return thresholds.act.kept / len(lines)


def prompt_tokens(dataset: str, examples: int) -> str:
    """The prompt's length in tokens by the running server's tokenizer, else about len / 4 ("~")."""
    prompt = load_prompt(dataset, examples)
    try:
        return f"{len(Client(timeout_s=30).tokenize(prompt.system)):,}"
    except Exception:  # no server: an estimate, marked as one
        return f"~{len(prompt.system) // 4:,}"


def loads(path: Path) -> str:
    """The 1-minute load averages noted at the runs' starts and ends, 'a-b' (or '-')."""
    notes = path.with_name(path.name + ".load.json")
    if not notes.exists():
        return "-"
    values = [note["load"][0] for note in json.loads(notes.read_text())]
    return f"{min(values):.1f}-{max(values):.1f}"


def report_rows(dataset: str) -> list[str]:
    """One row per saved run of this script for the dataset, grouped by split and kind."""
    rows = []
    for path in sorted(OWN_RESULTS.glob(f"{dataset}-prompt*-*.jsonl")):
        lines = read_answers(path)
        if not lines:
            continue
        examples = int(path.name.split("-prompt", 1)[1].split("-", 1)[0])
        ms = sorted(r.wall_ms for r in lines)
        confidences, corrects = outcomes(lines)
        p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
        rows.append(f"{path.name.removeprefix(dataset + '-'):<44} {examples:>3} {prompt_tokens(dataset, examples):>7} "
                    f"{len(lines):>5} {100 * sum(corrects) / len(lines):7.1f}% {cross_fitted_ece(lines):7.3f} "
                    f"{auroc(confidences, corrects):6.3f} {100 * act_coverage(lines):7.1f}% "
                    f"{statistics.median(ms):8.0f} {p95:7.0f}  {loads(path)}")
    return rows


def read_answers(path: Path) -> list:
    """The lines of a saved run, error lines left out (no answer the server gave: nothing to price)."""
    return [r for r in parse_lines([json.loads(x) for x in path.read_text().splitlines() if x.strip()], str(path))
            if r.status != "error"]


def acted_on(dataset: str, examples: int, test: list, calib: list | None = None) -> dict[str, tuple[bool, bool, float]]:
    """id -> (right, acted on, ms) of each test answer under post 08's point rule with the thresholds and isotonic
    map fitted on `calib`, by default the calib run of the same prompt (at TARGET). Raises FileNotFoundError naming
    the command when that calib run is missing."""
    if calib is None:
        calib_path = run_path(dataset, examples, "calib")
        if not calib_path.exists():
            raise FileNotFoundError(f"no calib run of {examples} examples per intent: python3 08-routes/beyond/"
                                    f"prompt-price/prompt_price.py --dataset {dataset} --examples {examples}")
        calib = read_answers(calib_path)
    calibrate = fit_calibration(calib)
    thresholds = fit_thresholds(calib, calibrate, TARGET, 0.9)
    return {r.id: (r.correct, route_of(r, calibrate(r), thresholds) == "act", r.wall_ms) for r in test}


def paired_prompts(a: dict, b: dict, index: int) -> PairedCost:
    """PairedCost of b against a over the ids both have, "right" read from field `index` of their tuples."""
    return PairedCost.of_pairs([(a[i][index], b[i][index]) for i in sorted(set(a) & set(b))])


def paired_rows(dataset: str) -> list[str]:
    """For each seeded sample of a split run with the post's prompt and another: accuracy and act coverage with
    exact 95% intervals, the paired difference against the post's prompt with its interval (Agresti 2013, 11.1;
    oos_cost.PairedCost), and the median and p95 ms of the same run. A test sample's acts use the thresholds
    fitted on each prompt's own calib run; a calib sample's, those fitted on the sample itself (as the report's
    act@98.5 column: the split that chose them)."""
    post = prompt_examples(dataset)
    runs: dict[str, dict[int, Path]] = {}
    for path in OWN_RESULTS.glob(f"{dataset}-prompt*-*-sample*.jsonl"):
        examples, tail = path.name.removeprefix(f"{dataset}-prompt").split("-", 1)
        if "shortlist" not in tail:
            runs.setdefault(tail, {})[int(examples)] = path
    rows = []
    for tail, by_examples in sorted(runs.items()):
        if post not in by_examples or len(by_examples) < 2:
            continue
        split = tail.split("-", 1)[0]
        answers = {k: read_answers(path) for k, path in by_examples.items()}
        decided = {k: acted_on(dataset, k, lines, None if split == "test" else lines) for k, lines in answers.items()}
        fitted = "each prompt's own calib run" if split == "test" else "the sample itself"
        rows.append(f"{split} {tail.removesuffix('.jsonl').removeprefix(split + '-')}, against the post's {post} "
                    f"examples per intent (acts: thresholds fitted on {fitted}, point rule at {TARGET:.1%}):")
        for k in sorted(answers, reverse=True):
            lines, mine = answers[k], decided[k]
            ms = sorted(r.wall_ms for r in lines)
            right, acted = sum(v[0] for v in mine.values()), [v for v in mine.values() if v[1]]
            row = (f"  {k} examples: accuracy {interval_text(clopper_pearson(right, len(lines)))}, acted on "
                   f"{interval_text(clopper_pearson(len(acted), len(lines)))} at precision "
                   f"{interval_text(clopper_pearson(sum(v[0] for v in acted), len(acted))) if acted else '-'}, "
                   f"median {statistics.median(ms):.0f} ms, p95 {ms[min(len(ms) - 1, int(0.95 * len(ms)))]:.0f} ms")
            if k != post:
                for name, index in (("accuracy", 0), ("acts", 1)):
                    cost = paired_prompts(decided[post], mine, index)
                    low, high = cost.interval()
                    row += (f"; {name} {100 * cost.difference:+.1f} points ({100 * low:+.1f} to {100 * high:+.1f}, "
                            f"{cost.n} paired)")
            rows.append(row)
    return rows


def print_price(dataset: str) -> None:
    print(f"{'run':<44} {'ex':>3} {'tokens':>7} {'n':>5} {'accuracy':>8} {'ECE iso':>7} {'AUROC':>6} "
          f"{'act@98.5':>8} {'median ms':>9} {'p95 ms':>7}  load")
    rows = report_rows(dataset)
    for row in rows:
        print(row)
    if not rows:
        print(f"no runs of {dataset} yet: python3 08-routes/beyond/prompt-price/prompt_price.py --dataset {dataset} "
              f"--examples {prompt_examples(dataset)} 1 0 writes them (a llama-server; the README has this machine's)")
    pairs = paired_rows(dataset)
    if pairs:
        print("\n" + "\n".join(pairs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--examples", type=int, nargs="+", metavar="K",
                        help="examples per intent of each prompt to run, in order (the post's: 5, CLINC150's 3)")
    parser.add_argument("--split", choices=("calib", "test"), default="calib", help="whose messages (default calib)")
    parser.add_argument("--sample", type=int, metavar="N", help="a seeded sample of N messages of the split")
    parser.add_argument("--seed", type=int, metavar="S", help="the sample's seed (default 0)")
    parser.add_argument("--source", choices=("linear", "knn", "examples"),
                        help="ask among this ranking's top 5 (the combined decision's grammar) instead of every code")
    parser.add_argument("--report", action="store_true", help="only print the table of the saved runs")
    args = parser.parse_args()
    args.limit, args.spread = None, False
    if args.examples and any(k < 0 for k in args.examples):
        parser.error("--examples must be 0 or more")
    if not args.report:
        if not args.examples:
            parser.error("give --examples K [K ...] to run, or --report")
        messages = pick_messages(DATASETS[args.dataset].load_split(args.split), args, parser)
        client = Client()
        try:
            for examples in args.examples:
                run_setting(args, examples, client, messages)
        finally:
            post = load_prompt(args.dataset)
            if prompt_examples(args.dataset) not in args.examples[-1:]:
                warm_running(client, args.dataset, SavedPrompt(post.system, post.grammar))  # the post's prompt back
        print()
    print_price(args.dataset)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped,)))
