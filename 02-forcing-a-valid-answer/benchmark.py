"""Benchmark: client wall time per typed request against the server's own time.

    python3 02-forcing-a-valid-answer/benchmark.py                     # 50 calibration messages
    python3 02-forcing-a-valid-answer/benchmark.py --requests 100 --top-logprobs 30

For each request, wall time is measured around the HTTP exchange and server
time is timings.prompt_ms + timings.predicted_ms as the server reports it. The
difference is what the client, HTTP and the server's bookkeeping (grammar,
logprobs, JSON) add. Target: median wall within 1.03x of median server time.
This is a benchmark, not a test: it prints figures and asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from banking77 import load_split
from labels import spread
from decision import ask_code
from llama_http import Client, exit_on_server_errors
from typed_prompt import load_prompt
from typed_request import probe

TARGET = 1.03


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50, help="how many calibration messages (default: 50)")
    parser.add_argument("--top-logprobs", type=int, default=0, help="candidates per token, as post 03 asks (default: 0)")
    args = parser.parse_args()
    if args.requests < 1 or args.top_logprobs < 0:
        parser.error("--requests must be 1 or more and --top-logprobs 0 or more")
    client = Client()
    built = load_prompt()
    info = client.model_info()
    probe(client, built)  # checks the server and pays the system prompt's prefill before measuring
    walls, servers = [], []
    for message in spread(load_split("calib"))[: args.requests]:
        reply = ask_code(client, built, message.text, top_logprobs=args.top_logprobs)
        if reply.status != "ok" or reply.retried:
            continue  # a retry is two requests; compare like with like
        walls.append(reply.wall_ms)
        servers.append(reply.timings["prompt_ms"] + reply.timings["predicted_ms"])
    if not walls:
        print("no request gave a code in one go; nothing to compare", file=sys.stderr)
        return 1
    wall, server = statistics.median(walls), statistics.median(servers)
    overheads = [w - s for w, s in zip(walls, servers)]
    print(f"model: {info['model']}  build: {info['build']}  top_logprobs: {args.top_logprobs}  requests: {len(walls)}")
    print(f"median wall time per request:    {wall:8.1f} ms")
    print(f"median server time per request:  {server:8.1f} ms  (prompt_ms + predicted_ms)")
    print(f"median overhead per request:     {statistics.median(overheads):8.1f} ms")
    verdict = "within" if wall <= TARGET * server else "OVER"
    print(f"wall / server: {wall / server:.3f}x  ({verdict} the {TARGET:.2f}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
