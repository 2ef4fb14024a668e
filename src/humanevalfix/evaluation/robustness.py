"""pass@1+: is a passing candidate right beyond the test's own inputs, or fitted to them?

A repair loop that sees the grading tests can drift into answers that special-case their
asserts (`if n == 3: return 180`): they pass and are wrong. Two checks, run only on candidates
that passed the full tests:

- differential: the candidate and the dataset's canonical solution are called on extra inputs,
  made the way EvalPlus makes them (evaluation/plusgen.py: seeds from the test's calls and the
  docstring's examples, type-aware mutation kept inside what the docstring and the seeds say,
  evaluation/plusdomain.py; at most plusgen.MAX_INPUTS, seeded by the task id),
  or taken from EvalPlus's own HumanEval+ file (evaluation/plusfile.py, `--plus-inputs`). The
  canonical answers are computed once per task and kept (evaluation/pluscases.py, which also says
  which inputs are dropped as outside the task's domain). All the cases of one candidate run in
  one sandboxed process, each call under a timer; the scorer appends them to the task's test, so
  a candidate costs one run for both its verdict and this check (evaluation/scorer.py). Results
  are compared as plain data: equal, floats within a tolerance, or, for a task whose test checks a
  property of the answer instead of its value (`assert abs(poly(xs, x)) < 1e-4`), that property.
  Any disagreement makes `plus` false; the count and the first (input, expected, got) are kept.
  An input left unchecked because the run's time ran out (a loaded machine, or a test that spent
  it) is neither: with no disagreement elsewhere, `plus` is None (unknown) with the reason, and
  `humanevalfix score` checks it again (issue 51). A task without cases has `plus` None too.
- static: a candidate that compares a parameter to a literal from the tests and returns another
  test literal is `suspect_hardcoding`, with the line. It is a flag for a reader, not a verdict.

The check is a test program for `executor.run`: it reaches the candidate only by calling the entry
point by name with plain arguments and compares plain values with the canonical answers it was
given, so it works unchanged when the candidate runs in another process behind stubs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from humanevalfix.evaluation import plusgen
from humanevalfix.evaluation.hardcoding import hardcoding
from humanevalfix.evaluation.plusanswers import COMMON
from humanevalfix.evaluation.pluscases import PER_CALL_S, Cases
from humanevalfix.evaluation.plusproperty import asserted_property
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.sandbox.child.execution import LIBRARY_MARK
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, ExecResult, Executor
from humanevalfix.tasks.support import support_code
from humanevalfix.tasks.task import Task

MAX_INPUTS = plusgen.MAX_INPUTS
test_calls = plusgen.test_calls


@dataclass(frozen=True)
class Robustness:
    plus: bool | None  # None: not checked (the candidate failed, no canonical solution, no cases, inputs unreached)
    inputs: int = 0  # extra inputs on which both were compared (the canonical solution answered)
    example: str | None = None  # the first disagreement: input, expected, got
    suspect_hardcoding: tuple[str, ...] = field(default_factory=tuple)  # "line N: <source>"
    disagreements: int = 0  # inputs on which they differ


@dataclass(frozen=True)
class Inputs:
    """What the differential check runs a task on: argument tuples and a float tolerance."""

    args: list[tuple[Any, ...]]
    atol: float = 0.0


def generated(task: Task) -> Inputs:
    return Inputs(plusgen.task_inputs(task))


# --- the differential run, inside the sandbox ---------------------------------------------------

# Appended to the task's test (the scorer's one run per candidate) or run alone: it marks that the
# test got here (`@hefix.mark`: the task's verdict, known to the harness whatever follows), then
# calls the candidate on every case at once (in the sandbox's judge, one exchange with the
# candidate's process, each call under its own limit there: `@hefix.batch`; elsewhere a loop),
# within what is left of the run's time, and compares in the normal form of pluscases.COMMON.
_CHECK = """

def _hefix_plus(candidate, _payload, _atol, _property, _calls, _reply, _count):
    import ast as _ast, base64 as _b64, copy as _copy, json as _json, math as _math, signal as _signal, \
