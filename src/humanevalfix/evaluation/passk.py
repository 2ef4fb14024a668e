"""The unbiased pass@k estimator (Chen et al. 2021, "Evaluating Large Language Models Trained on Code").

With n samples per task of which c pass, pass@k = 1 - C(n-c, k) / C(n, k): the chance that at
least one of k samples drawn without replacement from the n passes. The binomial ratio is
computed as a running product, 1 - prod_{i=n-c+1}^{n} (1 - k/i), which neither overflows nor
loses precision for large n (the paper's numerically stable form).

Here a "sample" is one independent repair run of the agent on a task (`--samples n`), not one
completion: each run may take several model turns before its final candidate is scored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from humanevalfix.errors import UserError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Estimated probability that at least one of k of the n samples passes, given c passed."""
    if n < 1:
        raise UserError(f"pass@k: need at least one sample per task, got n={n}")
    if not 0 <= c <= n:
        raise UserError(f"pass@k: passed count c={c} must lie between 0 and n={n}")
    if not 1 <= k <= n:
        raise UserError(f"pass@k: k={k} must lie between 1 and n={n} (the samples per task)")
    if n - c < k:
        return 1.0  # every draw of k samples contains a passing one
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def counts_by_task(outcomes: Iterable[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """(task_id, passed) pairs, one per sample, to {task_id: (n, c)} in first-seen order."""
    n: dict[str, int] = defaultdict(int)
    c: dict[str, int] = defaultdict(int)
    for task_id, passed in outcomes:
        n[task_id] += 1
        c[task_id] += int(bool(passed))
    return {t: (n[t], c[t]) for t in n}


def mean_pass_at_k(counts: Mapping[str, tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks; every task needs at least k samples."""
    if not counts:
        raise UserError("pass@k: no tasks")
    short = [t for t, (n, _) in counts.items() if n < k]
    if short:
        raise UserError(f"pass@k: k={k} exceeds the samples of {len(short)} task(s), e.g. {short[0]}")
    return sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts)


def ks_for(counts: Mapping[str, tuple[int, int]]) -> list[int]:
    """The k that every task supports: 1 … the smallest sample count (an interrupted run may leave fewer)."""
    if not counts:
        return []
    return list(range(1, min(n for n, _ in counts.values()) + 1))


def pass_at_ks(outcomes: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """{"1": pass@1, "2": pass@2, …} for every k the samples support (JSON keys are strings)."""
    counts = counts_by_task(outcomes)
    return {str(k): round(mean_pass_at_k(counts, k), 4) for k in ks_for(counts)}
