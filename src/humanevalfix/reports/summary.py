"""What a person reads at the end of a run: the summary table (rich)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from humanevalfix.agent.policies import describe_policy
from humanevalfix.agent.protocols import describe
from humanevalfix.evaluation import scores as scoring
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import (
    Summary,
    passes_by_strategy,
    strategies_text,
    tokens_text,
    turns_text,
)
from humanevalfix.reports.runs import cost_text, reasoning_settings
from humanevalfix.runspec import RunSpec
from humanevalfix.safetext import shown as safe


def _passk(values: dict[str, float]) -> str:
    return "  ".join(f"pass@{k} {100.0 * v:.1f}%" for k, v in values.items())


def summary_table(summary: Summary, spec: RunSpec, records: Sequence[TaskRecord] = ()) -> Table:
    table = Table(title="HumanEvalFix results", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    model, sandbox = spec.model, spec.sandbox
    table.add_row("model", f"{safe(model.model)} ({model.provider})")  # a server may name it
    for what, value in reasoning_settings(model):  # only when set: --reasoning-effort, --thinking
        table.add_row(what, escape(value))
    if model.preset_reason:
        table.add_row("preset", f"{(model.preset or {}).get('name')}: {escape(model.preset_reason)}")
    reason = spec.agent.tool_mode_reason
    table.add_row("tool calling", (spec.agent.tool_mode or "") + (f" ({escape(reason)})" if reason else ""))
    table.add_row("sandbox", f"{sandbox.executor} — isolation: {sandbox.isolation}")
    if sandbox.isolation_warning:
        table.add_row("isolation warning", f"[yellow]{escape(sandbox.isolation_warning)}[/]")
    table.add_row("protocol", f"{describe(spec.protocol.name)}; max iterations {spec.agent.max_iters}")
    table.add_row("repair policy", describe_policy(spec.agent))
    table.add_row("engine", spec.agent.engine)
    if spec.agent.workers_reason:  # the endpoint's default: said, since it was not asked for
        table.add_row("workers", f"{spec.agent.workers} ({escape(spec.agent.workers_reason)})")
    # Each registered scorer's rows, in the order they were registered (the verdict first).
    for what, value in scoring.table_rows(summary.scores, summary.tasks, spec):
        table.add_row(what, value)
    if summary.samples > 1:
        table.add_row("samples", f"{summary.samples} independent repair runs per task (unbiased pass@k estimator)")
        table.add_row("pass@k, first attempt", _passk(summary.pass_at_k_first))
        table.add_row("pass@k, after repair", _passk(summary.pass_at_k_final))
    table.add_row("infrastructure errors", str(summary.errors))
    table.add_row("mean iterations", f"{summary.mean_iterations:.2f}")
    table.add_row("turns by outcome", turns_text(summary.turns, summary.redrawn))
    by_strategy = passes_by_strategy(records)
    if by_strategy:  # a strategy's name is a plugin's text: never markup
        table.add_row("passes by strategy", escape(strategies_text(by_strategy)) + " (the final turn's)")
    table.add_row("tokens in / out", tokens_text(summary.tokens_in, summary.tokens_out, summary.tokens_reasoning))
    table.add_row("estimated cost", cost_text(summary.cost_usd, model.provider))
    table.add_row("wall time", f"{summary.wall_s:.1f} s")
    return table


ERRORS_SHOWN = 10


def error_lines(records: Sequence[TaskRecord], shown: int = ERRORS_SHOWN) -> list[str]:
    """Each infrastructure error's task and cause, the first `shown`, then how many more."""
    failed = [r for r in records if r.error]
    lines = [f"{r.task_id}{f' (sample {r.sample})' if r.sample else ''}: {r.error}" for r in failed[:shown]]
    if len(failed) > shown:
        lines.append(f"… and {len(failed) - shown} more (see the `error` field per task in the results file)")
    return lines


def print_summary(console: Console, summary: Summary, spec: RunSpec, records: Sequence[TaskRecord] = ()) -> None:
    console.print(summary_table(summary, spec, records))
    trimmed = sum(1 for r in records if r.context_trims)
    overflowed = sum(1 for r in records if r.stop_reason == "context_exceeded")
    if trimmed or overflowed:
        # What the model saw differs for these tasks: a number is read with this beside it.
        console.print(
            f"[yellow]context:[/] {trimmed} task(s) shown less to fit the model's context (`context_trims` per task), "
            f"{overflowed} ended at the context limit (`stop_reason` context_exceeded)"
        )
    for drop in summary.dropped_keys:
        where = f" at {drop['server']}" if drop.get("server") else ""
        console.print(
            f"[yellow]dropped:[/] API key #{drop['index']} ({safe(drop['key'])}){safe(where)}: {safe(drop['reason'])}",
            highlight=False,
            soft_wrap=True,
        )
    lines = error_lines(records)
    if lines:
        console.print(f"[red]Infrastructure errors[/] ({summary.errors}; these tasks run again on --resume):")
        for line in lines:
            console.print(f"  {safe(line)}", highlight=False, soft_wrap=True)
