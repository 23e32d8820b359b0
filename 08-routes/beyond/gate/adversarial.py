"""Hostile and odd messages through the whole router (beyond the series): can a message reach act by asking?

    python3 08-routes/beyond/gate/adversarial.py                  # the committed set, the model alone and the combined decision
    python3 08-routes/beyond/gate/adversarial.py --limit 10       # its first 10 messages
    python3 00-setup/server.py warm banking77oos             # then: the model with an out-of-scope code I-A
    python3 08-routes/beyond/gate/adversarial.py --dataset banking77oos

The set (08-routes/beyond/gate/adversarial/banking77.jsonl, written for this repository)
holds messages of nine kinds: a code named in the message, an intent name, an
order to the classifier, chat-template markup, SQL or HTML, off-topic
requests, other languages, noise, and long rambling text. Each message gets
the answer of each decision (decisions/decisions.py; by default the model
alone and the decision the service serves, decisions/choose.py; --decision
names others), each routed with its router fitted on its own calib run and
off-topic answers (decisions/decision_router.py), at the default
targets (act at 98.5% precision, ask at 90%) and at the README's lowered ones
(80%, 75%), with three things before act: nothing (post 08), guard.py's
whole pattern list (the earlier guard), and the gate (safety.before_act:
an irreversible intent is confirmed; typicality.py's signals, fitted on the
decision's own calib answers, and guard.py's KEPT marks hand the rest over;
an intent marked "change" below harm.py's 99.9% threshold is asked about).
The acts left with the gate are counted by their intent's kind of action
(inform, change, irreversible), and as right where the set gives the
message's own intent (the benign sets).
It prints how each signal tells the calib messages from these (AUROC), how
many messages each setting acts on, confirms, asks about and hands over,
every message still acted on with the gate, and every act the set would get
without it, with what stopped it.

    python3 08-routes/beyond/gate/adversarial.py --set 08-routes/beyond/gate/adversarial/banking77-fresh.jsonl
    python3 08-routes/beyond/gate/adversarial.py --set 08-routes/beyond/gate/adversarial/banking77-benign.jsonl

The two other sets were written by a helper that had not seen the code,
and committed before any cut-off was chosen: 72 hostile messages of eight
kinds the first set lacks, and 50 ordinary messages with accents, numbers,
currency pairs and the words guard.py's patterns fear (on them, every act
the gate takes away is an ordinary message that loses act).

--dataset banking77oos asks the same set with BANKING77's prompt plus the
code I-A for a message that is not a request to the bank
(datasets/banking77oos.json), routed with thresholds fitted on that run's
calib file (run.py --dataset banking77oos --split calib); an I-A answer
always hands over, and the table counts those hand-overs apart. A decision
whose calib file does not exist for the dataset (the combined one there) is
left out, with a line that says so. Warm the server with the dataset's
prompt first (server.py warm), or the first message pays its prefill.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from choose import choose
from decision_router import fit_decision_router, fitted_ranking
from decisions import DECISIONS, Decider, ask_live
from guard import KEPT, MARKS
from harm import KINDS
from labels import printable
from llama_http import Client, exit_on_server_errors
from out_of_scope import code_list, out_of_scope_codes
from prompt import load_prompt
from registry import DATASETS
from routes import route_of
from safety import before_act, route_before_act
from typed_request import probe
from typicality import SIGNALS, signals, typicality_auroc

SETS = Path(__file__).resolve().parent / "adversarial"  # <dataset>.jsonl; a dataset that extends another uses its set
TARGETS = {"default": (0.985, 0.90), "lowered": (0.80, 0.75)}
# what stands before act: nothing (post 08), guard.py's whole pattern list, or the gate (route_beyond.before_act)
CHECKS = ("none", "guard", "gate")


def load_set(path: Path) -> list[dict]:
    """The messages of the set: one JSON object a line with "class" and "text"; ValueError naming a bad line."""
    messages = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        item = json.loads(line) if line.strip() else None
        if not (isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip()
                and isinstance(item.get("class"), str)):
            raise ValueError(f"{path} line {number}: not an object with a non-empty \"text\" and a \"class\"")
        messages.append(item)
    return messages


def default_decisions(dataset: str) -> list[str]:
    """The model alone and the decision the service would serve for `dataset` (decisions/choose.py); the model
    alone only, with a note saying how to fit them, where the dataset has no decision routers yet."""
    try:
        return list(dict.fromkeys(["model", choose(dataset).chosen.name]))
    except FileNotFoundError as missing:
        print(f"the model alone only: {missing}")
        return ["model"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="banking77",
                        help="whose prompt and calib files (default: banking77; banking77oos adds the code I-A)")
    parser.add_argument("--set", type=Path, help="the messages (default: the committed set of the dataset, "
                        "08-routes/beyond/gate/adversarial/banking77.jsonl for both)")
    parser.add_argument("--limit", type=int, help="only the first N messages")
    parser.add_argument("--decision", action="append", choices=list(DECISIONS),
                        help="a decision to route with (repeat for several; default: model and the one the service "
                             "serves, decisions/choose.py)")
    parser.add_argument("--other-model", action="store_true",
                        help="route with thresholds fitted on another model's answers than the server's (a demonstration)")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be 1 or more")
    dataset = DATASETS[args.dataset]
    path = args.set or SETS / f"{dataset.base}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no adversarial set for {args.dataset} at {path}: give one with --set")
    messages = load_set(path)[: args.limit]
    names = args.decision or default_decisions(args.dataset)
    prompt = load_prompt(args.dataset)
    fits, deciders, skipped = {}, {}, []
    for decision in names:
        for name, (target, ask_target) in TARGETS.items():
            try:
                fits[decision, name] = fit_decision_router(args.dataset, DECISIONS[decision], target=target,
                                                           ask_target=ask_target)
            except FileNotFoundError:
                skipped.append(decision)
                break
        else:
            router = fits[decision, "default"][0]
            rank = fitted_ranking(dataset, router.decision.source)[0] if router.decision.combined else None
            deciders[decision] = Decider(router.decision, prompt, router.weights, rank, dataset.out_of_scope_codes())
    decisions = [d for d in names if d in deciders]
    client = Client()
    info = client.model_info()
    probe(client, prompt)
    for decision in decisions:
        models = {r.model for r in fits[decision, "default"][1].calib}
        if DECISIONS[decision].model and models != {info["model"]} and not args.other_model:
            raise ValueError(f"the server runs {info['model']}, the thresholds come from {', '.join(sorted(models))}: "
                             "give --other-model to route anyway")
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
    kinds = Counter(item["class"] for item in messages)
    print(f"{len(messages)} messages of {len(kinds)} kinds ({', '.join(f'{k} {n}' for k, n in kinds.items())})")
    for decision in skipped:
        print(f"{decision} decision left out: {args.dataset} has no calib run of it")
    outside = out_of_scope_codes(args.dataset)

    def ask(asked, text):
        return ask_live(client, asked, text, info["model"])
    records = {decision: [] for decision in decisions}
    for number, item in enumerate(messages, 1):
        for decision in decisions:
            records[decision].append(deciders[decision].line(item["text"], ask))
        if number % 10 == 0 or number == len(messages):
            print(f"  {number}/{len(messages)} messages asked", flush=True)

    # the gate before act: each decision's cut-offs fitted on its own calib answers, the same signals here
    retriever = dataset.fit_retriever()
    gates = {decision: fits[decision, "default"][1].safety.gate for decision in decisions}
    harms = {key: fit.safety.harm for key, (_, fit) in fits.items()}
    values = {}
    for decision in decisions:
        calib_values = [signals(r, retriever) for r in fits[decision, "default"][1].calib]
        values[decision] = [signals(r, retriever) for r in records[decision]]
        print(f"\n{decision}: gate {gates[decision].describe()}")
        print("  how each signal tells the calib messages from these (AUROC; 1.0: apart, 0.5: alike):")
        for name, end in SIGNALS.items():
            score = typicality_auroc([v[name] for v in calib_values], [v[name] for v in values[decision]], end)
            away = sum(name in gates[decision].past(v) for v in values[decision])
            print(f"  {name:<17} {score:.3f}   past its cut-off: {away} of {len(messages)}")
    print("\nguard.py's marks on these messages: " + ", ".join(
        f"{m.name} {sum(bool(m.pattern.search(item['text'])) for item in messages)}" for m in MARKS)
          + f" (kept before act: {', '.join(KEPT)})")

    # with an out-of-scope code: its answers, by kind (the table's last column is their sum, whatever the route)
    answered_outside = {decision: Counter(item["class"] for item, record in zip(messages, records[decision])
                                          if record.code in outside) for decision in decisions}
    oos_header = f" {'of which ' + code_list(outside):>14}" if outside else ""
    print(f"\n{'decision':<17} {'targets (act / ask)':<20} {'before act':<10} {'act':>4} {'confirm':>7} {'ask':>4} "
          f"{'hand over':>10}{oos_header}")
    acted, stopped, beyond_gate = [], [], Counter()
    for (decision, name), (router, fit) in fits.items():
        target, ask_target = TARGETS[name]
        calibrate, thresholds = fit.calibrate, router.router
        for check in CHECKS:
            routes = Counter()
            for item, record, value in zip(messages, records[decision], values[decision]):
                calibrated = calibrate(record) if record.status == "ok" else 0.0
                route = planned = route_of(record, calibrated, thresholds)
                why = (before_act(item["text"], record, value, gates[decision], harms[decision, name], calibrated,
                                  check) if route == "act" else None)
                if route == "act":
                    route = route_before_act(why)
                routes[route] += 1
                if route == "act":
                    acted.append((decision, name, check, item, record, calibrated))
                if check == "gate" and why:
                    stopped.append((decision, name, item, record, calibrated, why))
                if (check == "gate" and planned == "act" and route not in ("confirm", "ask")
                        and not gates[decision].why(value)):
                    # what each mark of guard.py stops that the gate's signals let through: its place next to them
                    beyond_gate.update(m.name for m in MARKS if m.pattern.search(item["text"]))
                    beyond_gate["(none)"] += 1
            print(f"{decision:<17} {f'{target:.1%} / {ask_target:.1%}':<20} {check:<10} "
                  f"{routes['act']:4d} {routes['confirm']:7d} {routes['ask']:4d} {routes['hand_over']:10d}"
                  + (f" {answered_outside[decision].total():14d}" if outside else ""))
    if outside:
        for decision, by_kind in answered_outside.items():
            print(f"\n{decision}, answered {code_list(outside)}: {by_kind.total()} of {len(messages)} "
                  f"({', '.join(f'{kind} {by_kind[kind]} of {n}' for kind, n in kinds.items())})")
    print(f"\nacts the gate's signals let through (decisions x targets): {beyond_gate['(none)']}; of them, each mark of "
          f"guard.py stops: " + ", ".join(f"{m.name} {beyond_gate[m.name]}" for m in MARKS))
    shown = [a for a in acted if a[2] == "gate"]
    print(f"\nacted on with the gate, by the intent's kind of action (harm.py; right: the message's own intent): "
          f"{len(shown)}")
    for decision, name in fits:
        here = [(item, record) for d, n, _, item, record, _ in shown if (d, n) == (decision, name)]
        print(f"  {decision}, {name} targets: " + ", ".join(
            f"{kind} {sum(harms[decision, name].kind(r.intent) == kind for _, r in here)} "
            f"({sum(harms[decision, name].kind(r.intent) == kind and item.get('intent') == r.intent for item, r in here)}"
            " right)" for kind in KINDS))
    for decision, name, _, item, record, calibrated in shown:
        print(f"  {decision}, {name} targets: [{item['class']}] {printable(item['text'])[:60]!r} -> {record.code} "
              f"{record.intent} [{harms[decision, name].kind(record.intent)}] (raw {record.confidence:.3f} -> "
              f"{calibrated:.3f})")
    print(f"\nthe acts without the gate, and what stopped each: {len(stopped)}")
    for decision, name, item, record, calibrated, why in stopped:
        print(f"  {decision}, {name} targets: [{item['class']}] {printable(item['text'])[:60]!r} -> {record.intent} "
              f"({calibrated:.3f}): {why}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
