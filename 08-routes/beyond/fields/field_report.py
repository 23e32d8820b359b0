"""Each field read as a decision of its own: the posts' scripts on it (--field), and the fields' tables.

    python3 08-routes/beyond/fields/field_report.py --dataset banking77fields    # views, scope, requester tables
    python3 08-routes/beyond/fields/field_report.py --dataset clinc150fields     # three fields against the single code
    python3 08-routes/beyond/variants.py 04-is-the-confidence-honest/ece.py --dataset banking77fields --field scope

A field's answer is a typed decision like the code: one option of a fixed
set and a confidence renormalized over the set. So posts 04-08 read it
unchanged once it is written as their results lines: the field's option as
a code of one group ("A-" and its letter), its confidence as P(group) = 1 x
P(option), its distribution as the intent step, right where the message set
says the right option (fields_run.py's "gold_fields"). This script writes
those lines, one variant file per field and split
(03-where-confidence-comes-from/results/<dataset>-field<key>-<split>.jsonl),
from the fields runs: calib from the runs of the calibration split, the
off-topic set and the requester set's calib half; test from the test
sample, CLINC150's out-of-scope test messages and the requester set's test
half. variants.py --field <key> reads them (= --variant field<key>).

Then the tables: BANKING77's scope field as a detector of messages that
are not requests to the bank (AUROC of P(bank) on BANKING77 test messages
against CLINC150's out-of-scope ones), with the logistic regression's own
confidence beside it; the requester field against harm.py's word list on
the requester set's test half and on the committed hostile sets; and
CLINC150 as three fields against the single code with K-A on the same
seeded test sample: in-scope accuracy and out-of-scope recall with exact
95% intervals, and the ms per message of each run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from fields import fields_of, fields_prompt
from fields_route import VIEW_SOURCES, fields_answers, fields_sample_runs, test_sources, view_line
from harm import for_someone_else, intent_kinds
from intervals import clopper_pearson
from registry import DATASETS, add_dataset_argument
from results_file import replace_lines
from results_record import ResultsLine
from routes import interval_text
from saved_answers import OWN_RESULTS
from summary import percentile
from separation import auroc

def write_views(dataset: str) -> dict[tuple[str, str], int]:
    """Write every field's view of every split whose runs are there; (field, split) -> lines written."""
    written = {}
    for field in fields_of(dataset):
        for split, names in (("calib", VIEW_SOURCES["calib"]), ("test", test_sources(dataset))):
            lines = [view for name in names for line in fields_answers(dataset, name)
                     if (view := view_line(line, field)) is not None]
            if lines:
                path = OWN_RESULTS / f"{dataset}-field{field.key}-{split}.jsonl"
                replace_lines(path, [json.dumps(line, ensure_ascii=False).encode() for line in lines])
                written[field.key, split] = len(lines)
    return written


def biggest_sample(dataset: str, split: str) -> list[ResultsLine]:
    """The answers of the biggest seeded sample of a split ("test", "oos-test") run for the dataset ([] if none)."""
    return [line for name in fields_sample_runs(dataset, split)[:1] for line in fields_answers(dataset, name)]


def ms_text(ms: list[float]) -> str:
    """'median M ms, p95 P ms' of request times in ms (post 03's summary.percentile: numpy's default)."""
    return f"median {statistics.median(ms):.0f} ms, p95 {percentile(ms, 0.95):.0f} ms"


