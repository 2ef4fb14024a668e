"""The pass@1+ check's cases: each extra input with the canonical solution's answer, computed once.

EvalPlus computes its ground truth once per dataset and caches it; so does this. The answers come
from one sandboxed run that holds no candidate code: the dataset's canonical solution, run by the
judge, reports them on the judge's result pipe (`@hefix.fact`). Where they are kept once computed
(the process, the package for the bundled dataset, the user's cache where that is safe):
evaluation/plusstore.py.

Which inputs become cases is a pure function of the task, the inputs and the answers program
(evaluation/plusanswers.py, issue 51): the canonical solution's work is counted in steps and CPU
time, never wall time, so a loaded machine keeps the same cases as a quiet one. Inputs on which it
raises, runs long, is past the budget or (for a property test) lacks the property are dropped, by
reason (`Cases.drops`), and answers past CASE_BYTES as JSON. A task whose answers a loaded machine
cannot finish has no cases for that run (`problem`: pass@1+ unknown, nothing kept).

With the rows the harness writes what spares every checked candidate's judge its per-case work:
the batch request's calls, and the answer a right candidate sends (`Cases.reply`), which the judge
compares byte for byte before it decodes anything (evaluation/robustness.py).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import textwrap
import zlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from humanevalfix.evaluation import plusgen, plusreply, plusties
from humanevalfix.evaluation.plusanswers import (
    ANSWERS,
    ANSWERS_RUN_S,
    ANSWERS_STEPS,
    CASES_STEPS,
    CHUNK_RESERVE_S,
    COMMON,
    CPU_S,
    MAX_RUNS,
    STEP_S,
    STEPS_PER_CALL,
    initial_state,
)
from humanevalfix.evaluation.plusproperty import asserted_property
from humanevalfix.sandbox.child import plaindata
from humanevalfix.sandbox.executor import Executor, takes_timeout
from humanevalfix.tasks.support import support_code
from humanevalfix.tasks.task import Task

PER_CALL_S = 0.25  # half a candidate's least time per call; and a property check's time
# A candidate's limit per call: max(2 * PER_CALL_S, this times the canonical's nominal time), 1 s at most.
CANDIDATE_FACTOR = 10
TASK_BYTES = 1 << 20  # all of one task's cases, as JSON (they travel as one fact of the judge's)
CASE_BYTES = TASK_BYTES  # one answer (a large one, f(1000) of Python/106, is where a fix fails)


@dataclass(frozen=True)
class Case:
    text: str  # the arguments, as the source of a tuple literal
    expected: Any  # the canonical answer in the check's normal form (JSON data); None for a property test
    limit_s: float  # the candidate's time for this call
    # The arguments as the judge sends them (a plaindata tree): made here once, so that no run
    # parses the literals again.
    tree: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Cases:
    """A task's cases as they travel and are kept: `payload` holds the rows (JSON, zlib, base64),
    made once per task, so neither a run that checks a candidate nor reading them back from disk
    encodes or decodes them again; `cases` decodes them on demand.

    Two more texts, made with the rows, spare the judge of every checked candidate its per-case
    work (`blob`: JSON, zlib, base64): `calls`, the batch request's list of calls as the judge
    splices it into the frame it sends, and `reply`, the candidate's answer frame when every
    answer is the canonical one, compared byte for byte (None when some answer has no tree that
    stands for it, `expected_reply`)."""

    payload: str
    count: int
    dropped: int = 0
    atol: float = 0.0
    problem: str | None = None  # why they could not be computed (the executor failed): not checked
    calls: str = ""
    reply: str | None = None
    drops: str = ""  # the inputs dropped, by reason, as JSON ({"raised": 3, "long": 1}); "" for none

    @classmethod
    def of(
        cls, cases: tuple[Case, ...], dropped: int = 0, atol: float = 0.0, problem: str | None = None, drops: str = ""
    ) -> Cases:
        rows = [[c.text, c.expected, c.limit_s] for c in cases]  # the trees travel in `calls`
        calls = plaindata.dumps([[c.tree, c.limit_s] for c in cases])
        reply = expected_reply(cases)
        return cls(
            blob(json.dumps(rows)),
            len(rows),
            dropped,
            atol,
            problem,
            calls=blob(calls),
            reply=None if reply is None else blob(reply),
            drops=drops,
        )

    @cached_property
    def cases(self) -> tuple[Case, ...]:
        rows = _rows(self.payload)
        calls = json.loads(unblob(self.calls)) if self.calls else []
        trees = [call[0] for call in calls] if len(calls) == len(rows) else [None] * len(rows)
        # one list of arguments: mypy reads `_case(*row[:3], tree)` as `*row` filling every parameter
        made = (_case(*[*row[:3], tree]) for row, tree in zip(rows, trees, strict=True))
        return tuple(c for c in made if c is not None)

    def digest(self) -> str:
        return hashlib.sha256("\x00".join((self.payload, self.calls, self.reply or "")).encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(
            {
                "payload": self.payload,
                "count": self.count,
                "dropped": self.dropped,
                "atol": self.atol,
                "calls": self.calls,
                "reply": self.reply,
                "drops": self.drops,
                "sha256": self.digest(),
            }
        )


def blob(text: str) -> str:
    return base64.b64encode(zlib.compress(text.encode(), 6)).decode()


def unblob(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text))


def expected_reply(cases: tuple[Case, ...]) -> str | None:
    """The answer frame a right candidate sends on these cases, or None (plusreply.py)."""
    return plusreply.expected_reply([c.expected for c in cases], _harness_plain())


@lru_cache(maxsize=1)
def _harness_plain() -> Any:
    """COMMON's _plain, the check's own normal form, run here to check the reply (plusreply.py)."""
    namespace: dict[str, Any] = {}
    body = COMMON.replace("__PROPERTY__", "None").replace("__PER_CALL__", repr(PER_CALL_S))
    exec(
        compile(
            f"def _made():\n    import copy as _copy, signal as _signal\n{body}\n    return _plain\n",
            "<pluscases.COMMON>",
            "exec",
        ),
        namespace,
    )
    return namespace["_made"]()


def _rows(payload: str) -> list[Any]:
    rows = json.loads(unblob(payload))
    if not isinstance(rows, list):
        raise ValueError("the cases' rows are not a list")
    return rows


def fill(program: str, task: Task, **values: Any) -> str:
    """A program with the shared part and the task's property and settings in it."""
    prop = asserted_property(task.test, task.entry_point)
    text = program.replace("__COMMON__", COMMON).replace(
        "__PROPERTY__", repr(None if prop is None else prop.as_literal())
    )
    for name, value in {"PER_CALL": PER_CALL_S, "FACTOR": CANDIDATE_FACTOR, **values}.items():
        text = text.replace(f"__{name}__", value if isinstance(value, str) else repr(value))
    return text


