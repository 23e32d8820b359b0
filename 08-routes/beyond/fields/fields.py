"""Several typed decisions from one request: fields declared in the label file, one grammar, a confidence each.

    python3 08-routes/beyond/fields/fields.py banking77fields          # its prompt and grammar
    python3 08-routes/beyond/fields/fields.py banking77fields --save   # written beside its label file

    fieldset = fields_of("banking77fields")                # the label file's "fields", checked
    prompt = fields_prompt("banking77fields")              # post 02's prompt and grammar, with the fields after the code
    answer = read_fields(response, prompt, top_logprobs)   # the code and every field's letter, each renormalized

A typed decision is one value from a fixed set. A help desk asks more than
one question of a message: is it a request to this bank at all, whose card
or account is it about, which intent. The label file may declare fields,
each a key, a question and options (an id and a one-line description):

    "fields": [{"key": "scope", "question": "Is the message a request to this bank?",
                "options": [{"id": "bank", "description": "..."}, {"id": "other", "description": "..."}],
                "safe": "bank", "gates": "all", "out_of_scope": "other"}, ...]

The intent stays the first field of every task: the model writes the
post's code first, then one letter per field, in the order declared, each
after a hyphen: C-F-A-B is code C-F, the first field's option A and the
second's option B (letters in the order of the options). One grammar allows
exactly that, so one request answers every field under the same cached
system prompt.

"safe" names the option (or the list of options) at which the field lets an act through, "gates"
whether it stands before every act ("all") or only before a change or an
irreversible one ("change", harm.py's kinds), fields_route.py applies them.
"out_of_scope" (optional) names the option that means "not one of the
intents": with it the dataset's out-of-scope code (CLINC150's K-A) leaves
the code list, and that field says what the code said (CLINC150 as three
fields: scope, then the domain and the intent within it, the code's two
letters). A field with fewer than two options, two options with one id, an
unknown key in a field or an option id that is not a word are refused in
one line (ValueError).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from dataclasses import dataclass, replace

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from labels import LETTERS, LabelSet
from prompt import Prompt, build_prompt, grammar_of, prompt_examples
from registry import DATASETS

FIELD_KEYS = {"key", "question", "options", "safe", "gates", "out_of_scope"}
GATES = ("all", "change")
OPTION_ID = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Option:
    """One answer a field allows: its id (a lower-case word), a one-line description, its letter in the grammar."""

    id: str
    description: str
    letter: str


@dataclass(frozen=True)
class Field:
    """One question the model answers about every message, besides the intent.

    key: its name ("scope"). question: the question as the prompt asks it.
    options: two or more Options, letters A, B, C... in their order. safe:
    the ids of the options at which it lets an act through (empty: it never
    stops one). gates: "all" (it stands before every act) or "change" (only
    before a change or an irreversible intent). out_of_scope: the id of the
    option that means "none of the intents", or None.
    """

    key: str
    question: str
    options: tuple[Option, ...]
    safe: tuple[str, ...] = ()
    gates: str = "all"
    out_of_scope: str | None = None

    @property
    def letters(self) -> str:
        """The letters the grammar allows for this field, in the options' order."""
        return "".join(option.letter for option in self.options)

    def option(self, letter: str) -> Option:
        """The option of a letter. Raises KeyError for a letter the field does not have."""
        for option in self.options:
            if option.letter == letter:
                return option
        raise KeyError(f"field {self.key!r} has no option {letter!r}")

    def letter_of(self, option_id: str) -> str:
        """The letter of an option id. Raises KeyError for an id the field does not have."""
        for option in self.options:
            if option.id == option_id:
                return option.letter
        raise KeyError(f"field {self.key!r} has no option {option_id!r}")


