"""pass@1+: is a passing candidate right beyond the test's own inputs, or fitted to them?

A repair loop that sees the grading tests can drift into answers that special-case their
asserts (`if n == 3: return 180`): they pass and are wrong. Two checks, run only on candidates
that passed the full tests:

- differential: the candidate and the dataset's canonical solution are called on extra inputs,
  made the way EvalPlus makes them (evaluation/plusgen.py: seeds from the test's calls and the
  docstring's examples, type-aware mutation kept inside what the docstring and the seeds say,
  evaluation/plusdomain.py; at most plusgen.MAX_INPUTS, seeded by the task id),
  or taken from EvalPlus's own HumanEval+ file (evaluation/plusfile.py, `--plus-inputs`). All the
  inputs of one candidate run in one sandboxed process, each call under a timer. Inputs on which
  the canonical solution raises or runs long are outside the task's domain and dropped. Results
  are compared as plain data: equal, floats within a tolerance, or, for a task whose test checks a
  property of the answer instead of its value (`assert abs(poly(xs, x)) < 1e-4`), that property.
  Any disagreement makes `plus` false; the count and the first (input, expected, got) are kept.
- static: a candidate that compares a parameter to a literal from the tests and returns another
  test literal is `suspect_hardcoding`, with the line. It is a flag for a reader, not a verdict.

The harness is a test program for `executor.run`: it reaches the candidate only by calling the
entry point by name with plain arguments, execs the canonical solution itself, and compares plain
values, so it works unchanged when the candidate runs in another process behind stubs.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Any

from humanevalfix.evaluation import plusgen
from humanevalfix.tasks.task import Task
from humanevalfix.evaluation.hardcoding import hardcoding
from humanevalfix.tasks.support import support_code
from humanevalfix.sandbox.executor import Executor

MAX_INPUTS = plusgen.MAX_INPUTS
PER_CALL_S = 0.25  # the canonical solution's time per call; longer: the input is dropped
CANDIDATE_FACTOR = 10  # the candidate gets max(PER_CALL_S * 2, this many times the canonical's time)
BUDGET_S = 4.0  # all the inputs of one candidate (the executor's timeout is 6 s by default)
INPUTS_MARK = "HEFIX-PLUS-INPUTS"
test_calls = plusgen.test_calls


@dataclass(frozen=True)
class Robustness:
    plus: bool | None  # None: not checked (the candidate failed, or there is no canonical solution)
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


# --- a test that checks a property, not a value ------------------------------------------------


@dataclass(frozen=True)
class Property:
    """`x = f(args...)` followed by asserts on x that are not `x == value`: the answer is one of many."""

    params: tuple[str | None, ...]  # the test's name for each argument (None: not used by the asserts)
    result: str
    asserts: tuple[str, ...]  # the asserted expressions, as source
    imports: tuple[str, ...]  # the test's import statements


def _root_name(expr: ast.expr) -> str | None:
    """`xs` for `xs`, `copy.deepcopy(xs)`, `list(xs)`: the test's variable an argument comes from."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
        return _root_name(expr.args[0])
    return None


