"""Fault localisation across the user's project: which function, in which file, to repair first.

The tests' run on the original project (one run, in the same sandbox as the candidates, with the
driver's call tracer on: sandbox/child/fix_trace.py) reports each failing test's traceback frames
anywhere in the project, the failing comparison, and the project's functions that ran during the
failing tests, each with the project function that called it. Each file those name is ranked as
fixer.localize ranks one file (the exception raised in it, the traceback through it, the failing
line's call), and on top of that:

- a function that ran during a failing test counts (RAN), so a helper whose wrong value is only
  asserted in its caller is a suspect although no traceback reaches it;
- a function of another module, called during the failing test by a function the failure points
  to, counts more than its caller (HELPER): the tested function calls into a helper module (the
  issue's `shapes/area.py` calling `shapes/geometry.py`), and a wrong value made there only shows
  in the caller's result. The caller comes next, then the whole file of the first suspect.
- with the traced run's values (fixer.values): a function whose returned value reached, unchanged,
  the result of a call the failing test made counts most (MADE, more the deeper it was made): the
  wrong value was made there, whatever the test's line calls; and, with passing tests, a function
  that ran only in the failing ones counts (ONLY_FAILING).

FILE narrows the suspects to that file, `--function` to that function.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from humanevalfix import pyast
from humanevalfix.errors import UserError
from humanevalfix.fixer.localize import TRACEBACK, Localizer, Stage, Suspect, plan, units_of
from humanevalfix.fixer.userfile import UserFile, load_user_file
from humanevalfix.fixer.usertests import RunReport, UserTests, project_root
from humanevalfix.fixer.values import Made, made, only_failing

# MADE per failing test, plus the depth: it outweighs the failing line's call and the traceback
# through the caller (4 + 3), not an exception raised in a function (8 + ...).
RAN, HELPER, MADE, ONLY_FAILING = 2, 5, 6, 2


def project_of(tests: UserTests, user_file: UserFile | None) -> Path:
    """The project's root: the git top-level of FILE's folder (else its import root), else of the
    tests' folder (else that folder; inline tests: the current directory)."""
    if user_file is not None:
        return project_root(user_file.path.parent) or user_file.import_root
    folder = tests.path.parent if tests.path is not None else Path.cwd().resolve()
    return project_root(folder) or folder


def shown(path: Path, root: Path) -> str:
    """A file as `fix` names it: relative to the current directory when under it, else to the project."""
    for base in (Path.cwd().resolve(), root):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return str(path)


def as_seen_from(report: RunReport, path: Path, served: Path | None) -> RunReport:
    """The report with the frames in `path` as the file's own, those in other project files left out."""

    def keep(where: str) -> str | None:
        if where == "tests" or where == str(path):
            return "file" if where == str(path) else where
        return where if where == "file" and served == path else None

    failures = tuple(
        replace(f, frames=tuple(replace(fr, where=w) for fr in f.frames if (w := keep(fr.where)) is not None))
        for f in report.failures
    )
    return replace(report, failures=failures)


def _unit(units: Mapping[str, object], qualname: str) -> str | None:
    """The top-level function or method a traced qualified name belongs to (`f.<locals>.g`: `f`)."""
    name = qualname.split(".<locals>.")[0]
    return name if name in units else None