time as _time, zlib as _zlib
__COMMON__
    def _number(a):
        if type(a) is list and len(a) == 2 and a[0] == "float":
            return a[1]
        return a if type(a) is int else None
    def _same(a, b):
        if a == b:  # equal normal forms are the same (a long answer compares in C); NaN and isclose below
            return True
        x, y = _number(a), _number(b)
        if x is not None and y is not None and (type(x) is float or type(y) is float):
            try:
                if _math.isnan(x) or _math.isnan(y):
                    return _math.isnan(x) and _math.isnan(y)
                return _math.isclose(x, y, rel_tol=1e-6, abs_tol=max(_atol, 1e-9))
            except (OverflowError, TypeError):
                return False
        if type(a) is list and type(b) is list and len(a) == len(b) == 2 and a[0] in ("list", "tuple") and a[0] == b[0]:
            return type(a[1]) is list and type(b[1]) is list and len(a[1]) == len(b[1]) and \
all(_same(x, y) for x, y in zip(a[1], b[1]))
        return a == b
    _mark = globals().get("@hefix.mark")
    _left = _mark("test") if _mark is not None else __BUDGET__ + __RESERVE__
    _budget = min(__BUDGET__, _left - __RESERVE__)
    _batch = globals().get("@hefix.batch_json")
    _old = _signal.signal(_signal.SIGALRM, _alarm)
    _start = _time.monotonic()
    # The calls as the harness wrote them, spliced unread; an answer byte-equal to `_reply` (every
    # answer the canonical one's value, types included, as the harness checked; never for a
    # property) is every case agreeing, and nothing of it is decoded.
    _expect = None if _prop or not _reply else _zlib.decompress(_b64.b64decode(_reply))
    _outs = _batch(candidate, _zlib.decompress(_b64.b64decode(_calls)), _count, _budget, _expect) if \
_budget > 0 and _batch is not None else []
    _cases = [] if _outs is None else _json.loads(_zlib.decompress(_b64.b64decode(_payload)))
    if _budget <= 0:
        _outs = [("skipped", None)] * len(_cases)
    elif _batch is None:
        _outs = []
        for _c in _cases:
            if _time.monotonic() - _start > _budget:
                _outs.append(("skipped", None))
                continue
            try:
                _outs.append(("value", _call(candidate, _ast.literal_eval(_c[0]), _c[2])))
            except _Slow:
                _outs.append(("timeout", None))
            except Exception as _exc:
                _outs.append(("raised", type(_exc).__name__ + ": " + str(_exc)[:100]))
    _compared = _count if _outs is None else 0
    _differ = _skipped = 0
    _first = None
    for (_text, _expected, _limit), (_kind, _value) in zip(_cases, _outs or ()):
        if _kind == "skipped":
            _skipped += 1
            continue
        if _kind == "value":
            _got = _plain(_value)
            _ok = _holds(_ast.literal_eval(_text), _value) if _prop else _same(_expected, _got)
        elif _kind == "timeout":
            _got, _ok = ["raised", "no answer within %g s" % _limit], False
        else:
            _got, _ok = ["raised", _value], False
        _compared += 1
        if not _ok:
            _differ += 1
            if _first is None:
                _first = (_text, _expected, _got)
    _signal.signal(_signal.SIGALRM, _old)
    _counts = {"compared": _compared, "disagreements": _differ, "skipped": _skipped}
    if "@hefix.fact" in globals():  # the judge's channel, which the candidate cannot write
        globals()["@hefix.fact"]("plus", _counts)
    def _show(x):
        try:
            return repr(x)[:200]
        except ValueError:  # an int past the digits limit of int -> str
            return "<an int of more than 4300 digits>"
    if _first is not None:
        _what = "has the test's property" if _prop else "gives " + _show(_first[1])
        raise AssertionError("plus: on input " + _first[0][:200] + " the canonical solution " + _what + \
", the candidate " + _show(_first[2])
                             + " (" + str(_differ) + " of " + str(_compared) + " inputs disagree)")
    # An input the run's time ran out before is not checked: with no disagreement on the rest, the
    # check neither passes nor fails (the harness reads `skipped` from the fact: pass@1+ unknown).
