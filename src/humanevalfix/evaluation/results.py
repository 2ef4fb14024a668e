"""The run summary and the one JSON results file (written atomically at the end)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from humanevalfix.errors import UserError
from humanevalfix.evaluation import scores as scoring
from humanevalfix.evaluation.outputs import chmod_like_open
from humanevalfix.evaluation.passk import counts_by_task, pass_at_ks
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.jsonio import read_json
from humanevalfix.redaction import redact_data


@dataclass(frozen=True)
class Summary:
    tasks: int
    passed_first: int
    passed: int
    errors: int
    pass_at_1_first: float  # the first-turn candidate, over all tasks
    pass_at_1_final: float  # after repair, over all tasks
    mean_iterations: float
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    wall_s: float
    # --samples n: n independent repair runs per task; pass@k by the unbiased estimator (passk.py)
    samples: int = 1
    pass_at_k_first: dict[str, float] = field(default_factory=dict)
    pass_at_k_final: dict[str, float] = field(default_factory=dict)
    # Each registered scorer's sum over the run by its name (evaluation/scores.py): the verdict's
    # counts (also the four fields above: the headline), pass@1+ ("plus": None when no passing
    # candidate was checked), the hard-coding check ("hardcoding"), and any other.
    scores: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Model turns by outcome (passed, failed, repeat, no_code, ...) and the replies set aside
    # within their turn (--redraws): where the budget went.
    turns: dict[str, int] = field(default_factory=dict)
    redrawn: int = 0
    # API keys (or servers) dropped for the run: index, the key masked, server, the reason (redacted)
    dropped_keys: list[dict[str, Any]] = field(default_factory=list)
    tokens_reasoning: int = 0  # of tokens_out (and so in cost_usd): the reasoning's, where the server said

    def to_dict(self) -> dict[str, Any]:
        """With the flat fields that held the built-in scores before the map (`passed_plus`,
        `suspect_hardcoding`, ...), for the readers of those files."""
        return {**asdict(self), **scoring.summary_flat(self.scores)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Summary:
        """A stored summary; one written before the map gets it from its flat fields."""
        names = {f.name for f in fields(cls)}
        legacy = scoring.legacy_summary_keys()
        unknown = sorted(k for k in raw if k not in names and k not in legacy)
        if unknown:  # as the constructor said when it was given the stored dict as it is
            raise TypeError(f"unexpected summary field(s): {', '.join(unknown)}")
        return cls(**{**{k: v for k, v in raw.items() if k in names}, "scores": scoring.migrated_summary(raw)})


def tokens_text(tokens_in: int, tokens_out: int, reasoning: int = 0) -> str:
    """`1,200 / 3,400`, and `(2,900 of them reasoning)` when the server counted some."""
    text = f"{tokens_in:,} / {tokens_out:,}"
    return text + (f" ({reasoning:,} of them reasoning)" if reasoning else "")


def estimate_cost(tokens_in: int, tokens_out: int, price_in: float | None, price_out: float | None) -> float | None:
    if price_in is None or price_out is None:
        return None
    return round(tokens_in / 1e6 * price_in + tokens_out / 1e6 * price_out, 6)


def summarize(
    records: list[TaskRecord], wall_s: float, price_in: float | None = None, price_out: float | None = None
) -> Summary:
    n = len(records)
    scores = scoring.summarize(records)
    verdict = scores["verdict"]
    t_in = sum(r.tokens_in for r in records)
    t_out = sum(r.tokens_out for r in records)
    return Summary(
        tasks=n,
        passed_first=verdict["passed_first"],
        passed=verdict["passed"],
        errors=sum(1 for r in records if r.error),
        pass_at_1_first=verdict["pass_at_1_first"],
        pass_at_1_final=verdict["pass_at_1_final"],
        mean_iterations=round(sum(r.iterations for r in records) / n, 3) if n else 0.0,
        tokens_in=t_in,
        tokens_out=t_out,
        cost_usd=estimate_cost(t_in, t_out, price_in, price_out),
        wall_s=round(wall_s, 2),
        samples=max((n for n, _ in counts_by_task((r.task_id, r.passed) for r in records).values()), default=1),
        pass_at_k_first=pass_at_ks((r.task_id, r.passed_first) for r in records),
        pass_at_k_final=pass_at_ks((r.task_id, r.passed) for r in records),
        tokens_reasoning=sum(r.tokens_reasoning for r in records),
        turns=turn_outcomes(records),
        redrawn=sum(len(a.get("redrawn") or ()) for r in records for a in r.attempts),
        scores=scores,
    )


# Turns that brought no new candidate to run: the budget spent for nothing.
NO_NEW_CANDIDATE = ("repeat", "no_code")


def turn_outcomes(records: list[TaskRecord]) -> dict[str, int]:
    """How many model turns ended each way, most frequent first."""
    counts: dict[str, int] = {}
    for r in records:
        for a in r.attempts:
            outcome = str(a.get("outcome", "?"))
            counts[outcome] = counts.get(outcome, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def turns_text(turns: dict[str, int], redrawn: int = 0) -> str:
    """`623 turns, 57.0% without a new candidate (repeat 284, no_code 71); passed 40, ...`."""
    total = sum(turns.values())
    if not total:
        return "no turns"
    wasted = sum(turns.get(k, 0) for k in NO_NEW_CANDIDATE)
    text = (
        f"{total} turns, {100.0 * wasted / total:.1f}% without a new candidate (repeat {turns.get('repeat', 0)}, "
        f"no_code {turns.get('no_code', 0)}); "
    )
    text += ", ".join(f"{k} {v}" for k, v in turns.items() if k not in NO_NEW_CANDIDATE)
    return text + (f"; {redrawn} replies drawn again within their turn (--redraws)" if redrawn else "")


def passes_by_strategy(records: Sequence[TaskRecord]) -> dict[str, tuple[int, int]]:
    """Final passes by the strategy of the turn that wrote the final code, and how many of them
    also pass pass@1+: (passes, pass@1+ passes), most passes first. Strategies differ in how far a
    candidate strays from the buggy code, and so in how often a pass holds beyond the tests."""
    counts: dict[str, list[int]] = {}
    for r in records:
        strategy = final_strategy(r) if r.passed else None
        if strategy is None:
            continue
        entry = counts.setdefault(strategy, [0, 0])
        entry[0] += 1
        entry[1] += (r.scores.get("plus") or {}).get("final") is True
    return {k: (v[0], v[1]) for k, v in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))}


def final_strategy(record: TaskRecord) -> str | None:
    """The strategy of the turn that wrote the record's final code; None when no turn did (an
    oracle) or the turn is from before turns kept their strategy."""
    # A stored turn that names the final code (`code_is`) has it back once read (TaskRecord.from_dict).
    final = [a for a in record.attempts if a.get("code") is not None and a.get("code") == record.final_code]
    strategy = final[-1].get("strategy") if final else None
    return strategy if isinstance(strategy, str) else None


def strategies_text(by_strategy: dict[str, tuple[int, int]]) -> str:
    """`fix 25 (pass@1+ 23), rewrite 25 (pass@1+ 19)`."""
    return ", ".join(f"{name} {passed} (pass@1+ {plus})" for name, (passed, plus) in by_strategy.items())


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    """`data` as JSON at `path`, all or nothing; keys redacted, any text writable (see json_line)."""
    data = redact_data(data)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the same JSON with \u escapes
        text = json.dumps(data, indent=2, ensure_ascii=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        chmod_like_open(fd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def results_document(
    config: dict[str, Any], summary: Summary, records: list[TaskRecord], status: str
) -> dict[str, Any]:
    return {
        "status": status,  # complete | complete_with_errors | interrupted | aborted
        "config": config,
        "summary": summary.to_dict(),
        "tasks": [r.to_dict() for r in records],
    }


def load_results(path: Path) -> dict[str, Any]:
    data = read_json(path, "results file")
    if not isinstance(data, dict) or "tasks" not in data:
        raise UserError(f"{path}: not a results file of this tool (no 'tasks')")
    return data
