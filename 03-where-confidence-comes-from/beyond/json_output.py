"""Asking for JSON instead of a code: five ways, measured on the same messages, next to the GBNF code (beyond the series).

    python3 03-where-confidence-comes-from/beyond/json_output.py              # the first 30 calibration messages
    python3 03-where-confidence-comes-from/beyond/json_output.py --limit 10

The usual first attempt at a typed answer is "reply with JSON: a label and a
confidence". This script asks for exactly that, with the same list of intents
the code prompt has (02's prompt.py builds both; only the first
paragraph and the last line differ), and measures each fix in turn:

1. asked nicely: the reply goes straight into json.loads;
2. the brace-cutting regex: the first {...} of each of those replies is cut
   out and parsed (a nested object breaks it: shown);
3. a firm instruction: one more sentence, "the JSON object and nothing else";
4. a JSON Schema in response_format: llama-server turns it into a grammar,
   and the label is an enum of the 77 intent names, so nothing else can be
   written;
5. validate and retry: each firm reply is checked in code (valid JSON, one of
   the 77 names, a confidence from 0 to 1); one that fails is sent back once
   with the reason. Its first attempt is the firm reply itself (the same
   request at temperature 0), so only the retries are new requests.

Then the series' way: the GBNF code of post 02 (2 tokens), with post 03's
confidence read from top_logprobs. For each way: how many replies json.loads
accepted, how many named one of the 77 intents, how many were right, tokens
per reply and the median time per decision. Last, the model's own
"confidence" against the logprob confidence on the same messages.

The calibration split is listed round-robin over the intents, so its first N
messages cover N different intents (N <= 77). Everything runs at temperature
0. Each system prompt is new to the server once (the JSON prompt, then the
code prompt again): the first request of a way can take minutes on a CPU,
which is why the table gives the median time.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import series  # puts the post folders on sys.path
from banking77 import load_labels, load_split
from compare import share_of
from typed_lines import read_answer
from decision import ask_code
from labels import Message
from llama_http import Client, exit_on_server_errors
from prompt import CLOSING, Prompt, build_prompt
from typed_request import TOP_LOGPROBS, probe, typed_messages

DEFAULT_LIMIT = 30
# Room for a chatty reply: an object with an introduction and an explanation around it.
MAX_TOKENS = 200
LABEL = "intent"
CONFIDENCE = "confidence"

JSON_INSTRUCTIONS = """\
You sort the messages that customers send to their bank. Each message gets \
exactly one intent from the list below. Every entry of the list starts with a \
code, then the name of the intent and what it covers: the name is what you \
give back."""
NICE_CLOSING = (f'Reply with a JSON object with two fields: "{LABEL}", the name of the intent as written in '
                f'the list (for example "card_arrival"), and "{CONFIDENCE}", a number from 0 to 1.')
FIRM_LINE = ("Your whole reply must be that JSON object and nothing else: no sentence before or after it, "
             "no Markdown, no code block.")
RETRY_REQUEST = "Your reply could not be used: {error}. Send the JSON object again, alone."
# A reply the brace-cutting regex gets wrong: the non-greedy {.*?} stops at the first closing brace.
BREAKS_THE_REGEX = '{"intent": "card_arrival", "details": {"ordered": "two weeks ago"}, "confidence": 0.9}'
FIRST_OBJECT = re.compile(r"\{.*?\}", re.S)
SHOWN_CHARS = 100

WAYS = ("asked nicely", "brace-cutting regex", "firm instruction", "JSON Schema (enum)", "validate and retry")
CODE = "GBNF code (post 02)"


@dataclass(frozen=True)
class Exchange:
    """What the server sent back for one decision, over all its requests.

    content: the text of the last reply. tokens: completion tokens over all
    requests. wall_ms: client time over all requests, in ms. attempts:
    requests sent (2 when a retry was needed). cut: the last reply stopped at
    the token limit. prompt_n, prompt_ms: prompt tokens the server processed
    for the first request and how long that took (ms): large when the system
    prompt was new to it.
    """

    content: str
    tokens: int
    wall_ms: float
    attempts: int = 1
    cut: bool = False
    prompt_n: int = 0
    prompt_ms: float = 0.0


@dataclass(frozen=True)
class JsonAnswer:
    """One decision asked for as JSON (or as a code, for the table's last row), and what a program makes of it.

    parsed: json.loads accepted the reply (for the regex way: the part cut
    out of it). intent: the label when it is one of the intent names, else
    None. confidence: the model's own number when it is one in [0, 1] (for
    the code: post 03's logprob confidence), else None. error: why validate()
    refused the reply, None when it passed.
    """

    exchange: Exchange
    parsed: bool
    intent: str | None
    confidence: float | None
    error: str | None


def json_prompt(labels, firm: bool = False) -> Prompt:
    """The system prompt that asks for JSON: the code prompt's list of intents, JSON instructions around it.

    labels: a LabelSet (banking77.load_labels()). firm: end with FIRM_LINE.
    Only the last line differs between the two, so the server processes the
    long list once for both.
    """
    closing = f"{NICE_CLOSING} {FIRM_LINE}" if firm else NICE_CLOSING
    code_list = build_prompt(labels, instructions=JSON_INSTRUCTIONS)
    # post 02's prompt ends with its CLOSING line: that line is swapped, the list before it is kept as built
    return replace(code_list, system=code_list.system.removesuffix(CLOSING) + closing)


def intent_schema(names: list[str]) -> dict:
    """The JSON Schema of an answer: {"intent": one of names, "confidence": a number}, both required.

    llama-server compiles it into a grammar (its json-schema-to-grammar), so
    the enum makes any other label impossible to write. The schema does not
    bound the number to [0, 1]; validate() checks that in code.
    """
    return {
        "type": "object",
        "properties": {LABEL: {"type": "string", "enum": list(names)}, CONFIDENCE: {"type": "number"}},
        "required": [LABEL, CONFIDENCE],
        "additionalProperties": False,
    }


def response_format(names: list[str]) -> dict:
    """The response_format setting of /v1/chat/completions that constrains the reply to intent_schema(names)."""
    return {"type": "json_schema", "json_schema": {"name": "typed_answer", "schema": intent_schema(names)}}


def is_unit_number(value) -> bool:
    """True for an int or float in [0, 1]; False for anything else, true and false included."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1


def validate(text: str, names: list[str]) -> tuple[dict | None, str | None]:
    """Check a reply as a program would use it: (the object, None) or (None, the reason in one sentence).

    text: the reply exactly as the model wrote it (json.loads allows
    whitespace around it, nothing else). names: the allowed intent names.
    The reason is what the retry sends back: not valid JSON (json's message
    and position), not an object, a field missing, a label that is not one
    of the names, or a confidence that is not a number from 0 to 1.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"it is not valid JSON ({error.msg} at position {error.pos})"
    if not isinstance(value, dict):
        return None, f"it must be one JSON object, not a {type(value).__name__}"
    for field in (LABEL, CONFIDENCE):
        if field not in value:
            return None, f'the field "{field}" is missing'
    if value[LABEL] not in names:  # a list, not a set: a label may be a list or an object, which cannot be hashed
        return None, f'"{LABEL}" must be one of the intent names in the list, and {value[LABEL]!r} is not one'
    if not is_unit_number(value[CONFIDENCE]):
        return None, f'"{CONFIDENCE}" must be a number from 0 to 1, not {value[CONFIDENCE]!r}'
    return value, None


def cut_first_object(text: str) -> str | None:
    """The client-side repair: the text from the first '{' to the first '}' after it, or None.

    Non-greedy, so it recovers a flat object from a code fence or from
    sentences around it, and cuts a nested object (or the first of two
    candidates) in the wrong place.
    """
    match = FIRST_OBJECT.search(text)
    return match.group(0) if match else None


def judge(exchange: Exchange, names: list[str], regex: bool = False) -> JsonAnswer:
    """What a program makes of a reply: parsed or not, its label if valid, its confidence if a number in [0, 1].

    regex: parse cut_first_object(reply) instead of the whole reply.
    """
    text = cut_first_object(exchange.content) if regex else exchange.content
    if text is None:
        return JsonAnswer(exchange, False, None, None, "there is no {...} in it")
    _, error = validate(text, names)
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError:
        return JsonAnswer(exchange, False, None, None, error)
    fields = loaded if isinstance(loaded, dict) else {}
    intent = fields.get(LABEL) if fields.get(LABEL) in names else None
    confidence = fields.get(CONFIDENCE) if is_unit_number(fields.get(CONFIDENCE)) else None
    return JsonAnswer(exchange, True, intent, confidence, error)


def send(client: Client, messages: list[dict], max_tokens: int = MAX_TOKENS, **settings) -> Exchange:
    """One chat request at temperature 0 and what came back. settings: e.g. response_format."""
    reply = client.chat(messages, temperature=0.0, max_tokens=max_tokens, **settings)
    choice = reply.body["choices"][0]
    timings = reply.body.get("timings", {})
    return Exchange(content=choice["message"].get("content") or "",
                    tokens=reply.body.get("usage", {}).get("completion_tokens", 0), wall_ms=reply.wall_ms,
                    cut=choice.get("finish_reason") == "length",
                    prompt_n=timings.get("prompt_n", 0), prompt_ms=timings.get("prompt_ms", 0.0))


def retry_messages(messages: list[dict], reply: str, error: str) -> list[dict]:
    """The conversation of a retry: the first request, the model's reply, and a user turn naming what was wrong."""
    return [*messages, {"role": "assistant", "content": reply},
            {"role": "user", "content": RETRY_REQUEST.format(error=error)}]


def ask_with_retry(client: Client, messages: list[dict], names: list[str], first: Exchange | None = None,
                   max_tokens: int = MAX_TOKENS) -> JsonAnswer:
    """Ask, validate, and when the reply fails, send it back once with the reason; judge the last reply.

    messages: the chat messages of the first request. first: a first reply
    already in hand (main() passes the firm way's), so it is not asked again;
    None sends it. Tokens and time add up both requests.
    """
    first = first or send(client, messages, max_tokens)
    _, error = validate(first.content, names)
    if error is None:
        return judge(first, names)
    second = send(client, retry_messages(messages, first.content, error), max_tokens)
    both = replace(second, tokens=first.tokens + second.tokens, wall_ms=first.wall_ms + second.wall_ms,
                   attempts=2, prompt_n=first.prompt_n, prompt_ms=first.prompt_ms)
    return judge(both, names)


def code_answer(client: Client, prompt: Prompt, text: str) -> JsonAnswer:
    """The series' way, as a row of the same table: the GBNF code, its intent and post 03's logprob confidence."""
    reply, answer = read_answer(ask_code(client, prompt, text, top_logprobs=TOP_LOGPROBS), prompt)
    body = reply.response or {}
    timings = body.get("timings", {})
    exchange = Exchange(content=reply.content, tokens=body.get("usage", {}).get("completion_tokens", 0),
                        wall_ms=reply.wall_ms, attempts=2 if reply.retried else 1,
                        prompt_n=timings.get("prompt_n", 0), prompt_ms=timings.get("prompt_ms", 0.0))
    return JsonAnswer(exchange, reply.status == "ok", answer.intent if answer else None,
                      answer.confidence if answer else None, None if answer else reply.status)


def why_not_parsed(text: str) -> str:
    """How a reply that json.loads refused is wrapped: a code fence, text around an object, or no object."""
    if "```" in text:
        return "in a code fence"
    return "with text around the object" if cut_first_object(text) else "without any {...}"


def shown_text(text: str) -> str:
    """A reply as one line: its repr, cut at SHOWN_CHARS."""
    text = repr(text)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


@dataclass(frozen=True)
class WayRow:
    """One way's line of the table, over the same messages.

    parsed, valid, correct: replies json.loads accepted, that named one of the
    intents, that named the message's own intent (counts of messages).
    tokens: mean completion tokens per reply. ms: median time per decision.
    """

    parsed: int
    valid: int
    correct: int
    tokens: float
    ms: float


def way_row(answers: list[JsonAnswer], gold: list[str]) -> WayRow:
    """The table's line for one way's answers to the messages whose intents are `gold` (see WayRow)."""
    return WayRow(parsed=sum(a.parsed for a in answers), valid=sum(a.intent is not None for a in answers),
                  correct=sum(a.intent == g for a, g in zip(answers, gold)),
                  tokens=statistics.fmean(a.exchange.tokens for a in answers),
                  ms=statistics.median(a.exchange.wall_ms for a in answers))


def print_table(rows: dict[str, list[JsonAnswer]], gold: list[str]) -> None:
    """One line per way: parsed, valid label, correct (count and %), mean tokens per reply, median ms per decision."""
    n = len(gold)
    print(f"{'way':<24} {'parsed':>12} {'valid label':>12} {'correct':>12} {'tokens/reply':>13} {'ms/decision':>12}")
    for way, answers in rows.items():
        row = way_row(answers, gold)
        counts = (row.parsed, row.valid, row.correct)
        print(f"{way:<24}" + "".join(f" {count:5d} {share_of(count, n)}" for count in counts)
              + f" {row.tokens:13.1f} {row.ms:12.0f}")


def print_confidences(json_answers: list[JsonAnswer], code_answers: list[JsonAnswer], gold: list[str]) -> None:
    """The model's own number (schema replies) next to the logprob confidence of the code, on the same messages.

    Each confidence is set against its own answer's outcome (the JSON label's
    for the first column, the code's for the second).
    """
    cells = {}
    for name, answers in (("self-reported", json_answers), ("logprob (code)", code_answers)):
        pairs = [(a.confidence, a.intent == g) for a, g in zip(answers, gold) if a.confidence is not None]
        right = [c for c, ok in pairs if ok]
        wrong = [c for c, ok in pairs if not ok]
        cells[name] = {
            "answers with a confidence": f"{len(pairs)}",
            "of them correct": f"{len(right)} ({100 * len(right) / len(pairs):.1f}%)" if pairs else "-",
            "mean confidence": f"{statistics.fmean(c for c, _ in pairs):.3f}" if pairs else "-",
            "mean when right": f"{statistics.fmean(right):.3f}" if right else "-",
            "mean when wrong": f"{statistics.fmean(wrong):.3f}" if wrong else "-",
            "distinct values": f"{len({round(c, 3) for c, _ in pairs})}",
        }
    print(f"{'':<26} {'self-reported':>14} {'logprob (code)':>15}")
    for row in cells["self-reported"]:
        print(f"{row:<26} {cells['self-reported'][row]:>14} {cells['logprob (code)'][row]:>15}")
    values: dict[float, list[bool]] = {}
    for answer, g in zip(json_answers, gold):
        if answer.confidence is not None:
            values.setdefault(answer.confidence, []).append(answer.intent == g)
    print("self-reported values: " + ", ".join(f"{value:g} ({len(oks)} answers, {sum(oks)} right)"
                                               for value, oks in sorted(values.items())))


def ask_every_way(client: Client, messages: list[Message], names: list[str], prompts: tuple[Prompt, Prompt, Prompt],
                  max_tokens: int = MAX_TOKENS) -> dict[str, list[JsonAnswer]]:
    """Each message asked every way: WAYS in order, then CODE -> one JsonAnswer per message.

    prompts: the JSON prompt, its firm variant and the code prompt. The
    regex way reuses the replies asked nicely, and validate-and-retry starts
    from the firm replies, so only its retries are new requests. Prints one
    progress line per way that sends requests.
    """
    nice, firm, code_prompt = prompts

    def each(way: str, ask) -> list[JsonAnswer]:
        answers = [ask(m) for m in messages]
        first = answers[0].exchange
        print(f"  {way:<22} {sum(a.exchange.wall_ms for a in answers) / 1000:6.0f} s; its first request processed "
              f"{first.prompt_n:,} prompt tokens in {first.prompt_ms / 1000:.1f} s", flush=True)
        return answers

    schema = response_format(names)
    nicely = each(WAYS[0], lambda m: judge(send(client, typed_messages(nice, m.text), max_tokens), names))
    rows = {WAYS[0]: nicely, WAYS[1]: [judge(a.exchange, names, regex=True) for a in nicely]}
    rows[WAYS[3]] = each(WAYS[3], lambda m: judge(
        send(client, typed_messages(nice, m.text), max_tokens, response_format=schema), names))
    rows[WAYS[2]] = each(WAYS[2], lambda m: judge(send(client, typed_messages(firm, m.text), max_tokens), names))
    rows[WAYS[4]] = [ask_with_retry(client, typed_messages(firm, m.text), names, answer.exchange, max_tokens)
                     for m, answer in zip(messages, rows[WAYS[2]])]
    code = each(CODE, lambda m: code_answer(client, code_prompt, m.text))
    return {**{way: rows[way] for way in WAYS}, CODE: code}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                        help=f"the first N calibration messages, one intent each up to 77 (default: {DEFAULT_LIMIT})")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                        help=f"longest JSON reply, in tokens (default: {MAX_TOKENS})")
    args = parser.parse_args()
    if args.limit < 1:
        parser.error("--limit must be 1 or more")
    if args.max_tokens < 20:
        parser.error("--max-tokens must be 20 or more: a bare JSON answer takes about 15")
    labels = load_labels()
    messages: list[Message] = load_split("calib", labels)[: args.limit]
    names = [intent.name for intent in labels.intents]
    gold = [m.intent for m in messages]
    nice, firm, code_prompt = json_prompt(labels), json_prompt(labels, firm=True), build_prompt(labels)
    client = Client()
    info = client.model_info()
    probe(client, code_prompt)
    print(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
    print(f"{len(messages)} calibration messages ({len(set(gold))} intents), temperature 0, "
          f"at most {args.max_tokens} tokens per JSON reply")

    rows = ask_every_way(client, messages, names, (nice, firm, code_prompt), args.max_tokens)
    nicely, code = rows[WAYS[0]], rows[CODE]

    print()
    print_table(rows, gold)
    retried = [a for a in rows[WAYS[4]] if a.exchange.attempts == 2]
    print(f"\nvalidate and retry: {len(retried)} of the {len(messages)} firm replies failed validation and went back once"
          + (f"; {sum(a.error is None for a in retried)} of them passed the second time" if retried else "")
          + " (its first attempts are the firm replies)")
    refused = [a.exchange.content for a in nicely if not a.parsed]
    if refused:
        kinds = Counter(why_not_parsed(text) for text in refused)
        print(f"asked nicely, refused by json.loads: {len(refused)}, "
              + ", ".join(f"{count} {kind}" for kind, count in kinds.most_common()))
    cut = sum(a.exchange.cut for way in WAYS for a in rows[way])
    if cut:
        print(f"JSON replies cut at the {args.max_tokens}-token limit: {cut}")
    print("\nthe first message's reply:")
    for way in (WAYS[0], WAYS[2], WAYS[3], CODE):
        print(f"  {way:<22} {shown_text(rows[way][0].exchange.content)}")
    piece = cut_first_object(BREAKS_THE_REGEX)
    print(f"\na reply that breaks the brace-cutting regex: {BREAKS_THE_REGEX}")
    print(f"  the regex cuts out {piece}")
    print(f"  and validate() says: {validate(piece, names)[1]}")
    lost = sum(a.parsed and not b.parsed for a, b in zip(rows[WAYS[0]], rows[WAYS[1]]))
    print(f"  (of the replies above, the regex lost {lost} that json.loads accepted whole)")

    print(f"\nthe model's own \"{CONFIDENCE}\" (JSON Schema replies) against post 03's logprob confidence "
          f"of the code, same {len(messages)} messages:")
    print_confidences(rows[WAYS[3]], code, gold)
    schema_valid = sum(a.intent is not None for a in rows[WAYS[3]])
    print(f"\nJSON Schema: {share_of(schema_valid, len(messages)).strip()} valid labels in "
          f"{statistics.fmean(a.exchange.tokens for a in rows[WAYS[3]]):.1f} tokens per reply; the GBNF code: "
          f"{share_of(sum(a.intent is not None for a in code), len(messages)).strip()} in "
          f"{statistics.fmean(a.exchange.tokens for a in code):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
