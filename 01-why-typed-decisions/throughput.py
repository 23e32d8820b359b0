"""Throughput: typed requests one at a time, then N at once.

    python3 01-why-typed-decisions/throughput.py                  # 20 requests, 1 then 2 at a time
    python3 01-why-typed-decisions/throughput.py --requests 40 --concurrent 4

The server has a fixed number of slots (00-setup starts 1). Requests beyond
that wait in a queue, so more concurrency raises requests per second only
while slots are free and the machine has compute to spare. Prints requests/s,
the median and 95th-percentile latency for each setting, and where the
server's own time per request goes: processing the message (prompt) or
generating the code's tokens (generate). Batching shares the generating
steps between requests; a typed answer is two tokens, so when processing
the message dominates, batching has little to share.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_split
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from typed_prompt import load_prompt
from typed_request import probe


def measure(client: Client, built, texts: list[str], concurrent: int, top_logprobs: int = 0) -> tuple[float, list]:
    """Send every text with `concurrent` requests in flight; return (requests/s, the CodeReply of each, in order).

    top_logprobs: candidates asked per token, as ask_code takes it (post 03's
    runs ask 30). Requests/s is the number of texts over the wall time from
    the first send to the last answer.
    """
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrent) as pool:
        replies = list(pool.map(lambda text: ask_code(client, built, text, top_logprobs=top_logprobs), texts))
    elapsed = time.perf_counter() - started
    return len(texts) / elapsed, replies


def p95(values: list[float]) -> float:
    """The 95th percentile of values (statistics.quantiles, exclusive method); the value itself for one value.

    Raises ValueError for no values.
    """
    if not values:
        raise ValueError("p95 of no values")
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20, help="requests per setting (default: 20)")
    parser.add_argument("--concurrent", type=int, default=2, help="requests in flight for the second setting (default: 2)")
    args = parser.parse_args()
    if args.requests < 1 or args.concurrent < 1:
        parser.error("--requests and --concurrent must be 1 or more")
    client = Client()
    built = load_prompt()
    texts = [m.text for m in load_split("calib")[: args.requests]]
    slots = client.get("/props").get("total_slots", "?")
    print(f"model: {client.model_info()['model']}  server slots: {slots}  {args.requests} typed requests per setting\n")
    probe(client, built)  # checks the server; the system prompt is processed here, not inside the first measurement
    print(f"{'in flight':>9}  {'requests/s':>10}  {'median ms':>9}  {'p95 ms':>7}  "
          f"{'server: prompt ms':>17}  {'generate ms':>11}  (medians per request)")
    for concurrent in sorted({1, args.concurrent}):
        rate, replies = measure(client, built, texts, concurrent)
        latencies = [reply.wall_ms for reply in replies]
        prompt_ms = statistics.median(reply.timings.get("prompt_ms", 0.0) for reply in replies)
        generate_ms = statistics.median(reply.timings.get("predicted_ms", 0.0) for reply in replies)
        print(f"{concurrent:9d}  {rate:10.2f}  {statistics.median(latencies):9.0f}  {p95(latencies):7.0f}  "
              f"{prompt_ms:17.0f}  {generate_ms:11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