def parse_field(item: dict, where: str) -> Field:
    """One "fields" entry of a label file as a Field; ValueError in one sentence naming `where` and the problem."""
    if not isinstance(item, dict):
        raise ValueError(f"{where}: a field is an object with key, question and options")
    if unknown := sorted(set(item) - FIELD_KEYS):
        raise ValueError(f"{where}: unknown entry {', '.join(unknown)} (a field has {', '.join(sorted(FIELD_KEYS))})")
    key, question, options = item.get("key"), item.get("question"), item.get("options")
    if not (isinstance(key, str) and OPTION_ID.fullmatch(key)) or key == "intent":
        raise ValueError(f"{where}: the key {key!r} is not a lower-case word other than 'intent'")
    if not (isinstance(question, str) and question.strip()):
        raise ValueError(f"{where}: field {key!r} has no question")
    if not isinstance(options, list) or len(options) < 2:
        count = len(options) if isinstance(options, list) else 0
        raise ValueError(f"{where}: field {key!r} has {count} option{'' if count == 1 else 's'}; a field needs at "
                         "least two to be a decision")
    if len(options) > len(LETTERS):
        raise ValueError(f"{where}: field {key!r} has {len(options)} options; at most {len(LETTERS)}")
    parsed, seen = [], set()
    for letter, option in zip(LETTERS, options):
        if not (isinstance(option, dict) and isinstance(option.get("id"), str) and OPTION_ID.fullmatch(option["id"])
                and isinstance(option.get("description"), str) and option["description"].strip()):
            raise ValueError(f"{where}: field {key!r} has an option that is not {{\"id\": a lower-case word, "
                             "\"description\": one line}")
        if option["id"] in seen:
            raise ValueError(f"{where}: field {key!r} has the option id {option['id']!r} twice")
        seen.add(option["id"])
        parsed.append(Option(option["id"], option["description"].strip(), letter))
    safe = item.get("safe", [])
    safe = (safe,) if isinstance(safe, str) else tuple(safe) if isinstance(safe, list) else None
    if safe is None or any(value not in seen for value in safe) or (
            item.get("out_of_scope") is not None and item["out_of_scope"] not in seen):
        raise ValueError(f"{where}: field {key!r} names a safe or out_of_scope option that is not one of its options "
                         f"({', '.join(sorted(seen))})")
    field = Field(key, question.strip(), tuple(parsed), safe, item.get("gates", "all"), item.get("out_of_scope"))
    if field.gates not in GATES:
        raise ValueError(f"{where}: field {key!r} gates {field.gates!r}; one of {', '.join(GATES)}")
    return field


def parse_fields(items, where: str) -> tuple[Field, ...]:
    """A label file's "fields" list as Fields, in order; ValueError for a bad entry or a key used twice."""
    if not isinstance(items, list):
        raise ValueError(f"{where}: \"fields\" is a list of fields")
    fields = tuple(parse_field(item, f"{where} field {number}") for number, item in enumerate(items, start=1))
    keys = [field.key for field in fields]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{where}: the field key {next(k for k in keys if keys.count(k) > 1)!r} is used twice")
    return fields


def fields_of(dataset: str) -> tuple[Field, ...]:
    """The fields a dataset's label file declares (() when it declares none). Raises ValueError as parse_fields."""
    source = DATASETS[dataset]
    data = json.loads(source.label_file.read_text(encoding="utf-8"))
    return parse_fields(data.get("fields", []), str(source.label_file)) if "fields" in data else ()


FIELDS_CSV_HEADER = ["key", "question", "option", "description", "safe", "gates", "out_of_scope"]