def scope_table(dataset: str) -> list[str]:
    """The scope field's AUROC as a detector of messages that are not requests (in: the test sample; out:
    CLINC150's out-of-scope test messages), beside the code's own confidence in the same requests."""
    field = next((f for f in fields_of(dataset) if f.out_of_scope), None)
    if field is None:
        return []  # no field stands for "none of these"
    inside, outside = biggest_sample(dataset, "test"), biggest_sample(dataset, "oos-test")
    if not inside or not outside:
        return [f"{field.key}: no runs of {dataset}'s test sample and CLINC150's out-of-scope test messages yet"]
    safe = next(o.id for o in field.options if o.id != field.out_of_scope)

    def p_in(line: ResultsLine) -> float:
        answer = line.extra["fields"][field.key] if line.extra.get("fields") else None
        return 0.0 if answer is None else answer["distribution"][field.letter_of(safe)]
    lines = inside + outside
    labels = [True] * len(inside) + [False] * len(outside)
    said_out = sum(1 for line in outside if line.extra.get("fields") and line.extra["fields"][field.key]["option"]
                   == field.out_of_scope)
    said_in_wrongly = sum(1 for line in inside if line.extra.get("fields") and line.extra["fields"][field.key]["option"]
                          == field.out_of_scope)
    return [f"{field.key}: {len(inside)} {dataset} test messages against {len(outside)} CLINC150 out-of-scope test "
            f"messages, through {dataset}'s prompt",
            f"  AUROC of P({safe}): {auroc([p_in(x) for x in lines], labels):.3f}; of the code's confidence: "
            f"{auroc([x.confidence for x in lines], labels):.3f}",
            f"  answered {field.out_of_scope}: {said_out} of {len(outside)} out-of-scope "
            f"({interval_text(clopper_pearson(said_out, len(outside)))}), {said_in_wrongly} of {len(inside)} in scope "
            f"({interval_text(clopper_pearson(said_in_wrongly, len(inside)))})"]


def requester_rows(lines: list[ResultsLine], gold_of, kinds: dict[str, str]) -> list[str]:
    """For messages whose right answer is "someone else" or not (gold_of: line -> True, False or None to skip):
    how many the word list and the field flag, both, either, and the false flags on the others."""
    rows = []
    for what, keep in (("all intents", lambda line: True),
                       ("a change or irreversible intent", lambda line: kinds.get(line.intent or "", "change") != "inform")):
        chosen = [line for line in lines if gold_of(line) is not None and keep(line)]
        other = [line for line in chosen if gold_of(line)]
        own = [line for line in chosen if not gold_of(line)]

        def flags(line):
            words = for_someone_else(line.text) is not None
            field = bool(line.extra.get("fields")) and line.extra["fields"]["requester"]["option"] == "someone_else"
            return words, field
        caught = [flags(line) for line in other]
        wrong = [flags(line) for line in own]
        rows.append(f"  {what}: someone else {len(other)}: word list {sum(w for w, _ in caught)}, field "
                    f"{sum(f for _, f in caught)}, both {sum(w and f for w, f in caught)}, either "
                    f"{sum(w or f for w, f in caught)}; the others {len(own)}: flagged by the word list "
                    f"{sum(w for w, _ in wrong)}, by the field {sum(f for _, f in wrong)}")
    return rows


def requester_table(dataset: str) -> list[str]:
    """The requester field against harm.py's word list (module docstring)."""
    if not any(f.key == "requester" for f in fields_of(dataset)):
        return []
    kinds = intent_kinds("banking77")
    lines = ["requester: the field's answer someone_else against harm.py's word list (for_someone_else)"]
    test = fields_answers(dataset, "requester-test")
    if not test:
        lines.append(f"  no run of the requester set's test half yet: python3 08-routes/beyond/fields/fields_run.py "
                     f"--dataset {dataset} --set requester-test")
    else:
        lines.append(f"the requester set's test half ({len(test)} answers; right answer from its labels):")
        lines += requester_rows(test, lambda line: line.extra["gold_fields"]["requester"] == "someone_else"
                                if "requester" in line.extra["gold_fields"] else None, kinds)
        field = next(f for f in fields_of(dataset) if f.key == "requester")
        scored = [(line.extra["fields"]["requester"]["distribution"][field.letter_of("someone_else")],
                   line.extra["gold_fields"].get("requester") == "someone_else") for line in test if line.extra.get("fields")]
        if len({right for _, right in scored}) == 2:  # AUROC needs both kinds of message
            lines.append(f"  AUROC of P(someone_else) as a detector of someone else's request: "
                         f"{auroc([p for p, _ in scored], [right for _, right in scored]):.3f} ({len(scored)} answers)")
    sets = sorted(OWN_RESULTS.glob(f"{dataset}-harm-*.jsonl")) + sorted(OWN_RESULTS.glob(f"{dataset}-third*.jsonl")) + \
        sorted(OWN_RESULTS.glob(f"{dataset}-outside*.jsonl"))
    for path in sets:
        name = path.stem.removeprefix(dataset + "-")
        answers = fields_answers(dataset, name)
        source = series.ROOT / "08-routes" / "beyond" / "gate" / "adversarial" / f"banking77-{name}.jsonl"
        classes = [json.loads(x).get("class") for x in source.read_text(encoding="utf-8").splitlines() if x.strip()]
        by_id = {f"banking77-{name}-{number}": kind for number, kind in enumerate(classes, start=1)}
        lines.append(f"{source.name} ({len(answers)} answers; someone else: its third_party and family_own_account "
                     "classes say which):")
        lines += requester_rows(answers, lambda line: {"third_party": True, "family_own_account": False}.get(
            by_id.get(line.id, "")), kinds)
    return lines


