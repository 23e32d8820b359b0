"""A router for any decision: post 08's router file, with the decision and everything it needs at request time.

    router = fit_decision_router("banking77", DECISIONS["model+regression"])      # from the saved runs, once
    write_decision_router(router, path)
    router = read_decision_router(path); check_decision_router(router, path)       # the service, at start
    ready = ready_router(router)          # the decider, the calibration, the safety checks: nothing refitted later

Post 08's routes.py fits a router on the model alone's calib answers and
route.py serves it. This fits the same router (post 06's isotonic map, post
08's thresholds, fitted by post 08's own functions) on the calib answers of
any decision of decisions.py, and records, each with its sha256, what
answering a message needs besides the server: the saved runs the answers
are made from (the calib file, and the off-topic answers, below), the
ranking (post 01's nearest neighbours' index or the logistic regression's
weights) and the combined weights. A router whose files changed since the
fit is refused in one line (check_decision_router).

Off-topic calibration. Every calib answer is a request to the bank. The
answers of the decision to the off-topic set (message_sets.py: CLINC150
messages no bank is asked; set_answers.py asks them), each counted wrong,
join the calib answers in the fit of the thresholds (act, ask and harm.py's
t_change), not in the isotonic map: a cut that would act on such answers
must reach its target with them counted as mistakes. The router says how
many joined (offtopic_answers).

The file holds one JSON object: "format" (FORMAT), "decision" (its name,
source, whether it asks the model, the shortlist's K, the weights), "files"
(name -> path and sha256: the calib file, the off-topic answers, the
ranking), "calib_acted" (the ids of the calib messages the served decision
acts on: thresholds, then what stands before act at the change target, for
the choice of the service: choose.py), "change_target", and "router": post
08's router object, which route.py refuses on its own (the format differs).
"""
from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from combined import Weights, candidates_of, fit_weights
from decisions import DECISIONS, Decider, Decision, decision_named, derived_answers, retriever_sha256
from ece import outcomes
from harm import CHANGE_TARGET
from isotonic import IsotonicFit, fit_isotonic
from prompt import load_prompt
from registry import DATASETS
from results_record import ResultsLine, parse_lines
from datafiles import sha256_of
from router_file import ROOT, Router, repository_path, router_from, router_json, router_of
from routes import ASK_TARGET, TARGET, fit_thresholds, route_of
from safety import Safety, fit_safety, route_before_act
from saved_answers import OWN_RESULTS, Loaded
from variants import read_variant

FORMAT = "decision-router 1"
SUFFIX = "-decision-router.json"
# The share of the thresholds' fit that off-topic answers make: one message in twenty is not a request to the bank.
# Measured in README.md: at 10% no decision of BANKING77 acts on 40% of calib; at 5% the regression acts on half.
OFFTOPIC_SHARE = 0.05


@dataclass(frozen=True)
class DecisionRouter:
    """One decision's router, as its file holds it.

    decision: decisions.Decision. weights: combined.py's, fitted on the calib
    lines (None for the model alone). files: name -> {"path", "sha256"}:
    "calib" (the saved calib run the answers are made from), "offtopic" (the
    off-topic answers that joined the thresholds' fit; absent without them),
    "ranking" (its "kind": neighbours or regression, and the sha256 of the
    index or the weights; absent for the model alone). calib_acted: ids of
    the calib messages the served decision acts on, sorted. offtopic_answers:
    how many off-topic answers joined the fit. change_target: harm.py's.
    router: post 08's Router of the decision's calib answers. field_gates:
    for a dataset with fields (fields/), each gating field's calibration and
    threshold as field_gates_entry stores them (() without fields).
    """

    decision: Decision
    weights: Weights | None
    files: dict = field(hash=False)
    calib_acted: tuple[str, ...]
    offtopic_answers: int
    change_target: float
    router: Router
    field_gates: tuple = ()

    @property
    def act_coverage(self) -> float:
        """The share of the calib answers the served decision acts on, in [0, 1]."""
        return len(self.calib_acted) / self.router.calib_answers


