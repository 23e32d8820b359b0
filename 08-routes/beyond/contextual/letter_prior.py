"""The model's prior over the letters of a prompt: its answer to content-free messages (beyond the series).

    python3 08-routes/beyond/contextual/letter_prior.py                          # BANKING77: 3 inputs x 8 groups = 24 requests
    python3 08-routes/beyond/contextual/letter_prior.py --dataset card_help      # a task of one group: 3 requests

contextual.py divides each step's distribution by this prior (Zhao et al.
2021, "Calibrate Before Use"). For each content-free input ("N/A", "",
"[MASK]": contextual.CONTENT_FREE) it sends the dataset's own typed
request (the system prompt, the input as the customer's message, the
grammar, greedy, top_logprobs candidates per token: 00-setup's
typed_request, as post 03's run.py asks) and reads post 03's renormalized
distributions (confidence.typed_answer):

- the group step: the distribution over the group letters;
- the intent step after each group: a request whose grammar allows only
  that group's codes (shortlist.py's `shortlisted`), so the group letter is
  forced and the intent step is read after it. The system prompt stays
  the same, so the server keeps its cached prefill. The request with the
  whole grammar already gives the intent step after the group it chose.

The prior of a step is the mean of the inputs' distributions. It is
written to 03-where-confidence-comes-from/results/<dataset>-prior-<model>-<sha>.json
(contextual.own_prior_path), named by the model and the prompt's sha256,
with the server's build inside; --out writes it elsewhere. An input the
chat template or the server refuses stops the script with one line and
nothing written.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import series  # puts the post folders on sys.path
from confidence import TypedAnswer, typed_answer
from contextual import CONTENT_FREE, LetterPrior, mean_distribution, own_prior_path
from llama_http import exit_on_server_errors
from prompt import Prompt
from registry import add_dataset_argument
from results_file import relative
from shortlist import shortlisted
from typed_lines import TypedRun, start_run
from typed_request import TOP_LOGPROBS, request_settings, typed_messages


def content_free_answer(run: TypedRun, asked: Prompt, text: str) -> TypedAnswer:
    """The typed answer to one content-free message `text` ("" allowed: an empty customer turn), with `asked`'s
    grammar: the typed request of 00-setup (typed_messages, request_settings) with room for a 3-token code
    ('C', '-', 'F'), read by post 03's typed_answer. Raises ValueError when the reply is no code of the table,
    and what the client raises for a refused request."""
    settings = request_settings(asked, True, run.top_logprobs, max_tokens=3)
    reply = run.client.chat(typed_messages(asked, text), **settings)
    return typed_answer(reply.body, asked, run.top_logprobs)


def measure_prior(run: TypedRun, dataset: str, inputs: tuple[str, ...] = CONTENT_FREE, report=print) -> LetterPrior:
    """The LetterPrior of run's prompt: for each input, one request with the whole grammar (the group step, and
    the intent step after the group it chose) and one per other group with that group forced (shortlisted).
    len(inputs) x (number of groups) requests. report: called with one line per input."""
    prompt = run.prompt
    groups, intents, off_group, off_intent = [], {g: [] for g in prompt.group_letters}, [], []
    for text in inputs:
        whole = content_free_answer(run, prompt, text)
        groups.append(whole.group_step.distribution)
        off_group.append(whole.group_step.off_label_mass)
        chosen = whole.code[0]
        steps = {chosen: whole.intent_step}
        for group in prompt.group_letters:
            if group != chosen:
                forced = shortlisted(prompt, [code for code in prompt.codes if code[0] == group])
                steps[group] = content_free_answer(run, forced, text).intent_step
        for group, step in steps.items():
            intents[group].append(step.distribution)
            off_intent.append(step.off_label_mass)
        report(f"  {text!r:>10}: {whole.code} (group step {whole.group_step.off_label_mass:.1%} off-label), "
               f"{len(steps)} request{'s' if len(steps) > 1 else ''}")
    return LetterPrior(dataset, run.model, run.build, prompt.sha256, tuple(inputs), run.top_logprobs,
                       mean_distribution(groups), {g: mean_distribution(d) for g, d in intents.items()},
                       {"group": sum(off_group) / len(off_group), "intent": sum(off_intent) / len(off_intent)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dataset_argument(parser)
    parser.add_argument("--top-logprobs", type=int, default=TOP_LOGPROBS,
                        help=f"candidates per token (default: {TOP_LOGPROBS}, as run.py)")
    parser.add_argument("--out", type=Path, help="where to write the prior (default: "
                        "03-where-confidence-comes-from/results/<dataset>-prior-<model>-<sha>.json)")
    args = parser.parse_args()
    run = start_run(args.dataset, args.top_logprobs)
    groups = len(run.prompt.group_letters)
    print(f"{args.dataset} (model {run.model}, build {run.build}): {len(CONTENT_FREE)} content-free inputs x "
          f"{groups} group{'s' if groups > 1 else ''} = {len(CONTENT_FREE) * groups} requests")
    prior = measure_prior(run, args.dataset)
    print("group step prior: " + " ".join(f"{g} {p:.3f}" for g, p in prior.group.items()))
    for group, distribution in prior.intent.items():
        print(f"intent step after {group}: " + " ".join(f"{x} {p:.3f}" for x, p in distribution.items()))
    out = args.out or own_prior_path(args.dataset, run.model, run.prompt.sha256)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(prior.to_json(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {relative(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main))
