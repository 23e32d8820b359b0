"""The fitted router as a file: routes.py fits it once and writes it, route.py reads it and fits nothing.

    router = router_from(calib_path, calib_answers, fit, thresholds, "banking77")   # routes.py, after the fit
    write_router(router, Path("03-where-confidence-comes-from/results/banking77-router.json"))
    router = read_router(path)                                                        # route.py
    calibrated = router.calibrate(answer.confidence); route = route_of(answer, calibrated, router)

A router file holds everything routing needs and nothing else: what it was
fitted for (the dataset, its label file, the prompt and the grammar, by
sha256; the model and llama-server build that wrote the calib answers),
what it was fitted on (the calib file, its sha256 and its number of
answers), post 06's isotonic map as its flat stretches, post 08's targets
and thresholds with the calib answers behind each, the out-of-scope codes,
and the date. route_of and top_two, the rule a router applies to one
answer, are defined here too, so that routing a message needs this file and
post 06's isotonic.py only (routes.py imports them from here).
"""
from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

from datafiles import sha256_of
from isotonic import IsotonicFit

ROOT = Path(__file__).resolve().parents[1]
FORMAT = 1  # the router file's format version; read_router refuses any other
SUFFIX = "-router.json"
# Where run.py writes a reader's own runs (03's saved_answers.OWN_RESULTS) and routes.py, by default, the router.
OWN_FOLDER = ROOT / "03-where-confidence-comes-from" / "results"
# Where the committed reference runs live: results/reference/<model>/, or a later post's <post>/reference/<model>/.
REFERENCE_GLOBS = ("results/reference/*/", "[0-9][0-9]-*/reference/*/")


class Answer(Protocol):
    """What route_of and top_two read of an answer: post 03's ResultsLine, or route.py's LiveAnswer."""

    status: str
    code: str | None
    intent_distribution: dict[str, float] | None
    group_letter: str | None
    intent_letter: str | None