def decision_json(router: DecisionRouter) -> str:
    """The file's text: the fields in order, one a line, post 08's router object last in its own layout."""
    decision = {"name": router.decision.name, "source": router.decision.source, "model": router.decision.model,
                "shortlist": router.decision.shortlist,
                "weights": list(router.weights.values()) if router.weights else None}
    head = {"format": FORMAT, "decision": decision, "files": router.files, "offtopic_answers": router.offtopic_answers,
            "change_target": router.change_target, "field_gates": list(router.field_gates),
            "calib_acted": list(router.calib_acted)}
    inner = router_json(router.router).rstrip("\n").replace("\n", "\n  ")
    return "{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items()) + f'  "router": {inner}\n}}\n'


def write_decision_router(router: DecisionRouter, path: Path) -> Path:
    """Write the router atomically (post 02's replace_lines) and return the path."""
    from results_file import replace_lines
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_lines(path, [decision_json(router).rstrip("\n").encode("utf-8")])
    return path


def read_decision_router(path: Path) -> DecisionRouter:
    """The DecisionRouter in a file. Raises FileNotFoundError (naming fit_routers.py) when there is none, and
    ValueError naming the file for anything but one router of FORMAT (a post 08 router file says so)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no router file at {path}: python3 08-routes/beyond/decisions/fit_routers.py "
                                "writes one") from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read as a router file ({error.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a router file: not JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        hint = " (post 08's router: route.py reads it)" if found == 1 else ""
        raise ValueError(f"{path} is not a decision router of format {FORMAT!r}{hint}")
    try:
        spec = data["decision"]
        decision = decision_named(spec["name"])
        if (spec["source"], spec["model"]) != (decision.source, decision.model):
            raise ValueError(f"its decision {spec['name']} has source {spec['source']!r} and model {spec['model']!r}")
        weights = None if spec["weights"] is None else Weights.from_values(tuple(spec["weights"]))
        if decision.combined != (weights is not None):
            raise ValueError(f"the decision {decision.name} {'needs' if decision.combined else 'has no'} weights")
        files = data["files"]
        if not (isinstance(files, dict) and "calib" in files and all(
                isinstance(f, dict) and isinstance(f.get("sha256"), str) for f in files.values())):
            raise ValueError("files is not name -> {path, sha256}")
        return DecisionRouter(decision, weights, files, tuple(data["calib_acted"]), int(data["offtopic_answers"]),
                              float(data["change_target"]), router_of(data["router"], f"{path} (its router)"),
                              tuple(data.get("field_gates", ())))
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a usable decision router: {error!r} missing or wrong") from None
    except ValueError as error:
        raise ValueError(f"{path} is not a usable decision router: {error}") from None


def file_entry(path: Path) -> dict:
    """{"path": the path as a router names it (router_file.repository_path), "sha256": of its bytes}."""
    return {"path": repository_path(path), "sha256": sha256_of(path)}


def entry_path(entry: dict) -> Path:
    """The file of a files entry (relative paths from the repository root)."""
    path = Path(entry["path"])
    return path if path.is_absolute() else ROOT / path


# ---------------------------------------------------------------- the ranking, fitted once and checked

def regression_files(dataset) -> tuple[object, Path]:
    """(the logistic regression of a dataset's shortlists, fitted or read from linear.py's cache, its cache
    path without suffix): the fit shortlist.py --source linear uses."""
    from combined import source_messages
    from linear import C, CACHE, EPOCHS, SEED, cache_key, fit_classifier
    messages = source_messages(dataset, "linear")
    return fit_classifier(messages), CACHE / cache_key(messages, C, EPOCHS, SEED)


def weights_sha256(cache_path: Path) -> str:
    """Hex sha256 of a saved regression (linear.save_classifier's two files): of the .json's sha256 and the .bin's."""
    parts = [sha256_of(cache_path.with_name(cache_path.name + suffix)) for suffix in (".json", ".bin")]
    return hashlib.sha256("".join(parts).encode()).hexdigest()


def fitted_ranking(dataset, source: str):
    """(ranking function, files entry) of a shortlist source of dataset (registry.Dataset): post 01's nearest
    neighbours ("knn": the sha256 of the index, decisions.retriever_sha256) or a logistic regression ("linear",
    "examples": linear.py's cache files and their sha256, weights_sha256)."""
    from shortlist import ranking
    if source == "knn":
        retriever = dataset.fit_retriever()
        return retriever.rank, {"kind": "neighbours", "path": "", "sha256": retriever_sha256(retriever)}
    rank = ranking(dataset, source)  # fits (minutes, once) or reads linear.py's cache
    if source == "linear":
        _, path = regression_files(dataset)
    else:
        from combined import source_messages
        from linear import C, CACHE, EPOCHS, SEED, cache_key
        path = CACHE / cache_key(source_messages(dataset, source), C, EPOCHS, SEED)
    return rank, {"kind": "regression", "path": str(path), "sha256": weights_sha256(path)}


# ---------------------------------------------------------------- the fit

def dataset_prompt(dataset: str):
    """The prompt a dataset's answers are asked with: fields.py's (the code, then every field) where its label
    file declares fields, else post 02's."""
    from fields import fields_of, fields_prompt
    return fields_prompt(dataset).prompt if fields_of(dataset) else load_prompt(dataset)


def field_gates_entry(dataset: str) -> list[dict]:
    """The gates of a dataset's fields (fields_route.fit_field_gates, from the field views of field_report.py)
    as a router stores them: key, the isotonic map's thresholds and values, t_field, the calib answers; [] for
    a dataset without fields."""
    from fields import fields_of
    if not fields_of(dataset):
        return []
    from fields_route import fit_field_gates
    return [{"key": gate.field.key, "thresholds": list(gate.calibration.thresholds),
             "values": list(gate.calibration.values), "threshold": gate.threshold, "answers": gate.answers}
            for gate in fit_field_gates(dataset)]


def field_gates_of(dataset: str, entries: list[dict]) -> list:
    """The FieldGates a router stores (field_gates_entry), rebuilt bit for bit: nothing is refitted."""
    from fields import fields_of
    from fields_route import FieldGate
    fields = {field.key: field for field in fields_of(dataset)}
    return [FieldGate(fields[entry["key"]], IsotonicFit(tuple(entry["thresholds"]), tuple(entry["values"])),
                      entry["threshold"], entry["answers"]) for entry in entries]


def offtopic_path(dataset: str, decision: Decision) -> Path:
    """The off-topic answers of the decision's run variant: your own (set_answers.py writes them in
    03-where-confidence-comes-from/results/) where they exist, else the committed ones (a reference folder)."""
    from saved_answers import reference_path
    variant = decision.run_variant
    name = f"{dataset}-{variant + '-' if variant else ''}offtopic.jsonl"
    return OWN_RESULTS / name if (OWN_RESULTS / name).exists() else reference_path(name)


def offtopic_sample(lines: list[ResultsLine], count: int) -> list[ResultsLine]:
    """The first `count` off-topic answers in the order of the sha256 of "0:" + their id: a seeded sample that
    depends on the ids only, so a router's reader takes the same ones from the same file."""
    ordered = sorted(lines, key=lambda line: hashlib.sha256(f"0:{line.id}".encode()).hexdigest())
    return ordered[:count]


def offtopic_count(calib_answers: int, available: int, share: float) -> int:
    """How many off-topic answers make `share` of a fit with calib_answers calib answers (all the available ones
    at most): round(calib x share / (1 - share)). Raises ValueError for a share outside [0, 1)."""
    if not 0.0 <= share < 1.0:
        raise ValueError(f"the off-topic share must be in [0, 1), like 0.05, not {share!r}")
    return min(available, round(calib_answers * share / (1.0 - share)))


def read_lines(path: Path) -> list[ResultsLine]:
    """The answers of a saved run file (error lines left out). Raises OSError, ValueError as parse_lines does."""
    lines = parse_lines([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()],
                        str(path))
    return [line for line in lines if line.status != "error"]


@dataclass(frozen=True)
class Fitted:
    """What a fit gives besides the router: the decision's calib answers, the off-topic answers that joined,
    the calibration and the safety checks (for the tables of fit_routers.py)."""

    calib: list[ResultsLine]
    offtopic: list[ResultsLine]
    calibrate: object
    safety: Safety
    gates: tuple = ()


def served_route(line: ResultsLine, calibrated: float, router: Router, safety: Safety, gates=()) -> str:
    """The route the served decision gives an answer: post 08's, then what stands before act (safety.py), then
    the fields' gates where the dataset has fields (fields_route.route_with_fields)."""
    route = route_of(line, calibrated, router)
    if route == "act":
        route = route_before_act(safety.why(line.text, line, calibrated))
    if gates:
        from fields_route import route_with_fields
        route = route_with_fields(route, line, list(gates), safety.harm.kinds)[0]
    return route


def fit_decision_router(dataset_name: str, decision: Decision, calib: Loaded | None = None,
                        offtopic: Path | None = None, target: float = TARGET, ask_target: float = ASK_TARGET,
                        change_target: float = CHANGE_TARGET, offtopic_share: float = OFFTOPIC_SHARE,
                        ) -> tuple[DecisionRouter, Fitted]:
    """Fit a decision's router on its saved calib run (your own complete run, else the committed one, as every
    script reads; `calib` overrides) and its off-topic answers (`offtopic`, else offtopic_path when there; none
    joins when neither is there, or at a share of 0): a seeded sample of them that makes offtopic_share of the
    thresholds' fit (offtopic_count, offtopic_sample).

    The weights (combined.fit_weights, with or without the model) on the calib
    lines whose model answer has a code; the isotonic map on the decision's
    calib answers; the thresholds (post 08's fit_thresholds, with its floor
    rules) on those and the off-topic answers; then what stands before act
    (safety.fit_safety on the calib answers, its t_change on both), and the
    calib messages the whole served decision acts on. Raises what the readers
    and fits raise (a missing calib run names the command that writes it).
    """
    dataset = DATASETS[dataset_name]
    calib = calib or read_variant("calib", None, dataset_name, decision.run_variant)
    out_of_scope = dataset.out_of_scope_codes()
    prompt = dataset_prompt(dataset_name)
    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}
    weights = None
    if decision.combined:
        fitted = fit_weights([(candidates_of(r, out_of_scope), r.gold_code) for r in calib.records if r.status == "ok"],
                             with_model=decision.model)
        weights = Weights.from_values(fitted.values())  # what request time needs, as the file holds it
    answers = derived_answers(decision, calib.records, weights, intent_of, out_of_scope)
    offtopic = offtopic if offtopic is not None else offtopic_path(dataset_name, decision)
    joined = []
    if offtopic_share > 0 and offtopic.is_file():
        available = read_lines(offtopic)
        chosen = offtopic_sample(available, offtopic_count(len(answers), len(available), offtopic_share))
        joined = derived_answers(decision, chosen, weights, intent_of, out_of_scope)
    isotonic = fit_isotonic(*outcomes(answers))

    def calibrate(line: ResultsLine) -> float:
        return isotonic(line.confidence)
    thresholds = fit_thresholds(answers + joined, calibrate, target, ask_target, out_of_scope)
    files = {"calib": file_entry(calib.path)}
    if joined:
        files["offtopic"] = file_entry(offtopic)  # the whole file: the sample is its first offtopic_answers
    retriever = dataset.fit_retriever()
    if decision.combined:
        files["ranking"] = fitted_ranking(dataset, decision.source)[1]
    safety = fit_safety(dataset_name, answers, calibrate, target, retriever, change_target, out_of_scope,
                        decision.model, joined)
    router = router_from(calib.path, answers, isotonic, thresholds, dataset, datetime.date.today())
    gates_entry = field_gates_entry(dataset_name) if decision.model and not decision.combined else []
    gates = field_gates_of(dataset_name, gates_entry)
    acted = sorted(a.id for a in answers
                   if served_route(a, calibrate(a) if a.status == "ok" else 0.0, router, safety, gates) == "act")
    return (DecisionRouter(decision, weights, files, tuple(acted), len(joined), change_target, router,
                           tuple(gates_entry)), Fitted(answers, joined, calibrate, safety, tuple(gates)))


