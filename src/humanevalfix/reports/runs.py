"""One run's results as the reports see them, and what the reports compute from them.

`load_run` reads a results file (with the buggy code of each task, for the diffs); the rest are
statistics of one run (when each task was solved, pass rates by category, cost per task) and the
summary lines the PNG and the HTML page both show.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from humanevalfix.agent.policies import describe_policy
from humanevalfix.agent.protocols import describe
from humanevalfix.errors import DatasetError, UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation import scores as scoring
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import (
    load_results,
    passes_by_strategy,
    strategies_text,
    tokens_text,
    turn_outcomes,
    turns_text,
)
from humanevalfix.models.catalog import PROVIDERS
from humanevalfix.runspec import ModelSpec, RunSpec, from_dict

# Code-producing attempts; the others (repeat, invalid, malformed, no_code) never become final_code.
CANDIDATE_OUTCOMES = ("passed", "failed", "timeout", "not_run", "error")


@dataclass(frozen=True)
class Run:
    path: Path
    spec: RunSpec
    summary: dict[str, Any]
    status: str
    records: list[TaskRecord]
    buggy: dict[str, str]  # task_id -> buggy code, for the diffs

    @property
    def label(self) -> str:
        return f"{self.spec.model.model or '?'} ({self.path.name})"

    @property
    def protocol(self) -> str:
        return self.spec.protocol.name

    @property
    def engine(self) -> str:
        return self.spec.agent.engine

    @property
    def policy(self) -> str:
        return describe_policy(self.spec.agent)

    @property
    def cost(self) -> str:
        """The whole run's estimated cost, as the summary and the comparison page show it."""
        value = self.summary.get("cost_usd")
        return cost_text(None if value is None else float(value), self.spec.model.provider, exact=True)

    @property
    def price(self) -> tuple[float | None, float | None]:
        return self.spec.model.prices


def _buggy_from_dataset(spec: RunSpec, missing: set[str]) -> dict[str, str]:
    """Older results carry no buggy code: read it from the run's dataset (the bundled copy, or its
    file while still there)."""
    try:
        data = ds.recorded(spec.dataset.source) if missing else None
    except DatasetError:
        return {}
    return {} if data is None else {t.task_id: t.buggy_code for t in data.tasks if t.task_id in missing}


def load_run(path: Path) -> Run:
    document = load_results(path)
    try:
        records = [TaskRecord.from_dict(r) for r in document["tasks"]]
    except TypeError as exc:
        raise UserError(f"{path}: a task record lacks a field ({exc})") from None
    spec = from_dict(document.get("config") or {}, f"{path}: config")
    buggy = {r.task_id: r.buggy_code for r in records if r.buggy_code}
    buggy.update(_buggy_from_dataset(spec, {r.task_id for r in records} - set(buggy)))
    return Run(path, spec, document.get("summary") or {}, str(document.get("status", "")), records, buggy)


# ---------------------------------------------------------------- statistics of one run


def solved_turn(record: TaskRecord) -> int | None:
    """The turn (0 = first attempt) that produced the final candidate of a passed record."""
    if not record.passed:
        return None
    if record.passed_first and record.first_code == record.final_code:
        return 0
    turns = [
        int(a.get("turn", i))
        for i, a in enumerate(record.attempts)
        if a.get("code") == record.final_code and a.get("outcome") in CANDIDATE_OUTCOMES
    ]
    return turns[-1] if turns else max(0, record.iterations - 1)


def max_turn(run: Run) -> int:
    """The last iteration on the x axis: the run's repair budget, or beyond if records used more."""
    budget = run.spec.agent.max_iters
    used = max((r.iterations - 1 for r in run.records), default=0)
    return max(budget, used, 0)


def cumulative_pass_rate(records: Sequence[TaskRecord], last_turn: int) -> list[float]:
    """Share of task runs whose final, passing candidate existed by iteration t, for t = 0 … last_turn."""
    if not records:
        return [0.0] * (last_turn + 1)
    turns = [solved_turn(r) for r in records]
    return [sum(1 for t in turns if t is not None and t <= turn) / len(records) for turn in range(last_turn + 1)]


@dataclass(frozen=True)
class CategoryRate:
    category: str
    n: int
    first: float
    final: float


