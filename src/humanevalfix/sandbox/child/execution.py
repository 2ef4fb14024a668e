"""One run inside the sandbox: the judge's side (prelude, helpers, test) and the candidate's code.

`prepare` builds what every run starts from (once per fork server, once per fresh interpreter);
`compile_test` compiles a test and the task's trusted helpers once, and finds the names the test
takes from the candidate; `execute` runs one test in the judge against a candidate that lives in
another process (candidate.py, reached through judge.Channel) and returns the verdict as a dict,
with a short failure message a model can act on; `compile_candidate` is the candidate process's
first step.

Standard library only: runner.py loads this file from its own directory and hands it a loader
for the helpers (rewriting.py, assertions.py, restricted.py, judge.py, plaindata.py) it needs.
"""

from __future__ import annotations

import ast

# base64 and zlib: the pass@1+ check's library decodes its cases with them in every judge; loaded
# once here by a fork server, they are not loaded again by each judge it forks.
import base64  # noqa: F401
import builtins
import marshal
import symtable
import time
import traceback
import zlib  # noqa: F401
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

# The reference harness's prelude (bigcode-evaluation-harness, HumanEvalPack Python).
PRELUDE = """\
import math
import re
import sys
import copy
import datetime
import itertools
import collections
import heapq
import statistics
import functools
import hashlib
import numpy
import numpy as np
import string
from typing import *
from collections import *
"""

CANDIDATE_FILE = "<candidate>"
TEST_FILE = "<test>"
MESSAGE_CAP = 1500


SUPPORT_FILE = "<support>"
MESSAGE_CAP = 1500
# The harness's own code for a test (the pass@1+ check) goes after the task's helpers, below this
# line: the same text for every task, so a fork server compiles it once (`compile_library`), not
# in every judge. Only where the harness put it is a split: the last such line of the support.
LIBRARY_MARK = "\n# --- hefix: the harness's library, the same for every task ---\n"
LIBRARY_FILE = "<hefix library>"


@dataclass
class Prepared:
    """What every run starts from: built once per fork server, once per fresh interpreter."""

    namespace: dict[str, Any]  # the prelude's names
    builtins_snapshot: dict[str, Any]
    prelude_names: frozenset[str]  # both's names: never the candidate's, unless passed to check()
    rewriting: ModuleType  # rewriting.py: the test's asserts, instrumented
    assertions: ModuleType  # assertions.py: what the instrumented asserts call
    judge: ModuleType  # judge.py: the judge's end of the candidate's socket
    plain: ModuleType  # plaindata.py: the only values that cross
    policy: ModuleType | None  # restricted.py in restricted mode


def prepare(load: Callable[[str], ModuleType], mode: str) -> Prepared:
    """`load(name)`: the module of `name`.py next to this file (the runner's loader)."""
    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
    policy = load("restricted") if mode == "restricted" else None
    snapshot = dict(vars(builtins))
    names = frozenset(snapshot) | frozenset(namespace)
    return Prepared(
        namespace, snapshot, names, load("rewriting"), load("assertions"), load("judge"), load("plaindata"), policy
    )


# ---------------------------------------------------------------------------------------------
# Failure messages


def source_line(source: str, lineno: int | None) -> str:
    lines = source.splitlines()
    if lineno and 0 < lineno <= len(lines):
        return lines[lineno - 1].strip()
    return ""


def exception_text(exc: BaseException) -> str:
    """str(exc), guarded and capped."""
    try:
        text = str(exc)
    except BaseException:
        text = "<the exception's message could not be printed>"
    return text if len(text) <= 500 else text[:497] + "..."