def own_decision_router_path(dataset: str, decision: str) -> Path:
    """Where fit_routers.py writes a reader's own router: 03-where-confidence-comes-from/results/<dataset>-
    <decision>-decision-router.json (git-ignored, beside the runs)."""
    return OWN_RESULTS / f"{dataset}-{decision}{SUFFIX}"


COMMITTED = Path(__file__).resolve().parent / "routers"  # the routers fitted on the committed runs


def found_routers(dataset: str) -> dict[str, Path]:
    """decision name -> the router file of each decision there is for the dataset: your own (own folder, where
    fit_routers.py writes) where it exists, else the committed one (COMMITTED)."""
    found: dict[str, Path] = {}
    for folder in (OWN_RESULTS, COMMITTED):
        for name in DECISIONS:
            path = folder / f"{dataset}-{name}{SUFFIX}"
            if name not in found and path.is_file():
                found[name] = path
    return found



# ---------------------------------------------------------------- at request time

@dataclass(frozen=True)
class Ready:
    """A decision router made ready to route: the decider (decisions.Decider), the calibration (the router's
    isotonic map: line -> [0, 1], 0.0 for a line without a code), the safety checks fitted on the calib answers,
    those answers, and the off-topic answers that joined the thresholds' fit ([] without them). For a dataset
    with fields: gates, each gating field's FieldGate as the router stores it, and fields, the FieldsPrompt
    whose one request answers the code and every field (fields_run.ask_live_fields); () and None without."""

    router: DecisionRouter
    decider: Decider
    safety: Safety
    calib: list[ResultsLine]
    offtopic: list[ResultsLine]
    gates: tuple = ()
    fields: object = None

    def calibrated(self, line: ResultsLine) -> float:
        """The calibrated confidence of an answer (the router's isotonic map); 0.0 for one without a code."""
        return self.router.router.calibrate(line.confidence) if line.status == "ok" else 0.0

    def with_fields(self, route: str, line: ResultsLine) -> tuple[str, str | None, dict | None]:
        """(the route, the fields' reason or None, what the route object says of each field or None): an act
        stands only where every gating field lets it through (fields_route.route_with_fields); the route as it
        is, None, None for a dataset without fields."""
        if self.fields is None:
            return route, None, None
        from fields_route import route_with_fields, served_fields
        route, why = route_with_fields(route, line, list(self.gates), self.safety.harm.kinds)
        return route, why, served_fields(line, list(self.gates))


