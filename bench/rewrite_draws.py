"""Would more `rewrite` draws, and a pick among those that pass, lift pass@1+?

A fresh `rewrite` that passes the shown tests holds on pass@1+'s extra inputs less often than a
`fix` (docs/results.md, "Where pass@1+ is lost"). For every pass a `rewrite` turn wrote in a
committed run, this draws rewrite's opening K more times (the fresh draw's temperature, a seed of
its own per draw), scores each draw as a run scores its final code (the task's tests, then pass@1+
in the default sandbox), and groups the passing draws, the run's own included, by their answers on
pass@1+'s inputs (one sandboxed answers run per draw, as for the canonical solution). Printed per
task and in sum: the tasks where some passing draw holds (what a perfect pick would reach), where
the largest group holds (a pick by agreement, ties broken toward the run's own candidate), and
where all passing draws agree. The groups use the scorer's own inputs, so they show the most an
agent-side check by agreement could see. Nothing of the run is changed.

    python bench/rewrite_draws.py results/RUN.json
    python bench/rewrite_draws.py results/RUN.json --draws 3 --limit 5 --out /tmp/draws.json

The model is a preset (`--model`, default `local`: the embedded model of the committed runs); a
run of another protocol than `tests` is refused, as its rewrites saw something else.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from humanevalfix.agent._request import request_for_task
from humanevalfix.agent._settings import AgentSettings
from humanevalfix.agent.codecheck import check_candidate
from humanevalfix.agent.prompts import rewrite_messages
from humanevalfix.agent.toolcalls import extract_calls, first_usable
from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation import pluscases
from humanevalfix.evaluation.plusstore import CaseStore, default_directory
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import write_atomic
from humanevalfix.evaluation.scorer import score_task
from humanevalfix.models.client import ChatModel, ChatRequest, RetryPolicy
from humanevalfix.models.providers import open_endpoint
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from minimal_fix import add_run_arguments, choose  # noqa: E402  (the same passes and options)

MAX_TOKENS = 768  # where the run's model set none
SEED_BASE = 1000  # draw k is seeded SEED_BASE + k: the same draws in every run of this script


@dataclass(frozen=True)
class Draw:
    name: str  # "run" (the run's own passing rewrite) or "d0", "d1", ...
    code: str | None
    passed: bool
    plus: bool | None  # None: not checked (it failed the tests, or no code)
    group: int | None = None  # passing draws with the same answers on pass@1+'s inputs share one


@dataclass(frozen=True)
class Row:
    task_id: str
    inputs: int  # pass@1+'s inputs the groups were made on
    draws: tuple[Draw, ...]

    def passing(self) -> list[Draw]:
        return [d for d in self.draws if d.passed]

    def some_holds(self) -> bool:
        return any(d.plus is True for d in self.passing())

    def largest_group_holds(self) -> bool:
        """The pick by agreement: the largest group of passing draws, ties to the run's own (none
        to pick where nothing passed, the run's own rewrite included, scored again here)."""
        sizes = Counter(d.group for d in self.passing())
        if not sizes:
            return False
        best = max(sizes, key=lambda g: (sizes[g], g == self.draws[0].group))
        return any(d.plus is True for d in self.passing() if d.group == best)

    def groups(self) -> int:
        return len({d.group for d in self.passing()})


def draw_rewrites(task: ds.Task, model: ChatModel, draws: int, settings: AgentSettings) -> list[str | None]:
    """`draws` fresh samples of rewrite's opening, as the agent's fresh draw asks it under the
    run's own settings (its protocol decides what the opening shows: no docstring under `tests`)."""
    messages = rewrite_messages(request_for_task(task, settings))
    codes: list[str | None] = []
    for k in range(draws):
        request = ChatRequest(
            messages=messages,
            temperature=settings.redraw_temperature,
            max_tokens=settings.max_tokens or MAX_TOKENS,
            seed=SEED_BASE + k,
            task_id=task.task_id,
        )
        call = first_usable(extract_calls(model.chat(request).content, [], task.entry_point))
        codes.append(check_candidate(call.code, task.buggy_code, task.entry_point).code if call is not None else None)
    return codes


