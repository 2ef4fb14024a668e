"""The PNGs: a run's plots (pass rate by iteration, by category, iterations, tokens) and a
comparison's (pass rates of A and B, by bug type).

matplotlib and numpy are imported inside the functions that draw, not at the top: importing
matplotlib takes about a second, which whatever imports this module without drawing (the report
package, a command's --help) should not pay.
"""

from __future__ import annotations

import io
import textwrap
from typing import TYPE_CHECKING, Any

from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.reports.comparison import Comparison
from humanevalfix.reports.runs import (
    CategoryRate,
    Run,
    cumulative_pass_rate,
    max_turn,
    money,
    rates_by,
    record_cost,
    summary_lines,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIRST_COLOR = "#9ecae1"
FINAL_COLOR = "#2171b5"
PASS_COLOR = "#31a354"
FAIL_COLOR = "#de2d26"
B_COLORS = ("#fdae6b", "#e6550d")


def _png(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    return buf.getvalue()


def _pct_axis(ax: Any, axis: str = "y") -> None:
    from matplotlib.ticker import PercentFormatter

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(PercentFormatter(1.0))


def _category_panel(ax: Any, rows: list[CategoryRate], title: str) -> None:
    if not rows:
        ax.text(0.5, 0.5, "no tasks", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    import numpy as np

    y = np.arange(len(rows))
    h = 0.38
    ax.barh(y - h / 2, [r.first for r in rows], h, color=FIRST_COLOR, label="first attempt")
    ax.barh(y + h / 2, [r.final for r in rows], h, color=FINAL_COLOR, label="after repair")
    for yi, r in zip(y, rows, strict=True):
        ax.text(min(r.final, 1.0) + 0.01, yi + h / 2, f"{100 * r.final:.0f}%", va="center", fontsize=8)
    ax.set_yticks(y, [f"{r.category} (n={r.n})" for r in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.12)
    _pct_axis(ax, "x")
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    ax.grid(axis="x", alpha=0.3)


def _curve_panel(ax: Any, run: Run) -> None:
    last = max_turn(run)
    curve = cumulative_pass_rate(run.records, last)
    xs = list(range(last + 1))
    ax.plot(xs, curve, marker="o", color=FINAL_COLOR, label="solved within t repair turns")
    for x, y in zip(xs, curve, strict=True):
        ax.annotate(f"{100 * y:.1f}%", (x, y), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    first = float(run.summary.get("pass_at_1_first", curve[0] if curve else 0.0))
    ax.axhline(first, color=FIRST_COLOR, linestyle="--", label=f"first attempt {100 * first:.1f}%")
    ax.set_xticks(xs)
    ax.set_xlabel("iteration (0 = first attempt)")
    ax.set_ylabel("pass rate")
    ax.set_ylim(0, 1.08)
    _pct_axis(ax)
    ax.set_title("Cumulative pass rate by iteration")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)


def _summary_panel(ax: Any, run: Run) -> None:
    ax.set_axis_off()
    ax.set_title("Summary")
    # Wrapped and kept out of the layout: a long line (the sandbox's isolation) must not squeeze the plots.
    wrapped = [part for line in summary_lines(run) for part in textwrap.wrap(line, 54, subsequent_indent="    ")]
    text = ax.text(
        0.0, 1.0, "\n".join(wrapped), va="top", ha="left", family="monospace", fontsize=10, transform=ax.transAxes
    )
    text.set_in_layout(False)


def _iterations_panel(ax: Any, records: list[TaskRecord]) -> None:
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    if not records:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no tasks", ha="center", va="center", transform=ax.transAxes)
    low = min((r.iterations for r in records), default=0)
    top = max((r.iterations for r in records), default=1)
    bins = np.arange(low, top + 2) - 0.5
    passed = [r.iterations for r in records if r.passed]
    failed = [r.iterations for r in records if not r.passed]
    ax.hist([passed, failed], bins=bins, stacked=True, color=[PASS_COLOR, FAIL_COLOR], label=["passed", "not passed"])
    ax.set_xticks(range(low, top + 1))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("model turns used")
    ax.set_ylabel("task runs")
    ax.set_title("Iterations per task")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _tokens_panel(ax: Any, run: Run) -> None:
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    records = run.records
    tokens = [r.tokens_in + r.tokens_out for r in records]
    if not any(tokens):
        ax.set_axis_off()
        ax.set_title("Tokens per task")
        ax.text(
            0.5,
            0.5,
            "no tokens recorded\n(an oracle run, or the server reported no usage)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        return
    ax.hist(
        [
            [t for t, r in zip(tokens, records, strict=True) if r.passed],
            [t for t, r in zip(tokens, records, strict=True) if not r.passed],
        ],
        bins=min(30, max(5, len(tokens) // 3)),
        stacked=True,
        color=[PASS_COLOR, FAIL_COLOR],
        label=["passed", "not passed"],
    )
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("tokens per task run (in + out)")
    ax.set_ylabel("task runs")
    price_in, price_out = run.price
    costs = [record_cost(r, price_in, price_out) for r in records]
    extra = (
        f"; mean cost {money(float(np.mean([c for c in costs if c is not None])))}/task"
        if costs and costs[0] is not None
        else ""
    )
    ax.set_title(f"Tokens per task (mean {np.mean(tokens):,.0f}{extra})")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def run_figure(run: Run) -> bytes:
    from matplotlib.figure import Figure

    records = run.records
    fig = Figure(figsize=(13, 14), dpi=100, layout="constrained")
    axes = fig.subplots(3, 2)
    fig.suptitle(f"HumanEvalFix report: {run.spec.model.model}  ({len(records)} task runs)", fontsize=15)
    _curve_panel(axes[0][0], run)
    _summary_panel(axes[0][1], run)
    _category_panel(axes[1][0], rates_by(records, lambda r: r.bug_type), "Pass rate by bug type")
    _category_panel(axes[1][1], rates_by(records, lambda r: r.failure_symptoms), "Pass rate by failure symptoms")
    _iterations_panel(axes[2][0], records)
    _tokens_panel(axes[2][1], run)
    return _png(fig)


def compare_figure(cmp: Comparison) -> bytes:
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 5.5), dpi=100, layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    fig.suptitle(f"A: {cmp.a.label}   vs   B: {cmp.b.label}   ({len(cmp.common)} common tasks)", fontsize=12)
    x = np.arange(2)
    w = 0.38
    a_vals, b_vals = [cmp.first_a, cmp.final_a], [cmp.first_b, cmp.final_b]
    ax1.bar(x - w / 2, a_vals, w, color=FINAL_COLOR, label="A")
    ax1.bar(x + w / 2, b_vals, w, color=B_COLORS[1], label="B")
    for xi, (va, vb) in enumerate(zip(a_vals, b_vals, strict=True)):
        ax1.text(xi - w / 2, va + 0.01, f"{100 * va:.1f}%", ha="center", fontsize=9)
        ax1.text(xi + w / 2, vb + 0.01, f"{100 * vb:.1f}%", ha="center", fontsize=9)
    ax1.set_xticks(x, ["first attempt", "after repair"])
    ax1.set_ylim(0, 1.1)
    _pct_axis(ax1)
    ax1.set_title("Pass rate on the common tasks")
    ax1.legend()
    ax1.grid(axis="y", alpha=0.3)

    common = set(cmp.common)
    ra = {c.category: c for c in rates_by([r for r in cmp.a.records if r.task_id in common], lambda r: r.bug_type)}
    rb = {c.category: c for c in rates_by([r for r in cmp.b.records if r.task_id in common], lambda r: r.bug_type)}
    cats = list(ra)
    y = np.arange(len(cats))
    ax2.barh(y - w / 2, [ra[c].final for c in cats], w, color=FINAL_COLOR, label="A")
    ax2.barh(y + w / 2, [rb[c].final if c in rb else 0.0 for c in cats], w, color=B_COLORS[1], label="B")
    ax2.set_yticks(y, [f"{c} (n={ra[c].n})" for c in cats], fontsize=9)
    ax2.invert_yaxis()
    ax2.set_xlim(0, 1.05)
    _pct_axis(ax2, "x")
    ax2.set_title("After repair, by bug type")
    ax2.legend(loc="lower right")
    ax2.grid(axis="x", alpha=0.3)
    return _png(fig)