def checked_file(router: DecisionRouter, name: str) -> Path:
    """The router's file `name`, checked: ValueError in one line when it is not here or changed since the fit."""
    entry = router.files[name]
    path = entry_path(entry)
    if not path.is_file():
        raise ValueError(f"the router's {name} file {entry['path']} is not here: give the router of runs you have, "
                         f"or refit it with python3 08-routes/beyond/decisions/fit_routers.py --dataset "
                         f"{router.router.dataset}")
    if sha256_of(path) != entry["sha256"]:
        raise ValueError(f"{entry['path']} has changed since the router was fitted on it (sha256 differs): refit "
                         f"with python3 08-routes/beyond/decisions/fit_routers.py --dataset {router.router.dataset}")
    return path


def ready_router(router: DecisionRouter, path: Path, change_target: float | None = None) -> Ready:
    """Everything a router needs at request time, fitted once and checked against its file: the calib and
    off-topic answers remade with the stored weights (their files' sha256 checked), the ranking (its index or
    weights' sha256 checked: a regression fitted anew, or changed in linear.py's cache, is refused), the safety
    checks fitted on them as at the fit (change_target: a stricter one than the router's, for t_change). Raises
    ValueError in one line naming what differs, and what the readers raise. The regression's first fit takes
    minutes (linear.py caches it)."""
    decision = router.decision
    dataset = DATASETS[router.router.dataset]
    prompt = dataset_prompt(dataset.name)
    out_of_scope = dataset.out_of_scope_codes()
    intent_of = {code: meaning.intent for code, meaning in prompt.codes.items()}
    answers = derived_answers(decision, read_lines(checked_file(router, "calib")), router.weights, intent_of,
                              out_of_scope)
    joined = (derived_answers(decision, offtopic_sample(read_lines(checked_file(router, "offtopic")),
                                                        router.offtopic_answers), router.weights, intent_of,
                              out_of_scope) if "offtopic" in router.files else [])
    rank = None
    if decision.combined:
        rank, entry = fitted_ranking(dataset, decision.source)
        if entry["sha256"] != router.files["ranking"]["sha256"]:
            raise ValueError(f"{path}: the {entry['kind']} this machine has for {decision.source} (sha256 "
                             f"{entry['sha256'][:12]}...) is not the one the router was fitted with "
                             f"({router.files['ranking']['sha256'][:12]}...): refit with "
                             f"python3 08-routes/beyond/decisions/fit_routers.py --dataset {dataset.name}")

    def calibrate(line: ResultsLine) -> float:
        return router.router.calibrate(line.confidence)
    safety = fit_safety(dataset.name, answers, calibrate, router.router.target, dataset.fit_retriever(),
                        max(change_target or 0.0, router.change_target), out_of_scope, decision.model, joined)
    fields = None
    if router.field_gates:
        from fields import fields_prompt
        fields = fields_prompt(dataset.name)
    return Ready(router, Decider(decision, prompt, router.weights, rank, out_of_scope), safety, answers, joined,
                 tuple(field_gates_of(dataset.name, list(router.field_gates))), fields)
