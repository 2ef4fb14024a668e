"""The `demo-lines` score: the final candidate's length in lines, one class as the scorer recipe says."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from humanevalfix.evaluation.scores import Candidates, Entry, Scorer, scorer
from humanevalfix.runspec import RunSpec


@scorer("demo-lines")
class DemoLines(Scorer):
    """The final candidate's length in lines (a demo plugin's score)."""

    def entry(self, c: Candidates) -> Entry:
        return {"lines": len((c.final_code or "").splitlines())}

    def summarize(self, records: Sequence[Any]) -> Entry:
        return {"total": sum((r.scores.get(self.name) or {}).get("lines", 0) for r in records)}

    def table_rows(self, entry: Entry | None, tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
        return [("demo lines", f"{(entry or {}).get('total', 0)} final code lines")]
