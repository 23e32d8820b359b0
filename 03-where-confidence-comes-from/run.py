"""Typed answers with confidence on a BANKING77 split: the file every later post reads.

    python3 03-where-confidence-comes-from/run.py --split calib           # 770 messages
    python3 03-where-confidence-comes-from/run.py --split test            # 3,080 messages
    python3 03-where-confidence-comes-from/run.py --split test --limit 100

Writes results/banking77-<split>.jsonl: one JSON object per message (fields in
README.md). Ctrl-C keeps the finished lines; the same command resumes. At the
end it prints the summary block of the post. Posts 04-08 read these files (or
the committed reference copies in results/reference/) without a server.

A message whose status is not "ok" (invalid, too_long, error) has no code:
it is recorded with correct = false and confidence = 0.0, so a threshold on
confidence never acts on it.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # noqa: E402,F401  (puts the post folders on sys.path)
from banking77 import load_split  # noqa: E402
from batch import base_record, run_messages  # noqa: E402
from confidence import answer_of  # noqa: E402
from decision import ask_code, request_settings  # noqa: E402
from llama_http import Client, exit_on_server_errors  # noqa: E402
from prompt import load_prompt  # noqa: E402
from results_file import RESULTS  # noqa: E402
from tokens import letter_tokens  # noqa: E402

RANGES = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 0.99), (0.99, 1.0))


def confidence_fields(answer) -> dict:
    """The post-03 fields of a line; all None for an answer without a code."""
    if answer is None:
        return {"confidence": 0.0, "p_group": None, "p_intent_given_group": None,
                "group_distribution": None, "intent_distribution": None,
                "off_label_group": None, "off_label_intent": None,
                "missing_letters": None, "tokens_in_code": None}
    return {
        "confidence": answer.confidence,
        "p_group": answer.p_group,
        "p_intent_given_group": answer.p_intent_given_group,
        "group_distribution": answer.group_step.distribution,
        "intent_distribution": answer.intent_step.distribution,
        "off_label_group": answer.group_step.off_label_mass,
        "off_label_intent": answer.intent_step.off_label_mass,
        "missing_letters": answer.missing_letters,
        "tokens_in_code": answer.tokens_in_code,
    }


def in_range(confidence: float, low: float, high: float) -> bool:
    """Ranges are [low, high), the last one [0.99, 1.0] with 1.0 included."""
    return low <= confidence < high or (high == 1.0 and confidence == 1.0)


def percentile_95(values: list[float]) -> float:
    """The 95th percentile, interpolated between order statistics (statistics.quantiles, inclusive)."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=20, method="inclusive")[-1]


def print_summary(records: list[dict]) -> None:
    """The summary block of post 03; seconds are the requests' wall time added up (a resumed run counts all)."""
    n = len(records)
    seconds = sum(r["wall_ms"] for r in records) / 1000
    right = [r for r in records if r["correct"]]
    wrong = [r for r in records if not r["correct"]]
    ok = [r for r in records if r["status"] == "ok"]
    print(f"\n{n} messages, {seconds:.0f} s of requests ({n / seconds:.2f} messages/s)")
    failed = {s: sum(r["status"] == s for r in records) for s in ("invalid", "too_long", "error")}
    print(f"valid codes {len(ok)} ({100 * len(ok) / n:.1f}%)" + "".join(f", {s} {c}" for s, c in failed.items() if c))
    print(f"correct {len(right)} ({100 * len(right) / n:.1f}%), right group {sum(r['right_group'] for r in records)} "
          f"({100 * sum(r['right_group'] for r in records) / n:.1f}%)")
    for label, group in (("right", right), ("wrong", wrong)):
        if group:
            print(f"median confidence when {label}: {statistics.median(r['confidence'] for r in group):.3f}")
    for step in ("group", "intent"):
        masses = [r[f"off_label_{step}"] for r in ok]
        if masses:
            print(f"off-label mass, {step} step: median {statistics.median(masses):.4f}, "
                  f"95th percentile {percentile_95(masses):.4f}, max {max(masses):.4f}")
    print(f"\n{'confidence':<12} {'answers':>7} {'accuracy':>9}")
    for low, high in RANGES:
        inside = [r for r in records if in_range(r["confidence"], low, high)]
        accuracy = f"{100 * sum(r['correct'] for r in inside) / len(inside):8.1f}%" if inside else "        -"
        print(f"{low:.2f}-{high:<7.2f} {len(inside):7d} {accuracy}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("calib", "test"), default="calib", help="which messages (default: calib)")
    parser.add_argument("--limit", type=int, help="only the first N messages of the split")
    parser.add_argument("--top-logprobs", type=int, default=30, help="candidates per token (default: 30)")
    parser.add_argument("--out", type=Path, help="results file (default: results/banking77-<split>.jsonl)")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be 1 or more")
    if args.top_logprobs < 1:
        parser.error("--top-logprobs must be 1 or more: confidence is read from the candidates")

    out = args.out or RESULTS / f"banking77-{args.split}.jsonl"
    messages = load_split(args.split)[: args.limit]
    built = load_prompt()
    client = Client()
    model = client.model_info()["model"]
    tokens = letter_tokens(client, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    settings = request_settings(built, True, args.top_logprobs)
    settings.pop("grammar")  # rebuilt from the data file; not repeated on every line

    def make_record(message):
        reply = ask_code(client, built, message.text, top_logprobs=args.top_logprobs)
        return {**base_record(message, reply, built, model, settings), **confidence_fields(answer_of(reply, built, tokens))}

    records = run_messages(messages, out, make_record, f"{args.split} (model {model}, top_logprobs {args.top_logprobs})")
    print_summary(records)
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
