"""pass@1+ inputs made the way EvalPlus makes them: seeds, then type-aware mutation.

Seeds are the argument tuples of the test's own calls and of the docstring's examples (the scorer
reads the docstring even when the protocol hides it from the model); a task with neither gets seeds
from the canonical solution's annotations. Each argument of each seed is then mutated by its type:

- int/float: +-1, 0, the sign flipped, negatives, large values, and the constants of the canonical
  solution with their neighbours (its boundaries: 12, 13, 31, 32 for a date);
- str: empty, one character, doubled spaces, tabs and newlines for spaces, spaces at the ends, case
  changes, digits and punctuation inserted, characters dropped, doubled or swapped, and every run of
  digits (a field of a format: a day, a month) set to 0, its neighbours and the canonical constants;
- list/tuple/dict/set: empty, single, a duplicate, sorted, reversed, negated, an element mutated,
  elements dropped or added, nested containers mutated inside, all the canonical constants at once;

then two arguments at once, and mutants of mutants. Everything is seeded by the task id and bounded
(MAX_INPUTS, MAX_TEXT): the same inputs every time. Mutants that leave what the docstring and the
seeds say of every input are not made (evaluation/plusdomain.py); in the sandbox, inputs on which
the canonical solution raises or runs long are dropped too (evaluation/robustness.py), and so are
ties, where the text leaves the answer open (evaluation/plusties.py).
"""

from __future__ import annotations

import ast
import random
import re
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from humanevalfix.evaluation.plusdomain import Domain, domain_of, function_def, params_of

MAX_INPUTS = 240  # per task
MAX_TEXT = 4_000  # characters of one input's repr
_LARGE = (1000, 10**5)
_PUNCT = "!.,?-'"
# Mutation kinds that may cost the canonical solution its whole per-call time: tried last.
_COSTLY = ("int:large", "float:large", "str:repeat", "seq:repeat")

Args = tuple[Any, ...]


# --- seeds ---------------------------------------------------------------------------------------


def call_args(source: str, names: set[str]) -> list[Args]:
    """The literal argument tuples of calls to any of `names` in Python source, in order, deduplicated."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: dict[str, Args] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in names
            and not node.keywords
        ):
            try:
                args = tuple(ast.literal_eval(a) for a in node.args)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            found.setdefault(repr(args), args)
    return list(found.values())


def test_calls(test: str, entry_point: str) -> list[Args]:
    """The literal argument tuples the test calls the function with (directly or as check's parameter)."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    names = {entry_point}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            names.add(node.args.args[0].arg)
    return call_args(test, names)


def docstring_calls(docstring: str, entry_point: str) -> list[Args]:
    """Literal calls in the docstring's examples, in any of its styles (`>>> f(x)`, `f(x) => y`, `f(x) == y`)."""
    found: dict[str, Args] = {}
    for match in re.finditer(rf"\b{re.escape(entry_point)}\s*\(", docstring):
        start = match.end() - 1
        depth, end = 0, None
        for i in range(start, min(len(docstring), start + MAX_TEXT)):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(docstring[i], 0)
            if depth == 0:
                end = i + 1
                break
        if end is None:
            continue
        for args in call_args(entry_point + " ".join(docstring[start:end].split("\n")), {entry_point}):
            found.setdefault(repr(args), args)
    return list(found.values())


_TYPED_SEEDS: dict[str, list[Any]] = {
    "str": ["hello world", "abc", "aBc dEf"],
    "int": [3, 10],
    "float": [2.5, 10.0],
    "bool": [True],
    "list": [[1, 2, 3], [5, 3, 8, 1]],
    "List": [[1, 2, 3], [5, 3, 8, 1]],
    "tuple": [(1, 2)],
    "dict": [{"a": 1}],
}


def annotation_seeds(canonical: str, entry_point: str) -> list[Args]:
    """Seeds from the parameters' annotations (`s: str`), for a task whose test and docstring have no literal call."""
    node = function_def(canonical, entry_point)
    if node is None:
        return []
    pools = []
    for arg in node.args.args:
        name = ast.unparse(arg.annotation).split("[")[0] if arg.annotation else ""
        if name not in _TYPED_SEEDS:
            return []
        pools.append(_TYPED_SEEDS[name])
    return [tuple(pool[i % len(pool)] for pool in pools) for i in range(max((len(p) for p in pools), default=0))]


def constants(canonical: str) -> tuple[list[int | float], str]:
    """The numbers of the canonical solution (its boundaries) and the characters of its short strings."""
    try:
        tree = ast.parse(canonical)
    except SyntaxError:
        return [], ""
    numbers: dict[str, int | float] = {}
    chars: dict[str, None] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)  # a parsed number is exactly an int or a float
            and abs(node.value) <= 10**6
        ):
            numbers.setdefault(repr(node.value), node.value)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and 0 < len(node.value) <= 30
            and not node.value.isspace()
        ):
            chars.update(dict.fromkeys(node.value))
    return list(numbers.values())[:24], "".join(list(chars)[:40])


