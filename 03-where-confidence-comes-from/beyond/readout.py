"""The one-pass letter readout (beyond the series): the code read from the letters' probabilities, nothing generated under a grammar.

    python3 03-where-confidence-comes-from/beyond/readout.py              # the first 200 calibration messages
    python3 03-where-confidence-comes-from/beyond/readout.py --limit 20

run.py lets the server write the code under the grammar and reads the
confidence from top_logprobs. The readout writes nothing: it renders the
same chat with the model's own template (/apply-template), asks /completion
for the candidates of the next token (n_probs), and keeps only the group
letters. The answer is the most probable letter, its probability a softmax
over the letters alone (confidence.renormalize with no letter chosen). Then
the intent step: the chosen group letter is appended to the prompt as its
token id, and the same readout runs over that group's '-A', '-B', ... tokens.
The answer is looked up from the letters as an intent name: the letters are
positions in the list, the intent is the answer.

Nothing is sampled and every letter among the candidates gets a probability,
but the candidates are the server's top n_probs, not every logit: a letter
outside them counts as 0, as in run.py. It buys no accuracy: greedy decoding
under the grammar picks the same argmax. This script measures that on the
same messages: each also goes through run.py's request (the grammar, 2
tokens, top_logprobs), and the two answers and confidences are compared.

Writes two results files in run.py's format, one line per message, resumable
(Ctrl-C keeps the finished lines):
03-where-confidence-comes-from/results/readout-banking77-calib.jsonl (the
readout's answer and confidence) and readout-banking77-calib-grammar.jsonl
(run.py's line for the same message), so summary.py --results reads either.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from banking77 import load_split
from batch import check_resumable, run_messages
from confidence import Step, renormalize
from labels import Message, split_code
from llama_http import Client, exit_on_server_errors
from results_file import ResultsFile, results_folder
from summary import RANGES, in_range
from prompt import Prompt, load_prompt
from typed_request import TOP_LOGPROBS, probe, request_settings, typed_messages
from results_record import ResultsLine, parse_lines
from tokens import LetterTokens, letter_tokens
from typed_lines import typed_line

DEFAULT_LIMIT = 200


@dataclass(frozen=True)
class Readout:
    """A code read from the letters' probabilities in two passes (group letter, then intent letter).

    code: e.g. "C-F"; intent: its intent name. group_step, intent_step: the
    two Steps of confidence.py with chosen = the most probable letter.
    confidence = P(group) x P(intent | group), in [0, 1]. wall_ms: client
    time of the two /completion requests, in ms (the template is rendered
    once per message, not counted).
    """

    code: str
    intent: str
    group_step: Step
    intent_step: Step
    wall_ms: float

    @property
    def confidence(self) -> float:
        return self.group_step.chosen_probability * self.intent_step.chosen_probability


def chat_prompt(client: Client, prompt: Prompt, message: str) -> str:
    """The text the model reads for a typed request: run.py's chat messages through the model's chat template.

    POST /apply-template renders them with the template the server uses for
    /v1/chat/completions, generation prompt included, so the prompt ends
    where the model starts its reply and shares its cached prefix with run.py's
    requests.
    """
    body = client.post("/apply-template", {"messages": typed_messages(prompt, message)}).body
    return body["prompt"]


def next_token_candidates(client: Client, prompt: str | list, n_probs: int) -> tuple[list[dict], float]:
    """The top n_probs candidates for the token after prompt, and the request's client time in ms.

    prompt: text, or a list of text and token ids (llama-server's mixed
    prompt). One /completion request that generates one token at
    temperature 0 (ignored: the answer is read from the candidates, whose
    logprobs come from the raw logits, before any sampler). Each candidate
    is {'id', 'token', 'logprob', 'bytes'}, most likely first. Raises
    ValueError when the server sends no candidates.
    """
    reply = client.post("/completion", {"prompt": prompt, "n_predict": 1, "n_probs": n_probs,
                                        "temperature": 0.0, "cache_prompt": True})
    probabilities = reply.body.get("completion_probabilities") or []
    if not probabilities or "top_logprobs" not in probabilities[0]:
        raise ValueError("the server sent no completion_probabilities with top_logprobs for n_probs")
    return probabilities[0]["top_logprobs"], reply.wall_ms


def read_code(client: Client, prompt: Prompt, tokens: LetterTokens, message: str,
              n_probs: int = TOP_LOGPROBS) -> Readout:
    """The readout of one message: the group letter over the group letters, then the intent letter within it.

    The intent step reads the candidates after the group letter's token
    (its id, tokens.letter): '-A', '-B', ... write the intent letters there,
    the tokens the grammar route chooses from too (confidence.letter_of).
    """
    text = chat_prompt(client, prompt, message)
    candidates, group_ms = next_token_candidates(client, text, n_probs)
    group_step = renormalize(candidates, "", prompt)
    group = group_step.chosen
    candidates, intent_ms = next_token_candidates(client, [text, tokens.letter[group]], n_probs)
    intent_step = renormalize(candidates, group, prompt)
    code = f"{group}-{intent_step.chosen}"
    return Readout(code, prompt.codes[code].intent, group_step, intent_step, group_ms + intent_ms)


def readout_record(message: Message, readout: Readout, prompt: Prompt, model: str, n_probs: int) -> dict:
    """A results line in run.py's format for the readout's answer (status always "ok": a letter is always read).

    content is the code the two read tokens spell ('C' then '-F' is 'C-F'):
    the readout generates no text of its own, and later posts expect a string.
    """
    gold_code = prompt.by_intent[message.intent].code
    group, intent = readout.group_step, readout.intent_step
    return {
        "id": message.id, "text": message.text, "gold_intent": message.intent, "gold_code": gold_code,
        "status": "ok", "code": readout.code, "intent": readout.intent, "correct": readout.code == gold_code,
        "right_group": split_code(readout.code)[0] == split_code(gold_code)[0], "retried": False, "content": readout.code, "error": None,
        "wall_ms": round(readout.wall_ms, 2), "timings": {}, "model": model, "build": None, "grammar": False,
        "settings": {"endpoint": "/completion", "n_predict": 1, "n_probs": n_probs, "temperature": 0.0},
        "prompt_sha256": prompt.sha256,
        "confidence": readout.confidence, "p_group": group.chosen_probability,
        "p_intent_given_group": intent.chosen_probability,
        "group_distribution": group.distribution, "intent_distribution": intent.distribution,
        "off_label_group": group.off_label_mass, "off_label_intent": intent.off_label_mass,
        "missing_letters": group.missing + intent.missing, "tokens_in_code": 2,
    }


def print_ranges(readout: list[ResultsLine], grammar: list[ResultsLine]) -> None:
    """post 03's confidence ranges (summary.RANGES) side by side: answers and share correct in each."""
    print(f"{'confidence':<12} {'readout':>8} {'correct':>8}   {'grammar':>8} {'correct':>8}")
    for low, high in RANGES:
        cells = []
        for records in (readout, grammar):
            inside = [r for r in records if in_range(r.confidence, low, high)]
            share = f"{100 * sum(r.correct for r in inside) / len(inside):7.1f}%" if inside else "       -"
            cells.append(f"{len(inside):8d} {share}")
        print(f"{low:.2f}-{high:<7.2f} {cells[0]}   {cells[1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                        help=f"the first N calibration messages (listed round-robin over the intents; default: "
                             f"{DEFAULT_LIMIT}, at most 770)")
    parser.add_argument("--n-probs", type=int, default=TOP_LOGPROBS,
                        help=f"candidates per step for both routes (default: {TOP_LOGPROBS}, as run.py)")
    parser.add_argument("--out", type=Path, help="the readout's results file (default: 03-where-confidence-comes-from/"
                                                 "results/readout-banking77-calib.jsonl; the grammar route's goes next "
                                                 "to it, its name ending in -grammar.jsonl)")
    args = parser.parse_args()
    if args.limit < 1:
        parser.error("--limit must be 1 or more")
    if args.n_probs < 1:
        parser.error("--n-probs must be 1 or more: the readout reads the candidates")
    out = args.out or results_folder(__file__) / "readout-banking77-calib.jsonl"
    grammar_out = out.with_name(f"{out.stem}-grammar{out.suffix}")
    messages = load_split("calib")[: args.limit]
    prompt = load_prompt()
    client = Client()
    info = client.model_info()
    probe(client, prompt, args.n_probs)
    tokens = letter_tokens(client)
    settings = request_settings(prompt, True, args.n_probs)
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}")

    for path in (out, grammar_out):
        check_resumable(path, model=info["model"], prompt_sha256=prompt.sha256)
    with ResultsFile(grammar_out) as grammar_file:
        def make_record(message: Message) -> dict:
            if message.id not in grammar_file.done:
                grammar_file.append(typed_line(client, prompt, message, info["model"], settings, args.n_probs))
            readout = read_code(client, prompt, tokens, message.text, args.n_probs)
            return readout_record(message, readout, prompt, info["model"], args.n_probs)

        what = f"readout and grammar, calib (model {info['model']}, {args.n_probs} candidates per step)"
        readouts = run_messages(messages, out, make_record, what)
    readouts = parse_lines(readouts, str(out))
    grammar_by_id = {r.id: r for r in parse_lines(grammar_file.records, str(grammar_out))}
    grammars = [grammar_by_id[r.id] for r in readouts]
    n = len(readouts)
    print(f"\n{n} calibration messages; results in {out} and {grammar_out.name}")
    print(f"{'':<28} {'readout':>9} {'grammar':>9}")
    for label, key in (("correct", "correct"), ("right group", "right_group")):
        print(f"{label:<28}" + "".join(f" {100 * sum(getattr(r, key) for r in rs) / n:8.1f}%"
                                       for rs in (readouts, grammars)))
    print(f"{'mean confidence':<28}" + "".join(f" {statistics.fmean(r.confidence for r in rs):9.3f}"
                                                for rs in (readouts, grammars)))
    print(f"{'valid letters missing':<28}" + "".join(f" {sum(r.missing_letters or 0 for r in rs):9d}"
                                                      for rs in (readouts, grammars)))
    print(f"{'requests per message':<28} {2:9d} {1:9d}")
    ok = [(r, g) for r, g in zip(readouts, grammars) if g.status == "ok"]
    same = sum(r.code == g.code for r, g in ok)
    same_group = sum(r.group_letter == g.group_letter for r, g in ok)
    differences = [abs(r.confidence - g.confidence) for r, g in ok]
    print(f"\nthe grammar's reply was a code for {len(ok)} of {n}; on those:")
    print(f"  same group letter: {same_group}, same code: {same} ({100 * same / len(ok):.1f}%)")
    print(f"  |readout - grammar| confidence: mean {statistics.fmean(differences):.4f}, "
          f"median {statistics.median(differences):.4f}, max {max(differences):.4f}")
    print()
    print_ranges(readouts, grammars)
    print(f"\nsame answer as the grammar for {100 * same / len(ok):.1f}% of the messages, confidence "
          f"{statistics.fmean(differences):.4f} apart on average")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