def clinc150_table(dataset: str) -> list[str]:
    """CLINC150 as three fields against the single code with K-A, on the same seeded test sample."""
    from saved_answers import read_split
    fields_lines = biggest_sample(dataset, "test")
    if not fields_lines:
        return [f"no run of {dataset}'s test sample yet: python3 08-routes/beyond/fields/fields_run.py --dataset "
                f"{dataset} --split test --sample 1000"]
    single = {line.id: line for line in read_split("test", None, "clinc150").records}
    pairs = [(line, single[line.id]) for line in fields_lines if line.id in single]
    field = next(f for f in fields_of(dataset) if f.out_of_scope)
    rows = [f"{len(pairs)} CLINC150 test messages of a seeded sample (out of scope at their share), same model"]
    for name, said_out, right in (
            ("single code with K-A", lambda f, s: s.code == "K-A", lambda f, s: s.correct),
            ("three fields", lambda f, s: f.extra["fields"][field.key]["option"] == field.out_of_scope,
             lambda f, s: f.correct)):
        outside = [(f, s) for f, s in pairs if s.gold_code == "K-A"]
        inside = [(f, s) for f, s in pairs if s.gold_code != "K-A"]
        found = sum(said_out(f, s) for f, s in outside)
        accurate = sum(right(f, s) and not said_out(f, s) for f, s in inside)
        rows.append(f"  {name:<22} in-scope accuracy {interval_text(clopper_pearson(accurate, len(inside)))}, "
                    f"out of scope found {interval_text(clopper_pearson(found, len(outside)))}")
    rows.append(f"  three fields: {ms_text([line.wall_ms for line in fields_lines])} a message "
                f"({len(fields_lines)} requests)")
    own = OWN_RESULTS / f"{DATASETS[dataset].base}-test.jsonl"  # your single-code run, whole or not: its ms
    if own.exists():
        ms = [json.loads(text)["wall_ms"] for text in own.read_text(encoding="utf-8").splitlines() if text.strip()]
        rows.append(f"  single code: {ms_text(ms)} a message ({len(ms)} requests, {own.name})")
    return rows


