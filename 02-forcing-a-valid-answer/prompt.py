"""The system prompt, the GBNF grammar and the code table, built from one source.

    python3 02-forcing-a-valid-answer/prompt.py banking77             # prints prompt and grammar
    python3 02-forcing-a-valid-answer/prompt.py banking77 --grammar   # only the grammar
    python3 02-forcing-a-valid-answer/prompt.py banking77 --count     # size in tokens (needs the server)
    python3 02-forcing-a-valid-answer/prompt.py banking77 --save      # write it beside the label file

A typed decision is a two-letter code: the group letter, a hyphen, the intent
letter ("C-F"). build_prompt() makes the prompt, which lists every code with
its intent, a description and examples, and the grammar, which allows exactly
the codes the prompt lists, from one label set (datasets/banking77.json), so
the two cannot drift apart. In a script of the repository, after the two
lines that import series.py (they put the post folders on sys.path):

    from prompt import load_prompt
    prompt = load_prompt("banking77")
    prompt.system, prompt.grammar, prompt.codes["A-A"]   # ("CARD_SETUP", "card_arrival")

--save writes prompt.system and prompt.grammar to datasets/<name>.prompt.txt
and <name>.gbnf. The setup's warm-up and post 01 send those files (they come
before this post); a test keeps them equal to what build_prompt() gives.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from labels import Intent, LabelSet
from registry import DATASETS, dataset_named

INSTRUCTIONS = """\
You sort the messages that customers send to their bank. Each message gets \
exactly one intent from the list below. Answer with the code of that intent and \
nothing else: the group letter, a hyphen and the intent letter, for example C-F."""
# The prompt's last line: the request repeated after the long list, so it is the last thing the model reads.
CLOSING = "Answer with the code only, for example C-F."
EXAMPLES = 5  # examples per intent in the prompt, unless the dataset says otherwise (PROMPT_EXAMPLES)


class Meaning(NamedTuple):
    """What a code stands for: the names of its group and of its intent, e.g. ("CARD_SETUP", "card_arrival")."""

    group: str
    intent: str


@dataclass(frozen=True)
class Prompt:
    """What a typed request needs, made from one label set.

    system: the system prompt: instructions and the list of codes (str).
    grammar: GBNF that accepts exactly the listed codes, e.g. "C-F" (str).
    codes: code -> Meaning (group name, intent name), in prompt order, so
    prompt.codes["A-A"] == ("CARD_SETUP", "card_arrival") for BANKING77.
    intents: code -> Intent (with its description and examples), same order.
    group_letters: the valid first letters, e.g. "ABCDEFGH" (str).
    intent_letters: group letter -> the valid intent letters of that group (dict).
    group_names: group letter -> the group's name (dict).
    """

    system: str
    grammar: str
    codes: dict[str, Meaning]
    intents: dict[str, Intent]
    group_letters: str
    intent_letters: dict[str, str]
    group_names: dict[str, str] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        """Hex sha256 of the system prompt (UTF-8): names the prompt a results file or a saved slot was made with."""
        return hashlib.sha256(self.system.encode("utf-8")).hexdigest()

    @property
    def by_intent(self) -> dict[str, Intent]:
        """intent name -> Intent (its .code is the code to expect)."""
        return {intent.name: intent for intent in self.intents.values()}


def letter_class(letters: str) -> str:
    """A GBNF character class for letters: a range when they run on without a gap ("[A-K]"), else a list ("[ACE]")."""
    if len(letters) > 1 and letters == "".join(chr(c) for c in range(ord(letters[0]), ord(letters[-1]) + 1)):
        return f"[{letters[0]}-{letters[-1]}]"
    return f"[{letters}]"


def grammar_of(intent_letters: dict[str, str]) -> str:
    """GBNF whose root accepts exactly the codes: a group letter, a hyphen, one of that group's intent letters.

    One alternative per group, each with its own intent letters, so after "G"
    only G's letters can follow: root ::= ("A-" [A-K]) | ... | ("G-" [A-D]).
    GBNF ends a rule at a newline, so root stays on one line.
    """
    alternatives = [f'("{group}-" {letter_class(letters)})' for group, letters in intent_letters.items()]
    return "root ::= " + " | ".join(alternatives) + "\n"


def build_prompt(labels: LabelSet, examples_per_intent: int = EXAMPLES, descriptions: bool = True,
                 instructions: str = INSTRUCTIONS, closing: str = CLOSING) -> Prompt:
    """Build system prompt, grammar and code table from a label set.

    examples_per_intent: how many of each intent's examples go into the
    prompt (0 to 5 with the shipped files). descriptions: include the one-line
    descriptions. instructions: the paragraph that opens the prompt (BANKING77's
    by default; a dataset's loader may set its own). closing: the prompt's last
    line (CLOSING by default; a task names a code of its own, or none).
    The list follows the label set's order, so a LabelSet with the intents in
    another order and other letters gets its own prompt and grammar from here
    too. Raises ValueError when examples_per_intent is negative.
    """
    if examples_per_intent < 0:
        raise ValueError(f"examples_per_intent must be 0 or more, got {examples_per_intent}")
    lines = [instructions, ""]
    intent_letters = {}
    for group in labels.groups:
        lines.append(f"Group {group.letter}: {group.name}")
        for intent in group.intents:
            line = f"{intent.code} {intent.name}"
            if descriptions:
                line += f": {intent.description}"
            lines.append(line)
            examples = intent.examples[:examples_per_intent]
            if examples:
                lines.append("  e.g. " + " | ".join(examples))
        lines.append("")
        intent_letters[group.letter] = "".join(intent.letter for intent in group.intents)
    lines.append(closing)
    group_names = {group.letter: group.name for group in labels.groups}
    codes = {intent.code: Meaning(group_names[intent.group], intent.name) for intent in labels.intents}
    intents = {intent.code: intent for intent in labels.intents}
    return Prompt("\n".join(lines), grammar_of(intent_letters), codes, intents, "".join(group_names),
                  intent_letters, group_names)


def prompt_examples(dataset: str = "banking77") -> int:
    """How many examples per intent a dataset's prompt shows: its loader's PROMPT_EXAMPLES, else EXAMPLES.
    ValueError for an unknown dataset."""
    return getattr(dataset_named(dataset).loader(), "PROMPT_EXAMPLES", EXAMPLES)


def load_prompt(dataset: str = "banking77", examples_per_intent: int | None = None, descriptions: bool = True) -> Prompt:
    """build_prompt() on a dataset's label file, with its own instructions, examples per intent and closing line
    when its loader module sets PROMPT_INSTRUCTIONS, PROMPT_EXAMPLES and PROMPT_CLOSING (else INSTRUCTIONS, 5 and
    CLOSING). ValueError for an unknown dataset."""
    source = dataset_named(dataset)
    loader = source.loader()
    if examples_per_intent is None:
        examples_per_intent = prompt_examples(dataset)
    return build_prompt(source.load_labels(), examples_per_intent, descriptions,
                        getattr(loader, "PROMPT_INSTRUCTIONS", INSTRUCTIONS), getattr(loader, "PROMPT_CLOSING", CLOSING))


def save_prompt(dataset: str) -> tuple[Path, Path]:
    """Write load_prompt(dataset)'s system prompt and grammar where registry.Dataset.saved_prompt() reads them."""
    prompt = load_prompt(dataset)
    system, grammar = dataset_named(dataset).prompt_files()
    system.write_text(prompt.system, encoding="utf-8")
    grammar.write_text(prompt.grammar, encoding="utf-8")
    return system, grammar


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", nargs="?", choices=sorted(DATASETS), default="banking77",
                        help="whose prompt (default: banking77)")
    parser.add_argument("--grammar", action="store_true", help="print only the grammar")
    parser.add_argument("--count", action="store_true", help="count the prompt's tokens with the server's /tokenize")
    parser.add_argument("--examples", type=int, help="examples per intent in the prompt (default: the dataset's)")
    parser.add_argument("--no-descriptions", action="store_true", help="leave the intent descriptions out")
    parser.add_argument("--save", action="store_true",
                        help="write the prompt and grammar to datasets/<dataset>.prompt.txt and .gbnf (what the setup "
                             "and post 01 send); only with the default examples and descriptions")
    args = parser.parse_args()
    if args.examples is not None and args.examples < 0:
        parser.error("--examples must be 0 or more")
    if args.save and (args.examples is not None or args.no_descriptions):
        parser.error("--save writes the prompt the posts send: leave out --examples and --no-descriptions")
    if args.save:
        for path in save_prompt(args.dataset):
            print(f"wrote {path.relative_to(series.ROOT)}")
        return 0
    prompt = load_prompt(args.dataset, args.examples, not args.no_descriptions)
    if not args.grammar and not args.count:
        print("=== system prompt ===")
        print(prompt.system)
    if not args.count:
        print("=== GBNF grammar ===")
        print(prompt.grammar)
    print(f"{len(prompt.codes)} codes in {len(prompt.group_letters)} groups; "
          f"system prompt: {len(prompt.system):,} characters")
    if args.count:
        from llama_http import Client
        tokens = Client().tokenize(prompt.system)
        print(f"system prompt: {len(tokens):,} tokens (by the server's tokenizer)")
    return 0


if __name__ == "__main__":
    from llama_http import exit_on_server_errors
    sys.exit(exit_on_server_errors(main))