def rates_by(records: Sequence[TaskRecord], key: Callable[[TaskRecord], str]) -> list[CategoryRate]:
    groups: dict[str, list[TaskRecord]] = defaultdict(list)
    for r in records:
        groups[key(r) or "(none)"].append(r)
    rows = [
        CategoryRate(cat, len(rs), sum(r.passed_first for r in rs) / len(rs), sum(r.passed for r in rs) / len(rs))
        for cat, rs in groups.items()
    ]
    return sorted(rows, key=lambda c: (-c.n, c.category))


def record_cost(record: TaskRecord, price_in: float | None, price_out: float | None) -> float | None:
    if price_in is None or price_out is None:
        return None
    return record.tokens_in / 1e6 * price_in + record.tokens_out / 1e6 * price_out


def last_error(record: TaskRecord) -> str:
    """Why it did not pass: the infrastructure error, else the final candidate's test failure."""
    if record.error:
        return record.error
    if record.passed:
        return ""
    return record.score_message or ""


def status_of(record: TaskRecord) -> str:
    if record.error:
        return "error"
    return "pass" if record.passed else "fail"


# ---------------------------------------------------------------- text


def money(value: float) -> str:
    return f"${value:.4f}" if value >= 0.01 else f"${value:.6f}"


def cost_text(cost_usd: float | None, provider: str, exact: bool = False) -> str:
    """A price only where there is one: "$0.0000" for a model on your own CPU read as a free API.
    `exact`: small sums to six places (money) instead of four."""
    spec = PROVIDERS.get(provider)  # a plugin's provider that is not installed here: priced
    if spec is not None and not spec.priced:
        return f"{provider} (no per-token price)"
    if cost_usd is None:
        return "— (no price_per_1m in the preset)"
    return money(cost_usd) if exact else f"${cost_usd:.4f}"


def sandbox_text(spec: RunSpec) -> str:
    executor, isolation = spec.sandbox.executor or "?", spec.sandbox.isolation or "?"
    return isolation if isolation.startswith(executor) else f"{executor} ({isolation})"


def reasoning_settings(model: ModelSpec) -> list[tuple[str, str]]:
    """The reasoning settings the run set (--reasoning-effort, --thinking): none when it set neither."""
    named = (("reasoning effort", model.reasoning_effort), ("thinking", model.thinking))
    return [(what, value) for what, value in named if value is not None]


def summary_lines(run: Run) -> list[str]:
    s, c = run.summary, run.spec
    n = len(run.records)
    lines = [
        f"model: {c.model.model} ({c.model.provider})",
        f"dataset: {Path(c.dataset.source or '?').name}",
        f"task runs: {n}" + (f" ({c.agent.samples} independent repair runs per task)" if c.agent.samples > 1 else ""),
        f"protocol: {describe(c.protocol.name)}; max iterations {c.agent.max_iters}",
        f"repair policy: {describe_policy(c.agent)}",
        f"engine: {c.agent.engine}",
        "sandbox: " + sandbox_text(c),
    ]
    lines[1:1] = [f"{what}: {value}" for what, value in reasoning_settings(c.model)]  # only when set
    lines += scoring.report_lines(scoring.migrated_summary(s), c)  # each registered scorer's lines
    if int(s.get("samples") or 1) > 1:
        for name, key in (("first", "pass_at_k_first"), ("final", "pass_at_k_final")):
            values = s.get(key) or {}
            lines.append(f"pass@k {name}: " + ", ".join(f"@{k} {100 * v:.1f}%" for k, v in values.items()))
    lines += [
        f"infrastructure errors: {s.get('errors', 0)}",
        f"mean iterations: {float(s.get('mean_iterations', 0)):.2f}",
        # From the records, so that runs from before the summary counted them show it too.
        "turns: "
        + turns_text(
            turn_outcomes(run.records), sum(len(a.get("redrawn") or ()) for r in run.records for a in r.attempts)
        ),
    ]
    by_strategy = passes_by_strategy(run.records)
    if by_strategy:
        lines.append("passes by strategy of the final turn: " + strategies_text(by_strategy))
    lines += [
        "tokens in / out: "
        + tokens_text(int(s.get("tokens_in", 0)), int(s.get("tokens_out", 0)), int(s.get("tokens_reasoning", 0))),
        "estimated cost: " + run.cost,
        f"wall time: {float(s.get('wall_s', 0)):.1f} s",
    ]
    if run.status and run.status != "complete":
        lines.append(f"status: {run.status} (not all tasks ran)")
    return lines
