"""Which decision to serve: the router whose served decision acts on the most calib answers, and what the model adds.

    choice = choose("banking77")                  # every router there is (decision_router.found_routers)
    print("\\n".join(choice_lines(choice)))

Each decision router records the calib messages its served decision acts
on (its thresholds, then what stands before act: decision_router.py), with
the off-topic answers counted in its thresholds. The choice is the router
whose act coverage on calib is highest; on equal coverage the decision
without the model wins (the same decisions, no llama-server), then the
order of decisions.DECISIONS. What the model adds is the chosen decision's
act coverage minus its twin's (decisions.Decision.twin: the same decision
with the model if it has none, without it if it has one), paired over the
same calib messages, with oos_cost.py's 95% interval of a paired difference
(Agresti 2013, 11.1). An interval that holds 0, or lies below it, is "the
model adds nothing on calib".
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from decision_router import DecisionRouter, checked_file, found_routers, read_decision_router, read_lines
from decisions import DECISIONS, Decider
from oos_cost import PairedCost

TIMED_MESSAGES = 50  # calib messages the decision without the model is timed on (what the model adds)


@dataclass(frozen=True)
class Found:
    """One router file found: its path and the router, or why it cannot be read (problem)."""

    name: str
    path: Path
    router: DecisionRouter | None
    problem: str | None = None


def candidates(dataset: str, found: dict[str, Path] | None = None) -> list[Found]:
    """Every router there is for the dataset (found_routers, or `found`), read; one that cannot be read is kept
    with its problem (it is never chosen)."""
    listed = []
    for name, path in (found if found is not None else found_routers(dataset)).items():
        try:
            listed.append(Found(name, path, read_decision_router(path)))
        except (OSError, ValueError) as error:
            listed.append(Found(name, path, None, str(error)))
    return listed


def rank_key(candidate: Found) -> tuple:
    """Higher act coverage on calib first; on a tie, no model first, then DECISIONS' order."""
    router = candidate.router
    return (-len(router.calib_acted) / router.router.calib_answers, router.decision.model,
            list(DECISIONS).index(candidate.name))


def paired_acts(with_model: DecisionRouter, without: DecisionRouter) -> PairedCost:
    """The act coverage on calib of a decision with the model against its twin without it, paired over the calib
    messages both were fitted on (the same calib run): oos_cost.PairedCost with "right" read as "acted on".
    Raises ValueError when the two routers were fitted on different calib messages."""
    if with_model.router.calib_answers != without.router.calib_answers or \
            with_model.files["calib"]["sha256"] != without.files["calib"]["sha256"]:
        raise ValueError("the two routers were fitted on different calib runs: no paired comparison")
    acted_with, acted_without = set(with_model.calib_acted), set(without.calib_acted)
    n = with_model.router.calib_answers
    return PairedCost(n=n, right_without=len(acted_without), right_with=len(acted_with),
                      only_without=len(acted_without - acted_with), only_with=len(acted_with - acted_without),
                      out_of_scope=0, out_of_scope_right_without=0, other_changes=0)


@dataclass(frozen=True)
class Choice:
    """The chosen router, the runner-up (None when it is alone), the chosen decision's twin (None when there
    is none, or no router of it), and the paired act coverage of the model's decision against its twin."""

    chosen: Found
    runner_up: Found | None
    twin: Found | None
    added: PairedCost | None
    unreadable: list[Found]


def choose(dataset: str, found: dict[str, Path] | None = None) -> Choice:
    """The Choice among the dataset's routers. Raises FileNotFoundError naming the command that fits them when
    there is no readable one."""
    listed = candidates(dataset, found)
    readable = sorted((c for c in listed if c.router is not None), key=rank_key)
    if not readable:
        problems = "; ".join(c.problem for c in listed if c.problem) or "none found"
        raise FileNotFoundError(f"no decision router for {dataset} ({problems}): fit them with python3 "
                                f"08-routes/beyond/decisions/fit_routers.py{'' if dataset == 'banking77' else ' --dataset ' + dataset}")
    chosen = readable[0]
    twin_name = chosen.router.decision.twin
    twin = next((c for c in readable if c.name == twin_name), None)
    added = None
    if twin is not None:
        pair = (chosen, twin) if chosen.router.decision.model else (twin, chosen)
        try:
            added = paired_acts(pair[0].router, pair[1].router)
        except ValueError:
            added = None
    return Choice(chosen, readable[1] if len(readable) > 1 else None, twin, added,
                  [c for c in listed if c.router is None])


def coverage_text(router: DecisionRouter) -> str:
    """'44.7% of 770 calib answers (344)': the served act coverage on calib."""
    acted, n = len(router.calib_acted), router.router.calib_answers
    return f"{100 * acted / n:.1f}% of {n} calib answers ({acted})"