def separately_table(dataset: str) -> list[str]:
    """One request for the code and every field against one request each (fields_run.py --one-per-field), on
    the messages both runs asked (the requester set's test half, else calib): the code's accuracy, each field's
    agreement (and accuracy where its right option is known), and the ms a message of each."""
    name = next((name for name in ("requester-test", "calib") if fields_answers(dataset, f"perfield-{name}")), None)
    if name is None:
        return []
    separate = {line.id: line for line in fields_answers(dataset, f"perfield-{name}")}
    pairs = [(line, separate[line.id]) for line in fields_answers(dataset, name) if line.id in separate]
    if not pairs:
        return []
    rows = [f"one request against one per field ({len(pairs)} {name} messages both asked, same prompt and slot):",
            f"  code right: one request {sum(a.correct for a, _ in pairs)}, one per field "
            f"{sum(b.correct for _, b in pairs)}"]
    for field in fields_of(dataset):
        answered = [(a, b) for a, b in pairs if a.extra.get("fields") and b.extra.get("fields")]
        same = sum(a.extra["fields"][field.key]["option"] == b.extra["fields"][field.key]["option"] for a, b in answered)
        known = [(a, b) for a, b in answered if field.key in a.extra.get("gold_fields", {})]
        cell = ""
        if known:
            right = [sum(x.extra["fields"][field.key]["option"] == x.extra["gold_fields"][field.key] for x in run)
                     for run in zip(*known)]
            cell = f"; right where known ({len(known)}): {right[0]} and {right[1]}"
        rows.append(f"  {field.key}: the same option in {same} of {len(answered)}{cell}")
    for name, index in (("one request", 0), ("one per field", 1)):
        rows.append(f"  {name}: {ms_text([pair[index].wall_ms for pair in pairs])} a message")
    return rows


def report_gates(dataset: str) -> tuple[list, list[str]]:
    """The gates of the fields that have calib answers (fields_route.fit_field_gate), and a line for each gating
    field left out for want of them: the tables show what the fields there are do (the service refuses instead)."""
    from fields_route import calib_view, fit_field_gate
    gates, missing = [], []
    for field in fields_of(dataset):
        if field.safe:
            calib = calib_view(dataset, field)
            if calib:
                gates.append(fit_field_gate(field, calib))
            else:
                missing.append(f"{field.key}: no gate here, no calib answers of it yet (fields_run.py --set "
                               f"{field.key}-calib, where the dataset has such a set)")
    return gates, missing


def routes_table(dataset: str) -> list[str]:
    """The code's routes (post 06's calibration on the calib run, post 08's thresholds on it and the off-topic
    answers, what stands before act) without and with the fields' gates (fields_route.py), on each test-side run:
    the messages acted on, right and wrong, and the wrong ones by the kind of action of their intent."""
    from fields_route import route_with_fields
    from harm import CHANGE_TARGET
    from routes import ASK_TARGET, TARGET, fit_calibration, fit_thresholds, route_of
    from safety import fit_safety, route_before_act
    calib, offtopic = fields_answers(dataset, "calib"), fields_answers(dataset, "offtopic")
    if not calib:
        return [f"routes: no calib run of {dataset} yet"]
    source = DATASETS[dataset]
    out_of_scope = frozenset()  # a field stands for the out-of-scope code: none is left on the code list
    calibrate = fit_calibration(calib)
    thresholds = fit_thresholds(calib + offtopic, calibrate, TARGET, ASK_TARGET, out_of_scope)
    safety = fit_safety(dataset, calib, calibrate, TARGET, source.fit_retriever(), CHANGE_TARGET, out_of_scope,
                        True, offtopic)
    gates, missing = report_gates(dataset)
    kinds = intent_kinds(dataset)
    rows = missing + [f"routes of {dataset}'s code (act >= {thresholds.t_act}, ask >= {thresholds.t_ask}, fitted on {len(calib)} "
            f"calib and {len(offtopic)} off-topic answers), without and with the fields before act: "
            + "; ".join(f"{g.field.key} >= {g.threshold if g.threshold is None else round(g.threshold, 3)} "
                        f"(gates {g.field.gates}, {g.answers} calib answers)" for g in gates)]
    names = [*test_sources(dataset), *sorted(p.stem.removeprefix(dataset + "-") for p in OWN_RESULTS.glob(f"{dataset}-*.jsonl")
                                       if p.stem.removeprefix(dataset + "-").startswith(("harm-", "third", "outside")))]
    for name in names:
        lines = fields_answers(dataset, name)
        if not lines:
            continue
        cells = []
        for label, use_fields in (("without", False), ("with", True)):
            acted = []
            for line in lines:
                calibrated = calibrate(line) if line.status == "ok" else 0.0
                route = route_of(line, calibrated, thresholds)
                if route == "act":
                    route = route_before_act(safety.why(line.text, line, calibrated))
                if use_fields:
                    route, _ = route_with_fields(route, line, gates, kinds)
                if route == "act":
                    acted.append(line)
            wrong = [line for line in acted if not line.correct]
            by_kind = {kind: sum(kinds.get(line.intent or "", "change") == kind for line in wrong)
                       for kind in ("inform", "change", "irreversible")}
            cells.append(f"{label} fields: acts {len(acted)}, wrong {len(wrong)} ({by_kind['inform']} inform, "
                         f"{by_kind['change']} change)")
        rows.append(f"  {name} ({len(lines)}): " + "; ".join(cells))
    return rows