"""
RESERVE_S = 2.0  # of the run's time, kept for the judge to report: a batch's grace and the reply
# The candidate's time on all the cases, at most: what the default execution timeout leaves once the
# reserve is kept (a run's check gets the smaller of this and what its test left, less the reserve).
BUDGET_S = DEFAULT_TIMEOUT_S - RESERVE_S


@dataclass(frozen=True)
class Program:
    """A check as a run takes it: its function goes with the task's helpers (compiled as it is,
    not rewritten for assertion messages as a test is), and the test gets one call of it."""

    support: str
    call: str


@lru_cache(maxsize=1)
def _library() -> str:
    """The check's function: the same text for every task (what differs is passed to it), so a
    fork server compiles it once (sandbox/child/execution.py, LIBRARY_MARK)."""
    text = _CHECK.replace("__COMMON__", COMMON).replace("__PROPERTY__", "_property")
    for name, value in {"PER_CALL": PER_CALL_S, "BUDGET": BUDGET_S, "RESERVE": RESERVE_S}.items():
        text = text.replace(f"__{name}__", repr(value))
    return text


def check_program(task: Task, cases: Cases) -> Program:
    """The task's helpers and its data for the check (the cases compressed: they are most of the
    program), then the library; the test gets one call."""
    prop = asserted_property(task.test, task.entry_point)
    data = (
        cases.payload,
        float(max(cases.atol, 0.0)),
        None if prop is None else prop.as_literal(),
        cases.calls,
        cases.reply if prop is None else None,
        cases.count,
    )
    support = f"{support_code(task)}\n_hefix_plus_data = {data!r}\n{LIBRARY_MARK}{_library()}"
    # `check(...)`-style: the entry point passed by name keeps it the candidate's, even where it
    # is named like a builtin.
    return Program(support, f"\n_hefix_plus({task.entry_point}, *_hefix_plus_data)\n")


@dataclass(frozen=True)
class Differential:
    agrees: bool | None  # None: could not be checked
    compared: int = 0
    disagreements: int = 0
    example: str | None = None


def read_run(run: ExecResult) -> Differential:
    """The check's outcome from a run of check_program (alone or after a test that passed)."""
    if run.status == "error":
        return Differential(None, example=f"executor: {run.message}")
    counts = run.facts.get("plus")
    counts = counts if isinstance(counts, dict) else {}
    compared, differ = int(counts.get("compared") or 0), int(counts.get("disagreements") or 0)
    skipped = int(counts.get("skipped") or 0)
    if run.passed and skipped:
        return Differential(None, compared, example=unchecked(skipped, skipped + compared))
    if run.passed:
        return Differential(True, compared)
    message = run.message
    example = message[message.index("plus: ") + 6 :] if "plus: " in message else f"{run.status}: {message}"
    return Differential(False, compared, max(differ, 1), example.splitlines()[0][:600])


UNCHECKED = "not checked: "  # how an unknown pass@1+'s reason begins (the summary counts them by it)
NO_CASES = UNCHECKED + "the task has no pass@1+ cases"


def unchecked(skipped: int, total: int) -> str:
    return (
        f"{UNCHECKED}{skipped} of {total} inputs: the run's time ran out before them (pass@1+ unknown; "
        "`humanevalfix score` checks them again)"
    )


def differential(code: str, task: Task, executor: Executor, cases: Cases) -> Differential:
    """The candidate against the canonical answers, in one sandboxed run of its own."""
    if cases.problem is not None:
        return Differential(None, example=cases.problem)
    if not cases.count:  # no cases, no claim: unknown, counted apart in the summary
        return Differential(None, example=NO_CASES + (f" ({cases.dropped} inputs dropped)" if cases.dropped else ""))
    program = check_program(task, cases)
    return read_run(executor.run(code, program.call, program.support))


def cases_for(task: Task, executor: Executor, store: CaseStore, inputs: Inputs | None = None) -> Cases | None:
    """The task's cases (computed on first use); None where there is nothing to compare with."""
    if not task.canonical_code:
        return None
    return store.get(task, None if inputs is None else inputs.args, 0.0 if inputs is None else inputs.atol, executor)


def check(
    code: str | None,
    task: Task,
    executor: Executor,
    passed: bool,
    inputs: Inputs | None = None,
    store: CaseStore | None = None,
) -> Robustness:
    """Both checks for a candidate that passed the full tests; nothing to check otherwise."""
    if not passed or code is None:
        return Robustness(plus=None)
    cases = cases_for(task, executor, store or CaseStore(None), inputs)
    d = Differential(None) if cases is None else differential(code, task, executor, cases)
    return outcome(code, task, d)


def outcome(code: str, task: Task, d: Differential) -> Robustness:
    return Robustness(
        plus=d.agrees,
        inputs=d.compared,
        example=d.example,
        suspect_hardcoding=hardcoding(code, task),
        disagreements=d.disagreements,
    )