def text_sha256(text: str) -> str:
    """Hex sha256 of a text (UTF-8): how the router names a prompt, a grammar and (route.py --jsonl) a message."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Router:
    """One fitted router, as its file holds it.

    format: FORMAT. dataset: the registry name ("banking77"). label_sha256,
    prompt_sha256, grammar_sha256: hex sha256 of the label file's bytes, the
    system prompt and the GBNF grammar (UTF-8) the calib answers were made
    with. model, build: the model and llama-server build of the calib
    answers. calib_file: the calib file, relative to the repository root when
    it lies inside it (else absolute); calib_sha256: its bytes' sha256;
    calib_answers: its answers (error lines left out), all of which the
    isotonic map was fitted on. isotonic: post 06's map as its flat stretches
    (first raw confidence, last raw confidence, P(right)), lowest first.
    target, ask_target: fractions in (0, 1]. t_act, t_ask: calibrated
    thresholds in [0, 1], None for no act (or ask) route; act_answers,
    ask_answers: calib answers at or above t_act, and asked calib answers at
    or above t_ask (0 for no route). out_of_scope: codes that always hand
    over, sorted. fitted: the date of the fit, ISO (YYYY-MM-DD).
    """

    format: int
    dataset: str
    label_sha256: str
    prompt_sha256: str
    grammar_sha256: str
    model: str
    build: str
    calib_file: str
    calib_sha256: str
    calib_answers: int
    isotonic: tuple[tuple[float, float, float], ...]
    target: float
    ask_target: float
    t_act: float | None
    act_answers: int
    t_ask: float | None
    ask_answers: int
    out_of_scope: tuple[str, ...]
    fitted: str

    def __post_init__(self) -> None:
        """Raise ValueError on a field no fit can give (see check_fields)."""
        check_fields(self)

    def isotonic_fit(self) -> IsotonicFit:
        """Post 06's IsotonicFit rebuilt from the stretches: both ends of each (one point when they meet).

        Between two fitted confidences IsotonicFit interpolates linearly, so a
        stretch is flat between its ends and the ramp between two stretches
        joins the last point of one to the first of the next: the rebuilt map
        gives the fitted one's value at every confidence, bit for bit.
        """
        thresholds, values = [], []
        for first, last, value in self.isotonic:
            for point in ((first,) if first == last else (first, last)):
                thresholds.append(point)
                values.append(value)
        return IsotonicFit(tuple(thresholds), tuple(values))

    def calibrate(self, confidence: float) -> float:
        """The calibrated confidence, in [0, 1], of a raw one (post 06's map). Raises ValueError for NaN."""
        return self.isotonic_fit()(confidence)

    def acts(self, record: Answer, calibrated: float) -> bool:
        """Whether the act route takes an answer: calibrated >= t_act (False without an act route), as
        routes.Thresholds.acts."""
        return self.t_act is not None and calibrated >= self.t_act

    @property
    def calib_path(self) -> Path:
        """The calib file as a path (calib_file taken from the repository root when relative)."""
        path = Path(self.calib_file)
        return path if path.is_absolute() else ROOT / path


def _fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def check_fields(router: Router) -> None:
    """Raise ValueError naming the first field of `router` that no fit can give: a format other than FORMAT, a
    sha256 that is not 64 hex digits, a count below 0, a target outside (0, 1], a threshold or P(right) outside
    [0, 1], stretches that do not rise (first <= last < next first, values non-decreasing), no stretch."""
    if router.format != FORMAT:
        raise ValueError(f"format version {router.format!r}, but this route.py reads version {FORMAT}: "
                         "refit with routes.py")
    for name in ("label_sha256", "prompt_sha256", "grammar_sha256", "calib_sha256"):
        value = getattr(router, name)
        if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
            raise ValueError(f"{name} is not a hex sha256")
    for name in ("dataset", "model", "build", "calib_file", "fitted"):
        if not isinstance(getattr(router, name), str) or not getattr(router, name):
            raise ValueError(f"{name} is not a non-empty text")
    for name in ("calib_answers", "act_answers", "ask_answers"):
        value = getattr(router, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} is not a count")
    for name in ("target", "ask_target"):
        if not _fraction(getattr(router, name)) or getattr(router, name) == 0:
            raise ValueError(f"{name} is not a fraction in (0, 1]")
    for name in ("t_act", "t_ask"):
        if getattr(router, name) is not None and not _fraction(getattr(router, name)):
            raise ValueError(f"{name} is neither null nor in [0, 1]")
    if not router.isotonic:
        raise ValueError("isotonic has no stretch")
    previous = None
    for stretch in router.isotonic:
        if len(stretch) != 3 or not all(_fraction(x) for x in stretch) or stretch[0] > stretch[1]:
            raise ValueError(f"isotonic stretch {list(stretch)!r} is not [first, last, P(right)] in [0, 1]")
        if previous is not None and (stretch[0] <= previous[1] or stretch[2] < previous[2]):
            raise ValueError(f"isotonic stretches {list(previous)!r} and {list(stretch)!r} do not rise")
        previous = stretch
    if not all(isinstance(code, str) for code in router.out_of_scope):
        raise ValueError("out_of_scope is not a list of codes")


def route_of(record: Answer, calibrated: float, thresholds) -> str:
    """The route of one answer: "act", "ask" or "hand_over".

    record: a post 03 results line, or route.py's LiveAnswer; calibrated: its
    calibrated confidence, compared with t_act (thresholds.acts) and t_ask.
    thresholds: routes.Thresholds (fitted on calib), or a Router (read from
    its file); anything with acts(), t_ask and out_of_scope. An answer
    without a code, or with a code in thresholds.out_of_scope, hands over
    whatever its confidence. A confidence exactly at a threshold takes that
    threshold's route.
    """
    if record.status != "ok" or record.code in thresholds.out_of_scope:
        return "hand_over"
    if thresholds.acts(record, calibrated):
        return "act"
    if thresholds.t_ask is not None and calibrated >= thresholds.t_ask:
        return "ask"
    return "hand_over"


def top_two(record: Answer) -> tuple[str, ...]:
    """The codes a clarifying question names: the answer's code, then the runner-up in its group.

    record: an answer with status ok (its code, group_letter, intent_letter
    and intent_distribution are read). The runner-up is the most likely other
    intent letter of the chosen group (ties broken by letter). Intents of
    other groups have no probability: the model wrote only one group letter,
    and the intent step was asked inside that group alone. So when the group
    is wrong, the right intent is never among the two. A group with a single
    intent gives one code.
    """
    distribution = record.intent_distribution
    others = sorted((x for x in distribution if x != record.intent_letter), key=lambda x: (-distribution[x], x))
    return (record.code, *(f"{record.group_letter}-{x}" for x in others[:1]))


def router_name(calib_path: Path) -> str:
    """The router file's name for a calib file: "banking77-calib.jsonl" -> "banking77-router.json" (a variant's
    "banking77-combined5-calib.jsonl" -> "banking77-combined5-router.json"). A .json name is never read as a
    results file (those end in .jsonl)."""
    stem = calib_path.name.removesuffix(".jsonl")
    return stem.removesuffix("-calib") + SUFFIX


def repository_path(path: Path) -> str:
    """A path as the router file names it: relative to the repository root when inside it, else absolute."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def router_from(calib_path: Path, calib: list, isotonic: IsotonicFit, thresholds, dataset,
                fitted: datetime.date | None = None) -> Router:
    """The Router of a fit: calib_path and calib (its answers, post 03's ResultsLine, error lines left out),
    post 06's isotonic map fitted on them, post 08's routes.Thresholds, and the registry's Dataset.

    The prompt's sha256 is the one the calib answers carry (prompt_sha256 of
    each line; an older file whose lines carry none is taken to be made with
    the dataset's saved prompt, <name>.prompt.txt); the grammar's is the
    dataset's saved grammar (<name>.gbnf). Raises ValueError when the calib
    answers come from more than one model and build, or carry a prompt
    sha256 other than the saved prompt's (the router would be fitted for a
    prompt that route.py does not send).
    """
    models = sorted({(r.model, r.build) for r in calib})
    if len(models) != 1:
        raise ValueError(f"{calib_path.name} holds answers of {len(models)} model and build pairs: a router is "
                         "fitted on one model's answers")
    saved = dataset.saved_prompt()
    prompt_sha256 = text_sha256(saved.system)
    if {r.prompt_sha256 for r in calib} - {None, prompt_sha256}:
        raise ValueError(f"{calib_path.name} was answered with another prompt than {dataset.name}'s saved one: "
                         "rerun run.py --split calib, or save the prompt that made it")
    return Router(
        format=FORMAT, dataset=dataset.name, label_sha256=sha256_of(dataset.label_file),
        prompt_sha256=prompt_sha256, grammar_sha256=text_sha256(saved.grammar), model=models[0][0],
        build=models[0][1] or "unknown", calib_file=repository_path(calib_path), calib_sha256=sha256_of(calib_path),
        calib_answers=len(calib), isotonic=tuple(isotonic.blocks()), target=thresholds.target,
        ask_target=thresholds.ask_target, t_act=thresholds.t_act,
        act_answers=thresholds.act.kept if thresholds.act else 0, t_ask=thresholds.t_ask,
        ask_answers=thresholds.ask.kept if thresholds.ask else 0, out_of_scope=tuple(sorted(thresholds.out_of_scope)),
        fitted=(fitted or datetime.date.today()).isoformat())


def router_json(router: Router) -> str:
    """The file's text: one JSON object with Router's fields in their order, one field a line (one isotonic
    stretch a line), ending in a newline. Floats are written as Python's repr, so they read back bit for bit."""
    def value(name, field_value) -> str:
        if name == "isotonic":
            return "[\n" + ",\n".join(f"    {json.dumps(list(stretch))}" for stretch in field_value) + "\n  ]"
        return json.dumps(field_value)
    return "{\n" + ",\n".join(f"  {json.dumps(name)}: {value(name, v)}" for name, v in asdict(router).items()) + "\n}\n"


def write_router(router: Router, path: Path) -> Path:
    """Write the router to `path` atomically and return the path.

    Post 02's replace_lines: the text goes to a temporary file in the same
    folder, is fsynced, then renamed over `path`, so a reader sees the old
    file or the new one, never half of one, and a failure leaves no
    temporary file behind. The folder is created when missing.
    """
    from results_file import replace_lines  # only the writer (routes.py) needs it; route.py reads

    path.parent.mkdir(parents=True, exist_ok=True)
    replace_lines(path, [router_json(router).rstrip("\n").encode("utf-8")])
    return path


def read_router(path: Path) -> Router:
    """The Router in a router file.

    Raises FileNotFoundError when there is no file (naming routes.py, which
    writes one), and ValueError naming the file when it cannot be read or is
    not one router object of this format version: not JSON,
    not an object, a field missing or unknown, another format version, or a
    field no fit can give (check_fields).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no router file at {path}: python3 08-routes/routes.py writes one") from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read as a router file ({error.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a router file: not JSON ({error})") from None
    return router_of(data, str(path))


def router_of(data, where: str) -> Router:
    """The Router of a router file's JSON value (`where` names the file in errors). Raises ValueError as
    read_router does for anything but one router object of this format version."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} is not a router file: not a JSON object")
    if data.get("format") != FORMAT:
        raise ValueError(f"{where} is a router file of format version {data.get('format')!r}; this route.py reads "
                         f"version {FORMAT}: refit it with routes.py")
    names = [f.name for f in fields(Router)]
    if missing := [name for name in names if name not in data]:
        raise ValueError(f"{where} is not a router file: no {', '.join(missing)}")
    if unknown := sorted(set(data) - set(names)):
        raise ValueError(f"{where} is not a router file: unknown field {', '.join(unknown)}")
    try:
        data = dict(data, isotonic=tuple(tuple(stretch) for stretch in data["isotonic"]),
                    out_of_scope=tuple(data["out_of_scope"]))
        return Router(**data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where} is not a usable router file: {error}") from None