def regression_table(dataset: str) -> list[str]:
    """The model where the regression cannot follow: the decision the service serves for the base dataset
    (decisions/choose.py: the logistic regression alone on BANKING77), without and with the model's fields
    before act (fields_route.py), on the messages the fields runs asked: acts, right and wrong, by run."""
    from dataclasses import replace
    from choose import choose
    from decision_router import read_decision_router, ready_router, served_route
    from fields_route import route_with_fields
    base = DATASETS[dataset].base
    try:
        choice = choose(base)
    except FileNotFoundError as missing:
        return [f"{base}'s served decision with the fields: {missing}"]
    router = read_decision_router(choice.chosen.path)
    ready = ready_router(router, choice.chosen.path)
    gates, missing = report_gates(dataset)
    kinds = intent_kinds(dataset)
    rows = missing + [f"{base}'s served decision ({router.decision.name}) without and with {dataset}'s fields before act:"]
    names = [*test_sources(dataset), "offtopic", *sorted(p.stem.removeprefix(dataset + "-") for p in OWN_RESULTS.glob(f"{dataset}-*.jsonl")
                     if p.stem.removeprefix(dataset + "-").startswith(("harm-", "third", "outside")))]
    for name in names:
        lines = fields_answers(dataset, name)
        if not lines:
            continue
        cells = []
        for label, use_fields in (("without", False), ("with", True)):
            acted = wrong = wrong_change = for_other = 0
            for line in lines:
                decided = ready.decider.line(line.text, None)
                calibrated = ready.calibrated(decided)
                route = served_route(decided, calibrated, router.router, ready.safety)
                if use_fields:
                    route, _ = route_with_fields(route, replace(decided, extra={**decided.extra,
                                                                               "fields": line.extra.get("fields")}),
                                                 gates, kinds)
                if route == "act":
                    acted += 1
                    if decided.intent != line.gold_intent:
                        wrong += 1
                        wrong_change += kinds.get(decided.intent or "", "change") != "inform"
                    # a change acted on for someone else's card or account (the requester set's labels say whose)
                    for_other += line.extra.get("gold_fields", {}).get("requester") == "someone_else" and \
                        kinds.get(decided.intent or "", "change") != "inform"
            cells.append(f"{label}: acts {acted}, wrong {wrong} ({wrong_change} change)"
                         + (f", a change for someone else {for_other}" if name.startswith("requester") else ""))
        rows.append(f"  {name} ({len(lines)}): " + "; ".join(cells))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser, "banking77fields")
    args = parser.parse_args()
    if not fields_of(args.dataset):
        parser.error(f"{args.dataset}'s label file declares no fields")
    fields_prompt(args.dataset)  # the label file's fields are checked before anything is read
    written = write_views(args.dataset)
    for (key, split), count in written.items():
        print(f"wrote {args.dataset}-field{key}-{split}.jsonl ({count} answers): "
              f"variants.py <post script> --dataset {args.dataset} --field {key}")
    print()
    if DATASETS[args.dataset].base == "clinc150":
        print("\n".join(clinc150_table(args.dataset)))
    else:
        tables = [scope_table(args.dataset), requester_table(args.dataset), separately_table(args.dataset),
                  routes_table(args.dataset), regression_table(args.dataset)]
        print("\n\n".join("\n".join(rows) for rows in tables if rows))
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
