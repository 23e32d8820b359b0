"""Measured through running services: a seeded sample of a test split, each message sent to two services in turn.

    python3 08-routes/beyond/service/service.py --port 8090 --log /tmp/served.jsonl &                  # the chosen decision
    python3 08-routes/beyond/service/service.py --port 8093 --decision model --log /tmp/model.jsonl &  # post 08's model alone
    python3 08-routes/beyond/service/service_measure.py --services 8090 8093 --sample 1000
    python3 08-routes/beyond/service/service_measure.py --dataset clinc150 --services 8092 --sample 1000
    python3 08-routes/beyond/service/service_measure.py --services 8090 --set 08-routes/beyond/gate/adversarial/banking77-third.jsonl

Each message of a seeded sample of the test split (labels.seeded_sample:
every intent in proportion, out-of-scope messages at their share) is sent
to every service on its own POST /route, one request in flight, the
services' order turned around from one message to the next so that a drift
of the machine's load falls on all. The client knows each message's right
intent; the services do not. Every route object goes, with the client's
wall time in ms and the right intent, to a JSONL file per service
(--out-folder), so a rerun asks only the messages still missing.

With --set, the messages are a committed set's instead (decisions/message_sets.py: an ordinary message keeps
its intent, a hostile one has none, so any act on it is wrong), and the report lists every act.

The report, per service (GET /router names its decision): how many
messages went each way (act, confirm, ask, hand over), the act coverage and
precision with exact 95% intervals, the wrong acts by the kind of action of
their intent (harm.py: inform, change, irreversible) and each wrong change
or irreversible act listed, out-of-scope messages acted on, and the median
and p95 ms per message, with the load average of the machine at the start
and the end.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from harm import KINDS, intent_kinds
from intervals import clopper_pearson
from labels import printable, seeded_sample
from oos_cost import PairedCost
from registry import DATASETS, add_dataset_argument
from routes import interval_text
from saved_answers import OWN_RESULTS

ROUTES = ("act", "confirm", "ask", "hand_over")


def call(port: int, method: str, path: str, body: dict | None = None, timeout_s: float = 600.0) -> tuple[int, dict]:
    """One HTTP request to the service on 127.0.0.1:port: (status, JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def routes_path(folder: Path, dataset: str, decision: str, router_sha256: str, what: str) -> Path:
    """<folder>/<dataset>-service-<decision>-<router sha256, 8 digits>-<what>.jsonl (what: test-sample<N>-seed<S>,
    or a set's name): two services of one decision with other routers write apart."""
    return folder / f"{dataset}-service-{decision}-{router_sha256[:8]}-{what}.jsonl"


def done_ids(path: Path) -> set[str]:
    """The message ids a results file already holds (a missing file: none)."""
    if not path.exists():
        return set()
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


def service_report(dataset: str, decision: str, rows: list[dict], kinds: dict[str, str], out_of_scope: frozenset[str],
                   every_act: bool = False) -> list[str]:
    """The lines of one service's report (module docstring); every_act: list every act, right or wrong."""
    n = len(rows)
    counts = {route: sum(row["route"] == route for row in rows) for route in ROUTES}
    acted = [row for row in rows if row["route"] == "act"]
    right = [row for row in acted if row["intent"] == row["gold_intent"]]
    wrong = [row for row in acted if row["intent"] != row["gold_intent"]]
    ms = sorted(row["wall_ms"] for row in rows)
    lines = [f"{decision}: {n} messages: " + ", ".join(f"{route.replace('_', ' ')} {counts[route]} "
                                                       f"({100 * counts[route] / n:.1f}%)" for route in ROUTES),
             f"  act coverage {interval_text(clopper_pearson(len(acted), n))}, precision "
             + (interval_text(clopper_pearson(len(right), len(acted))) if acted else "-")]
    by_kind = []
    for kind in KINDS:
        mine = [row for row in acted if kinds.get(row["intent"], "change") == kind]
        hits = sum(row["intent"] == row["gold_intent"] for row in mine)
        by_kind.append(f"{kind} {hits} of {len(mine)}" + (f" ({100 * hits / len(mine):.1f}%)" if mine else ""))
    lines.append("  acts right by kind of action: " + ", ".join(by_kind))
    lines.append(f"  wrong acts: {len(wrong)}: " + ", ".join(
        f"{kind} {sum(kinds.get(row['intent'], 'change') == kind for row in wrong)}" for kind in KINDS))
    for row in (acted if every_act else wrong):
        if every_act or kinds.get(row["intent"], "change") != "inform":
            lines.append(f"    {kinds.get(row['intent'], 'change')}: {printable(row['text'])[:70]!r} -> {row['intent']} "
                         f"(right: {row['gold_intent']}, calibrated {row['calibrated']:.3f})")
    if out_of_scope:
        outside = [row for row in rows if row["gold_intent"] in out_of_scope]
        lines.append(f"  out-of-scope messages: {len(outside)}; acted on {sum(r['route'] == 'act' for r in outside)}, "
                     f"asked {sum(r['route'] == 'ask' for r in outside)}")
    lines.append(f"  ms per message (client wall time): median {statistics.median(ms):.0f}, "
                 f"p95 {ms[min(len(ms) - 1, int(0.95 * len(ms)))]:.0f}")
    return lines


def paired_act_line(first: str, first_rows: list[dict], other: str, other_rows: list[dict]) -> str:
    """One line: the act coverage of the first service minus another's on the messages both answered, with the
    95% interval of a paired difference (oos_cost.PairedCost: Agresti 2013, 11.1), in points."""
    acted = {row["id"]: row["route"] == "act" for row in other_rows}
    pairs = [(acted[row["id"]], row["route"] == "act") for row in first_rows if row["id"] in acted]
    if not pairs:
        return f"{first} against {other}: no message answered by both"
    cost = PairedCost.of_pairs(pairs)  # without: the other service, with: the first
    low, high = cost.interval()
    return (f"{first} acts on {cost.right_with / cost.n:.1%}, {other} on {cost.right_without / cost.n:.1%} of the "
            f"same {cost.n} messages: {100 * cost.difference:+.1f} points (95% interval {100 * low:+.1f} to "
            f"{100 * high:+.1f}; acted on by one only: {cost.only_with} and {cost.only_without})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--services", type=int, nargs="+", required=True, metavar="PORT",
                        help="the ports of the running services on 127.0.0.1 (service.py --port)")
    parser.add_argument("--sample", type=int, default=1000, metavar="N", help="messages of the test split (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--set", type=Path, metavar="FILE", help="a committed message set instead of the test sample")
    parser.add_argument("--out-folder", type=Path, default=OWN_RESULTS,
                        help="where the route objects go (default 03-where-confidence-comes-from/results/)")
    args = parser.parse_args()
    if args.sample < 1:
        parser.error("--sample must be 1 or more")
    dataset = DATASETS[args.dataset]
    if args.set:
        from message_sets import set_messages, set_name
        if not args.set.is_file():
            parser.error(f"no message set at {args.set}")
        messages, what = set_messages(args.set), set_name(args.set)
    else:
        messages, what = seeded_sample(dataset.load_split("test"), args.sample, args.seed), \
            f"test-sample{args.sample}-seed{args.seed}"
    decisions, routers = {}, {}
    for port in args.services:
        try:
            status, summary = call(port, "GET", "/router", timeout_s=10)
        except OSError as error:
            raise ConnectionError(f"no service answers on 127.0.0.1:{port} ({error}): start it with python3 "
                                  f"08-routes/beyond/service/service.py --port {port}") from None
        if summary.get("dataset") != args.dataset:
            raise ValueError(f"the service on port {port} routes {summary.get('dataset')}, not {args.dataset}")
        decisions[port] = summary["decision"]["name"]
        routers[port] = summary["router_sha256"]
    args.out_folder.mkdir(parents=True, exist_ok=True)  # a folder of the reader's naming may not exist yet
    paths = {port: routes_path(args.out_folder, args.dataset, decisions[port], routers[port], what) for port in args.services}
    done = {port: done_ids(path) for port, path in paths.items()}
    todo = [m for m in messages if any(m.id not in done[port] for port in args.services)]
    load_start = os.getloadavg()
    print(f"{args.dataset} {what}: {len(messages)} messages, {len(todo)} to ask of "
          + ", ".join(f"{decisions[p]} (port {p})" for p in args.services) + f"; load {load_start[0]:.2f}", flush=True)
    started = time.monotonic()
    for number, message in enumerate(todo, start=1):
        order = args.services if number % 2 else list(reversed(args.services))
        for port in order:
            if message.id in done[port]:
                continue
            began = time.perf_counter()
            status, body = call(port, "POST", "/route", {"message": message.text})
            wall_ms = 1000 * (time.perf_counter() - began)
            if status != 200:
                raise RuntimeError(f"the service on port {port} answered {status}: {body.get('error', body)}")
            (row,) = body["routes"]
            with open(paths[port], "a", encoding="utf-8") as out:
                out.write(json.dumps({"id": message.id, "text": message.text, "gold_intent": message.intent,
                                      "wall_ms": round(wall_ms, 2), **row}) + "\n")
        if number % 20 == 0 or number == len(todo):
            elapsed = time.monotonic() - started
            print(f"  {number}/{len(todo)}  {elapsed:.0f} s  load {os.getloadavg()[0]:.2f}", flush=True)
    load_end = os.getloadavg()
    kinds = intent_kinds(args.dataset)
    wanted = {m.id for m in messages}
    print(f"\nload average (1 min) at the start {load_start[0]:.2f}, at the end {load_end[0]:.2f}; "
          f"{os.cpu_count()} CPUs")
    answered = {}
    for port in args.services:
        rows = [json.loads(line) for line in paths[port].read_text().splitlines() if line.strip()]
        answered[port] = [row for row in rows if row["id"] in wanted]
        print("\n" + "\n".join(service_report(args.dataset, f"{decisions[port]} (router {routers[port][:8]})",
                                               answered[port], kinds, dataset.out_of_scope_intents,
                                               every_act=bool(args.set))))
        print(f"  routes: {paths[port]}")
    first, *others = args.services
    if others:
        print()
    for port in others:  # the first service's decision against each other one, message by message
        print(paired_act_line(decisions[first], answered[first], decisions[port], answered[port]))
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
