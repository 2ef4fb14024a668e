"""What the model is shown beside its scope, and what is said of a fix that works around a helper.

A scope is one function, but the cause may be another: the model sees the top suspects together,
why each is suspected, the source of those in other files, and the failing tests' calls with their
values (fixer.values), so it can tell a wrong value made in a helper from a caller that passes it on.
A fix found in a caller, where the values show the asserted value was made in a helper that still
makes it, is reported as a workaround: the helper's other callers get the wrong value still.
And a suspect whose candidates change nothing the tests see gives its turns to the next (`Progress`).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from humanevalfix import pyast
from humanevalfix.fixer.localize import Stage, Suspect, units_of
from humanevalfix.fixer.project import shown
from humanevalfix.fixer.userfile import UserFile
from humanevalfix.fixer.usertests import RunReport
from humanevalfix.fixer.values import Made, Values, chain_text, made

SHOWN = 3  # suspects named to the model
SOURCE_LINES = 30  # of another file's suspect: enough for a helper, not a module
NO_PROGRESS = 2  # candidates that fail as the original did, before the next suspect's turn


def _source(user_file: UserFile, name: str) -> str | None:
    return function_source(user_file.source, name)


def function_source(source: str, name: str) -> str | None:
    """A top-level function's or method's lines (decorators included), cut at SOURCE_LINES."""
    try:
        unit = units_of(pyast.parse(source)).get(name)
    except SyntaxError:
        return None
    if unit is None:
        return None
    node = unit.node
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = source.splitlines()[start - 1 : node.end_lineno or node.lineno]
    cut = len(lines) - SOURCE_LINES
    return "\n".join(lines[:SOURCE_LINES] + ([f"    # ... ({cut} more lines)"] if cut > 0 else []))


def context_for(stage: Stage, suspects: list[Suspect], files: dict[Path, UserFile], root: Path, values: Values) -> str:
    """The suspects and the values, for the scope `stage` (whose own file the model sees whole)."""
    parts: list[str] = []
    top = suspects[:SHOWN]
    if len(top) > 1 and stage.function:
        named = "; ".join(
            f"`{s.name}` in {shown(s.path, root) if s.path else 'this file'} ({s.why})" if s.why else f"`{s.name}`"
            for s in top
        )
        parts.append(f"The suspects, most likely first: {named}. Here only `{stage.function}` may change.")
        sources: list[str] = []
        headed: set[Path] = set()
        for s in top:
            if s.path is None or s.path == stage.path or s.path not in files:
                continue
            text = _source(files[s.path], s.name)
            if text is not None:
                sources.append(text if s.path in headed else f"# {shown(s.path, root)}\n{text}")
                headed.add(s.path)
        if sources:
            parts.append(
                "The other suspects' code, to read (not to send):\n```python\n" + "\n\n".join(sources) + "\n```"
            )
    chain = chain_text(values)
    if chain:
        parts.append(
            "What the failing tests ran: each call of the project's functions, under the call it was made in, "
            f"with its arguments and what it returned:\n{chain}"
        )
    return "\n\n".join(parts)


def suspects_line(suspects: list[Suspect], root: Path) -> str:
    """What `fix` says it considered, and why, before the first scope."""
    return ", ".join(
        f"{s.name} in {shown(s.path, root) if s.path else '?'} (score {s.score})" for s in suspects[:SHOWN]
    ) + (f", and {len(suspects) - SHOWN} more" if len(suspects) > SHOWN else "")


def worked_around(function: str | None, path: Path, values: Values) -> Made | None:
    """The helper whose wrong value a fix of `function` (in `path`) passes over, when the failing
    tests' values show that value made in another function, below it: None otherwise."""
    if function is None:
        return None
    helpers = [
        m
        for m in made(values)
        if m.top.path == path
        and m.top.function.split(".<locals>.")[0] == function
        and (m.path, m.function.split(".<locals>.")[0]) != (path, function)
    ]
    return helpers[0] if helpers else None


def workaround_note(function: str | None, path: Path, values: Values, root: Path) -> str | None:
    """When the fixed function passed on a value the values show was made in another function: say so."""
    m = worked_around(function, path, values)
    if m is None:
        return None
    return (
        f"the fix changes `{function}`, but the failing tests' values show the wrong value made in "
        f"`{m.function}` ({shown(m.path, root)}: `{m.call.text()}`): this works around it, and other callers "
        f"of `{m.function}` still get that value"
    )


def cause_context(caller: str, fixed_source: str, helper: Made, root: Path) -> str:
    """What the cause's extra turns show: the caller's passing workaround, as evidence of what the
    helper should have returned (the issue-53 rule: a workaround is not accepted while a change to
    the helper is still to be tried)."""
    code = function_source(fixed_source, caller) or fixed_source
    return (
        f"The tests pass when `{caller}` is changed as below, so that it no longer passes on what "
        f"`{helper.function}` returns:\n```python\n{code}\n```\n"
        f"That only works around the bug: `{helper.function}` still makes the wrong value "
        f"(`{helper.call.text()}`, in {shown(helper.path, root)}) for every caller. Fix `{helper.function}` "
        f"instead, so that the original `{caller}`, which calls it, passes. Here only `{helper.function}` may change."
    )


def _failing(report: RunReport) -> int:
    counted = re.search(r"(\d+) failed", report.summary)
    return int(counted.group(1)) if counted else len(report.failures) or 1


def _signature(report: RunReport) -> tuple[tuple[object, ...], ...]:
    """What fails and how: a changed value or exception is a change, even with as many failing."""
    return tuple(sorted(((f.test, f.error, f.message, f.compare) for f in report.failures), key=repr))


class Progress:
    """Ends a suspect's scope early when its candidates change nothing the tests see: after NO_PROGRESS
    candidates run that fail as the original did (as many tests, the same values), the cause is
    likely in the next suspect, whose scope then gets the turns left. A candidate that changes what
    fails is progress, whatever its count; a repeat or a refusal says nothing of the suspect."""

    def __init__(self, baseline: RunReport, stop: threading.Event) -> None:
        self.baseline = baseline
        self.stop = stop
        self.stalled = 0

    def see(self, report: RunReport) -> None:
        if report.passed:
            return
        same = _failing(report) >= _failing(self.baseline) and _signature(report) == _signature(self.baseline)
        self.stalled = self.stalled + 1 if same else 0
        if self.stalled >= NO_PROGRESS:
            self.stop.set()

    @property
    def moved_on(self) -> bool:
        return self.stop.is_set()
