"""03's json_output.py: the schema check, the regex, the retry and the table's rows.

The checks of a reply are run on hand-made replies; the retry and every way
run against the real test server (0.5B), where only the shape of what comes
back is checked, never the model's answer.
"""
import json

import pytest
from banking77 import load_labels, load_split
from json_output import (BREAKS_THE_REGEX, CODE, RETRY_REQUEST, WAYS, Exchange, JsonAnswer, WayRow, ask_every_way,
                         ask_with_retry, cut_first_object, intent_schema, json_prompt, judge, print_confidences,
                         print_table, response_format, retry_messages, validate, way_row)
from llama_http import Client, ServerUnreachable
from prompt import build_prompt

NAMES = [intent.name for intent in load_labels().intents]
VALID = '{"intent": "card_arrival", "confidence": 0.8}'


def test_a_valid_reply_passes_and_comes_back_as_the_object():
    assert validate(VALID, NAMES) == ({"intent": "card_arrival", "confidence": 0.8}, None)
    assert validate("\n " + VALID + "\n", NAMES)[1] is None  # whitespace around it is still JSON


def test_a_label_that_is_not_one_of_the_intents_is_refused_by_name():
    value, error = validate('{"intent": "cards", "confidence": 0.8}', NAMES)
    assert value is None
    assert error == "\"intent\" must be one of the intent names in the list, and 'cards' is not one"


def test_a_code_instead_of_a_name_is_a_wrong_label():
    assert "'A-A' is not one" in validate('{"intent": "A-A", "confidence": 0.8}', NAMES)[1]


def test_a_missing_field_is_named():
    assert validate('{"intent": "card_arrival"}', NAMES) == (None, 'the field "confidence" is missing')
    assert validate('{"confidence": 0.8}', NAMES) == (None, 'the field "intent" is missing')


def test_text_that_is_not_json_gets_jsons_own_message_and_position():
    assert validate("Here is the answer: card_arrival", NAMES) == (
        None, "it is not valid JSON (Expecting value at position 0)")


def test_fenced_json_is_not_json():
    # The most common wrapping: json.loads stops at the first backtick.
    fenced = "```json\n" + VALID + "\n```"
    assert validate(fenced, NAMES) == (None, "it is not valid JSON (Expecting value at position 0)")


@pytest.mark.parametrize("reply, error", [
    ('["card_arrival", 0.8]', "it must be one JSON object, not a list"),
    ('{"intent": "card_arrival", "confidence": 1.5}', '"confidence" must be a number from 0 to 1, not 1.5'),
    ('{"intent": "card_arrival", "confidence": "high"}', "\"confidence\" must be a number from 0 to 1, not 'high'"),
    ('{"intent": "card_arrival", "confidence": true}', '"confidence" must be a number from 0 to 1, not True'),
    ('{"intent": ["card_arrival"], "confidence": 0.8}',
     "\"intent\" must be one of the intent names in the list, and ['card_arrival'] is not one"),
])
def test_other_ways_to_fail_validation_each_have_a_reason(reply, error):
    assert validate(reply, NAMES) == (None, error)


def test_the_regex_recovers_a_flat_object_from_a_fence_or_from_sentences():
    assert cut_first_object("```json\n" + VALID + "\n```") == VALID
    assert cut_first_object("Sure! " + VALID + " I chose it because...") == VALID
    assert cut_first_object("card_arrival, 0.8") is None


def test_the_regex_cuts_a_nested_object_at_the_inner_brace():
    piece = cut_first_object(BREAKS_THE_REGEX)
    assert piece == '{"intent": "card_arrival", "details": {"ordered": "two weeks ago"}'
    assert validate(piece, NAMES)[1].startswith("it is not valid JSON (Expecting ',' delimiter")


def test_judge_counts_parsed_label_and_confidence_separately():
    exchange = Exchange(content="```\n" + '{"intent": "cards", "confidence": 0.9}' + "\n```", tokens=20, wall_ms=1.0)
    whole = judge(exchange, NAMES)
    assert (whole.parsed, whole.intent, whole.confidence) == (False, None, None)
    cut = judge(exchange, NAMES, regex=True)
    # parsed after the cut, the label is not an intent, the confidence is a usable number
    assert (cut.parsed, cut.intent, cut.confidence) == (True, None, 0.9)
    assert cut.error.startswith('"intent" must be one of')
    assert judge(Exchange("no braces at all", 3, 1.0), NAMES, regex=True).error == "there is no {...} in it"


def test_the_schema_makes_the_label_an_enum_of_the_77_intent_names():
    schema = intent_schema(NAMES)
    assert schema["properties"]["intent"]["enum"] == NAMES and len(NAMES) == 77
    assert schema["required"] == ["intent", "confidence"]
    assert response_format(NAMES) == {"type": "json_schema", "json_schema": {"name": "typed_answer", "schema": schema}}


def test_the_json_prompt_has_the_code_prompts_list_and_the_firm_one_differs_only_in_its_last_line():
    labels = load_labels()
    code, nice, firm = build_prompt(labels).system, json_prompt(labels).system, json_prompt(labels, firm=True).system
    body = code.split("\n")[2:-1]  # the list: after the first paragraph and its blank line, before the last line
    assert nice.split("\n")[2:-1] == body and firm.split("\n")[2:-1] == body
    assert nice.split("\n")[:-1] == firm.split("\n")[:-1] and nice != firm
    assert firm.endswith("no Markdown, no code block.")


