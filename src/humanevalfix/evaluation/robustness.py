"""pass@1+: is a passing candidate right beyond the test's own inputs, or fitted to them?

A repair loop that sees the grading tests can drift into answers that special-case their
asserts (`if n == 3: return 180`): they pass and are wrong. Two checks, run only on candidates
that passed the full tests:

- differential: the candidate and the dataset's canonical solution are called on inputs near
  the test's own (type-preserving edits of its literal arguments: neighbouring numbers, edited
  strings, shuffled/shortened/extended lists), in the sandbox, with a fixed seed and at most
  MAX_INPUTS inputs. Any disagreement makes `plus` false, with one example.
- static: a candidate that compares a parameter to a literal from the tests and returns another
  test literal is `suspect_hardcoding`, with the line. It is a flag for a reader, not a verdict.

Limits. Only calls whose arguments are literals are varied (tests that build inputs in loops add
nothing). An edited input can leave the documented domain, where two right answers may differ;
to keep to the domain, edits keep what every test input at that position has in common (sign,
lower bound, the characters used, sortedness, minimum length), and inputs on which the
canonical solution raises or runs long are skipped. A disagreement is therefore strong evidence
but worth reading: the example input is recorded. With no literal calls, `plus` rests on the
test alone (`plus_inputs` 0).
"""

from __future__ import annotations

import ast
import random
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.hardcoding import hardcoding
from humanevalfix.evaluation.support import support_code
from humanevalfix.sandbox.executor import Executor

MAX_INPUTS = 50
PER_CALL_S = 0.5  # one call of either solution; longer is skipped (canonical) or a disagreement (candidate)
BUDGET_S = 4.0  # all the inputs of one candidate, so a task never takes longer than this to check
INPUTS_MARK = "HEFIX-PLUS-INPUTS"


@dataclass(frozen=True)
class Robustness:
    plus: bool | None  # None: not checked (the candidate failed, or there is no canonical solution)
    inputs: int = 0  # extra inputs on which both were compared
    example: str | None = None  # the first disagreement: input, expected, got
    suspect_hardcoding: tuple[str, ...] = field(default_factory=tuple)  # "line N: <source>"


# --- the test's own inputs ---------------------------------------------------------------------