def own_router_path(dataset: str) -> Path:
    """Where routes.py writes the router of a reader's own calib run: 03-where-confidence-comes-from/results/
    <dataset>-router.json (git-ignored, beside the runs)."""
    return OWN_FOLDER / f"{dataset}{SUFFIX}"


def reference_router_path(dataset: str) -> Path | None:
    """The committed reference router of a dataset: <dataset>-router.json in results/reference/<model>/ or a
    post folder's reference/<model>/ (the first found, in that order); None when there is none."""
    for pattern in REFERENCE_GLOBS:
        for folder in sorted(ROOT.glob(pattern)):
            if (folder / f"{dataset}{SUFFIX}").is_file():
                return folder / f"{dataset}{SUFFIX}"
    return None


def default_router_path(dataset: str) -> Path:
    """The router route.py reads without --router: the reader's own (own_router_path) when it exists, else the
    committed reference one. Raises FileNotFoundError naming the command that writes one when neither exists."""
    own = own_router_path(dataset)
    if own.is_file():
        return own
    if reference := reference_router_path(dataset):
        return reference
    raise FileNotFoundError(f"no router for {dataset}: write one with python3 08-routes/routes.py --dataset {dataset}")


def calib_state(router: Router) -> str:
    """Whether the router's calib file is the one it was fitted on, as a clause: "calib file checked" when its
    sha256 matches, "calib file ... not here, not checked" when absent. Raises ValueError when the file is there
    but changed since the fit (its sha256 differs): the router no longer describes that file's answers."""
    path = router.calib_path
    if not path.is_file():
        return f"calib file {router.calib_file} not here, not checked"
    if sha256_of(path) != router.calib_sha256:
        raise ValueError(f"{router.calib_file} has changed since the router was fitted on it (sha256 differs): "
                         "refit with routes.py, or give --router a router of this file")
    return f"calib file {router.calib_file} unchanged"