def test_a_retry_sends_the_reply_back_with_the_reason():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    sent = retry_messages(messages, "not json", "it is not valid JSON (Expecting value at position 0)")
    assert sent[:2] == messages
    assert sent[2] == {"role": "assistant", "content": "not json"}
    assert sent[3] == {"role": "user", "content": RETRY_REQUEST.format(
        error="it is not valid JSON (Expecting value at position 0)")}
    assert sent[3]["content"].startswith("Your reply could not be used: it is not valid JSON (Expecting value")


def test_a_first_reply_that_passes_is_not_sent_again():
    # Nothing listens on port 9: a request would raise ServerUnreachable.
    nowhere = Client("http://127.0.0.1:9")
    answer = ask_with_retry(nowhere, [], NAMES, first=Exchange(VALID, tokens=15, wall_ms=100.0))
    assert (answer.exchange.attempts, answer.intent, answer.error) == (1, "card_arrival", None)
    with pytest.raises(ServerUnreachable):
        ask_with_retry(nowhere, [], NAMES, first=Exchange("not json", tokens=3, wall_ms=100.0))


class RecordingClient(Client):
    """A real client that also keeps the messages of every chat request it sends."""

    def __init__(self, url):
        super().__init__(url)
        self.sent = []

    def chat(self, messages, **settings):
        self.sent.append(messages)
        return super().chat(messages, **settings)


def test_a_reply_that_fails_goes_back_once_to_the_real_server_with_the_reason(client):
    # A small prompt, so the test server processes little; the first reply is made up and fails validation.
    names = ["card_arrival", "card_linking"]
    messages = [{"role": "system", "content": 'Reply with a JSON object: "intent" (card_arrival or card_linking) and '
                                              '"confidence" (a number from 0 to 1).'},
                {"role": "user", "content": "My card has not come yet."}]
    first = Exchange('{"intent": "cards", "confidence": 0.9}', tokens=12, wall_ms=50.0)
    recording = RecordingClient(client.url)
    answer = ask_with_retry(recording, messages, names, first=first, max_tokens=60)
    reason = "\"intent\" must be one of the intent names in the list, and 'cards' is not one"
    assert recording.sent == [retry_messages(messages, first.content, reason)]  # one request: the retry
    assert answer.exchange.attempts == 2
    assert answer.exchange.tokens > first.tokens and answer.exchange.wall_ms > first.wall_ms
    # What the model made of the reason is its business; the answer is judged on the second reply.
    assert answer == judge(answer.exchange, names)


def test_a_ways_row_counts_parsed_valid_and_correct_replies_and_averages_tokens_and_time():
    answers = [JsonAnswer(Exchange("a", tokens=10, wall_ms=100.0), True, "card_arrival", 0.9, None),
               JsonAnswer(Exchange("b", tokens=20, wall_ms=700.0), True, None, 0.5, "not an intent"),
               JsonAnswer(Exchange("c", tokens=30, wall_ms=200.0), False, None, None, "not JSON")]
    # parsed 2, valid 1 (the first), correct 1; tokens (10 + 20 + 30) / 3 = 20; median of 100, 700, 200 ms = 200 (mean 333)
    assert way_row(answers, ["card_arrival", "card_arrival", "card_linking"]) == WayRow(2, 1, 1, 20.0, 200.0)


def test_every_way_on_the_real_server_fills_the_table_and_the_schema_always_gives_a_name(client):
    labels = load_labels()
    messages = load_split("calib", labels)[:2]
    gold = [m.intent for m in messages]
    prompts = (json_prompt(labels), json_prompt(labels, firm=True), build_prompt(labels))
    rows = ask_every_way(client, messages, NAMES, prompts, max_tokens=60)
    assert list(rows) == [*WAYS, CODE] and all(len(answers) == 2 for answers in rows.values())
    schema = way_row(rows["JSON Schema (enum)"], gold)
    assert (schema.parsed, schema.valid) == (2, 2)  # the grammar from the schema: always parsed, always one of the 77
    assert way_row(rows[CODE], gold).tokens == 2.0  # a code is 2 tokens
    # the regex way judges the replies asked nicely; validate-and-retry sends a reply back at most once
    assert rows["brace-cutting regex"] == [judge(a.exchange, NAMES, regex=True) for a in rows["asked nicely"]]
    assert all(a.exchange.attempts in (1, 2) for a in rows["validate and retry"])
    # the script's printout is made from these rows: it must take them as they come
    print_table(rows, gold)
    print_confidences(rows["JSON Schema (enum)"], rows[CODE], gold)


def test_json_output_refuses_a_limit_below_one_in_one_line(run_script):
    result = run_script("03-where-confidence-comes-from/beyond/json_output.py", "--limit", "0")
    assert result.returncode == 2 and "--limit must be 1 or more" in result.stderr


def test_validate_agrees_with_json_on_what_parses():
    # Every reply json.loads accepts as an object with both fields gets past the JSON check.
    for text in (VALID, json.dumps({"confidence": 0.1, "intent": "card_linking"}), '{"intent":"card_linking","confidence":0}'):
        assert validate(text, NAMES)[1] is None
