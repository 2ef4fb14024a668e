"""The built-in scorers (evaluation/scores.py): the verdict, pass@1+ and the hard-coding check.

Each turns the one scoring run of a candidate (evaluation/scorer.py) into its entry of the
record's `scores` map, and says how a run's entries sum up and show. Their text is the text the
summary table and the reports printed before scores were a registry, word for word
(tests/golden/committed_reports.json holds it). A new score is a class here like these, decorated
`@scorer(name)`, and its test.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from humanevalfix.evaluation.robustness import NO_CASES
from humanevalfix.evaluation.scores import Candidates, Entry, Scorer, scorer
from humanevalfix.runspec import RunSpec


def pct(n: int, total: int) -> str:
    return f"{n}/{total} ({100.0 * n / total:.1f}%)" if total else "0/0"


def rate(n: int, total: int) -> float:
    return round(n / total, 4) if total else 0.0


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


@scorer("verdict")
class Verdict(Scorer):
    """pass@1: the first and the final candidate against the task's full test (the verdict that counts).

    The record's `passed` and `passed_first` read this entry."""

    legacy_keys = ("passed", "passed_first")

    def entry(self, c: Candidates) -> Entry:
        return {"passed_first": c.first.verdict.passed, "passed": c.final.verdict.passed}

    def migrate(self, raw: Mapping[str, Any]) -> Entry:
        missing = [k for k in ("passed", "passed_first") if k not in raw]
        if missing:  # as the record's constructor said when they were its fields
            raise TypeError(f"missing required field(s): {', '.join(missing)}")
        return {"passed_first": raw["passed_first"], "passed": raw["passed"]}

    def flat(self, entry: Entry | None) -> dict[str, Any]:
        entry = entry or {}
        return {"passed": bool(entry.get("passed")), "passed_first": bool(entry.get("passed_first"))}

    def summarize(self, records: Sequence[Any]) -> Entry:
        n, first, final = len(records), sum(r.passed_first for r in records), sum(r.passed for r in records)
        return {
            "passed_first": first,
            "passed": final,
            "pass_at_1_first": rate(first, n),
            "pass_at_1_final": rate(final, n),
        }

    def migrate_summary(self, raw: Mapping[str, Any]) -> Entry:
        return {k: raw.get(k, 0) for k in ("passed_first", "passed", "pass_at_1_first", "pass_at_1_final")}

    # The summary keeps these four as its own typed fields too (the headline, beside pass@k), so
    # they need no flat copy here.

    def table_rows(self, entry: Entry | None, tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
        entry = entry or {}
        return [
            ("pass@1, first attempt", pct(entry.get("passed_first", 0), tasks)),
            ("pass@1, after repair", pct(entry.get("passed", 0), tasks)),
        ]

    def report_lines(self, entry: Entry | None, spec: RunSpec) -> list[str]:
        entry = entry or {}
        return [
            f"pass@1 first attempt: {100 * float(entry.get('pass_at_1_first', 0)):.1f}%",
            f"pass@1 after repair: {100 * float(entry.get('pass_at_1_final', 0)):.1f}%",
        ]


@scorer("plus")
class Plus(Scorer):
    """pass@1+: a passing candidate also agrees with the canonical solution on extra inputs.

    The check is evaluation/robustness.py's, appended to the test in the same run. None: not
    checked (the candidate failed, or the task has no canonical code), or unknown for a passing
    candidate (the task has no cases, or inputs were left unchecked when the run's time ran out:
    `example` says why); the summary counts those passes apart (`unknown`, `no_cases`)."""

    legacy_keys = ("plus", "plus_first", "plus_inputs", "plus_disagreements", "plus_example")
    legacy_summary_keys = ("passed_plus", "passed_first_plus", "pass_at_1_plus_first", "pass_at_1_plus_final")
    column = "pass@1+"
    compare_label = "pass@1+, after repair"

    def entry(self, c: Candidates) -> Entry:
        final, first = c.final.robustness, c.first.robustness
        return {
            "final": final.plus,
            "first": first.plus,
            "inputs": final.inputs,
            "disagreements": final.disagreements,
            "example": final.example,
        }

    def migrate(self, raw: Mapping[str, Any]) -> Entry:
        # The defaults are the record's field defaults from before the map (runs before pass@1+).
        return {
            "final": raw.get("plus"),
            "first": raw.get("plus_first"),
            "inputs": raw.get("plus_inputs", 0),
            "disagreements": raw.get("plus_disagreements", 0),
            "example": raw.get("plus_example"),
        }

    def flat(self, entry: Entry | None) -> dict[str, Any]:
        e = entry or {}
        return {
            "plus": e.get("final"),
            "plus_first": e.get("first"),
            "plus_inputs": e.get("inputs", 0),
            "plus_disagreements": e.get("disagreements", 0),
            "plus_example": e.get("example"),
        }

    def cell(self, record: Any, entry: Entry | None) -> str:
        e = entry or {}
        if e.get("final") is None:
            why = f" <pre>{_esc(e['example'])}</pre>" if record.passed and e.get("example") else ""
            return f'<span class="muted">not checked</span>{why}' if record.passed else ""
        tried = f"{e.get('inputs', 0)} input(s)"
        if e["final"]:
            return f'<span class="pass">yes</span> <span class="muted">{_esc(tried)}, 0 disagree</span>'
        counted = f"{e['disagreements']} of {tried} disagree" if e.get("disagreements") else "disagrees"
        example = f"<pre>{_esc(e['example'])}</pre>" if e.get("example") else ""
        return f'<span class="fail">no</span> <span class="muted">{_esc(counted)}</span>{example}'

    def summarize(self, records: Sequence[Any]) -> Entry | None:
        n = len(records)
        plus = [(r, r.scores.get(self.name) or {}) for r in records]
        unknown = [e for r, e in plus if r.passed and e.get("final") is None and e.get("example")]
        checked = (
            any(e.get("final") is not None for r, e in plus if r.passed)
            or any(e.get("first") is not None for r, e in plus if r.passed_first)
            or bool(unknown)  # tried, and unknown (no cases, inputs left unchecked): said, not "0%"
        )
        if not n or not checked:
            return None  # older runs, no canonical code, nothing passed: not "0%"
        final = sum(1 for r, e in plus if r.passed and e.get("final") is True)
        first = sum(1 for r, e in plus if r.passed_first and e.get("first") is True)
        entry: dict[str, Any] = {
            "passed_first": first,
            "passed": final,
            "pass_at_1_first": rate(first, n),
            "pass_at_1_final": rate(final, n),
        }
        # Passes whose pass@1+ is unknown, apart from both counts (issue 51); only when there are
        # any, so a summary without them reads as it always did.
        unknown_first = sum(1 for r, e in plus if r.passed_first and e.get("first") is None)
        if unknown or unknown_first:
            entry["unknown"] = sum(1 for r, e in plus if r.passed and e.get("final") is None)
            entry["unknown_first"] = unknown_first
            entry["no_cases"] = sum(1 for e in unknown if str(e.get("example")).startswith(NO_CASES))
        return entry

    def migrate_summary(self, raw: Mapping[str, Any]) -> Entry | None:
        entry = {
            new: raw.get(old)
            for new, old in zip(
                ("passed", "passed_first", "pass_at_1_first", "pass_at_1_final"),
                self.legacy_summary_keys,
                strict=True,
            )
        }
        return entry if any(v is not None for v in entry.values()) else None

    def summary_flat(self, entry: Entry | None) -> dict[str, Any]:
        e = entry or {}
        return {
            old: e.get(new)
            for new, old in zip(
                ("passed", "passed_first", "pass_at_1_first", "pass_at_1_final"),
                self.legacy_summary_keys,
                strict=True,
            )
        }

    def table_rows(self, entry: Entry | None, tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
        if not entry or entry.get("passed") is None or entry.get("passed_first") is None:
            return []
        # Beside pass@1, not instead: pass@1 is what published tables report.
        return [
            (
                "pass@1+, first / after repair",
                f"{pct(entry['passed_first'], tasks)} / {pct(entry['passed'], tasks)} (passes that also agree with "
                f"the canonical solution on {_plus_source(spec)})",
            )
        ] + (
            [("pass@1+ unknown, first / after repair", _unknown(entry))]
            if entry.get("unknown_first") or entry.get("unknown")
            else []
        )

    def report_lines(self, entry: Entry | None, spec: RunSpec) -> list[str]:
        if not entry or entry.get("pass_at_1_final") is None:
            return []
        lines = [
            f"pass@1+ first / after repair: {100 * float(entry.get('pass_at_1_first') or 0):.1f}% / "
            f"{100 * float(entry['pass_at_1_final']):.1f}%"
        ]
        if entry.get("unknown_first") or entry.get("unknown"):
            lines.append(f"pass@1+ unknown first / after repair: {_unknown(entry)}")
        source = spec.scoring.plus_source or {}
        if source.get("inputs") == "evalplus-file":
            lines.append(
                f"pass@1+ inputs: EvalPlus's file {Path(str(source.get('path'))).name} (sha256 {source.get('sha256')})"
            )
        return lines

    def shares(self, records: Sequence[Any]) -> dict[str, float] | None:
        """Per task, the share of samples that passed and agreed with the canonical solution."""
        if not any((r.scores.get(self.name) or {}).get("final") is not None for r in records if r.passed):
            return None  # a run whose passes were never checked (older runs)
        n: dict[str, int] = defaultdict(int)
        c: dict[str, int] = defaultdict(int)
        for r in records:
            n[r.task_id] += 1
            c[r.task_id] += int(r.passed and (r.scores.get(self.name) or {}).get("final") is True)
        return {t: c[t] / n[t] for t in n}


def _unknown(entry: Entry) -> str:
    """Passes whose pass@1+ is neither true nor false (Plus.summarize), and why."""
    return (
        f"{entry.get('unknown_first', 0)} / {entry.get('unknown', 0)} passes ({entry.get('no_cases', 0)} of a task "
        "without cases; the others: inputs left unchecked when the run's time ran out, or no answers to compare "
        "with, the task's plus_example says which; `score` checks them again), in neither pass@1+ nor its failures"
    )


def _plus_source(spec: RunSpec) -> str:
    """Which extra inputs gave pass@1+ (config.plus_source, written by `score`; a run's own check: generated)."""
    source = spec.scoring.plus_source or {}
    if source.get("inputs") == "evalplus-file":
        return f"EvalPlus's inputs, {Path(str(source.get('path'))).name} sha256 {str(source.get('sha256'))[:12]}…"
    return "generated extra inputs"


@scorer("hardcoding")
class Hardcoding(Scorer):
    """Branches of a passing final candidate that look fitted to the test's asserts (a flag, not a verdict).

    The static half of pass@1+ (evaluation/hardcoding.py), looked for in the same pass."""

    legacy_keys = ("suspect_hardcoding",)
    legacy_summary_keys = ("suspect_hardcoding",)
    qualifies = "plus"  # the report says it beside pass@1+, as it always did

    def entry(self, c: Candidates) -> Entry:
        # Looked for in the same pass as the check, on a passing final candidate only.
        return {"lines": list(c.final.robustness.suspect_hardcoding)}

    def migrate(self, raw: Mapping[str, Any]) -> Entry:
        return {"lines": list(raw.get("suspect_hardcoding") or [])}

    def flat(self, entry: Entry | None) -> dict[str, Any]:
        return {"suspect_hardcoding": list((entry or {}).get("lines") or [])}

    def summarize(self, records: Sequence[Any]) -> Entry:
        return {"count": sum(1 for r in records if r.passed and (r.scores.get(self.name) or {}).get("lines"))}

    def migrate_summary(self, raw: Mapping[str, Any]) -> Entry:
        return {"count": raw.get("suspect_hardcoding", 0)}

    def summary_flat(self, entry: Entry | None) -> dict[str, Any]:
        return {"suspect_hardcoding": (entry or {}).get("count", 0)}

    def table_rows(self, entry: Entry | None, tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
        count = (entry or {}).get("count")
        if not count:
            return []
        return [
            (
                "suspect hard-coding",
                f"{count} passing candidate(s) branch on test literals (see suspect_hardcoding per task)",
            )
        ]

    def report_note(self, entry: Entry | None) -> str | None:
        count = (entry or {}).get("count")
        return f"{count} suspect hard-coding" if count else None