def fields_from_csv(path: Path) -> list[dict]:
    """The "fields" list of a label file from a CSV (make_task.py --fields): the header key,question,option,
    description,safe,gates,out_of_scope and a row per option, a field's rows one after another in the order of
    its letters; key, question and gates on its first row (blank after it, or the same; another question or
    gates on a later row is refused); safe and out_of_scope "yes" on the options they name, else blank; gates
    "all" or "change" (blank: all), and a field with gates filled in must mark a safe option. Checked as a label
    file's fields are (parse_fields): ValueError in one sentence naming the file, as task.read_csv raises too."""
    from task import read_csv
    _, rows = read_csv(path, (FIELDS_CSV_HEADER,), "the fields")
    items: list[dict] = []
    gated: set[str] = set()  # the fields whose gates column is filled in: they must name a safe option
    for number, (key, question, option, description, safe, gates, out_of_scope) in enumerate(rows, start=2):
        key = key.strip()
        if key and (not items or items[-1]["key"] != key):
            if any(item["key"] == key for item in items):
                raise ValueError(f"the fields file {path}, row {number}: the rows of field {key!r} are not together")
            items.append({"key": key, "question": question.strip(), "options": [], "safe": [],
                          "gates": gates.strip() or "all"})
            if gates.strip():
                gated.add(key)
        elif not items:
            raise ValueError(f"the fields file {path}, row {number}: the first row names no key")
        elif any(value.strip() and value.strip() != items[-1][column]
                 for column, value in (("question", question), ("gates", gates))):
            raise ValueError(f"the fields file {path}, row {number}: a field's question and gates go on its first "
                             f"row only (field {items[-1]['key']!r} has them on row {number - len(items[-1]['options'])})")
        field = items[-1]
        field["options"].append({"id": option.strip(), "description": description.strip()})
        for column, value in (("safe", safe), ("out_of_scope", out_of_scope)):
            if value.strip().lower() not in ("", "yes"):
                raise ValueError(f"the fields file {path}, row {number}: {column} is 'yes' or blank, not {value!r}")
        if safe.strip():
            field["safe"].append(option.strip())
        if out_of_scope.strip():
            field["out_of_scope"] = option.strip()
    for field in items:
        if field["key"] in gated and not field["safe"]:
            raise ValueError(f"the fields file {path}: field {field['key']!r} gates {field['gates']!r} but marks no "
                             "option safe (yes in the safe column), so it could never let an act through")
    parse_fields(items, f"the fields file {path}")
    return items


def fields_lines(dataset: str, saved: list[str]) -> list[str]:
    """What make_task.py --fields prints: the fields the saved prompt files (saved) ask after the code, and for
    each field that gates acts without an out_of_scope option, where its gate's calib answers must come from."""
    fields = fields_of(dataset)
    lines = [f"fields {', '.join(f.key for f in fields)}: the prompt and grammar ask them after the code "
             f"({', '.join(saved)})"]
    for field in fields:
        if field.safe and not field.out_of_scope:
            lines.append(f"  {field.key} gates acts: its gate is fitted on calib answers labelled with their right "
                         f"{field.key}, which messages.csv does not give, so fit_routers.py cannot fit the model's "
                         f"routers with it yet (08-routes/beyond/fields/README.md)")
    return lines


# make_task.py's default instructions ask for the code alone; with fields they ask for the letters after it
CODE_ONLY = "Answer with the code of that label and nothing else: the group letter, a hyphen and the label letter"
CODE_AND_LETTERS = ("Answer with the code of that label (the group letter, a hyphen and the label letter), then the "
                    "letter of each answer to the questions after the list, and nothing else")


def with_fields_entry(label_json: bytes, items: list[dict]) -> bytes:
    """A label file's bytes (make_banking77.to_json's layout) with "fields" set to items, before "groups", and a
    task's default instructions (make_task.py's) asking for the fields' letters after the code."""
    from make_banking77 import to_json
    data = json.loads(label_json)
    data.pop("fields", None)
    if "instructions" in data.get("task", {}):
        data["task"]["instructions"] = data["task"]["instructions"].replace(CODE_ONLY, CODE_AND_LETTERS)
    at = list(data).index("groups")
    entries = list(data.items())
    return to_json(dict([*entries[:at], ("fields", items), *entries[at:]])).encode("utf-8")


# ---------------------------------------------------------------- the prompt and the grammar

@dataclass(frozen=True)
class FieldsPrompt:
    """Post 02's Prompt of the code, and the fields after it: one system prompt, one grammar.

    prompt: the code's Prompt, its system and grammar replaced by the ones
    that ask for every field (so post 03's requests and the saved slot take
    it as they take any prompt); codes: the code table (out-of-scope codes
    left out when a field stands for them). fields: the Fields in answer
    order. dropped: the codes a field's out_of_scope option replaces.
    """

    prompt: Prompt
    fields: tuple[Field, ...]
    dropped: frozenset[str] = frozenset()

    @property
    def example(self) -> str:
        """An answer of the grammar's shape: the post's example code C-F (the task's first code where C-F is
        none of its codes), then A for every field."""
        code = "C-F" if "C-F" in self.prompt.codes else next(iter(self.prompt.codes))
        return code + "".join("-A" for _ in self.fields)


