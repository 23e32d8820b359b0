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
from typing import Callable, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_labels, load_split
from llama_http import Client, exit_on_server_errors
from registry import SavedPrompt, dataset_named
from typed import ask_typed
from typed_request import probe

T = TypeVar("T")


def measure(send: Callable[[str], T], texts: list[str], concurrent: int) -> tuple[float, list[T]]:
    """send(text) for every text with `concurrent` requests in flight; return (requests/s, what each send
    gave, in order). Requests/s is the number of texts over the wall time from the first send to the last answer."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrent) as pool:
        replies = list(pool.map(send, texts))
    elapsed = time.perf_counter() - started
    return len(texts) / elapsed, replies


def timed_typed(client: Client, prompt: SavedPrompt, codes: set[str]) -> Callable[[str], tuple[dict, float]]:
    """text -> (typed.py's reply body for it, its wall time in ms)."""
    def send(text: str) -> tuple[dict, float]:
        started = time.perf_counter()
        reply = ask_typed(client, prompt.system, prompt.grammar, codes, text, top_logprobs=0)
        return reply, (time.perf_counter() - started) * 1000
    return send


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
    prompt = dataset_named("banking77").saved_prompt()
    codes = {intent.code for intent in load_labels().intents}
    texts = [m.text for m in load_split("calib")[: args.requests]]
    slots = client.get("/props").get("total_slots", "?")
    print(f"model: {client.model_info()['model']}  server slots: {slots}  {args.requests} typed requests per setting\n")
    probe(client, prompt)  # checks the server; the system prompt is processed here, not inside the first measurement
    print(f"{'in flight':>9}  {'requests/s':>10}  {'median ms':>9}  {'p95 ms':>7}  "
          f"{'server: prompt ms':>17}  {'generate ms':>11}  (medians per request)")
    for concurrent in sorted({1, args.concurrent}):
        rate, replies = measure(timed_typed(client, prompt, codes), texts, concurrent)
        latencies = [ms for _, ms in replies]
        prompt_ms = statistics.median(reply.get("timings", {}).get("prompt_ms", 0.0) for reply, _ in replies)
        generate_ms = statistics.median(reply.get("timings", {}).get("predicted_ms", 0.0) for reply, _ in replies)
        print(f"{concurrent:9d}  {rate:10.2f}  {statistics.median(latencies):9.0f}  {p95(latencies):7.0f}  "
              f"{prompt_ms:17.0f}  {generate_ms:11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