# --- mutations -----------------------------------------------------------------------------------


class _Mutator:
    def __init__(self, rng: random.Random, numbers: list[int | float], chars: str) -> None:
        self.rng, self.numbers, self.chars = rng, numbers, chars

    def __call__(self, value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
        if isinstance(value, bool):
            yield "bool:not", not value
        elif isinstance(value, int):
            yield from self._int(value)
        elif isinstance(value, float):
            yield from self._float(value)
        elif isinstance(value, str):
            yield from self._str(value)
        elif isinstance(value, (list, tuple)) and depth < 3:
            yield from self._seq(value, depth)
        elif isinstance(value, dict) and depth < 3:
            yield from self._dict(value, depth)
        elif isinstance(value, (set, frozenset)) and depth < 3:
            kind = type(value)
            yield "set:empty", kind()
            items = sorted(value, key=repr)
            if items:
                yield "set:single", kind(items[:1])
                for _, new in self(items[0], depth + 1):
                    yield "set:add", kind(items + [new])
                    break

    def _int(self, v: int) -> Iterator[tuple[str, Any]]:
        yield from (
            ("int:+1", v + 1),
            ("int:-1", v - 1),
            ("int:zero", 0),
            ("int:sign", -v),
            ("int:negative", -abs(v) - 1),
            ("int:one", 1),
            ("int:double", 2 * v),
            ("int:half", v // 2),
        )
        for c in self.numbers:
            if isinstance(c, int):
                yield from (("int:const", c - 1), ("int:const", c), ("int:const", c + 1))
        for big in _LARGE:
            yield "int:large", big if v >= 0 else -big

    def _float(self, v: float) -> Iterator[tuple[str, Any]]:
        yield from (
            ("float:+1", v + 1),
            ("float:-1", v - 1),
            ("float:zero", 0.0),
            ("float:sign", -v),
            ("float:negative", -abs(v) - 0.5),
            ("float:half", v / 2),
            ("float:frac", round(v + 0.25, 6)),
            ("float:whole", float(round(v))),
            ("float:tiny", 1e-3),
        )
        for c in self.numbers:
            yield from (("float:const", float(c)), ("float:const", c + 0.5), ("float:const", c - 0.5))
        yield "float:large", 1e6 if v >= 0 else -1e6

    def _str(self, s: str) -> Iterator[tuple[str, Any]]:
        rng = self.rng
        yield "str:empty", ""
        yield "str:one", s[:1] or "a"
        yield "str:space", " "
        for kind, new in (
            ("str:upper", s.upper()),
            ("str:lower", s.lower()),
            ("str:swapcase", s.swapcase()),
            ("str:title", s.title()),
            ("str:reverse", s[::-1]),
            ("str:strip", s.strip()),
            ("str:edge-space", f" {s} "),
            ("str:trailing", s + " "),
        ):
            yield kind, new
        if " " in s:
            yield "str:double-space", s.replace(" ", "  ")
            yield "str:double-space", s.replace(" ", "  ", 1)
            yield "str:tab", s.replace(" ", "\t")
            yield "str:newline", s.replace(" ", "\n")
            yield "str:mixed-space", s.replace(" ", " \t", 1).replace(" ", "\n", 1)
        elif len(s) > 1:
            i = len(s) // 2
            for kind, sep in (("str:space", " "), ("str:tab", "\t"), ("str:newline", "\n"), ("str:double-space", "  ")):
                yield kind, s[:i] + sep + s[i:]
        alphabet = sorted(set(s + self.chars)) or ["a"]
        for kind, pool in (
            ("str:digit", "0123456789"),
            ("str:punct", _PUNCT),
            ("str:char", "".join(alphabet)),
            ("str:letter", "aZ"),
        ):
            i = rng.randrange(len(s) + 1)
            yield kind, s[:i] + rng.choice(pool) + s[i:]
        if s:
            i = rng.randrange(len(s))
            yield "str:drop", s[:i] + s[i + 1 :]
            yield "str:dup", s[:i] + s[i] + s[i:]
            yield "str:replace", s[:i] + rng.choice(alphabet) + s[i + 1 :]
            yield "str:case1", s[:i] + s[i].swapcase() + s[i + 1 :]
            if len(s) > 1:
                j = rng.randrange(len(s) - 1)
                yield "str:swap", s[:j] + s[j + 1] + s[j] + s[j + 2 :]
            yield "str:repeat", s * 3
        if self.chars:
            yield "str:canonical-chars", s + self.chars  # the characters the canonical solution looks for
        for c in list(dict.fromkeys(ch for ch in s if not ch.isalnum() and not ch.isspace()))[:3]:
            for other in _PUNCT + "/":
                if other != c:
                    yield "str:separator", s.replace(c, other)  # a format's separator or a sentence's end swapped
        yield from self._fields(s)

    def _fields(self, s: str) -> Iterator[tuple[str, Any]]:
        """Runs of digits are fields of a format (a date's month, a time's minutes): at and past their limits."""
        runs = list(re.finditer(r"\d+", s))[:4]
        for m in runs:
            width, value = len(m.group()), int(m.group())
            values = [0, 1, value - 1, value + 1, 10**width - 1] + [
                int(c) + d for c in self.numbers if isinstance(c, int) and 0 <= c < 10**6 for d in (-1, 0, 1)
            ]
            for new in dict.fromkeys(values):
                if new >= 0:
                    yield "str:field", s[: m.start()] + str(new).zfill(width) + s[m.end() :]
            if width > 1 and m.group().startswith("0"):
                yield "str:field-width", s[: m.start()] + str(value) + s[m.end() :]

    def _seq(self, value: list[Any] | tuple[Any, ...], depth: int) -> Iterator[tuple[str, Any]]:
        kind, items, rng = type(value), list(value), self.rng
        yield "seq:empty", kind()
        if not items:
            return
        yield "seq:single", kind(items[:1])
        yield "seq:single", kind(items[-1:])
        yield "seq:dup", kind(items + [items[-1]])
        yield "seq:dup", kind([items[0]] + items)
        yield "seq:reverse", kind(items[::-1])
        yield "seq:shuffle", kind(rng.sample(items, len(items)))
        yield "seq:drop", kind(items[1:])
        yield "seq:drop", kind(items[:-1])
        try:
            yield "seq:sorted", kind(sorted(items))
            yield "seq:sorted", kind(sorted(items, reverse=True))
        except TypeError:
            pass
        numeric = all(type(x) in (int, float) for x in items)
        if numeric:
            as_item = float if any(type(x) is float for x in items) else int
            bounds = [
                as_item(c) + d
                for c in self.numbers
                if as_item is float or type(c) is int
                for d in ((0,) if as_item is float else (-1, 0, 1))
            ]
            if bounds:
                yield "seq:boundaries", kind(bounds)  # the canonical solution's constants, all at once
            yield "seq:negative", kind([-x for x in items])
            yield "seq:negative", kind(items + [-abs(items[0]) - 1])
            yield "seq:zero", kind(items + [0 * items[0]])
            yield "seq:large", kind(items + [items[0] * 0 + 1000])
        yield "seq:repeat", kind(items * 4)
        for i in sorted(rng.sample(range(len(items)), min(2, len(items)))):
            mutants = list(self(items[i], depth + 1))
            for _, new in rng.sample(mutants, min(4, len(mutants))):
                yield "seq:element" if depth == 0 else "seq:nested", kind(items[:i] + [new] + items[i + 1 :])
        if isinstance(items[0], (list, tuple)):
            yield "seq:nested", kind(items + [type(items[0])()])

    def _dict(self, value: dict[Any, Any], depth: int) -> Iterator[tuple[str, Any]]:
        items = list(value.items())
        yield "dict:empty", {}
        if not items:
            return
        yield "dict:single", dict(items[:1])
        key, val = items[self.rng.randrange(len(items))]
        if isinstance(key, str):
            for new_key in (key.upper(), key.lower(), key.swapcase(), key + "1"):
                if new_key not in value:
                    yield "dict:key", {**{k: v for k, v in items if k != key}, new_key: val}
            yield "dict:add", {**value, key.swapcase() + "x": val}
        for _, new in list(self(val, depth + 1))[:4]:
            yield "dict:value", {**value, key: new}


# --- the inputs of one task ----------------------------------------------------------------------


def _round_trips(value: Any) -> str | None:
    """The input's text for the harness, or None when literal_eval would not give it back (nan, inf, too long)."""
    text = repr(value)
    if len(text) > MAX_TEXT:
        return None
    try:
        return text if ast.literal_eval(text) == value and repr(ast.literal_eval(text)) == text else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def generate(
    seeds: list[Args],
    seed: str,
    numbers: Iterable[int | float] = (),
    chars: str = "",
    limit: int = MAX_INPUTS,
    exclude: Iterable[Args] = (),
    domain: Domain | None = None,
) -> list[Args]:
    """Up to `limit` argument tuples: mutants of the seeds, by kind in turn so that every kind is tried.

    `exclude` (the test's own calls) are left out; the same inputs for the same arguments every time."""
    rng = random.Random(zlib.crc32(seed.encode("utf-8")))
    mutate = _Mutator(rng, list(numbers), chars)
    groups: dict[str, dict[str, Args]] = defaultdict(dict)
    seen = {repr(a) for a in exclude}

    def add(kind: str, args: Args) -> None:
        text = _round_trips(args)
        if text is not None and text not in seen and (domain is None or domain.admits(args)):
            seen.add(text)  # an input belongs to the first kind that made it
            groups[kind][text] = args

    for args in seeds:
        add("seed", args)
    singles: list[tuple[Args, int, list[Any]]] = []
    for args in seeds:
        for i, value in enumerate(args):
            mutants = list(mutate(value))
            singles.append((args, i, [new for _, new in mutants]))
            for kind, new in mutants:
                add(kind, args[:i] + (new,) + args[i + 1 :])
    _combine(singles, rng, add)
    firsts = [a for kind in sorted(groups) if kind != "seed" for a in groups[kind].values()]
    for args in rng.sample(firsts, min(len(firsts), 60)):  # mutants of mutants
        i = rng.randrange(len(args)) if args else 0
        if args:
            mutants = list(mutate(args[i]))
            for kind, new in rng.sample(mutants, min(2, len(mutants))):
                add("deep:" + kind.split(":")[0], args[:i] + (new,) + args[i + 1 :])
    return _pick(groups, rng, limit)


def _combine(singles: list[tuple[Args, int, list[Any]]], rng: random.Random, add: Callable[[str, Args], None]) -> None:
    """Two arguments of one seed mutated at once."""
    by_seed: dict[str, dict[int, list[Any]]] = defaultdict(dict)
    base: dict[str, Args] = {}
    for args, i, mutants in singles:
        by_seed[repr(args)][i] = mutants
        base[repr(args)] = args
    for key, positions in by_seed.items():
        usable = [i for i, m in positions.items() if m]
        if len(usable) < 2:
            continue
        args = base[key]
        for _ in range(12):
            i, j = sorted(rng.sample(usable, 2))
            new = list(args)
            new[i], new[j] = rng.choice(positions[i]), rng.choice(positions[j])
            add("combo", tuple(new))


def _pick(groups: dict[str, dict[str, Args]], rng: random.Random, limit: int) -> list[Args]:
    """Round robin over the kinds (seeds first, costly kinds last), each kind's inputs in a seeded order."""
    order = sorted(groups, key=lambda k: (k != "seed", k.startswith(_COSTLY), k))
    queues = {k: rng.sample(list(groups[k].values()), len(groups[k])) for k in order}
    chosen: list[Args] = []
    while len(chosen) < limit and any(queues.values()):
        for kind in order:
            if queues[kind] and len(chosen) < limit:
                chosen.append(queues[kind].pop())
    costly = {text for k in groups if k.startswith(_COSTLY) for text in groups[k]}
    return sorted(
        chosen, key=lambda a: (repr(a) in costly, len(repr(a)))
    )  # short inputs first: the first disagreement is the easiest to read


def task_seeds(task: Any) -> list[Args]:
    """A task's seeds: its test's calls and its docstring's examples, or its annotations' values."""
    tested = test_calls(task.test, task.entry_point)
    documented = docstring_calls(task.docstring or "", task.entry_point)
    seeds = list({repr(a): a for a in tested + documented}.values())
    if not seeds and task.canonical_code:
        seeds = annotation_seeds(task.canonical_code, task.entry_point)
    return seeds


def task_inputs(task: Any, limit: int = MAX_INPUTS) -> list[Args]:
    """The generated inputs of one dataset task (a Task)."""
    tested = test_calls(task.test, task.entry_point)
    seeds = task_seeds(task)
    numbers, chars = constants(task.canonical_code or "")
    domain = domain_of(seeds, task.docstring or "", params_of(task.canonical_code or "", task.entry_point))
    return generate(seeds, task.task_id, numbers, chars, limit, exclude=tested, domain=domain)