def fields_section(fields: tuple[Field, ...], example: str) -> str:
    """The prompt's paragraph that asks the fields: each question with its options' letters and descriptions."""
    lines = ["After the code, answer each question below with the letter of one option, each after a hyphen, in "
             f"this order (for example {example}):", ""]
    for number, field in enumerate(fields, start=1):
        lines.append(f"{number}. {field.key}: {field.question}")
        lines += [f"  {option.letter} {option.id}: {option.description}" for option in field.options]
    return "\n".join(lines)


def fields_grammar(code_grammar: str, fields: tuple[Field, ...]) -> str:
    """GBNF: the code's root (post 02's grammar_of), then "-" and one of each field's letters, in order."""
    code = code_grammar.split("::=", 1)[1].strip()
    tail = "".join(f' "-" [{field.letters}]' for field in fields)
    return f"root ::= ({code}){tail}\n"


def without_codes(labels: LabelSet, codes: frozenset[str]) -> LabelSet:
    """The label set without the intents of `codes` (and a group left empty by it)."""
    groups = []
    for group in labels.groups:
        kept = tuple(intent for intent in group.intents if intent.code not in codes)
        if kept:
            groups.append(replace(group, intents=kept))
    return LabelSet(tuple(groups), labels.calibration_rows)


def fields_prompt(dataset: str) -> FieldsPrompt:
    """The prompt and grammar of a dataset with fields: post 02's prompt of its label file (its instructions,
    examples per intent and code list; the out-of-scope codes left out where a field's out_of_scope option
    stands for them), the fields paragraph before its closing line, and the grammar of code and fields.
    Raises ValueError when the dataset declares no fields."""
    from prompt import CLOSING, INSTRUCTIONS
    fields = fields_of(dataset)
    if not fields:
        raise ValueError(f"{dataset}'s label file declares no fields")
    source = DATASETS[dataset]
    loader = source.loader()
    labels = source.load_labels()
    dropped = frozenset(source.out_of_scope_codes()) if any(f.out_of_scope for f in fields) else frozenset()
    base = build_prompt(without_codes(labels, dropped), prompt_examples(source.base), True,
                        getattr(loader, "PROMPT_INSTRUCTIONS", INSTRUCTIONS), "")
    made = FieldsPrompt(base, fields, dropped)
    closing = re.sub(r"the code only(, for example [A-Z]-[A-Z])?", f"the code and the letters only, for example "
                     f"{made.example}", getattr(loader, "PROMPT_CLOSING", CLOSING))
    system = base.system.rstrip("\n") + "\n\n" + fields_section(fields, made.example) + "\n\n" + closing
    return replace(made, prompt=replace(base, system=system, grammar=fields_grammar(grammar_of(base.intent_letters),
                                                                                      fields)))


def save_fields_prompt(dataset: str) -> tuple:
    """Write fields_prompt(dataset)'s system prompt and grammar where registry.Dataset.saved_prompt() reads them
    (<name>.prompt.txt and <name>.gbnf beside the label file): what the setup's warm-up sends for the dataset,
    and what a results line's prompt_sha256 is checked against."""
    made = fields_prompt(dataset)
    system, grammar = DATASETS[dataset].prompt_files()
    system.write_text(made.prompt.system, encoding="utf-8")
    grammar.write_text(made.prompt.grammar, encoding="utf-8")
    return system, grammar


def main() -> int:
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=[name for name in sorted(DATASETS) if fields_of(name)],
                        help="a dataset whose label file declares fields")
    parser.add_argument("--save", action="store_true", help="write its prompt and grammar beside its label file")
    args = parser.parse_args()
    if args.save:
        for path in save_fields_prompt(args.dataset):
            print(f"wrote {path.relative_to(DATASETS[args.dataset].home.parent)}")
        return 0
    made = fields_prompt(args.dataset)
    print(made.prompt.system + "\n\n" + made.prompt.grammar, end="")
    return 0


if __name__ == "__main__":
    from script_exit import exit_on_bad_input
    sys.exit(exit_on_bad_input(main))