def answers(code: str, task: ds.Task, inputs: list[tuple[object, ...]], executor: Executor) -> str:
    """What `code` answers on `inputs` (sandboxed, as the canonical answers are made): a key."""
    cases = pluscases.compute(
        replace(task, canonical_code=code), inputs, 0.0, executor, budget_steps=pluscases.ANSWERS_STEPS
    )
    return (
        json.dumps([[c.text, c.expected] for c in cases.cases], sort_keys=True, default=repr)
        if cases.problem is None
        else f"problem: {cases.problem}"
    )


def examine(
    record: TaskRecord,
    task: ds.Task,
    model: ChatModel,
    draws: int,
    settings: AgentSettings,
    executor: Executor,
    store: CaseStore,
) -> Row:
    known = store.get(task, None, 0.0, executor)
    inputs = [ast.literal_eval(c.text) for c in known.cases]
    scored: list[Draw] = []
    for name, code in [
        ("run", record.final_code),
        *((f"d{k}", c) for k, c in enumerate(draw_rewrites(task, model, draws, settings))),
    ]:
        if code is None:
            scored.append(Draw(name, None, False, None))
            continue
        result = score_task(code, code, task, executor, store)
        scored.append(
            Draw(name, code, result.score.passed, result.scores["plus"]["final"] if result.score.passed else None)
        )
    keys: dict[str, int] = {}
    grouped = tuple(
        replace(d, group=keys.setdefault(answers(d.code or "", task, inputs, executor), len(keys))) if d.passed else d
        for d in scored
    )
    return Row(task.task_id, len(inputs), grouped)


def totals(rows: list[Row]) -> dict[str, int]:
    return {
        "tasks": len(rows),
        "run_plus": sum(r.draws[0].plus is True for r in rows),
        "some_draw_holds": sum(r.some_holds() for r in rows),
        "largest_group_holds": sum(r.largest_group_holds() for r in rows),
        "all_passing_agree": sum(r.groups() == 1 for r in rows),
        "draws_passed": sum(d.passed for r in rows for d in r.draws[1:]),
        "draws_plus": sum(d.plus is True for r in rows for d in r.draws[1:]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_run_arguments(p)
    p.add_argument("--draws", type=int, default=3, help="fresh rewrite draws per task (default 3)")
    args = p.parse_args(argv)
    try:
        if args.draws < 1:
            raise UserError(f"--draws {args.draws}: at least 1")
        return _run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    found = choose(args)
    tasks, chosen, preset = found.tasks, found.records, found.preset
    settings = found.run.spec.agent_settings()  # the run's own: what its fresh draws were asked with
    print(
        f"{len(chosen)} passes written by rewrite in {args.results}; {args.draws} more rewrite draws each from "
        f"{preset.model}",
        file=sys.stderr,
        flush=True,
    )
    rows: list[Row] = []
    executor, store = build_executor("auto", Limits()), CaseStore(default_directory())
    try:
        with open_endpoint(preset, {}, RetryPolicy(attempts=2, timeout_s=900)) as endpoint:
            for record in chosen:
                row = examine(record, tasks[record.task_id], endpoint.model, args.draws, settings, executor, store)
                rows.append(row)
                shown = ", ".join(
                    f"{d.name}: "
                    + (
                        "no code"
                        if d.code is None
                        else "fail"
                        if not d.passed
                        else f"pass, pass@1+ {d.plus}, group {d.group}"
                    )
                    for d in row.draws
                )
                print(f"{row.task_id}: {shown}", flush=True)
    finally:
        executor.close()
    t = totals(rows)
    print(
        f"rewrite passes {t['tasks']} (pass@1+ {t['run_plus']}); new draws passing {t['draws_passed']} (pass@1+ "
        f"{t['draws_plus']}); tasks where some passing draw holds {t['some_draw_holds']}, where the largest group "
        f"holds {t['largest_group_holds']}, where all passing draws agree {t['all_passing_agree']}"
    )
    if args.out:
        write_atomic(
            args.out,
            {
                "results": str(args.results),
                "model": preset.model,
                "draws": args.draws,
                "totals": t,
                "rows": [asdict(r) for r in rows],
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
