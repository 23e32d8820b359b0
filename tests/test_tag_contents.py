"""No tag shows a later post: not in a script's --help, a README's text or a test file.

Each post owns a vocabulary, read from main (this working tree):
- the command-line options its modules define (add_argument calls found with
  ast in the top-level modules of its folder, post 00 including datasets/),
  and apart from them those of its beyond/ folder, the work beyond the post;
- the file names of those modules (isotonic.py) and its folder name;
- the variants of its reference runs (<dataset>-<variant>-<split>.jsonl in
  its reference/: shortlist5, combined5...);
- its key terms, a small table below (TERMS).
A word belongs to the earliest stage that has it (run.py to post 02, not 03).

Then in every tag post-NN made by post_tags.py (in a clone, as in
test_post_tags.py): every script's --help shows no option of a later stage;
every .md file names no later stage's script, folder, variant or term,
except the promises a post makes of a later one (PROMISES, from the series'
posts 1-4); every tests/test_*.py file names no later stage's variant or
script. A tag's texts and tests may name its post's beyond work (a README
points to its beyond/ room); a post's own scripts show no option of it.
Each finding is one line: tag, file, the word, the stage that owns it and
the line. The --help runs make this file's tests take about 1.5 minutes on 2
cores (tags built in under a second).

This file imports post_tags, so post_tags.py keeps it out of every tag.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

import post_tags
from post_tags import BEYOND, folder_post
from registry import DATASETS as DATASET_NAMES, SPLITS
from test_post_tags import POSTS, ROOT, TAGS, Tagged, files, is_script, run_post_tags, snapshot_clone


@dataclass(frozen=True, order=True)
class Stage:
    """Where a word comes from: post `post`, or the work beyond it (its beyond/ folder) when beyond is True.

    Ordered as a reader meets them: post 07 < post 08 < 08's beyond/.
    """
    post: int
    beyond: bool = False

    def __str__(self) -> str:
        return f"post {self.post:02d}" + (f"'s {BEYOND}/" if self.beyond else "")


# The key terms of each stage (regular expressions, case ignored unless (?-i:...) says): words a reader meets
# first in that post. Generic words are narrowed to the post's sense: "the grammar route", "both routes" (post
# 03's two ways to a letter) and "card on route" (a BANKING77 message) are no routes of post 08; "act as" is no
# acting on an answer.
TERMS = {
    Stage(5): [r"calibration (split|set)", r"temperature scaling"],
    Stage(6): [r"isotonic"],
    Stage(7): [r"AUROC", r"(accuracy-)?coverage", r"out[ -]of[ -]scope", r"CLINC150"],
    Stage(8): [r"act(s|ed|ing)? (only )?on", r"(?-i:ACT|HAND OVER)", r"hand(s|ed|ing)? (it |them |the rest )?over",
               r"routers?|routing|(act|ask|hand-over|three) routes?"],
    # 08's beyond/ (guarantee.py, certified_separation.py, certified_routes.py) brings the certified lower bound
    Stage(8, beyond=True): [r"certif(y|ied|ies)", r"shortlists?", r"guard", r"conformal"],
}

# The terms an earlier post names as a promise of a later one: term -> the posts that name it (in the series'
# text, /work/shared/seeds/series-posts-4-3-2-1.txt). Their own folder's .md files may name it, and the files
# every tag has (the top README, 00-setup/, datasets/) from the first of them on.
PROMISES = {
    # post 1, "Where the idea comes from": a confidence you can trust enough "to act on"; "From a confidence to
    # an action": post 8's routes (ACT, ASK, HAND OVER); "What's next": "thresholds and routes (act / ask /
    # hand over)". Post 2, "What the grammar can't do": post 8 hands such answers to a person "instead of
    # acting on them". Post 3 (the poem's confidence of 0): post 8 hands answers like it to a human agent.
    # The top README opens, in every tag from post-00 on, with the series' goal: "a confidence you can act on".
    r"act(s|ed|ing)? (only )?on": {0, 1, 2},
    r"(?-i:ACT|HAND OVER)": {1},
    r"hand(s|ed|ing)? (it |them |the rest )?over": {1, 2, 3},
    r"routers?|routing|(act|ask|hand-over|three) routes?": {1},
    # post 3, "Run it yourself": run.py --split calib, "calibration set: 770 messages"; post 4, "Two sets of
    # answers": the calibration set the series fits its corrections and post 8's thresholds on.
    # The datasets define the calib split every post reads (datasets/README.md, in every tag from post-00 on),
    # and post 1 says the calibration needs a few hundred labelled messages.
    r"calibration (split|set)": {0, 1, 2, 3, 4},
    # post 1, "What's next": 5. temperature scaling, 6. isotonic regression, 7. accuracy-coverage curves and
    # AUROC; post 4, "What's next": post 5 fixes the confidence with temperature scaling.
    r"temperature scaling": {1, 4},
    r"isotonic": {1},
    r"AUROC": {1},
    r"(accuracy-)?coverage": {1},
    # post 2, "What the grammar can't do": an "out of scope" option; posts 7 and 8 do this with CLINC150.
    r"out[ -]of[ -]scope": {2},
    r"CLINC150": {2},
}

OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
MODULE_FOLDER = re.compile(r"[0-9][0-9]-[^/]+")


# -- the vocabulary, from main -----------------------------------------------------------------------

def argument_options(source: str, where: str = "<source>") -> set[str]:
    """The long option strings ("--calib") of every `<parser>.add_argument(...)` call in source.

    Only literal strings count (an option built at run time has no name to find); positional
    arguments ("messages") and short options ("-k") are left out. ValueError names where for a file
    that does not parse.
    """
    try:
        tree = ast.parse(source, where)
    except SyntaxError as error:
        raise ValueError(f"{where}: cannot be parsed ({error.msg}, line {error.lineno})") from None
    return {arg.value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
            for arg in node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--")}


def stage_of(path: str) -> Stage | None:
    """The stage of a file (path from the repository root): its post folder's (datasets/ is post 00, but for
    your own task's files, work beyond the series in post 08's tag: post_tags.OWN_TASK_FILES), beyond when it
    lies in the folder's beyond/ or is its BEYOND.md; None outside the post folders."""
    parts = PurePosixPath(path).parts
    post = folder_post(parts[0])
    if post is None or len(parts) < 2:
        return None
    if parts[0] == "datasets" and post_tags.OWN_TASK_FILES.fullmatch(parts[-1]):
        return Stage(post_tags.OWN_TASK_POST, beyond=True)
    return Stage(post, parts[1] == BEYOND or parts[-1] == "BEYOND.md")