def answers_program(
    task: Task,
    inputs: list[tuple[Any, ...]],
    budget_steps: int = CASES_STEPS,
    start: int = 0,
    state: dict[str, Any] | None = None,
    chunk_s: float = 4.0,
    partners: list[str | None] | None = None,
) -> str:
    return fill(
        ANSWERS,
        task,
        NEAR=textwrap.indent(plusties.NEAR.strip("\n"), "    "),
        PARTNERS=partners,
        BUDGET=budget_steps,
        RUN_STEPS=ANSWERS_STEPS,
        STEPS=STEPS_PER_CALL,
        STEP_S=STEP_S,
        CPU_S=CPU_S,
        CHUNK_S=chunk_s,
        START=start,
        STATE=state or initial_state(),
        CASE_BYTES=CASE_BYTES,
        TASK_BYTES=TASK_BYTES,
        CANONICAL=repr(task.canonical_code),
        ENTRY=repr(task.entry_point),
        INPUTS=repr([repr(tuple(args)) for args in inputs]),
    )


def compute(
    task: Task,
    inputs: list[tuple[Any, ...]],
    atol: float,
    executor: Executor,
    budget_steps: int = CASES_STEPS,
    run_s: float = ANSWERS_RUN_S,
) -> Cases:
    """The canonical solution's answers, from sandboxed runs without candidate code: one, or more
    where a run's time ends first (each goes on from the input the one before stopped at, with
    its counts, so where a run stops changes nothing). `run_s`: a run's time where the executor
    takes one (takes_timeout); otherwise the candidates' own (its limits)."""
    seeds = plusgen.task_seeds(task)
    both_ways = plusties.seed_inputs(seeds)
    partners = None
    if len(both_ways) >= 2 * plusties.MIN_SEEDS:
        asked = _answers(task, both_ways, executor, budget_steps, run_s, None)
        if isinstance(asked, str):
            return Cases.of((), problem=asked)
        if plusties.order_free(seeds, {row[0]: row[1] for row in asked[0]}):
            partners = plusties.partners(inputs)
    got = _answers(task, inputs, executor, budget_steps, run_s, partners)
    if isinstance(got, str):
        return Cases.of((), problem=got)
    rows, drops = got
    return _from_data({"cases": rows, "drops": drops}, atol)