def choice_lines(choice: Choice, model_ms: float | None = None, alone_ms: float | None = None) -> list[str]:
    """What the service prints first: the decision and why, the runner-up, the act coverage with and without the
    model and the paired difference, and where it holds 0, that the model adds nothing on calib, with the time
    of each (model_ms: a typed request's median ms; alone_ms: the decision without the model, ms a message)."""
    c = choice.chosen
    target = c.router.router.target
    lines = [f"decision: {c.name}: {c.router.decision.what}; chosen because it acts on the most calib answers at "
             f"{100 * target:.1f}%: {coverage_text(c.router)}"]
    if choice.runner_up is not None:
        lines.append(f"runner-up: {choice.runner_up.name}: {coverage_text(choice.runner_up.router)}")
    if choice.twin is not None and choice.added is not None:
        added = choice.added
        low, high = added.interval()
        with_name, without_name = (c.name, choice.twin.name) if c.router.decision.model else (choice.twin.name, c.name)
        lines.append(f"what the model adds on calib: {with_name} acts on {100 * added.right_with / added.n:.1f}%, "
                     f"{without_name} on {100 * added.right_without / added.n:.1f}%: {100 * added.difference:+.1f} "
                     f"points (95% interval {100 * low:+.1f} to {100 * high:+.1f})")
        if low <= 0:  # no evidence that the model adds act coverage: its interval holds 0, or lies below it
            speed = ""
            if model_ms is not None and alone_ms is not None:
                speed = (f"; without it a message takes {alone_ms:.1f} ms here against {model_ms:.0f} ms for the "
                         f"typed request (median of the calib run), about {model_ms / max(alone_ms, 1e-3):.0f} times "
                         "faster, and needs no llama-server")
            where = "holds 0" if high >= 0 else "lies below 0: the model costs act coverage"
            lines.append(f"the model adds nothing on calib (its interval {where}){speed}")
    elif c.router.decision.twin is not None:
        lines.append(f"what the model adds: no router of {c.router.decision.twin} to compare with")
    for bad in choice.unreadable:
        lines.append(f"not considered: {bad.path.name}: {bad.problem}")
    return lines


def router_of_options(dataset: str, router: Path | None = None, decision: str | None = None) -> tuple[Path, Choice | None]:
    """The router file a script's options name: `router` (a file), else `decision`'s router for the dataset
    (found_routers), else the choice among the dataset's routers: (path, the Choice or None). Raises
    FileNotFoundError naming the command that fits routers when there is none."""
    if router is not None:
        return router, None
    if decision is not None:
        found = found_routers(dataset)
        if decision not in found:
            raise FileNotFoundError(f"no router of the decision {decision} for {dataset}: fit it with python3 "
                                    f"08-routes/beyond/decisions/fit_routers.py --decision {decision}"
                                    + ("" if dataset == "banking77" else f" --dataset {dataset}"))
        return found[decision], None
    choice = choose(dataset)
    return choice.chosen.path, choice


def add_router_options(parser) -> None:
    """--decision NAME and --router FILE (one of the two): which decision router a script serves, instead of the
    one whose served decision acts on the most calib answers."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--decision", choices=list(DECISIONS), metavar="NAME",
                       help=f"this decision's router ({', '.join(DECISIONS)}) instead of the one that acts on the "
                            "most calib answers (decisions/choose.py)")
    which.add_argument("--router", type=Path, metavar="FILE",
                       help="this decision router file (decisions/fit_routers.py writes them)")


def choice_speed(choice: Choice, ready, timed: int = TIMED_MESSAGES) -> tuple[float | None, float | None]:
    """(a typed request's median ms on the calib run of the decision with the model, ms a message of the decision
    without it timed here on `timed` calib messages) when the choice has both; else (None, None). ready: the
    chosen router made ready (decision_router.ready_router)."""
    if choice.twin is None:
        return None, None
    with_model, without = ((choice.chosen, choice.twin) if choice.chosen.router.decision.model
                           else (choice.twin, choice.chosen))
    model_ms = statistics.median(line.wall_ms for line in ready.calib if line.status == "ok") \
        if with_model is choice.chosen else None
    if model_ms is None:  # the chosen decision has no model: its twin's calib run has the same typed requests
        model_ms = statistics.median(line.wall_ms for line in read_lines(checked_file(with_model.router, "calib")))
    alone = Decider(without.router.decision, ready.decider.prompt, without.router.weights, ready.decider.ranking,
                    ready.decider.out_of_scope)
    texts = [line.text for line in ready.calib[:timed]]
    started = time.perf_counter()
    for text in texts:
        alone.line(text, None)
    return model_ms, 1000 * (time.perf_counter() - started) / len(texts)
