"""Two runs compared on their common tasks, with a significance note a reader can trust.

Per task, the share of its samples that passed; B's wins and A's wins are the discordant tasks,
tested with an exact McNemar (sign) test, and a paired bootstrap gives an interval of the
difference in pass rate. `significance_note` says in words what that does and does not show.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich.table import Table

from humanevalfix.errors import UserError
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.scores import SCORERS
from humanevalfix.reports.runs import Run

BOOTSTRAP_RESAMPLES = 10_000


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test: a binomial(b + c, 1/2) test on the discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of mean(b - a) over tasks resampled with replacement."""
    if len(a) != len(b) or not a:
        raise UserError("paired bootstrap: need the same, non-empty set of tasks in both runs")
    import numpy as np

    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[idx].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def task_scores(records: Iterable[TaskRecord], attr: str = "passed") -> dict[str, float]:
    """Per task, the share of its samples that passed (0 or 1 with a single sample)."""
    n: dict[str, int] = defaultdict(int)
    c: dict[str, int] = defaultdict(int)
    for r in records:
        n[r.task_id] += 1
        c[r.task_id] += int(bool(getattr(r, attr)))
    return {t: c[t] / n[t] for t in n}


@dataclass(frozen=True)
class Comparison:
    a: Run
    b: Run
    common: list[str]
    first_a: float
    first_b: float
    final_a: float
    final_b: float
    b_wins: list[str]  # tasks B solves more often than A
    a_wins: list[str]
    p_value: float
    interval: tuple[float, float]  # of final(B) - final(A)
    notes: list[str] = field(default_factory=list)
    # Each registered scorer's row that compares (pass@1+, after repair): its label and its share
    # on the common tasks for A and B; None: that run was not scored so (older runs).
    scores: tuple[tuple[str, float | None, float | None], ...] = ()

    @property
    def binary(self) -> bool:
        return all(r.spec.agent.samples == 1 for r in (self.a, self.b))


def compare_runs(a: Run, b: Run) -> Comparison:
    fa, fb = task_scores(a.records), task_scores(b.records)
    common = [t for t in fa if t in fb]
    if not common:
        raise UserError(f"{a.path} and {b.path} have no task in common")
    first_a, first_b = task_scores(a.records, "passed_first"), task_scores(b.records, "passed_first")
    b_wins = [t for t in common if fb[t] > fa[t]]
    a_wins = [t for t in common if fa[t] > fb[t]]
    notes: list[str] = []
    if a.spec.dataset.sha256 != b.spec.dataset.sha256:
        notes.append(
            "The two runs used different dataset files (sha256 differs): the same task id may not be the same task."
        )
    if a.protocol != b.protocol:
        notes.append(
            f"The runs used different protocols ({a.protocol} and {b.protocol}): the models saw different information."
        )
    if a.engine != b.engine:
        notes.append(
            f"The runs used different engines ({a.engine} and {b.engine}): the same repair policy, so this alone "
            "does not change results."
        )
    only = len(fa) + len(fb) - 2 * len(common)
    if only:
        notes.append(f"{only} task(s) appear in only one run and are left out of the comparison.")
    return Comparison(
        a=a,
        b=b,
        common=common,
        first_a=sum(first_a[t] for t in common) / len(common),
        first_b=sum(first_b[t] for t in common) / len(common),
        final_a=sum(fa[t] for t in common) / len(common),
        final_b=sum(fb[t] for t in common) / len(common),
        b_wins=b_wins,
        a_wins=a_wins,
        p_value=mcnemar_exact(len(b_wins), len(a_wins)),
        interval=paired_bootstrap([fa[t] for t in common], [fb[t] for t in common]),
        notes=notes,
        scores=tuple(_score_rows(a, b, common)),
    )


def _score_rows(a: Run, b: Run, common: list[str]) -> list[tuple[str, float | None, float | None]]:
    rows: list[tuple[str, float | None, float | None]] = []
    for s in SCORERS.values():
        if s.compare_label is None:
            continue
        shares = [s.shares(run.records) for run in (a, b)]
        mean_a, mean_b = (None if x is None else sum(x.get(t, 0.0) for t in common) / len(common) for x in shares)
        rows.append((s.compare_label, mean_a, mean_b))
    return rows


def significance_note(cmp: Comparison) -> str:
    n, wins, losses = len(cmp.common), len(cmp.b_wins), len(cmp.a_wins)
    lo, hi = (100 * x for x in cmp.interval)
    test = (
        "exact McNemar test (two-sided binomial test on the discordant tasks)"
        if cmp.binary
        else "exact sign test on the tasks whose pass share differs (McNemar's test generalised to several samples)"
    )
    text = (
        f"On {n} common task(s), B does better on {wins} and worse on {losses}. "
        f"{test[0].upper() + test[1:]}: p = {cmp.p_value:.3g}. "
        f"Paired bootstrap 95% interval of the final pass-rate difference B − A "
        f"({BOOTSTRAP_RESAMPLES:,} resamples of the common tasks): [{lo:+.1f}, {hi:+.1f}] points. "
    )
    if cmp.p_value >= 0.05:
        text += "The difference is not significant at the 5% level: it may be chance."
    else:
        text += "The difference is significant at the 5% level."
    if n < 30 or wins + losses < 10:
        text += (
            f" Small sample: with {n} task(s) and {wins + losses} discordant one(s), only large differences "
            "can be told apart from chance, and the bootstrap interval is rough; run more tasks before concluding."
        )
    return text


def comparison_table(cmp: Comparison) -> Table:
    table = Table(title=f"A vs B on {len(cmp.common)} common task(s)", title_justify="left")
    table.add_column("")
    table.add_column("A")
    table.add_column("B")
    table.add_row("run", cmp.a.label, cmp.b.label)
    same = cmp.a.protocol == cmp.b.protocol
    note = "" if same else " [red](differs: the runs saw different information)[/]"
    table.add_row("protocol", cmp.a.protocol + note, cmp.b.protocol)
    table.add_row("repair policy", cmp.a.policy, cmp.b.policy)
    table.add_row("engine", cmp.a.engine, cmp.b.engine)
    table.add_row("pass rate, first attempt", f"{100 * cmp.first_a:.1f}%", f"{100 * cmp.first_b:.1f}%")
    table.add_row("pass rate, after repair", f"{100 * cmp.final_a:.1f}%", f"{100 * cmp.final_b:.1f}%")
    for label, *shares in cmp.scores:
        table.add_row(label, *(f"{100 * v:.1f}%" if v is not None else "not checked" for v in shares))
    table.add_row("tasks won", str(len(cmp.a_wins)), str(len(cmp.b_wins)))
    return table