def describe_failure(exc: BaseException, code: str, test: str, recorder: Any, env: Prepared) -> str:
    """One failure, short: what went wrong, where in the test, which line of the candidate."""
    assertions = env.assertions
    origin = env.judge.origin_of(exc)  # an exception of the candidate's, raised again here
    frames = traceback.extract_tb(exc.__traceback__)
    test_frame = next((f for f in reversed(frames) if f.filename == TEST_FILE), None)
    where = f" (test line {test_frame.lineno})" if test_frame is not None else ""
    text = origin.text if origin is not None else exception_text(exc)
    name = origin.type if origin is not None else type(exc).__name__
    parts: list[str]
    if isinstance(exc, assertions.ExplainedAssertion):
        parts = [f"Test failed{where}:", text]
    elif isinstance(exc, AssertionError):
        parts = ["AssertionError" + (f": {text}" if text else "")]
        if test_frame is not None:
            parts.append(f"  test line {test_frame.lineno}: {source_line(test, test_frame.lineno)}")
    else:
        parts = [f"{name}: {text}"]
        call = recorder.in_flight() if recorder is not None else None
        if call is not None:
            parts.append(f"  while calling {recorder.call_text(call)[:400]}{where}")
        elif test_frame is not None:
            parts.append(f"  test line {test_frame.lineno}: {source_line(test, test_frame.lineno)}")
    if origin is not None and origin.line is not None:
        verb = "assert in" if isinstance(exc, AssertionError) else "raised at"
        parts.append(f"  {verb} candidate line {origin.line}: {source_line(code, origin.line)}")
    message = "\n".join(parts)
    return message if len(message) <= MESSAGE_CAP else message[: MESSAGE_CAP - 3] + "..."


# ---------------------------------------------------------------------------------------------
# The test, compiled once


@dataclass(frozen=True)
class CompiledTest:
    code: CodeType  # the test with its asserts rewritten
    infos: list[Any] | LazyInfos  # rewriting.AssertInfo per assert (LazyInfos: made when first read)
    support: CodeType | None  # the task's trusted helpers, run before the test
    wanted: tuple[str, ...]  # names the test takes from the candidate (the entry point, ...)
    library: CodeType | None = None  # the harness's library, run after the helpers
    classes: tuple[str, ...] = ()  # the helpers' top-level classes: their instances cross by value


@dataclass(frozen=True)
class Names:
    """test_names's answer: what the test wants from the candidate, the library, and the test's
    syntax tree, parsed once for both halves (compile_test rewrites it: use it once)."""

    wanted: tuple[str, ...]
    library: Library
    tree: ast.Module
    classes: tuple[str, ...] = ()  # dataset_classes of the helpers


@dataclass(frozen=True)
class Library:
    code: CodeType | None
    bound: frozenset[str]  # the names it binds


class LazyInfos:
    """A test's AssertInfo list made only when a failing assert asks for it: a test compiled in
    the harness (`to_bytes`) comes without it, and most runs never read it."""

    def __init__(self, env: Prepared, test: str) -> None:
        self._env, self._test = env, test
        self._infos: list[Any] | None = None

    def __getitem__(self, index: int) -> Any:
        if self._infos is None:
            self._infos = self._env.rewriting.rewrite(self._test, ast.parse(self._test, TEST_FILE))[1]
        return self._infos[index]


def to_bytes(compiled: CompiledTest) -> bytes:
    """A compiled test as the harness hands it to a judge (sandbox/testcode.py): its code objects
    and wanted names. Not the library (the judge's own) nor the infos (LazyInfos)."""
    return marshal.dumps((compiled.code, compiled.support, compiled.wanted))


def from_bytes(
    env: Prepared, data: bytes, test: str, support: str, libraries: dict[str, Library] | None
) -> CompiledTest | None:
    """`to_bytes`'s test, for the test and support it was made from (the harness's; None if it is
    not one: the judge compiles the test itself)."""
    try:
        code, own, wanted = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if type(code) is not CodeType or not (own is None or type(own) is CodeType):
        return None
    if type(wanted) is not tuple or not all(type(name) is str for name in wanted):
        return None
    helpers, library_text = split_support(support)
    library = _library(library_text, libraries)
    return CompiledTest(code, LazyInfos(env, test), own, wanted, library.code, dataset_classes(helpers))


def dataset_classes(helpers: str) -> tuple[str, ...]:
    """The classes the task's helpers (the dataset's prompt and code around the entry point) define
    at top level: the ones whose instances cross between judge and candidate by value. Not the
    test's: the candidate, which never sees the test, has no class of their names."""
    if "class" not in helpers:
        return ()
    try:
        tree = ast.parse(helpers, SUPPORT_FILE)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(node.name for node in tree.body if isinstance(node, ast.ClassDef))


def split_support(support: str) -> tuple[str, str]:
    """(the task's helpers, the harness's library after LIBRARY_MARK, or "")."""
    own, mark, library = support.rpartition(LIBRARY_MARK)
    return (own, library) if mark else (support, "")