def module_stages(paths) -> dict[str, Stage]:
    """path -> stage of the modules whose options a stage owns: the top-level .py files of the post folders
    and datasets/, and those of a post folder's beyond/ and its rooms (the modules series.py puts on sys.path;
    00-setup/gb10/ and the like are not)."""
    stages = {}
    for path in paths:
        parts = PurePosixPath(path).parts
        stage = stage_of(path)
        if stage and parts[-1].endswith(".py") and (len(parts) == 2 or (len(parts) in (3, 4) and parts[1] == BEYOND)):
            stages[path] = stage
    return stages


def earliest(pairs) -> dict[str, Stage]:
    """word -> the earliest stage among the (word, stage) pairs that have it."""
    owners = {}
    for word, stage in pairs:
        owners[word] = min(stage, owners.get(word, stage))
    return owners


def reference_variants(paths) -> set[tuple[str, Stage]]:
    """(variant, stage) of the reference runs among paths: <folder>/reference/<model>/<dataset>-<variant>-<split>.jsonl
    with a known dataset and split and a variant name of saved_answers.py's form (combined5, linearall)."""
    found = set()
    for path in paths:
        parts = PurePosixPath(path).parts
        if len(parts) != 4 or parts[1] != "reference" or not parts[3].endswith(".jsonl") or not stage_of(path):
            continue
        for dataset in DATASET_NAMES:
            for split in SPLITS:
                head, tail = f"{dataset}-", f"-{split}.jsonl"
                if parts[3].startswith(head) and parts[3].endswith(tail):
                    middle = parts[3][len(head):-len(tail)]
                    if re.fullmatch(r"[a-z]+[0-9]*", middle):
                        found.add((middle, stage_of(path)))
    return found


@dataclass(frozen=True)
class Vocabulary:
    """The words of each stage, each with the earliest stage that has it."""
    options: dict[str, Stage]    # "--calib" -> Stage(5)
    scripts: dict[str, Stage]    # "isotonic.py" -> Stage(6), "07-separation" -> Stage(7)
    variants: dict[str, Stage]   # "shortlist5" -> Stage(8)
    terms: dict[str, Stage]      # a TERMS pattern -> its stage