def test_property(test: str, entry_point: str) -> Property | None:
    """The property a test asserts of the answer, where it asserts no value; None for a value test."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return None
    names = {entry_point} | {f.args.args[0].arg for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "check" and f.args.args}
    imports = tuple(ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef):
            continue
        for node in ast.walk(scope):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            call = node.value
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in names and not call.keywords):
                continue
            result = node.targets[0].id
            asserts = [a.test for a in ast.walk(scope) if isinstance(a, ast.Assert) and any(isinstance(n, ast.Name) and n.id == result for n in ast.walk(a.test))]
            if not asserts or any(_is_equality_on(a, result) for a in asserts):
                return None
            return Property(tuple(_root_name(a) for a in call.args), result, tuple(ast.unparse(a) for a in asserts), imports)
    return None


def _is_equality_on(test: ast.expr, name: str) -> bool:
    return isinstance(test, ast.Compare) and any(isinstance(op, (ast.Eq, ast.Is)) for op in test.ops) and any(
        isinstance(s, ast.Name) and s.id == name for s in [test.left, *test.comparators]
    )


# --- the differential run, inside the sandbox ---------------------------------------------------

# The "test" the executor runs after the candidate: the canonical solution in its own namespace,
# both called on each input (deep copies, a timer per call), results compared as plain data so that
# an object of the candidate's cannot decide the comparison. `check(...)` keeps an entry point named
# like a builtin. Every input is tried (within the budget) so that the disagreements are counted.
_HARNESS = '''
def check(candidate):
    import ast as _ast, copy as _copy, json as _json, math as _math, signal as _signal, time as _time
    class _Slow(Exception):
        pass
    def _alarm(signum, frame):
        raise _Slow()
    def _plain(x, depth=0):
        if depth > 20:
            return ("deep",)
        if x is None or type(x) in (bool, int, str, bytes):
            return x
        if isinstance(x, float) or type(x).__name__.startswith("float"):
            return ("float", float(x))
        if type(x) is complex:
            return ("complex", repr(x))
        if type(x) in (list, tuple):
            return (type(x).__name__, [_plain(i, depth + 1) for i in x])
        if type(x) in (set, frozenset):
            return ("set", sorted(repr(_plain(i, depth + 1)) for i in x))
        if type(x) is dict:
            return ("dict", sorted((repr(_plain(k, depth + 1)), repr(_plain(v, depth + 1))) for k, v in x.items()))
        if type(x).__name__.startswith("int") and hasattr(x, "item"):
            return int(x.item())
        return ("object", type(x).__name__)
    def _number(a):
        if type(a) is tuple and len(a) == 2 and a[0] == "float":
            return a[1]
        return a if type(a) is int else None
    def _same(a, b):
        x, y = _number(a), _number(b)
        if x is not None and y is not None and (type(x) is float or type(y) is float):
            try:
                if _math.isnan(x) or _math.isnan(y):
                    return _math.isnan(x) and _math.isnan(y)
                return _math.isclose(x, y, rel_tol=1e-6, abs_tol=max(__ATOL__, 1e-9))
            except (OverflowError, TypeError):
                return False
        if type(a) is tuple and type(b) is tuple and len(a) == len(b) == 2 and a[0] in ("list", "tuple") and a[0] == b[0]:
            return len(a[1]) == len(b[1]) and all(_same(x, y) for x, y in zip(a[1], b[1]))
        return a == b
    def _call(f, args, limit):
        _signal.setitimer(_signal.ITIMER_REAL, limit)
        try:
            return f(*_copy.deepcopy(args))
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    _ns = dict(globals())
    exec(compile(__CANONICAL__, "<canonical>", "exec"), _ns)
    _canonical = _ns[__ENTRY__]
    _prop = __PROPERTY__
    if _prop:
        _pns = dict(_ns)
        for _line in _prop["imports"]:
            try:
                exec(_line, _pns)
            except Exception:
                pass
        _checks = [compile(_e, "<property>", "eval") for _e in _prop["asserts"]]
    def _holds(args, out):
        env = dict(_pns)
        for name, value in zip(_prop["params"], args):
            if name:
                env[name] = _copy.deepcopy(value)
        env[_prop["result"]] = out
        _signal.setitimer(_signal.ITIMER_REAL, __PER_CALL__)
        try:
            return all(eval(_c, env) for _c in _checks)
        except BaseException:
            return False
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    _old = _signal.signal(_signal.SIGALRM, _alarm)
    _start = _time.monotonic()
    _compared = _dropped = _differ = _slow = 0
    _per_call, _first = __PER_CALL__, None
    _cases = []  # (input text, args, expected (plain), the canonical's own answer, the candidate's limit)
    for _text in __INPUTS__:
        _left = __BUDGET__ / 2 - (_time.monotonic() - _start)
        if _left <= 0:
            break
        _args = _ast.literal_eval(_text)
        _t0 = _time.monotonic()
        try:
            _raw = _call(_canonical, _args, min(_per_call, _left))
            _expected = _plain(_raw)
            if _prop and not _holds(_args, _raw):
                raise ValueError("the canonical answer does not have the test's property here")
        except BaseException as _exc:
            _dropped += 1
            if isinstance(_exc, _Slow):
                _slow += 1
                _per_call = __PER_CALL__ / 5 if _slow >= 3 else _per_call  # a domain with long runs: spend less on each
            continue
        _cases.append((_text, _args, _expected, _raw, min(1.0, max(2 * __PER_CALL__, __FACTOR__ * (_time.monotonic() - _t0)))))
    # The candidate on all of them at once: in the sandbox's judge, one exchange with the
    # candidate's process, each call under its own limit there (`@hefix.batch`); elsewhere a loop.
    _budget = max(0.0, __BUDGET__ - (_time.monotonic() - _start))
    _batch = globals().get("@hefix.batch")
    if _batch is not None:
        _outs = _batch(candidate, [_c[1] for _c in _cases], [_c[4] for _c in _cases], _budget)
    else:
        _outs = []
        for _c in _cases:
            if _time.monotonic() - _start > __BUDGET__:
                _outs.append(("skipped", None))
                continue
            try:
                _outs.append(("value", _call(candidate, _c[1], _c[4])))
            except _Slow:
                _outs.append(("timeout", None))
            except Exception as _exc:
                _outs.append(("raised", type(_exc).__name__ + ": " + str(_exc)[:100]))
    for (_text, _args, _expected, _raw, _limit), (_kind, _value) in zip(_cases, _outs):
        if _kind == "skipped":
            continue
        if _kind == "value":
            _got = _plain(_value)
            _ok = _holds(_args, _value) if _prop else _same(_expected, _got)
        elif _kind == "timeout":
            _got, _ok = ("raised", "no answer within %g s" % _limit), False
        else:
            _got, _ok = ("raised", _value), False
        _compared += 1
        if not _ok:
            _differ += 1
            if _first is None:
                _first = (_text, _expected, _got)
    _signal.signal(_signal.SIGALRM, _old)
    _counts = {"compared": _compared, "dropped": _dropped, "disagreements": _differ}
    if "@hefix.fact" in globals():  # the judge's channel, which the candidate cannot write
        globals()["@hefix.fact"]("plus", _counts)
    else:
        print("__MARK__", _json.dumps(_counts))
    def _show(x):
        try:
            return repr(x)[:200]
        except ValueError:  # an int past the digits limit of int -> str
            return "<an int of more than 4300 digits>"
    if _first is not None:
        _what = "has the test's property" if _prop else "gives " + _show(_first[1])
        raise AssertionError("plus: on input " + _first[0][:200] + " the canonical solution " + _what + ", the candidate " + _show(_first[2])
                             + " (" + str(_differ) + " of " + str(_compared) + " inputs disagree)")

check(__ENTRY_NAME__)
'''


def harness(task: Task, inputs: Inputs | list[tuple[Any, ...]]) -> str:
    if not isinstance(inputs, Inputs):
        inputs = Inputs(list(inputs))
    prop = test_property(task.test, task.entry_point)
    return (
        _HARNESS.replace("__PER_CALL__", repr(PER_CALL_S))
        .replace("__FACTOR__", repr(CANDIDATE_FACTOR))
        .replace("__BUDGET__", repr(BUDGET_S))
        .replace("__ATOL__", repr(float(inputs.atol)))
        .replace("__MARK__", INPUTS_MARK)
        .replace("__PROPERTY__", repr(None if prop is None else {"params": list(prop.params), "result": prop.result, "asserts": list(prop.asserts), "imports": list(prop.imports)}))
        .replace("__CANONICAL__", repr(task.canonical_code))
        .replace("__ENTRY__", repr(task.entry_point))
        .replace("__INPUTS__", repr([repr(args) for args in inputs.args]))
        .replace("__ENTRY_NAME__", task.entry_point)
    )


@dataclass(frozen=True)
class Differential:
    agrees: bool | None  # None: could not be checked
    compared: int = 0
    disagreements: int = 0
    example: str | None = None


def differential(code: str, task: Task, executor: Executor, inputs: Inputs | None = None) -> Differential:
    """The candidate against the canonical solution on the task's extra inputs, in one sandboxed run."""
    if not task.canonical_code:
        return Differential(None)
    inputs = generated(task) if inputs is None else inputs
    if not inputs.args:
        return Differential(True)
    run = executor.run(code, harness(task, inputs), support_code(task))
    if run.status == "error":
        return Differential(None, example=f"executor: {run.message}")
    reported = run.facts.get("plus")
    counts = reported if isinstance(reported, dict) else _counts(run.output)
    compared, differ = counts.get("compared", 0), counts.get("disagreements", 0)
    if run.passed:
        return Differential(True, compared)
    message = run.message
    example = message[message.index("plus: ") + 6 :] if "plus: " in message else f"{run.status}: {message}"
    return Differential(False, compared, max(differ, 1), example.splitlines()[0][:600])


