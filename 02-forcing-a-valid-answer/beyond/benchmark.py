"""Benchmark (beyond the series): how long a server takes to start, where a typed request's time goes, how long a whole split takes.

    python3 02-forcing-a-valid-answer/beyond/benchmark.py                     # the running server: 50 calibration messages
    python3 02-forcing-a-valid-answer/beyond/benchmark.py --requests 100 --top-logprobs 30
    python3 02-forcing-a-valid-answer/beyond/benchmark.py --own-server --model qwen2.5-coder-0.5b --parallel 2
    python3 02-forcing-a-valid-answer/beyond/benchmark.py --own-server --amx-unchecked   # the AMX build, timed

1. Start (with --own-server only): the script starts its own llama-server
   with 00-setup's start_server on a free port, with an empty temporary slot
   folder, twice: a cold start (the system prompt processed once, then the
   slot saved) and, after a stop, a restored start (the saved slot read back).
   Each is timed from launching the server to the end of the warm-up. The
   measurements below then run on the restored server, stopped at the end.
2. Per request, one in flight: the median and 95th percentile of the client's
   wall time next to the server's own time (timings.prompt_ms +
   predicted_ms), and their ratio. The difference is what the client, HTTP
   and the server's bookkeeping (grammar, logprobs, JSON) add. Target: median
   wall within 1.03x of median server time.
3. Throughput: requests/s with 1 and with N requests in flight, measured by
   post 01's throughput.measure (N: --concurrent, default the server's slots,
   at least 2).
4. Projection: the time of a whole test split of every dataset (BANKING77:
   3,080 messages) at those rates. run.py sends one message at a time.

The machine's CPU count and load average (before and after) are printed with
the figures, since on a shared CPU they change them. This is a benchmark, not
a test: it prints figures and asserts nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from decision import ask_code
from labels import spread
from llama_http import Client, exit_on_server_errors
from models import DEFAULT_MODEL
from prompt import load_prompt
from registry import DATASETS, dataset_named
from running_server import DEFAULT_DATASET, Warmed, stop_server, warm
from server_build import AMX_SERVER_BIN, read_stamp
from server_start import free_port, start_server
from setup_steps import SetupError
from throughput import measure, p95
from typed_request import probe

TARGET = 1.03


def load_average() -> str:
    """The 1-minute load average (os.getloadavg), or "unknown" where the system has none."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def timed_start(model: str, parallel: int, port: int, slots: Path, dataset: str,
                amx_unchecked: bool = False) -> tuple[float, float, Warmed, str]:
    """Start llama-server on port with the slot folder `slots` and warm it with dataset's prompt (the AMX build,
    unchecked, with amx_unchecked: server_start.start_server).

    Returns (seconds to load, seconds from launch to the end of the warm-up,
    what the warm-up did, the lines server.py printed: kept out of the
    printout). Stops the server and raises SetupError when it does not start,
    ServerUnfit when the probe fails.
    """
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    lines = io.StringIO()
    try:
        with contextlib.redirect_stdout(lines):
            record = start_server(model, parallel=parallel, url=url, slots=slots, amx_unchecked=amx_unchecked)
            loaded = time.monotonic() - started
            warmed = warm(Client(url), record, dataset)
    except BaseException:
        stop_server(port)
        raise
    return loaded, time.monotonic() - started, warmed, lines.getvalue()


def own_server_starts(args) -> tuple[int, list[str]]:
    """Cold start, stop, restored start of a server of our own, left running; return its port and the lines
    describing both starts."""
    port = free_port()
    print(f"starting llama-server on port {port} with an empty slot folder: the cold start processes the "
          "system prompt once, which takes minutes on a CPU", flush=True)
    with tempfile.TemporaryDirectory(prefix="typed-decisions-slots-") as folder:
        load, cold, first, _ = timed_start(args.model, args.parallel, port, Path(folder), args.dataset,
                                           args.amx_unchecked)
        stop_server(port)
        load_again, restored, second, printed = timed_start(args.model, args.parallel, port, Path(folder), args.dataset,
                                                            args.amx_unchecked)
    build = "the AMX build, unchecked, " if args.amx_unchecked else ""
    lines = [f"start of a server with {args.parallel} slot{'s' if args.parallel > 1 else ''} "
             f"(own server on port {port}, {build}empty slot folder at first)",
             f"  cold      {cold:7.1f} s = load {load:.1f} s + prompt processed {first.prefill_s:.1f} s "
             f"+ saved {first.save_ms / 1000:.2f} s ({first.tokens:,} tokens, {first.bytes / 1e6:.1f} MB)"
             + (f" + other slots restored {' + '.join(f'{ms:.0f}' for ms in first.restore_ms)} ms"
                if first.restore_ms else ""),
             f"  restored  {restored:7.1f} s = load {load_again:.1f} s + file checked {second.check_ms:.0f} ms + "
             f"restored {' + '.join(f'{ms:.0f}' for ms in second.restore_ms)} ms + probe {second.probe_ms / 1000:.1f} s"]
    if second.how != "restored":
        lines += ["  the second start did not restore; server.py said:", *printed.splitlines()]
    return port, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50, help="calibration messages per setting (default: 50)")
    parser.add_argument("--top-logprobs", type=int, default=0, help="candidates per token, as post 03 asks (default: 0)")
    parser.add_argument("--concurrent", type=int, help="requests in flight for the second setting "
                                                       "(default: the server's slots, at least 2)")
    parser.add_argument("--dataset", choices=DATASETS, default=DEFAULT_DATASET,
                        help=f"whose prompt and calibration messages (default: {DEFAULT_DATASET})")
    parser.add_argument("--own-server", action="store_true",
                        help="start a server of our own on a free port, cold then restored, and time both")
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"with --own-server: the model (default: {DEFAULT_MODEL})")
    parser.add_argument("--parallel", type=int, default=1, help="with --own-server: its slots (default: 1)")
    parser.add_argument("--amx-unchecked", action="store_true",
                        help="with --own-server: start the AMX build (00-setup/server.py build --amx) even where its "
                             "check refused it, to time it; its answers may differ from AMX off, and the check's "
                             "recorded difference is printed (measurement only)")
    args = parser.parse_args()
    if args.amx_unchecked and not args.own_server:
        parser.error("--amx-unchecked needs --own-server")
    if args.requests < 1 or args.top_logprobs < 0 or args.parallel < 1 or (args.concurrent or 1) < 1:
        parser.error("--requests, --parallel and --concurrent must be 1 or more and --top-logprobs 0 or more")
    dataset = dataset_named(args.dataset)
    before = load_average()
    start_lines, port = [], None
    if args.own_server:
        port, start_lines = own_server_starts(args)
    try:
        client = Client(f"http://127.0.0.1:{port}" if port else None)
        return timing_report(client, dataset, args, before, start_lines)
    finally:
        if port:
            stop_server(port)