def test_calls(test: str, entry_point: str) -> list[tuple[Any, ...]]:
    """The literal argument tuples the test calls the function with, in order, deduplicated."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    names = {entry_point}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            names.add(node.args.args[0].arg)
    calls: dict[str, tuple[Any, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names and not node.keywords:
            try:
                args = tuple(ast.literal_eval(a) for a in node.args)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            calls.setdefault(repr(args), args)
    return list(calls.values())


@dataclass
class _Domain:
    """What every observed value at one argument position has in common."""

    low: float | None = None  # smallest number seen anywhere in the values
    high: float = 0.0  # largest magnitude seen
    chars: set[str] = field(default_factory=set)
    always_sorted: bool = True
    min_len: int | None = None
    runs_of_spaces: bool = False  # "a  b": words are separated by one space unless a test says otherwise
    edge_spaces: bool = False  # " a" or "a "

    def observe(self, value: Any) -> None:
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, (int, float)):
            self.low = value if self.low is None else min(self.low, value)
            self.high = max(self.high, abs(value))
            return
        if isinstance(value, str):
            self.chars.update(value)
            self.runs_of_spaces |= "  " in value
            self.edge_spaces |= value != value.strip(" ")
        if isinstance(value, (str, list, tuple)):
            self.min_len = len(value) if self.min_len is None else min(self.min_len, len(value))
        if isinstance(value, (list, tuple)):
            if not _is_sorted(value):
                self.always_sorted = False
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple, set)) else ()
        for item in items:
            self.observe(item)

    def admits(self, value: Any) -> bool:
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, (int, float)):
            if self.low is not None and self.low >= 0 and value < min(self.low, 1 if self.low >= 1 else 0):
                return False
            return abs(value) <= 2 * self.high + 10
        if isinstance(value, (str, list, tuple)) and self.min_len is not None and len(value) < min(self.min_len, 1):
            return False
        if isinstance(value, (list, tuple)) and self.always_sorted and not _is_sorted(value):
            return False
        if isinstance(value, str) and (("  " in value and not self.runs_of_spaces) or (value != value.strip(" ") and not self.edge_spaces)):
            return False
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple, set)) else ()
        return all(self.admits(item) for item in items) and (not isinstance(value, str) or not self.chars or set(value) <= self.chars)


def _is_sorted(values: Any) -> bool:
    try:
        return all(a <= b for a, b in zip(values, values[1:]))
    except TypeError:
        return False


def _variants(value: Any, domain: _Domain, rng: random.Random, depth: int = 0) -> Iterator[Any]:
    """Type-preserving edits of one value (the domain filters them afterwards)."""
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, int):
        yield from (value - 1, value + 1, value - 2, value + 2, value * 2, value // 2)
    elif isinstance(value, float):
        yield from (value + 0.5, value - 0.5, round(value * 1.5, 6), round(value / 2, 6))
    elif isinstance(value, str):
        yield from _string_variants(value, domain, rng)
    elif isinstance(value, (list, tuple)):
        yield from _sequence_variants(value, domain, rng, depth)
    elif isinstance(value, dict) and value and depth < 2:
        key = rng.choice(list(value))
        for new in _variants(value[key], domain, rng, depth + 1):
            yield {**value, key: new}


def _string_variants(value: str, domain: _Domain, rng: random.Random) -> Iterator[str]:
    alphabet = sorted(domain.chars or set(value) or {"a"})
    if value:
        i = rng.randrange(len(value))
        yield value[:i] + value[i + 1 :]  # a character dropped
        yield value[:i] + value[i] + value[i:]  # one doubled
        if len(value) > 1:
            j = rng.randrange(len(value) - 1)
            yield value[:j] + value[j + 1] + value[j] + value[j + 2 :]  # two swapped
        yield value[::-1]
    i = rng.randrange(len(value) + 1)
    yield value[:i] + rng.choice(alphabet) + value[i:]  # one inserted


def _sequence_variants(value: list[Any] | tuple[Any, ...], domain: _Domain, rng: random.Random, depth: int) -> Iterator[Any]:
    kind = type(value)
    items = list(value)
    out: list[list[Any]] = []
    if items:
        out += [items[1:], items[:-1], items + [rng.choice(items)], items[::-1], rng.sample(items, len(items))]
        if depth < 2:
            i = rng.randrange(len(items))
            for new in list(_variants(items[i], domain, rng, depth + 1))[:3]:
                out.append(items[:i] + [new] + items[i + 1 :])
    for candidate in out:
        if domain.always_sorted and _is_sorted(items):
            try:
                candidate = sorted(candidate)
            except TypeError:
                pass
        yield kind(candidate)


def _relations(args: tuple[Any, ...]) -> set[tuple[str, int, int]]:
    """What holds between two arguments of one call: equal lengths, a number within a length."""
    sized = {i: len(v) for i, v in enumerate(args) if isinstance(v, (str, list, tuple))}
    numbers = {i: v for i, v in enumerate(args) if isinstance(v, int) and not isinstance(v, bool)}
    found = {("same_len", i, j) for i in sized for j in sized if i < j and sized[i] == sized[j]}
    found |= {("within_len", i, j) for i in numbers for j in sized if numbers[i] <= sized[j]}
    return found


def extra_inputs(calls: list[tuple[Any, ...]], seed: str, limit: int = MAX_INPUTS) -> list[tuple[Any, ...]]:
    """Up to `limit` new argument tuples near the test's, the same for the same task every time.

    Relations that hold in every call (two lists of one length, k <= len(arr)) are kept too."""
    rng = random.Random(zlib.crc32(seed.encode("utf-8")))
    domains: dict[int, _Domain] = {}
    for args in calls:
        for i, value in enumerate(args):
            domains.setdefault(i, _Domain()).observe(value)
    always = set.intersection(*(_relations(args) for args in calls)) if calls else set()
    seen = {repr(args) for args in calls}
    found: dict[str, tuple[Any, ...]] = {}
    for args in calls:
        for i, value in enumerate(args):
            for new in _variants(value, domains[i], rng):
                if not domains[i].admits(new):
                    continue
                candidate = args[:i] + (new,) + args[i + 1 :]
                text = repr(candidate)
                if not always <= _relations(candidate) or text in seen or text in found or not _round_trips(text, candidate):
                    continue
                found[text] = candidate
    chosen = list(found.values())
    rng.shuffle(chosen)
    return chosen[:limit]


def _round_trips(text: str, value: Any) -> bool:
    """The child reads inputs with literal_eval: nan, inf and the like do not come back."""
    try:
        return bool(ast.literal_eval(text) == value) and len(text) < 20_000
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


# --- the differential run, inside the sandbox ---------------------------------------------------

# The "test" the executor runs after the candidate: the canonical solution in its own namespace,
# both called on each input (deep copies), results compared as plain data so that an object of the
# candidate's cannot decide the comparison. `check(...)` keeps an entry point named like a builtin.
_HARNESS = '''
def check(candidate):
    import ast as _ast, copy as _copy, math as _math, signal as _signal, time as _time
    class _Slow(Exception):
        pass
    def _alarm(signum, frame):
        raise _Slow()
    def _plain(x, depth=0):
        if depth > 20:
            return ("deep",)
        if x is None or type(x) in (bool, int, str):
            return x
        if isinstance(x, float) or type(x).__name__.startswith("float"):
            return ("float", float(x))
        if type(x) in (list, tuple):
            return (type(x).__name__, [_plain(i, depth + 1) for i in x])
        if type(x) in (set, frozenset):
            return ("set", sorted(repr(_plain(i, depth + 1)) for i in x))
        if type(x) is dict:
            return ("dict", sorted((repr(_plain(k, depth + 1)), repr(_plain(v, depth + 1))) for k, v in x.items()))
        if type(x).__name__.startswith("int") and hasattr(x, "item"):
            return int(x.item())
        return ("object", type(x).__name__)
    def _same(a, b):
        if isinstance(a, tuple) and isinstance(b, tuple) and a[:1] == b[:1] == ("float",):
            x, y = a[1], b[1]
            return (_math.isnan(x) and _math.isnan(y)) or _math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-9)
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2 and a[0] in ("list", "tuple") and a[0] == b[0]:
            return len(a[1]) == len(b[1]) and all(_same(x, y) for x, y in zip(a[1], b[1]))
        return a == b
    def _call(f, args):
        _signal.setitimer(_signal.ITIMER_REAL, __PER_CALL__)
        try:
            return f(*_copy.deepcopy(args))
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    _ns = dict(globals())
    exec(compile(__CANONICAL__, "<canonical>", "exec"), _ns)
    _canonical = _ns[__ENTRY__]
    _old = _signal.signal(_signal.SIGALRM, _alarm)
    _start, _compared = _time.monotonic(), 0
    for _text in __INPUTS__:
        if _time.monotonic() - _start > __BUDGET__:
            break
        _args = _ast.literal_eval(_text)
        try:
            _expected = _plain(_call(_canonical, _args))
        except BaseException:
            continue
        try:
            _got = _plain(_call(candidate, _args))
        except _Slow:
            _got = ("raised", "no answer within __PER_CALL__ s")
        except Exception as _exc:
            _got = ("raised", type(_exc).__name__ + ": " + str(_exc)[:100])
        _compared += 1
        if not _same(_expected, _got):
            raise AssertionError("plus: on input " + _text[:200] + " the canonical solution gives " + repr(_expected)[:200] + ", the candidate " + repr(_got)[:200])
    _signal.signal(_signal.SIGALRM, _old)
    print("__MARK__", _compared)

check(__ENTRY_NAME__)
'''


def harness(task: Task, inputs: list[tuple[Any, ...]]) -> str:
    return (
        _HARNESS.replace("__PER_CALL__", repr(PER_CALL_S))
        .replace("__BUDGET__", repr(BUDGET_S))
        .replace("__MARK__", INPUTS_MARK)
        .replace("__CANONICAL__", repr(task.canonical_code))
        .replace("__ENTRY__", repr(task.entry_point))
        .replace("__INPUTS__", repr([repr(args) for args in inputs]))
        .replace("__ENTRY_NAME__", task.entry_point)
    )


def differential(code: str, task: Task, executor: Executor) -> tuple[bool | None, int, str | None]:
    """(agrees, inputs compared, first disagreement); agrees is None when it could not be checked."""
    if not task.canonical_code:
        return None, 0, None
    inputs = extra_inputs(test_calls(task.test, task.entry_point), task.task_id)
    if not inputs:
        return True, 0, None
    run = executor.run(code, harness(task, inputs), support_code(task))
    if run.status == "error":
        return None, 0, f"executor: {run.message}"
    compared = _compared(run.output)
    if run.passed:
        return True, compared, None
    message = run.message
    example = message[message.index("plus: ") + 6 :] if "plus: " in message else f"{run.status}: {message}"
    return False, compared, example.splitlines()[0][:600]


def _compared(output: str) -> int:
    for line in reversed(output.splitlines()):
        if line.startswith(INPUTS_MARK + " "):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return 0
    return 0


def check(code: str | None, task: Task, executor: Executor, passed: bool) -> Robustness:
    """Both checks for a candidate that passed the full tests; nothing to check otherwise."""
    if not passed or code is None:
        return Robustness(plus=None)
    agrees, inputs, example = differential(code, task, executor)
    return Robustness(plus=agrees, inputs=inputs, example=example, suspect_hardcoding=hardcoding(code, task))


def record_fields(first_code: str | None, final_code: str | None, task: Task, executor: Executor, passed_first: bool, passed: bool) -> dict[str, Any]:
    """The TaskRecord fields of both checks, for the final candidate and the first (run once if they are the same)."""
    final = check(final_code, task, executor, passed)
    first = final if first_code == final_code else check(first_code, task, executor, passed_first)
    return dict(
        plus=final.plus,
        plus_first=first.plus,
        plus_inputs=final.inputs,
        plus_example=final.example,
        suspect_hardcoding=list(final.suspect_hardcoding),
    )