def _answers(
    task: Task,
    inputs: list[tuple[Any, ...]],
    executor: Executor,
    budget_steps: int,
    run_s: float,
    partners: list[str | None] | None,
) -> tuple[list[Any], dict[str, Any]] | str:
    """The answers runs' rows and drops by reason, or why there are none."""
    limits = getattr(executor, "limits", None)
    own_s = float(getattr(limits, "timeout_s", 6.0))
    longer = takes_timeout(executor) and run_s > own_s
    run_time = run_s if longer else own_s
    chunk_s = max(1.0, run_time - CHUNK_RESERVE_S)  # less starting the run and reporting; 1 s at least
    start, state, tries = 0, initial_state(), 0
    rows: list[Any] = []
    for _ in range(MAX_RUNS):
        program = answers_program(task, inputs, budget_steps, start, state, chunk_s, partners)
        # The function goes with the helpers (compiled as it is); the test is its call.
        test, support = "_hefix_answers()\n", support_code(task) + "\n" + program
        if longer:
            run = executor.run("", test, support, timeout_s=run_time)  # type: ignore[call-arg]
        else:
            run = executor.run("", test, support)
        found = run.facts.get("cases")
        if not run.passed or not isinstance(found, dict) or not isinstance(found.get("state"), dict):
            return f"the canonical solution's answers: {run.status}: {run.message}"[:600]
        if found.get("undecided"):
            tries += 1  # a loaded machine's run can be short of time: the same input again, twice at most
            if tries < 3:
                continue
            return f"the canonical solution's answers: {found['undecided']}"[:600]
        rows.extend(found.get("cases") or [])
        state = found["state"]
        following = found.get("next")
        if following is None:
            return rows, state.get("drops") or {}
        if not isinstance(following, int) or following <= start:
            return "the canonical solution's answers: no progress"
        start = following
    return f"the canonical solution's answers: not done in {MAX_RUNS} runs"


def _from_data(data: dict[str, Any], atol: float) -> Cases:
    """From the answers runs' facts: rows of (text, answer, limit), and the inputs dropped by reason."""
    rows = data.get("cases") or []
    cases = tuple(c for c in (_case(*row) for row in rows) if c is not None)
    drops = {str(k): int(v) for k, v in (data.get("drops") or {}).items() if int(v)}
    if len(rows) > len(cases):
        drops["codec"] = drops.get("codec", 0) + len(rows) - len(cases)
    return Cases.of(cases, sum(drops.values()), atol, drops=json.dumps(drops, sort_keys=True) if drops else "")


def _case(text: Any, expected: Any, limit_s: Any, tree: Any = None) -> Case | None:
    """None for arguments that cannot be sent as they are (past the codec's bounds): dropped."""
    try:
        return Case(
            str(text),
            expected,
            float(limit_s),
            tree if tree is not None else plaindata.to_tree(ast.literal_eval(str(text))),
        )
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, plaindata.NotPlain):
        return None
