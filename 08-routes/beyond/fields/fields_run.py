"""Ask a dataset with fields: one request a message, the code and every field, each field's confidence on its line.

    python3 08-routes/beyond/fields/fields_run.py --dataset banking77fields --split calib
    python3 08-routes/beyond/fields/fields_run.py --dataset banking77fields --set offtopic
    python3 08-routes/beyond/fields/fields_run.py --dataset banking77fields --set requester-calib
    python3 08-routes/beyond/fields/fields_run.py --dataset clinc150fields --split test --sample 1000
    python3 08-routes/beyond/fields/fields_run.py --dataset banking77fields --split calib --one-per-field --limit 100

Post 03's run.py for a label file with fields (fields.py): the running
server's slot is warmed with the fields prompt (00-setup's warm, saved
under the dataset's name), each message gets one request whose grammar
writes the code and one letter per field, and its line holds run.py's
fields for the code plus "fields" (key -> the option, its confidence
renormalized over the field's letters, the distribution, the off-label
mass) and "gold_fields" (key -> the right option, where the message set
says it). Where the right options come from:

- a split of the dataset: every in-scope message says yes to the field with
  an out_of_scope option (scope "bank", "in"), an out-of-scope message of
  CLINC150 says no; other fields have no right option there;
- --set offtopic: message_sets.py's off-topic set (CLINC150 messages no bank
  is asked): scope "other", no intent of the dataset;
- --set requester-calib / requester-test: datasets/banking77-requester.jsonl's
  halves (its "requester" labels, written by a helper before any run);
- --set FILE: a committed message set (gate/adversarial/...).

--one-per-field asks the same messages one field at a time instead (a
request for the code, then one per field, each with a grammar of its own
letters, under the same cached system prompt): the other way to get
several decisions, for comparing time and answers. Lines go to
03-where-confidence-comes-from/results/<dataset>[-perfield]-<split or set>[-sample<N>-seed<S>].jsonl,
resumable like every run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from batch import RunStopped, base_record, pick_messages, run_messages, sample_of
from confidence import NoConfidence
from decision import CodeReply
from fields import FieldsPrompt, fields_prompt
from fields_readout import FieldsAnswer, FieldsReply, read_fields
from labels import Message
from llama_http import Client, ServerError, exit_on_server_errors
from logprob_format import ServerUnfit
from message_sets import OFFTOPIC, offtopic_messages, set_messages
from registry import DATASETS, add_dataset_argument
from results_record import ResultsLine
from running_server import warm_running
from saved_answers import OWN_RESULTS
from typed_lines import answer_fields
from typed_request import TOP_LOGPROBS, probe, request_settings, typed_messages

REQUESTER_SET = series.ROOT / "datasets" / "banking77-requester.jsonl"


def answer_pattern_ok(content: str, fprompt: FieldsPrompt) -> bool:
    """Whether a reply is a code of the table and one allowed letter per field, each after a hyphen."""
    text = content.strip()
    return (text[:3] in fprompt.prompt.codes and len(text) == 3 + 2 * len(fprompt.fields)
            and text[3::2] == "-" * len(fprompt.fields)
            and all(letter in field.letters for letter, field in zip(text[4::2], fprompt.fields)))


def ask_fields(client: Client, fprompt: FieldsPrompt, message: str, top_logprobs: int = TOP_LOGPROBS) -> FieldsReply:
    """One typed request for the code and every field (greedy, the fields grammar, top_logprobs): at most
    2 + fields tokens ('C', '-F', '-A', ...), then once more with room for 3 + 2 x fields (every hyphen a token
    of its own) when the reply was cut short, as post 02's ask_code retries. Raises what llama_http raises when
    no answer came back."""
    prompt = fprompt.prompt
    wall_ms, n = 0.0, len(fprompt.fields)
    for attempt, max_tokens in enumerate((2 + n, 3 + 2 * n)):
        try:
            reply = client.chat(typed_messages(prompt, message), **request_settings(prompt, True, top_logprobs, max_tokens))
        except ServerError as error:
            status = "too_long" if "context" in error.message.lower() else "error"
            return FieldsReply(status, "", None, {}, wall_ms, attempt > 0, error.message)
        wall_ms += reply.wall_ms
        choice = reply.body["choices"][0]
        content = choice["message"].get("content") or ""
        if answer_pattern_ok(content, fprompt):
            return FieldsReply("ok", content, reply.body, reply.body.get("timings", {}), wall_ms, attempt > 0)
        if choice.get("finish_reason") != "length":
            break
    return FieldsReply("invalid", content, reply.body, reply.body.get("timings", {}), wall_ms, attempt > 0)


def gold_code_of(message: Message, fprompt: FieldsPrompt) -> str:
    """The message's right code in the fields prompt; for a message of no listed intent (out of scope, off topic,
    hostile) the dataset's out-of-scope code that a field replaces (K-A), else message_sets' I-A: never answered."""
    intent = fprompt.prompt.by_intent.get(message.intent)
    return intent.code if intent else (min(fprompt.dropped) if fprompt.dropped else "I-A")


def read_reply(reply: FieldsReply, fprompt: FieldsPrompt, asked: int) -> tuple[FieldsReply, FieldsAnswer | None]:
    """(the reply, its FieldsAnswer) for a reply with an answer; a reply whose logprobs give no confidence becomes
    status "error" with the reason, and no answer."""
    if reply.status != "ok":
        return reply, None
    try:
        return reply, read_fields(reply.response, fprompt, asked)
    except (NoConfidence, ValueError) as problem:
        return replace(reply, status="error", error=str(problem)), None


def fields_line(reply: FieldsReply, answer: FieldsAnswer | None, message: Message, fprompt: FieldsPrompt, model: str,
                settings: dict, gold_fields: dict[str, str], asked: int) -> dict:
    """The results line of one message: run.py's fields of the code (post 02's base_record, post 03's
    answer_fields), "fields" (None without an answer) and "gold_fields"."""
    status, error = reply.status, reply.error
    code = answer.code.code if answer else None
    gold = gold_code_of(message, fprompt)
    known = replace(message, intent=fprompt.prompt.codes[gold].intent) if gold in fprompt.prompt.codes else \
        replace(message, intent=next(iter(fprompt.prompt.by_intent)))
    code_reply = CodeReply(status, code, reply.content, reply.retried, reply.response, reply.timings, reply.wall_ms,
                           error, asked)
    line = {**base_record(known, code_reply, fprompt.prompt, model, settings), **answer_fields(answer.code if answer else None)}
    line |= {"gold_intent": message.intent, "gold_code": gold, "correct": code is not None and code == gold,
             "right_group": code is not None and code[0] == gold[0]}
    line["fields"] = {key: {"option": fa.option, "confidence": fa.confidence, "distribution": fa.step.distribution,
                            "off_label": fa.step.off_label_mass} for key, fa in answer.fields.items()} if answer else None
    line["gold_fields"] = gold_fields
    return line


def gold_fields_of(message: Message, fprompt: FieldsPrompt, source: str, labels: dict[str, dict]) -> dict[str, str]:
    """The right option of each field the message set says something about (module docstring)."""
    gold = dict(labels.get(message.id, {}))
    for field in fprompt.fields:
        if field.out_of_scope and field.key not in gold:
            outside = source == OFFTOPIC or message.intent not in fprompt.prompt.by_intent
            inside = next(option.id for option in field.options if option.id != field.out_of_scope)
            if source != "set" or outside:
                gold[field.key] = field.out_of_scope if outside else inside
    return gold


def ask_live_fields(client: Client, fprompt: FieldsPrompt, message: str, model: str) -> ResultsLine:
    """The service's request for a dataset with fields: one typed request for the code and every field
    (ask_fields), read as a run reads it, into a results line with no right answer (gold_code None, correct
    False, no "gold_fields") and every field's answer in extra["fields"]. Raises what llama_http raises when no
    answer came back."""
    reply, answer = read_reply(ask_fields(client, fprompt, message), fprompt, TOP_LOGPROBS)
    record = fields_line(reply, answer, Message("live", message, None), fprompt, model, {}, {}, TOP_LOGPROBS)
    line = ResultsLine.from_json(record | {"gold_intent": "live"}, "the live fields answer")  # no right one
    return replace(line, gold_intent=None, gold_code=None, correct=False, right_group=False,
                   extra={"fields": line.extra.get("fields")})


def requester_half(split: str) -> tuple[list[Message], dict[str, dict]]:
    """The messages of one half of datasets/banking77-requester.jsonl and their right options (requester, and
    scope "bank": every one is a request to the bank)."""
    rows = [json.loads(line) for line in REQUESTER_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = [row for row in rows if row["split"] == split]
    return ([Message(row["id"], row["text"], row["intent"]) for row in chosen],
            {row["id"]: {"requester": row["requester"]} for row in chosen})


def fields_run_path(dataset: str, name: str, sample: tuple[int, int] | None, per_field: bool) -> Path:
    tail = f"-sample{sample[0]}-seed{sample[1]}" if sample else ""
    return OWN_RESULTS / f"{dataset}{'-perfield' if per_field else ''}-{name}{tail}.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser, "banking77fields")
    parser.add_argument("--split", choices=("calib", "test"), help="a split of the dataset")
    parser.add_argument("--set", help="offtopic, oos-test, requester-calib, requester-test, or a message set FILE")
    parser.add_argument("--limit", type=int, metavar="N", help="the first N messages only")
    parser.add_argument("--sample", type=int, metavar="N", help="a seeded sample of N messages of the split")
    parser.add_argument("--seed", type=int, metavar="S", help="the sample's seed (default 0)")
    parser.add_argument("--one-per-field", action="store_true",
                        help="one request for the code and one per field, each with its own grammar (to compare)")
    args = parser.parse_args()
    args.spread = False
    if (args.split is None) == (args.set is None):
        parser.error("give --split or --set, one of the two")
    fprompt = fields_prompt(args.dataset)
    labels: dict[str, dict] = {}
    if args.split:
        messages, name, source = pick_messages(DATASETS[args.dataset].load_split(args.split), args, parser), args.split, "split"
    elif args.set == OFFTOPIC:
        messages, name, source = offtopic_messages(), OFFTOPIC, OFFTOPIC
    elif args.set == "oos-test":
        from clinc150 import load_rows
        messages, name, source = [Message(f"oostest-{m.id}", m.text, m.intent) for m in load_rows("oos_test")], \
            "oos-test", OFFTOPIC
        messages = pick_messages(messages, args, parser)
    elif args.set in ("requester-calib", "requester-test"):
        (messages, labels), name, source = requester_half(args.set.split("-")[1]), args.set, "requester"
    else:
        path = Path(args.set)
        if not path.is_file():
            parser.error(f"no message set at {path}: offtopic, requester-calib, requester-test or a file")
        messages, name, source = set_messages(path), path.stem.split("-", 1)[-1], "set"
    if not args.split:
        messages = messages[:args.limit]
    out = fields_run_path(args.dataset, name, sample_of(args) if args.split or args.set == "oos-test" else None,
                   args.one_per_field)
    client = Client()
    warm_running(client, args.dataset, fprompt.prompt)  # the fields prompt's slot, saved under the dataset's name
    model = client.model_info()["model"]
    probe(client, fprompt.prompt)
    settings = request_settings(fprompt.prompt, True, TOP_LOGPROBS, 2 + len(fprompt.fields))
    if args.one_per_field:
        from fields_separately import ask_separately

        def ask(text: str):
            return ask_separately(client, fprompt, text)
    else:
        def ask(text: str):
            return read_reply(ask_fields(client, fprompt, text), fprompt, TOP_LOGPROBS)

    def make_record(message: Message) -> dict:
        reply, answer = ask(message.text)
        return fields_line(reply, answer, message, fprompt, model, settings,
                           gold_fields_of(message, fprompt, source, labels), TOP_LOGPROBS)
    started = time.monotonic()
    run_messages(messages, out, make_record, f"{args.dataset} {name}, {len(fprompt.fields)} fields"
                 + (", one request per field" if args.one_per_field else ""))
    print(f"done in {time.monotonic() - started:.0f} s: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(RunStopped, ServerUnfit)))