class ProjectLocalizer:
    """The project's files that a failing run names, read once; a run's report ranked against them."""

    def __init__(self, tests: UserTests, root: Path, served: UserFile | None, only: Path | None = None) -> None:
        self.tests = tests
        self.root = root
        self.served = served
        self.only = only
        self.files: dict[Path, UserFile] = {served.path: served} if served is not None else {}

    def _file(self, path: Path) -> UserFile | None:
        if path not in self.files:
            if self.only is not None and path != self.only:
                return None
            try:
                # Read by its absolute path (fix may run anywhere), named as fix names it.
                self.files[path] = replace(load_user_file(str(path)), display=shown(path, self.root))
            except UserError:  # not UTF-8, no parse, outside any importable place: not a suspect
                return None
        return self.files[path]

    def _named(self, report: RunReport) -> list[Path]:
        paths = [Path(fr.where) for f in report.failures for fr in f.frames if fr.where not in ("file", "tests")]
        paths += [r.path for r in report.ran]
        if self.served is not None:
            paths.insert(0, self.served.path)
        return [
            p
            for p in dict.fromkeys(paths)
            if p.suffix == ".py" and p.is_relative_to(self.root) and self._file(p) is not None
        ]

    def rank(self, report: RunReport) -> list[Suspect]:
        """The project's functions the failing tests point to or ran, the most likely first."""
        served = self.served.path if self.served is not None else None
        suspects: dict[tuple[Path, str], Suspect] = {}
        units = {}
        for path in self._named(report):
            user_file = self.files[path]
            units[path] = units_of(pyast.parse(user_file.source))
            for s in Localizer(user_file, self.tests).rank(as_seen_from(report, path, served)):
                suspects[(path, s.name)] = replace(s, reasons=list(s.reasons), path=path)
        counted: set[tuple[object, ...]] = set()  # a unit once, however many of its inner functions ran
        for ran in report.ran:
            name = _unit(units.get(ran.path, {}), ran.function)
            if name is None or (ran.path, name) in counted:
                continue
            counted.add((ran.path, name))
            suspect = suspects.setdefault((ran.path, name), Suspect(name, path=ran.path))
            by = f", called by `{ran.caller}`" if ran.caller else ""
            if suspect.reasons:  # what points to it says more than that it ran
                suspect.score += RAN
            else:
                suspect.add(RAN, f"it ran during the failing test{by}")
        for ran in report.ran:
            name = _unit(units.get(ran.path, {}), ran.function)
            caller = _unit(units.get(ran.caller_path, {}), ran.caller) if ran.caller_path and ran.caller else None
            pointed = suspects.get((ran.caller_path, caller)) if ran.caller_path and caller else None
            if (
                name is None
                or ran.caller_path == ran.path
                or pointed is None
                or pointed.score - RAN < TRACEBACK
                or (ran.path, name, 1) in counted
            ):
                continue
            counted.add((ran.path, name, 1))
            where = shown(ran.caller_path, self.root) if ran.caller_path else ""
            helper = suspects[(ran.path, name)]
            helper.add(HELPER, f"`{caller}` ({where}) calls it in the failing test")
            helper.reasons.insert(0, helper.reasons.pop())  # the strongest reason first
        self._by_values(report, units, suspects)
        order: list[tuple[Path | None, str]] = list(suspects)  # every suspect here has its path
        depth = _call_depths(report, units)
        # On a tie the deeper function first: what a caller returns, it mostly got from what it
        # called, and the values cannot say so where they are too common to follow (True, None).
        return sorted(
            suspects.values(),
            key=lambda s: (-s.score, -depth.get((s.path, s.name), 0), order.index((s.path, s.name))),
        )

    def _by_values(
        self, report: RunReport, units: Mapping[Path, Mapping[str, object]], suspects: dict[tuple[Path, str], Suspect]
    ) -> None:
        """What the values say: where a failing test's asserted value was made, what ran only there."""
        found: dict[tuple[Path, str], list[Made]] = {}
        for m in made(report.values):
            name = _unit(units.get(m.path, {}), m.function)
            if name is not None:
                found.setdefault((m.path, name), []).append(m)
        for (path, name), ms in found.items():
            suspect = suspects.setdefault((path, name), Suspect(name, path=path))
            suspect.score += sum(MADE + m.depth for m in ms)
            suspect.reasons.insert(0, made_reason(ms))
        for s in only_failing(report.values):
            name = _unit(units.get(s.path, {}), s.function)
            if name is not None and (s.path, name) in suspects:
                passing = report.values.passing
                suspects[(s.path, name)].add(
                    ONLY_FAILING, f"it ran only in the failing tests (in none of the {passing} passing)"
                )


def _call_depths(report: RunReport, units: Mapping[Path, Mapping[str, object]]) -> dict[tuple[Path | None, str], int]:
    """How many project calls below the test each unit ran (the deepest it ran at): 0 for one the
    tests called. A caller not found (outside the project's units) counts as the test."""
    callers: dict[tuple[Path | None, str], set[tuple[Path | None, str]]] = {}
    for ran in report.ran:
        name = _unit(units.get(ran.path, {}), ran.function)
        if name is None:
            continue
        caller = _unit(units.get(ran.caller_path, {}), ran.caller) if ran.caller_path and ran.caller else None
        above = callers.setdefault((ran.path, name), set())
        if ran.caller_path is not None and caller is not None and (ran.caller_path, caller) != (ran.path, name):
            above.add((ran.caller_path, caller))
    depth = dict.fromkeys(callers, 0)
    for _ in range(len(callers)):  # longest paths, bounded: a call cycle does not loop
        changed = False
        for unit, above in callers.items():
            deepest = max((depth.get(c, 0) + 1 for c in above), default=0)
            if deepest > depth[unit]:
                depth[unit], changed = deepest, True
        if not changed:
            break
    return depth


def made_reason(ms: list[Made]) -> str:
    """`scaled_rect(Rect(1, 1), 50) → clamp(50, 0.1, 10) returned 0.1` in test_x, and N more failing tests."""
    m = ms[0]
    via = " → … → " if m.depth > 1 else " → "
    more = len({x.test for x in ms}) - 1
    test = f" in {m.test}" if m.test else ""
    tail = f", and in {more} more failing test{'s' if more > 1 else ''}" if more else ""
    return f"the wrong value is made here: `{m.top.function}({m.top.args}){via}{m.call.text()}`{test}{tail}"


def project_stages(localizer: ProjectLocalizer, report: RunReport, budget: int, function: str | None) -> list[Stage]:
    """The scopes in turn across the project; `function` (--function without FILE): only that one."""
    suspects = localizer.rank(report)
    if function is not None:
        chosen = [s for s in suspects if s.name == function]
        if not chosen:
            ran = ", ".join(dict.fromkeys(s.name for s in suspects)) or "none"
            raise UserError(
                f"--function {function}: no function of that name ran in the failing tests (those that did: {ran}); "
                "give FILE as well"
            )
        return [Stage(function, budget, "--function", chosen[0].path)]
    if not suspects and localizer.served is None:
        raise UserError(
            f"no function of the project under {localizer.root} ran in the failing tests, nor does their traceback "
            "reach one; give the FILE to repair"
        )
    served = localizer.served
    return plan(suspects, budget, served.path.name if served else "the project", served.path if served else None)