def vocabulary(root: Path) -> Vocabulary:
    """The vocabulary of the repository at root (its git-tracked files)."""
    paths = list(filter(None, subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True,
                                             check=True).stdout.split("\0")))
    modules = module_stages(paths)
    options = earliest((option, stage) for path, stage in modules.items()
                       for option in argument_options((root / path).read_text(), path))
    folders = {(parts[0], Stage(folder_post(parts[0])))
               for parts in map(lambda p: PurePosixPath(p).parts, paths)
               if len(parts) > 1 and MODULE_FOLDER.fullmatch(parts[0])}
    scripts = earliest([(PurePosixPath(path).name, stage) for path, stage in modules.items()] + sorted(folders))
    terms = {pattern: stage for stage, patterns in TERMS.items() for pattern in patterns}
    return Vocabulary(options, scripts, earliest(sorted(reference_variants(paths))), terms)


VOCABULARY = vocabulary(ROOT)


# -- what a tag shows ----------------------------------------------------------------------------------

def word_pattern(word: str) -> re.Pattern:
    """A literal word (option, file name, variant) as a whole word: not inside a longer name."""
    return re.compile(rf"(?<![\w.-]){re.escape(word)}(?![\w-])")


def term_pattern(term: str) -> re.Pattern:
    return re.compile(rf"\b(?:{term})\b", re.IGNORECASE)


def limit(path: str, tag: int) -> Stage:
    """The latest stage a file of post-`tag` may show: post `tag`, and `tag`'s beyond work in its beyond/ scripts,
    in every text (a post's README points to its beyond/ room, as a book chapter lists its bonus material) and
    in the tests (the tag holds the tests of that work: post_tags.py counts a beyond module as its post's).
    A post's own script shows no option of its beyond work."""
    stage = stage_of(path)
    in_beyond = bool(stage and stage.beyond and stage.post == tag)
    return Stage(tag, in_beyond or not path.endswith(".py") or PurePosixPath(path).parts[0] == "tests")


def later_options(help_text: str, path: str, tag: int, vocabulary: Vocabulary = VOCABULARY) -> list[str]:
    """The options a --help shows that only a stage after limit(path, tag) defines: "'--rule' (post 08's beyond/)"."""
    return [f"{option!r} ({vocabulary.options[option]})"
            for option in sorted(set(OPTION.findall(help_text)))
            if option in vocabulary.options and vocabulary.options[option] > limit(path, tag)]


def promised(term: str, path: str, tag: int) -> bool:
    """Whether a file of post-`tag` may name a later post's term as a promise (PROMISES)."""
    posts = PROMISES.get(term, set())
    stage = stage_of(path)
    if stage is None or stage.post == 0:  # a file every tag has: once a post has made the promise
        return any(post <= tag for post in posts)
    return stage.post in posts


