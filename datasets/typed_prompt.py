"""The system prompt, the GBNF grammar and the code table of a label set, built from one source.

A typed decision is a two-letter code: the group letter, a hyphen, the intent
letter ("C-F"). The prompt lists every code with its intent, a description and
examples; the grammar allows exactly the codes that the prompt lists. Both come
from a label file (banking77.json, clinc150.json) through build_prompt(), so
they cannot drift apart.

It lives next to the label files because every post needs it, from the
warm-up in 00-setup on; post 02 (02-forcing-a-valid-answer/prompt.py) prints
it and explains why the codes are letters.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import clinc150
from banking77 import load_labels
from labels import Intent, LabelSet

INSTRUCTIONS = """\
You sort the messages that customers send to their bank. Each message gets \
exactly one intent from the list below. Answer with the code of that intent and \
nothing else: the group letter, a hyphen and the intent letter, for example C-F."""

CLINC150_INSTRUCTIONS = """\
You sort the requests that people say or type to a virtual assistant. Each request gets \
exactly one intent from the list below; a request that fits none of them gets K-A (out of \
scope). Answer with the code of that intent and nothing else: the group letter, a hyphen \
and the intent letter, for example C-F."""
# The prompt's last line: the request repeated after the long list, so it is the last thing the model reads.
CLOSING = "Answer with the code only, for example C-F."

# Examples per intent in the CLINC150 prompt: the one place this is chosen.
# 151 intents with 3 examples give a system prompt of 7,018 tokens (2: 5,627;
# measured in datasets/README.md), which leaves room in a 10,240-token context.
CLINC150_EXAMPLES = 3


class Meaning(NamedTuple):
    """What a code stands for: the names of its group and of its intent, e.g. ("CARD_SETUP", "card_arrival")."""

    group: str
    intent: str


@dataclass(frozen=True)
class BuiltPrompt:
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
        """Hex sha256 of the system prompt (UTF-8): names the prompt a results file or a saved cache was made with."""
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


def build_prompt(labels: LabelSet, examples_per_intent: int = 5, descriptions: bool = True,
                 instructions: str = INSTRUCTIONS, closing: str = CLOSING) -> BuiltPrompt:
    """Build system prompt, grammar and code table from a label set.

    examples_per_intent: how many of each intent's examples go into the
    prompt (0 to 5 with the shipped files). descriptions: include the one-line
    descriptions. instructions: the paragraph that opens the prompt (BANKING77's
    by default); closing: its last line (CLOSING by default). 02's
    json_output.py asks for JSON with the same list by changing only these two.
    The list follows the label set's order, so a LabelSet with the intents in
    another order and other letters (07's letter_order.py) gets its own prompt
    and grammar from here too. Raises ValueError when examples_per_intent is
    negative.
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
    return BuiltPrompt("\n".join(lines), grammar_of(intent_letters), codes, intents, "".join(group_names),
                       intent_letters, group_names)


def shortlisted(built: BuiltPrompt, codes: list[str]) -> BuiltPrompt:
    """The same prompt, with a grammar and code table that allow only `codes` (a shortlist, e.g. a retriever's top K).

    The system prompt is unchanged, so the server keeps using its cached
    prefill; only the per-request grammar narrows. group_letters and
    intent_letters shrink to the shortlisted codes, so post 03's
    renormalization runs over the letters this grammar allows, as always.
    Letters keep their order in the full prompt. Raises ValueError on an
    empty shortlist or a code the prompt does not list.
    """
    if not codes:
        raise ValueError("the shortlist is empty")
    unknown = [code for code in codes if code not in built.codes]
    if unknown:
        raise ValueError(f"codes {unknown} are not in the prompt's table")
    chosen = set(codes)
    kept = [code for code in built.codes if code in chosen]  # the prompt's order
    intent_letters = {group: "".join(letter for letter in letters if f"{group}-{letter}" in chosen)
                      for group, letters in built.intent_letters.items()}
    intent_letters = {group: letters for group, letters in intent_letters.items() if letters}
    return replace(built, grammar=grammar_of(intent_letters), codes={code: built.codes[code] for code in kept},
                   intents={code: built.intents[code] for code in kept}, group_letters="".join(intent_letters),
                   intent_letters=intent_letters)


def shortlist_of(ranking: list[tuple[str, float]], built: BuiltPrompt, k: int,
                 always: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
    """The K best (code, retriever score) pairs of a ranking of intents, plus the codes in `always`.

    ranking: (intent name, score) pairs, best first (neighbours.Retriever.rank).
    always: codes that every shortlist holds (CLINC150's out-of-scope code),
    added with their own score at the end when not among the K. Raises
    ValueError for K below 1.
    """
    if k < 1:
        raise ValueError(f"a shortlist needs at least one code, not {k}")
    score = {built.by_intent[intent].code: value for intent, value in ranking}
    codes = [built.by_intent[intent].code for intent, _ in ranking[:k]]
    codes += sorted(always - set(codes))
    return [(code, score.get(code, 0.0)) for code in codes]



def load_prompt(examples_per_intent: int = 5, descriptions: bool = True) -> BuiltPrompt:
    """build_prompt() on the shipped BANKING77 label set (datasets/banking77.json)."""
    return build_prompt(load_labels(), examples_per_intent, descriptions)


def load_clinc150_prompt(examples_per_intent: int = CLINC150_EXAMPLES, descriptions: bool = True) -> BuiltPrompt:
    """build_prompt() on the shipped CLINC150 label set (datasets/clinc150.json): 151 codes, K-A = out of scope."""
    return build_prompt(clinc150.load_labels(), examples_per_intent, descriptions, CLINC150_INSTRUCTIONS)