def compile_library(library: str) -> Library:
    """Raises SyntaxError (or ValueError, RecursionError), as compile_test does."""
    if not library.strip():
        return Library(None, frozenset())
    return Library(compile(library, LIBRARY_FILE, "exec", dont_inherit=True), frozenset(_bound(library, LIBRARY_FILE)))


def compile_test(
    env: Prepared, test: str, support: str = "", libraries: dict[str, Library] | None = None, names: Names | None = None
) -> CompiledTest:
    """Raises SyntaxError (or ValueError, RecursionError). The fork server does this once per
    distinct (support, test), before forking; `libraries`: those it has compiled already;
    `names`: test_names's answer, when it was asked first."""
    names = names if names is not None else test_names(env, test, support, libraries)
    code, infos = env.rewriting.rewrite(test, names.tree)
    own = split_support(support)[0]
    support_code = compile(own, SUPPORT_FILE, "exec", dont_inherit=True) if own.strip() else None
    return CompiledTest(code, infos, support_code, names.wanted, names.library.code, names.classes)


def test_names(env: Prepared, test: str, support: str = "", libraries: dict[str, Library] | None = None) -> Names:
    """The names the test takes from the candidate (the entry point, ...), and the library found
    or compiled on the way: the first half of compile_test, so the candidate can be loading while
    the judge compiles. Raises as it does."""
    own, library_text = split_support(support)
    library = _library(library_text, libraries)
    tree = ast.parse(test, TEST_FILE)
    return Names(_wanted(env, tree, test, own, library), library, tree, dataset_classes(own))


def _library(text: str, libraries: dict[str, Library] | None) -> Library:
    return (libraries or {}).get(text) or compile_library(text)


def _wanted(env: Prepared, tree: ast.Module, test: str, support: str, library: Library) -> tuple[str, ...]:
    # Passed to `check(...)`: the candidate's even where the name is a builtin's or the prelude's.
    checked: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check":
            checked.update(a.id for a in node.args if isinstance(a, ast.Name))
    table = symtable.symtable(test, TEST_FILE, "exec")
    # Membership only: a judge that copied the prelude's names would write the reference count
    # of each, every one on a page shared with the fork server (a copy-on-write fault each).
    own = _bound(support, SUPPORT_FILE) | library.bound | _bound_in(table)
    wanted = {name for name in _global_names(table) if name not in own and name not in env.prelude_names}
    return tuple(sorted(wanted | checked))


def _global_names(module: symtable.SymbolTable) -> set[str]:
    """Every global name the module reads, in any of its scopes."""
    found: set[str] = set()
    stack = [module]
    while stack:
        table = stack.pop()
        top = table.get_type() == "module"
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (top or symbol.is_global()):
                found.add(symbol.get_name())
        stack.extend(table.get_children())
    return found


def _bound(source: str, filename: str) -> set[str]:
    """The names the source binds at module level (defs, classes, imports, assignments)."""
    if not source.strip():
        return set()
    return _bound_in(symtable.symtable(source, filename, "exec"))


def _bound_in(module: symtable.SymbolTable) -> set[str]:
    return {s.get_name() for s in module.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}


# ---------------------------------------------------------------------------------------------
# The candidate's code, in the candidate's process


