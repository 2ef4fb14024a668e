"""The scorers: what a finished task's candidates are worth, each a class in a registry.

A scorer turns the outcome of the scoring run (evaluation/scorer.py: one sandboxed run per
candidate, the verdict and the pass@1+ check together) into its entry of the record's `scores`
map, sums the entries of a run into its entry of the summary's `scores` map, and says what the
summary table, the report, the HTML page and a comparison show of it. Everything that shows or
keeps scores (results.py, reports/, rescore.py) iterates over the registry, so a new score is one
class decorated `@scorer(name)` in evaluation/scorers.py (or in a plugin's module).

Files from before the map (their config's schema_version below 3) kept each score as flat fields
of the record and the summary; `legacy_keys` names them, `migrate` and `migrate_summary` read
them, and `flat`/`summary_flat` write them again beside the map, so that older readers of a
results file (and scripts that read `passed_plus`) keep working.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from humanevalfix.registry import Registry
from humanevalfix.runspec import RunSpec
from humanevalfix.sandbox.executor import ExecResult, Executor
from humanevalfix.tasks.task import Task

Entry = Mapping[str, Any]  # plain JSON data: it is written as it is


@dataclass(frozen=True)
class Judged:
    """One candidate's scoring run: the test's verdict and, for a passing candidate, its pass@1+
    check (an evaluation.robustness.Robustness; `None` fields where it was not checked)."""

    verdict: ExecResult
    robustness: Any


@dataclass(frozen=True)
class Candidates:
    """What a scorer is given: a task's first and final candidates and their scoring runs. The
    executor is there for a scorer that needs a run of its own (no built-in one does: the verdict
    and pass@1+ share one run per candidate)."""

    task: Task
    first_code: str | None
    final_code: str | None
    first: Judged
    final: Judged
    executor: Executor | None = None


class Scorer:
    """A score. Subclasses override what they have; the defaults show and keep nothing more."""

    name: ClassVar[str] = ""  # set by @scorer
    legacy_keys: ClassVar[tuple[str, ...]] = ()  # the record's flat fields before the map
    legacy_summary_keys: ClassVar[tuple[str, ...]] = ()  # the summary's
    qualifies: ClassVar[str | None] = None  # a scorer whose report line this one's note joins

    # -- a task
    def entry(self, c: Candidates) -> Entry | None:
        """The record's entry; None: nothing to record for this task."""
        return None

    def migrate(self, raw: Mapping[str, Any]) -> Entry | None:
        """The entry from a record written before the map (its flat fields)."""
        return None

    def flat(self, entry: Entry | None) -> dict[str, Any]:
        """The flat fields written beside the map (the legacy_keys, for older readers)."""
        return {}

    def cell(self, record: Any, entry: Entry | None) -> str | None:
        """The HTML of this score in a task's row of the page (escaped); None: no column."""
        return None

    column: ClassVar[str | None] = None  # the page's column header, where `cell` gives one

    # -- a run
    def summarize(self, records: Sequence[Any]) -> Entry | None:
        return None

    def migrate_summary(self, raw: Mapping[str, Any]) -> Entry | None:
        return None

    def summary_flat(self, entry: Entry | None) -> dict[str, Any]:
        return {}

    def table_rows(self, entry: Entry | None, tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
        """Rows of the terminal summary table (rich markup)."""
        return []

    def report_lines(self, entry: Entry | None, spec: RunSpec) -> list[str]:
        """Lines of the report's summary (the PNG's text and the HTML page's table)."""
        return []

    def report_note(self, entry: Entry | None) -> str | None:
        """A note in brackets on the first report line of the scorer named by `qualifies`."""
        return None

    def shares(self, records: Sequence[Any]) -> dict[str, float] | None:
        """For a comparison: per task, the share of its samples that scored; None: not scored."""
        return None

    compare_label: ClassVar[str | None] = None  # the comparison table's row, where `shares` gives one


BUILTINS = "humanevalfix.evaluation.scorers"
SCORERS: Registry[Scorer] = Registry("scorer", "scorer", builtins=BUILTINS)


def scorer(name: str) -> Callable[[type[Scorer]], type[Scorer]]:
    """Register a Scorer subclass under `name` (the key of its entries); registration order is the
    order of the summary's rows and the report's lines."""

    def register(cls: type[Scorer]) -> type[Scorer]:
        if cls.__module__ != BUILTINS:
            # A plugin may load before anything has read this registry: the built-in scorers are
            # registered first all the same, so the verdict's rows lead whatever else is installed.
            importlib.import_module(BUILTINS)
        cls.name = name
        SCORERS.register(name, cls())
        return cls

    return register


# ---------------------------------------------------------------- the map, for every scorer


def _collect(call: Callable[[Scorer], Entry | None]) -> dict[str, Entry]:
    """Each registered scorer's entry from `call`, in registration order (None: it has none)."""
    out: dict[str, Entry] = {}
    for name, s in SCORERS.items():
        entry = call(s)
        if entry is not None:
            out[name] = dict(entry)
    return out


def _stored_or(raw: Mapping[str, Any], migrate: Callable[[Scorer], Entry | None]) -> dict[str, Entry]:
    """The map as written, or (before the map) one made by each scorer from the flat fields.
    Entries of scorers not registered here (a plugin not installed) are kept as they are."""
    stored = raw.get("scores")
    if isinstance(stored, Mapping):
        return {str(k): dict(v) for k, v in stored.items() if isinstance(v, Mapping)}
    return _collect(migrate)


def _flat(call: Callable[[Scorer, Entry | None], Mapping[str, Any]], scores: Mapping[str, Entry]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, s in SCORERS.items():
        out.update(call(s, scores.get(name)))
    return out


def entries(c: Candidates) -> dict[str, Entry]:
    """Every registered scorer's entry for a task's candidates."""
    return _collect(lambda s: s.entry(c))


def migrated(raw: Mapping[str, Any]) -> dict[str, Entry]:
    """A stored record's map (see _stored_or)."""
    return _stored_or(raw, lambda s: s.migrate(raw))


def legacy_keys() -> set[str]:
    return {k for s in SCORERS.values() for k in s.legacy_keys}


def flat_fields(scores: Mapping[str, Entry]) -> dict[str, Any]:
    return _flat(lambda s, entry: s.flat(entry), scores)


def summarize(records: Sequence[Any]) -> dict[str, Entry]:
    return _collect(lambda s: s.summarize(records))


def migrated_summary(raw: Mapping[str, Any]) -> dict[str, Entry]:
    """A stored summary's map (see _stored_or)."""
    return _stored_or(raw, lambda s: s.migrate_summary(raw))


def legacy_summary_keys() -> set[str]:
    return {k for s in SCORERS.values() for k in s.legacy_summary_keys}


def summary_flat(scores: Mapping[str, Entry]) -> dict[str, Any]:
    return _flat(lambda s, entry: s.summary_flat(entry), scores)


def table_rows(scores: Mapping[str, Entry], tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
    return [row for name, s in SCORERS.items() for row in s.table_rows(scores.get(name), tasks, spec)]


def report_lines(scores: Mapping[str, Entry], spec: RunSpec) -> list[str]:
    out: list[str] = []
    for name, s in SCORERS.items():
        lines = s.report_lines(scores.get(name), spec)
        notes = [
            n for other, q in SCORERS.items() if q.qualifies == name for n in [q.report_note(scores.get(other))] if n
        ]
        if lines and notes:
            lines = [lines[0] + "".join(f" ({n})" for n in notes), *lines[1:]]
        out += lines
    return out