def later_words(text: str, path: str, tag: int, kinds: tuple[str, ...],
                vocabulary: Vocabulary = VOCABULARY) -> list[str]:
    """The words of the given kinds ("options", "scripts", "variants", "terms") that text (a file of post-`tag`)
    names and only a stage after limit(path, tag) has, terms left out where a post promises them: one
    "'isotonic' (post 06; line 12)" per word, at its first place, in the order of the text."""
    found = []
    for kind in kinds:
        for word, stage in getattr(vocabulary, kind).items():
            if stage <= limit(path, tag) or (kind == "terms" and promised(word, path, tag)):
                continue
            if match := (term_pattern(word) if kind == "terms" else word_pattern(word)).search(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append((match.start(), f"{match.group(0)!r} ({stage}; line {line})"))
    # one line per place: HAND OVER is two terms' match
    return [words for _start, words in sorted(dict(found).items())]


def findings(tag: str, path: str, words: list[str]) -> list[str]:
    return [f"{tag}  {path}  {word}" for word in words]


# -- the vocabulary on known modules ------------------------------------------------------------------

def test_options_are_the_literal_long_options_of_add_argument_calls():
    source = ('import argparse\n'
              'def add(parser, group):\n'
              '    parser.add_argument("--calib", type=Path)\n'
              '    group.add_argument("-k", "--top-k", type=int)\n'
              '    parser.add_argument("messages", nargs="*")\n'
              '    parser.add_argument(f"--{name}")\n'      # built at run time: no name to find
              '    other.add_option("--old")\n')
    assert argument_options(source) == {"--calib", "--top-k"}


def test_options_of_known_modules():
    def options(path: str) -> set[str]:
        return argument_options((ROOT / path).read_text(), path)
    assert options("06-isotonic/isotonic.py") == set()      # its options come from 05's calib_split.py
    assert {"--calib", "--results"} <= options("05-fixing-the-confidence/calib_split.py") | \
        options("03-where-confidence-comes-from/saved_answers.py")
    assert "--no-grammar" in options("02-forcing-a-valid-answer/run.py")
    assert "--rule" in options("08-routes/beyond/guarantees/certified_routes.py")
    assert "--delta" in options("08-routes/beyond/guarantees/guarantee.py")


def test_each_word_belongs_to_the_earliest_stage_that_has_it():
    # --split: 01's label_list.py, 02's batch.py, 03's saved_answers.py, 08's beyond/oos_cost.py
    assert VOCABULARY.options["--split"] == Stage(1) and VOCABULARY.options["--calib"] == Stage(5)
    assert VOCABULARY.options["--delta"] == Stage(8, beyond=True) and VOCABULARY.options["--alpha"] == Stage(8, beyond=True)
    assert VOCABULARY.options["--rule"] == Stage(8, beyond=True)
    assert VOCABULARY.scripts["run.py"] == Stage(2)            # in 02 and 03
    assert VOCABULARY.scripts["isotonic.py"] == Stage(6) and VOCABULARY.scripts["07-separation"] == Stage(7)
    assert VOCABULARY.scripts["certified_routes.py"] == Stage(8, beyond=True)
    assert VOCABULARY.variants["shortlist5"] == Stage(8) and "first770" not in VOCABULARY.variants
    assert Stage(7) < Stage(8) < Stage(8, beyond=True) < Stage(9)


def test_module_stages_take_top_level_and_beyond_modules_only():
    stages = module_stages(["00-setup/server.py", "00-setup/gb10/helper.py", "datasets/registry.py",
                            "08-routes/route.py", "08-routes/beyond/gate/guard.py", "08-routes/beyond/gate/adversarial/x.py",
                            "series.py", "tests/conftest.py", "08-routes/README.md", "datasets/make_task.py"])
    # make_task.py is your own task's, beyond the series after post 08: its --calib is no post 00 option
    assert stages == {"00-setup/server.py": Stage(0), "datasets/registry.py": Stage(0),
                      "08-routes/route.py": Stage(8), "08-routes/beyond/gate/guard.py": Stage(8, beyond=True),
                      "datasets/make_task.py": Stage(8, beyond=True)}


def test_variants_are_the_middles_of_reference_file_names():
    paths = ["08-routes/reference/m/banking77-combined5-calib.jsonl", "08-routes/reference/m/banking77oos-calib.jsonl",
             "08-routes/reference/m/banking77oos-test-first770.jsonl", "results/reference/m/banking77-test.jsonl",
             "07-separation/reference/m/clinc150-test.jsonl", "07-separation/reference/m/clinc150-Odd-test.jsonl"]
    # banking77oos-calib is the dataset banking77oos, not a variant "oos"; results/ is no post's
    assert reference_variants(paths) == {("combined5", Stage(8))}


def test_a_word_is_found_whole_and_a_term_where_no_promise_allows_it():
    vocabulary = Vocabulary({"--calib": Stage(5)}, {"route.py": Stage(8)}, {"shortlist5": Stage(8)},
                            {r"isotonic": Stage(6), r"CLINC150": Stage(7)})
    text = "--calibration and beyond_route.py and exampleshortlist5\nisotonic\nCLINC150\n"
    assert later_words(text, "03-where-confidence-comes-from/README.md", 3,
                       ("options", "scripts", "variants", "terms"), vocabulary) == \
        ["'isotonic' (post 06; line 2)", "'CLINC150' (post 07; line 3)"]
    # post 1 promises isotonic and post 2 CLINC150: each in its own folder, the top README from that tag on
    assert later_words(text, "02-forcing-a-valid-answer/README.md", 2, ("terms",), vocabulary) == \
        ["'isotonic' (post 06; line 2)"]
    assert later_words(text, "README.md", 1, ("terms",), vocabulary) == ["'CLINC150' (post 07; line 3)"]
    assert later_words(text, "README.md", 3, ("terms",), vocabulary) == []
    assert later_words("--calib x", "README.md", 5, ("options",), vocabulary) == []
    assert later_words("--calib x", "README.md", 4, ("options",), vocabulary) == ["'--calib' (post 05; line 1)"]


def test_a_posts_script_shows_no_option_of_its_beyond_work_and_its_readme_may_point_there():
    vocabulary = Vocabulary({"--rule": Stage(8, beyond=True)}, {"guard.py": Stage(8, beyond=True)}, {}, {})
    assert later_options("usage: x [--rule {point,certified}]", "08-routes/beyond/guarantees/certified_routes.py", 8,
                         vocabulary) == []
    assert later_options("usage: x [--rule R]", "08-routes/route.py", 8, vocabulary) == \
        ["'--rule' (post 08's beyond/)"]
    assert later_words("see beyond/guard.py", "08-routes/README.md", 8, ("scripts",), vocabulary) == []
    assert later_words("see guard.py", "07-separation/README.md", 7, ("scripts",), vocabulary) == \
        ["'guard.py' (post 08's beyond/; line 1)"]


@pytest.mark.parametrize("text, named", [
    ("the grammar route picks a letter", []),                     # post 03's sense of route
    ("prints both routes side by side", []),
    ("Is there a way I can check on the card on route to me?", []),
    ("whether a code's letters act as positions", []),
    ("a router acts only on the answers above it", ["'router'", "'acts only on'"]),
    ("0.37  -> HAND OVER", ["'HAND OVER'"]),
    ("it hands the rest over to a person", ["'hands the rest over'"]),
    ("fit with temperature scaling", ["'temperature scaling'"]),
])
def test_post_08s_and_05s_terms_in_their_own_sense_only(text, named):
    # post 02's own README: it promises acting and handing over, nothing of routes or temperature scaling
    found = later_words(text, "02-forcing-a-valid-answer/README.md", 2, ("terms",))
    unpromised = [word for word in named if word not in ("'acts only on'", "'hands the rest over'")]
    assert [line.split(" (")[0] for line in found] == unpromised
    found_in_04 = later_words(text, "04-is-the-confidence-honest/README.md", 4, ("terms",))
    assert [line.split(" (")[0] for line in found_in_04] == [w for w in named if w != "'temperature scaling'"]


@pytest.fixture(scope="module")
def tagged(tmp_path_factory) -> Tagged:
    """The tags made by post_tags.py in a snapshot clone of this working tree (test_post_tags.py's way)."""
    repo = snapshot_clone(tmp_path_factory.mktemp("tags") / "repo")
    made = run_post_tags(repo)
    assert made.returncode == 0, made.stderr
    return Tagged(repo, made.stdout, tmp_path_factory.mktemp("checkouts"))


# -- every tag -------------------------------------------------------------------------------------------

def test_no_script_of_a_tag_shows_a_later_post_in_its_help(tagged):
    found, shown_options = [], set()
    for tag, post in zip(TAGS, POSTS):
        checkout = tagged.checkout(tag)
        scripts = [path for path in files(tagged.repo, tag)
                   if stage_of(path) and path.endswith(".py") and is_script((checkout / path).read_text())]
        for path in scripts:
            shown = subprocess.run([sys.executable, path, "--help"], cwd=checkout, capture_output=True, text=True,
                                   timeout=120)
            if shown.returncode != 0 or "usage:" not in shown.stdout:  # a help it cannot show hides no option
                found += findings(tag, path, [f"--help fails (exit {shown.returncode})"])
            found += findings(tag, path, later_options(shown.stdout, path, post)
                              + later_words(shown.stdout, path, post, ("scripts", "variants", "terms")))
            shown_options |= set(OPTION.findall(shown.stdout))
    # the helps were read: they show options of the vocabulary (05's --calib, 07's --delta, the beyond --rule)
    assert {"--calib", "--delta", "--rule"} <= shown_options
    assert found == [], "options, scripts or terms of a later post in --help:\n" + "\n".join(found)


def test_no_readme_of_a_tag_names_a_later_post(tagged):
    found = []
    for tag, post in zip(TAGS, POSTS):
        checkout = tagged.checkout(tag)
        for path in files(tagged.repo, tag):
            if path.endswith(".md"):
                words = later_words((checkout / path).read_text(), path, post, ("scripts", "variants", "terms"))
                found += findings(tag, path, words)
    assert found == [], "later posts named in a tag's .md files:\n" + "\n".join(found)


def test_no_test_file_of_a_tag_names_a_later_variant_or_script(tagged):
    found = []
    for tag, post in zip(TAGS, POSTS):
        checkout = tagged.checkout(tag)
        for path in files(tagged.repo, tag, "tests"):
            if post_tags.is_test_file(path) or path == post_tags.CONFTEST:  # the helpers are tools of every post
                found += findings(tag, path, later_words((checkout / path).read_text(), path, post,
                                                          ("variants", "scripts")))
    assert found == [], "later variants or scripts named in a tag's tests:\n" + "\n".join(found)

