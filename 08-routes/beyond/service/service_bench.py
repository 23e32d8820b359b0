"""Benchmark (not a test): what service.py adds to a typed request, measured on the same server in the same run.

    python3 08-routes/beyond/service/service_bench.py                      # 40 calib messages each way, the running server
    python3 08-routes/beyond/service/service_bench.py --requests 100 --other-model

Starts service.py's service in this process (gate before act on, decision
log in a temporary folder) on a free port in front of the running
llama-server (LLAMA_URL), then times, one request in flight, two kinds of
request on alternate calibration messages (BANKING77's calib split, spread
over the intents as post 02's benchmark takes them):

- bare: the typed request itself, post 02's ask_code with post 03's
  top_logprobs, as 02-forcing-a-valid-answer/beyond/benchmark.py times it
  (client wall time, ms);
- service: POST /route with one message through the service, on a kept-alive
  connection (client wall time, ms): the same typed request, plus HTTP, JSON,
  the queue, calibration, routing, the gate's signals and the log line;
- added: each service request's wall time minus that of the typed request
  inside it (the same message): what the service adds, without the
  difference between messages that the two medians carry.

The order alternates (bare first on even pairs, the service first on odd)
so that a drift of the shared machine's load falls on both. Printed: model,
build, CPU count and load average, the median and 95th percentile of each,
and the overhead of the service at the median, (service - bare) / bare.
Target: at most 5%.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from benchmark import load_average
from decision import ask_code
from labels import spread
from llama_http import Client, exit_on_server_errors
from prompt import load_prompt
from registry import dataset_named
from choose import router_of_options
from decision_router import read_decision_router, ready_router
from decisions import ask_live
from decision_log import DecisionLog
from service import RoutingService, make_server
from throughput import p95
from typed_request import TOP_LOGPROBS

TARGET = 0.05  # the service's overhead at the median, a fraction of the bare request's time


def timed_post(conn: http.client.HTTPConnection, message: str) -> float:
    """POST /route with one message on conn; the client's wall time in ms. Raises RuntimeError for a status
    other than 200 (the benchmark times answers, not refusals)."""
    body = json.dumps({"message": message}).encode()
    start = time.perf_counter()
    conn.request("POST", "/route", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    wall = (time.perf_counter() - start) * 1000.0
    if response.status != 200:
        raise RuntimeError(f"the service answered {response.status}: {data.decode(errors='replace')[:200]}")
    return wall


def overhead(bare_ms: list[float], service_ms: list[float]) -> float:
    """(median service - median bare) / median bare: the service's share on top of the typed request.
    Raises statistics.StatisticsError for no values."""
    bare = statistics.median(bare_ms)
    return (statistics.median(service_ms) - bare) / bare


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=40, help="messages timed each way (default: 40)")
    parser.add_argument("--other-model", action="store_true",
                        help="time even when the server runs another model than the router's (as service.py)")
    args = parser.parse_args()
    if args.requests < 1:
        parser.error("--requests must be 1 or more")
    before = load_average()
    path, _ = router_of_options("banking77", decision="model")  # post 08's model alone, as a decision router
    ready = ready_router(read_decision_router(path), path)
    router = ready.router.router
    prompt = load_prompt("banking77")
    client = Client()
    texts = [m.text for m in spread(dataset_named("banking77").load_split("calib"))[: 2 * args.requests]]
    if len(texts) < 2 * args.requests:
        raise ValueError(f"the calib split has {len(texts)} messages; give --requests {len(texts) // 2} or fewer")
    with tempfile.TemporaryDirectory() as folder:
        log = DecisionLog(Path(folder) / "decisions.jsonl")
        inside_ms = []  # the wall time of the typed request inside each service request

        def ask(asked, text: str):
            line = ask_live(client, asked, text, svc.model or "")
            inside_ms.append(line.wall_ms)
            return line
        svc = RoutingService(ready, path, client, True, log, other_model=args.other_model, ask=ask)
        warning = svc.check_server()
        httpd = make_server(svc, port=0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        conn = http.client.HTTPConnection(*httpd.server_address, timeout=600)
        bare_ms, service_ms = [], []

        def bare(text: str) -> None:
            reply = ask_code(client, prompt, text, top_logprobs=TOP_LOGPROBS)
            bare_ms.append(reply.wall_ms)
        try:
            timed_post(conn, texts[0])  # one untimed request each way: connections open
            bare(texts[1])
            bare_ms.clear()
            inside_ms.clear()
            for i in range(args.requests):
                first, second = texts[2 * i], texts[2 * i + 1]
                if i % 2 == 0:
                    bare(first)
                    service_ms.append(timed_post(conn, second))
                else:
                    service_ms.append(timed_post(conn, first))
                    bare(second)
        finally:
            conn.close()
            httpd.shutdown()
            httpd.server_close()
            svc.close()
    info = client.model_info()
    print(f"model: {info['model']}  build: {info['build']}  router: {router.dataset} ({router.model})")
    if warning:
        print(warning)
    print(f"machine: {os.cpu_count()} CPU cores; load average (1 min) {before} before, {load_average()} after")
    print(f"one request in flight, {args.requests} calib messages each way, alternating:")
    print(f"  {'':8}  {'median ms':>9}  {'p95 ms':>8}")
    print(f"  {'bare':8}  {statistics.median(bare_ms):9.1f}  {p95(bare_ms):8.1f}  (ask_code, top_logprobs "
          f"{TOP_LOGPROBS})")
    print(f"  {'service':8}  {statistics.median(service_ms):9.1f}  {p95(service_ms):8.1f}  (POST /route, gate on)")
    added = [outside - inside for outside, inside in zip(service_ms, inside_ms)]
    print(f"  {'added':8}  {statistics.median(added):9.1f}  {p95(added):8.1f}  (each service request minus the "
          "typed request inside it)")
    share = overhead(bare_ms, service_ms)
    verdict = "within" if share <= TARGET else "OVER"
    print(f"service overhead at the median: {100 * share:+.1f}%  ({verdict} the {100 * TARGET:.0f}% target); "
          f"added time at the median: {100 * statistics.median(added) / statistics.median(bare_ms):.2f}% of bare")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RuntimeError,)))