def _counts(output: str) -> dict[str, int]:
    for line in reversed(output.splitlines()):
        if line.startswith(INPUTS_MARK + " "):
            try:
                data = json.loads(line[len(INPUTS_MARK) + 1 :])
                return {k: int(v) for k, v in data.items()}
            except (ValueError, TypeError, AttributeError):
                return {}
    return {}


def check(code: str | None, task: Task, executor: Executor, passed: bool, inputs: Inputs | None = None) -> Robustness:
    """Both checks for a candidate that passed the full tests; nothing to check otherwise."""
    if not passed or code is None:
        return Robustness(plus=None)
    d = differential(code, task, executor, inputs)
    return Robustness(plus=d.agrees, inputs=d.compared, example=d.example, suspect_hardcoding=hardcoding(code, task), disagreements=d.disagreements)


def record_fields(
    first_code: str | None, final_code: str | None, task: Task, executor: Executor, passed_first: bool, passed: bool, inputs: Inputs | None = None
) -> dict[str, Any]:
    """The TaskRecord fields of both checks, for the final candidate and the first (run once if they are the same)."""
    inputs = generated(task) if inputs is None and task.canonical_code and (passed or passed_first) else inputs
    final = check(final_code, task, executor, passed, inputs)
    first = final if first_code == final_code else check(first_code, task, executor, passed_first, inputs)
    return dict(
        plus=final.plus,
        plus_first=first.plus,
        plus_inputs=final.inputs,
        plus_disagreements=final.disagreements,
        plus_example=final.example,
        suspect_hardcoding=list(final.suspect_hardcoding),
    )