def timing_report(client: Client, dataset, args, before: str, start_lines: list[str]) -> int:
    """Measure on client's server and print every section after the start; return the exit status."""
    prompt = load_prompt(dataset.name)
    info = client.model_info()
    slots = client.get("/props").get("total_slots", 1)
    concurrent = args.concurrent or max(2, slots)
    probe(client, prompt)  # checks the server; pays the prefill here if it holds another prompt
    texts = [message.text for message in spread(dataset.load_split("calib"))[: args.requests]]
    def send(text: str):
        return ask_code(client, prompt, text, top_logprobs=args.top_logprobs)

    rate_1, replies = measure(send, texts, 1)
    rate_n, replies_n = measure(send, texts, concurrent)
    clean = [reply for reply in replies if reply.status == "ok" and not reply.retried]  # a retry is two requests
    if not clean:
        print("no request gave a code in one go; nothing to compare", file=sys.stderr)
        return 1
    walls = [reply.wall_ms for reply in clean]
    servers = [reply.timings["prompt_ms"] + reply.timings["predicted_ms"] for reply in clean]
    wall, server = statistics.median(walls), statistics.median(servers)
    print(f"model: {info['model']}  build: {info['build']}  server slots: {slots}  dataset: {dataset.name}  "
          f"top_logprobs: {args.top_logprobs}")
    print(f"machine: {os.cpu_count()} CPU cores; load average (1 min) {before} before, {load_average()} after\n")
    for line in start_lines:
        print(line)
    if args.amx_unchecked:
        check = read_stamp(AMX_SERVER_BIN).get("amx_checks", {}).get(info["model"])
        print(f"  the AMX build's check against AMX off with {info['model']}: "
              + (f"{'passed' if check['passed'] else 'refused'}, largest logprob difference "
                 f"{check['max_difference']:.4f} nats, {'same' if check['same_tokens'] else 'different'} greedy "
                 "tokens" if check else "not run yet (00-setup/server.py start --amx runs it)"))
    if start_lines:
        print()
    print(f"per typed request, 1 in flight ({len(clean)} of {len(texts)} messages answered in one request):")
    print(f"  {'':8}  {'median ms':>9}  {'p95 ms':>8}")
    print(f"  {'wall':8}  {wall:9.1f}  {p95(walls):8.1f}")
    print(f"  {'server':8}  {server:9.1f}  {p95(servers):8.1f}  (prompt_ms + predicted_ms)")
    verdict = "within" if wall <= TARGET * server else "OVER"
    print(f"  wall / server at the median: {wall / server:.3f}x  ({verdict} the {TARGET:.2f}x target)\n")
    print("throughput:")
    print(f"  {'in flight':>9}  {'requests/s':>10}  {'median ms':>9}  {'p95 ms':>8}")
    for in_flight, rate, done in ((1, rate_1, replies), (concurrent, rate_n, replies_n)):
        latencies = [reply.wall_ms for reply in done]
        print(f"  {in_flight:9d}  {rate:10.2f}  {statistics.median(latencies):9.0f}  {p95(latencies):8.0f}")
    print(f"\na whole test split at these rates (run.py sends 1 at a time; {dataset.name} messages measured):")
    for other in DATASETS.values():
        size = other.split_size("test")
        print(f"  {other.name:10} {size:6,} messages  {size / rate_1 / 60:6.1f} min at 1 in flight, "
              f"{size / rate_n / 60:6.1f} min at {concurrent}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(SetupError,)))