def compile_candidate(env: Prepared, code: str) -> tuple[CodeType, dict[str, Any]] | dict[str, Any]:
    """The candidate's code and the namespace it runs in, or the failed verdict."""
    policy = env.policy
    try:
        # dont_inherit: not this module's `from __future__ import annotations`, under which every
        # annotation would be a string and @dataclass would look for a module `__candidate__`.
        compiled_code: CodeType = compile(code, CANDIDATE_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return {"status": "failed", "message": f"SyntaxError in candidate line {exc.lineno}: {exc.msg}"}
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, nesting too deep
        return {"status": "failed", "message": f"the candidate cannot be compiled: {type(exc).__name__}: {exc}"}
    if policy is None:
        return compiled_code, dict(env.namespace)
    try:
        compiled_code = policy.compile_candidate(code, CANDIDATE_FILE)
    except policy.NotAllowed as exc:
        return {"status": "failed", "message": str(exc)}
    return compiled_code, policy.candidate_globals(env.namespace, "__candidate__")


# ---------------------------------------------------------------------------------------------
# A run, in the judge


@dataclass(frozen=True)
class Run:
    """One request as the judge sees it."""

    code: str
    test: str
    support: str
    workdir: str
    limits: dict[str, int]
    out_fd: int | None  # the candidate's stdout, handed over (fork server), or None (inherited)


def execute(
    env: Prepared,
    channel: Any,
    run: Run,
    compiled: CompiledTest | None = None,
    facts: dict[str, Any] | None = None,
    libraries: dict[str, Library] | None = None,
) -> dict[str, Any]:
    """Prelude names + the task's helpers + the test, here; the candidate's names are stubs that
    call into its process through `channel` (a judge.Channel)."""
    fault = env.judge.CandidateFault
    try:
        if compiled is None:
            # The candidate loads its code while the judge compiles the test.
            names = test_names(env, run.test, run.support, libraries)
            channel.send_load(run.code, list(names.wanted), run.workdir, run.limits, run.out_fd, names.classes)
            compiled = compile_test(env, run.test, run.support, libraries, names)
        else:
            channel.send_load(run.code, list(compiled.wanted), run.workdir, run.limits, run.out_fd, compiled.classes)
    except fault:
        return _fault_verdict(channel)
    except SyntaxError as exc:
        where = "helper code" if exc.filename in (SUPPORT_FILE, LIBRARY_FILE) else "test"
        return {"status": "error", "message": f"SyntaxError in {where} line {exc.lineno}: {exc.msg}"}
    except Exception as exc:  # null bytes, nesting too deep: the test, not the candidate
        return {"status": "error", "message": f"the test cannot be compiled: {type(exc).__name__}: {exc}"}
    # A judge runs one test and exits (a fork of the server, or a fresh interpreter), so the test
    # runs in the prelude's namespace itself: a copy would write the reference count of every
    # name and value in it, each on a page shared with the server (a copy-on-write fault each).
    test_ns = env.namespace
    test_ns["__builtins__"] = env.builtins_snapshot
    # The helpers run before the candidate's answer is read: a value it defines may be an
    # instance of one of their classes, which only then exist here.
    for helpers in (compiled.support, compiled.library):
        if helpers is None:
            continue
        try:
            exec(helpers, test_ns)
        except BaseException as exc:
            return {
                "status": "error",
                "message": f"the task's helper code failed: {type(exc).__name__}: {exception_text(exc)}",
            }
    channel.classes = env.plain.Classes(test_ns, list(compiled.classes)) if compiled.classes else None
    try:
        defined = channel.loaded(list(compiled.wanted))
    except fault:
        return _fault_verdict(channel)
    if isinstance(defined, str):
        return {"status": "failed", "message": defined}
    test_ns.update(defined)
    test_ns[env.judge.BATCH] = channel.batch
    test_ns[env.judge.BATCH_JSON] = channel.batch_json
    facts = facts if facts is not None else {}
    test_ns[env.judge.FACT] = env.judge.fact_recorder(facts, env.plain)
    test_ns[env.judge.MARK] = env.judge.mark_recorder(facts, channel)
    recorder = env.assertions.Recorder(compiled.infos)
    test_ns[env.rewriting.HELPER] = recorder
    try:
        exec(compiled.code, test_ns)
    except fault:
        pass  # the channel knows why
    except SystemExit as exc:
        return {"status": "failed", "message": f"the test called exit({exc.code!r}) before it finished"}
    except BaseException as exc:
        if channel.fault is None:
            return {"status": "failed", "message": describe_failure(exc, run.code, run.test, recorder, env)}
    if channel.fault is not None:
        return _fault_verdict(channel)
    return {"status": "passed", "message": "all tests passed"}


def _fault_verdict(channel: Any) -> dict[str, Any]:
    return {"status": "timeout" if channel.timed_out else "failed", "message": str(channel.fault)}


def timed_execute(
    env: Prepared, channel: Any, run: Run, compiled: CompiledTest | None, libraries: dict[str, Library] | None = None
) -> dict[str, Any]:
    start = time.perf_counter()
    facts: dict[str, Any] = {}
    outcome = execute(env, channel, run, compiled, facts, libraries)
    return {**outcome, "exec_s": round(time.perf_counter() - start, 6), **({"facts": facts} if facts else {})}
