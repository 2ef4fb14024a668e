"""Fault localisation for `fix`: which function of the user's file the failing tests point to.

A small model asked to fix a whole file answers with unrelated code; asked to fix one function,
it does what it does on the benchmark. So without --function the tests' run on the original file
(its failures as the driver reports them: usertests.FailedTest) ranks the file's top-level
functions and methods by what points to them:

- the traceback passes through it (most when the exception is raised in it);
- the failing test's line calls it (`assert mean([1, 2, 3]) == 2`), or, less, the failing test calls
  it elsewhere;
- it is called by a function pointed to above (the bug may be in the helper).

The repair then starts with the first, and widens to the next and then to the whole file when
that scope's share of the turns is spent (`plan`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from humanevalfix import pyast
from humanevalfix.fixer.failures import anchor, evaluated_parts, parse_tests, statement_at
from humanevalfix.fixer.userfile import UserFile
from humanevalfix.fixer.usertests import FailedTest, RunReport, UserTests

# Per failure. Where the exception is raised outweighs the test's own call of the function it
# passed through (the crash site first; its caller comes next); a call only elsewhere in the test,
# or from a pointed-to function, just orders what no failure points to.
RAISED_IN, TRACEBACK, FAILING_LINE, IN_TEST, CALLEE = 8, 3, 4, 1, 1
STAGES = 2  # functions tried before the whole file

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Unit:
    """A function the scope can be: top-level (`mean`) or a method of a top-level class (`Acc.mean`)."""

    name: str
    node: Function
    cls: str | None = None


def units_of(tree: ast.Module) -> dict[str, Unit]:
    """In file order; the last definition of a name wins, as at run time."""
    out: dict[str, Unit] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.pop(node.name, None)
            out[node.name] = Unit(node.name, node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{node.name}.{item.name}"
                    out.pop(name, None)
                    out[name] = Unit(name, item, node.name)
    return out


def _unit_at(units: dict[str, Unit], line: int) -> Unit | None:
    for unit in units.values():
        start = min([unit.node.lineno] + [d.lineno for d in unit.node.decorator_list])
        if start <= line <= (unit.node.end_lineno or unit.node.lineno):
            return unit  # a nested function's line belongs to the function around it
    return None


class _Names:
    """What a call names in the user's file: `mean(...)`, `stats.mean(...)`, `Acc(...)`, `x.add(...)`."""

    def __init__(self, units: dict[str, Unit], module: str, tree: ast.Module | None, script: bool) -> None:
        self.units = units
        self.aliases: dict[str, str] = {}  # a name in the tests -> the file's name for it
        self.modules: set[str] = set()  # names the tests give the module itself
        stem = module.rpartition(".")[2]

        def ours(name: str) -> bool:  # the file's module, by its dotted name or its last part
            return name in (module, stem) or name.endswith("." + stem)

        defined: set[str] = set()
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ImportFrom) and node.module and ours(node.module):
                self.aliases.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.ImportFrom) and node.module:
                self.modules.update(a.asname or a.name for a in node.names if ours(f"{node.module}.{a.name}"))
            elif isinstance(node, ast.Import):
                self.modules.update(a.asname or a.name.partition(".")[0] for a in node.names if ours(a.name))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
        if script:  # a test script runs in the module's namespace: its names need no import
            self.aliases.update({n: n for n in units if "." not in n and n not in defined})

    def _top(self, name: str) -> list[Unit]:
        if name in self.units and self.units[name].cls is None:
            return [self.units[name]]
        init = self.units.get(f"{name}.__init__")  # a class: its constructor runs
        return [init] if init is not None else []

    def called(self, nodes: list[ast.AST], cls: str | None = None) -> list[Unit]:
        """The units the calls in `nodes` reach; `cls`: the class whose `self.` methods they may call."""
        found: list[Unit] = []
        for node in (n for root in nodes for n in ast.walk(root)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                found += self._top(self.aliases.get(func.id, "")) if cls is None else self._top(func.id)
            elif isinstance(func, ast.Attribute):
                owner = func.value.id if isinstance(func.value, ast.Name) else None
                if owner is not None and owner in self.modules:
                    found += self._top(func.attr)
                elif cls is not None and owner in ("self", "cls") and f"{cls}.{func.attr}" in self.units:
                    found.append(self.units[f"{cls}.{func.attr}"])
                else:
                    found += [u for u in self.units.values() if u.cls is not None and u.node.name == func.attr]
        return list(dict.fromkeys(found))


@dataclass
class Suspect:
    """A function the failing tests point to, how strongly, and why (in words, for the user)."""

    name: str
    score: int = 0
    reasons: list[str] = field(default_factory=list)
    path: Path | None = None  # the file it is in (None: the one file being localised)

    def add(self, score: int, reason: str) -> None:
        self.score += score
        if reason not in self.reasons:
            self.reasons.append(reason)

    @property
    def why(self) -> str:
        return "; ".join(self.reasons[:2])


def _test_function(tree: ast.Module | None, name: str | None) -> Function | None:
    for node in ast.walk(tree) if tree is not None and name else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _failing_line(failure: FailedTest, tests: UserTests, line: int) -> str:
    if tests.path is None:
        return f"the failing line {line} of the inline tests calls it"
    if failure.function:
        return f"the failing test {failure.function} calls it at {tests.path.name}:{line}"
    return f"the failing line {tests.path.name}:{line} calls it"


def _point(
    failure: FailedTest,
    user_file: UserFile,
    tests: UserTests,
    units: dict[str, Unit],
    names: _Names,
    tree: ast.Module | None,
) -> list[tuple[Unit, int, str]]:
    """What one failure says about each unit: (unit, score, reason)."""
    out: list[tuple[Unit, int, str]] = []
    in_file = [f for f in failure.frames if f.where == "file"]
    for i, frame in enumerate(in_file):
        unit = _unit_at(units, frame.line)
        if unit is not None:
            raised = i == len(in_file) - 1
            where = f"{user_file.path.name}:{frame.line}"
            out.append(
                (unit, RAISED_IN, f"the {failure.error} is raised in it at {where}")
                if raised
                else (unit, TRACEBACK, "the traceback passes through it")
            )
    at = anchor(failure)
    stmt = statement_at(tree, at.line) if at is not None and tree is not None else None
    on_line: list[Unit] = []
    if at is not None and stmt is not None:
        on_line = names.called(evaluated_parts(stmt))
        for unit in on_line:
            out.append((unit, FAILING_LINE, _failing_line(failure, tests, at.line)))
    body = _test_function(tree, failure.function)
    if body is not None:
        for unit in names.called(list(body.body)):
            if unit not in on_line:
                out.append((unit, IN_TEST, f"the failing test {failure.function} calls it"))
    pointed = list(dict.fromkeys(u for u, score, _ in out if score >= TRACEBACK))
    for unit in pointed:
        for callee in names.called(list(unit.node.body), unit.cls or ""):
            if callee not in pointed:
                out.append((callee, CALLEE, f"`{unit.name}` calls it"))
    return out


class Localizer:
    """The user's file and tests, read once; each report of the tests' run ranked against them."""

    def __init__(self, user_file: UserFile, tests: UserTests) -> None:
        self.user_file = user_file
        self.tests = tests
        self.units = units_of(pyast.parse(user_file.source))
        self.tree = parse_tests(tests)
        self.names = _Names(self.units, user_file.module, self.tree, script=tests.kind == "script")

    def point(self, failure: FailedTest, source: str | None = None) -> list[tuple[Unit, int, str]]:
        """`source`: the code that ran, when not the original (a candidate's lines are not the file's)."""
        units, names = self.units, self.names
        if source is not None and source != self.user_file.source:
            try:
                units = units_of(pyast.parse(source))
            except SyntaxError:
                return []
            names = _Names(units, self.user_file.module, self.tree, script=self.tests.kind == "script")
        return _point(failure, self.user_file, self.tests, units, names, self.tree)

    def rank(self, report: RunReport) -> list[Suspect]:
        """The file's functions and methods the failing tests point to, the most likely first."""
        suspects: dict[str, Suspect] = {}
        for failure in report.failures:
            for unit, score, reason in self.point(failure):
                suspects.setdefault(unit.name, Suspect(unit.name)).add(score, reason)
        order = list(suspects)
        return sorted(suspects.values(), key=lambda s: (-s.score, order.index(s.name)))

    def failure_for(self, report: RunReport, function: str | None, source: str | None = None) -> FailedTest | None:
        """The failure to tell the model about: the first that points to `function`, else the first."""
        for failure in report.failures:
            if function is not None and any(
                u.name == function and score > CALLEE for u, score, _ in self.point(failure, source)
            ):
                return failure
        return report.failures[0] if report.failures else None


def rank(user_file: UserFile, tests: UserTests, report: RunReport) -> list[Suspect]:
    return Localizer(user_file, tests).rank(report)


@dataclass(frozen=True)
class Stage:
    """One scope of the repair and its turns: a function or method (`function`), or the whole file (None)."""

    function: str | None
    turns: int
    reason: str
    path: Path | None = None  # the file the scope is in (None: the user's FILE)


def plan(suspects: list[Suspect], budget: int, filename: str, path: Path | None = None) -> list[Stage]:
    """The scopes tried in turn: the first suspect, the next, then the whole file (the first
    suspect's, else `path`).

    The first suspect gets two thirds of the turns, rounded up: it is the function at fault in 39
    and 38 of the first 40 tasks of the two sets of bench/fix_scope_bench.py, and a repair takes turns (20 of
    the 40 passes of the committed default benchmark run came at the third or fourth turn). The
    rest is shared evenly, two turns at least each (one turn has no feedback, as --max-iters 0),
    in order: with too few turns for all, the whole file is left out first, as a small model does
    worst on it (it tends to answer with unrelated code), and the second suspect is often the
    helper of the first.
    """
    scopes: list[tuple[str | None, str, Path | None]] = [(s.name, s.why, s.path) for s in suspects[:STAGES]]
    whole = suspects[0].path if suspects and suspects[0].path else path
    scopes.append(
        (
            None,
            "" if suspects else f"no failing test's traceback or failing line reaches a function of {filename}",
            whole,
        )
    )
    rest = budget - -(-2 * budget // 3)  # what the first suspect's two thirds (rounded up) leave
    count = min(len(scopes) - 1, rest // 2)
    scopes = scopes[: 1 + count]
    shares = (
        [budget - rest] + [rest // count + (1 if i < rest % count else 0) for i in range(count)] if count else [budget]
    )
    return [Stage(name, turns, why, where) for (name, why, where), turns in zip(scopes, shares, strict=True)]
