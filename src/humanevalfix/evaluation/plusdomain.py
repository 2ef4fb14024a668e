"""The domain of a task's pass@1+ inputs: what the docstring and the seeds say every input has.

evaluation/plusgen.py leaves out the mutants that break it. EvalPlus writes a contract per task by
hand; this is the part a program can read: bounds the docstring states (`1 <= k <= len(arr)`,
"positive", "non-negative", "non-empty", "length at least two", "space separated", "lowercase
letters", "uppercase", "only of 1s and 0s", "only letters and spaces") where every seed keeps them,
the alphabet of strings made only of symbols (brackets), and lengths that are equal, or a number
within a length, in every seed. Where the text says nothing, the seeds' own boundaries (issue 51): a
number whose seeds include 0 and nothing below it stays non-negative, a `base` is at least 2, and
of two texts the one no seed leaves empty while another is empty in some seed stays
non-empty. Ties are found where the answers are made (evaluation/plusanswers.py).
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Args = tuple[Any, ...]


_NUMBER = r"(-?\d+(?:\^\d+)?|len\(\w+\))"


@dataclass
class Domain:
    """What every input must keep (positions are argument indexes; numbers inside containers count)."""

    low: dict[int, float] = field(default_factory=dict)  # numbers at a position (elements too) are >= this
    above: dict[int, float] = field(default_factory=dict)  # ... or > this
    high: dict[int, float] = field(default_factory=dict)
    below: dict[int, float] = field(default_factory=dict)  # ... or < this
    min_len: dict[int, int] = field(default_factory=dict)
    within: list[tuple[int, int]] = field(default_factory=list)  # args[i] <= len(args[j])
    same_len: list[tuple[int, int]] = field(default_factory=list)
    alphabet: dict[int, str] = field(default_factory=dict)
    no_upper: set[int] = field(default_factory=set)
    no_lower: set[int] = field(default_factory=set)
    single_spaces: set[int] = field(default_factory=set)

    def admits(self, args: Args) -> bool:
        for i, value in enumerate(args):
            numbers = list(_numbers(value))
            if i in self.low and any(x < self.low[i] for x in numbers):
                return False
            if i in self.above and any(x <= self.above[i] for x in numbers):
                return False
            if i in self.high and any(x > self.high[i] for x in numbers):
                return False
            if i in self.below and any(x >= self.below[i] for x in numbers):
                return False
            if i in self.min_len and isinstance(value, (str, list, tuple)) and len(value) < self.min_len[i]:
                return False
            texts = list(_strings(value))
            if i in self.alphabet and any(set(t) - set(self.alphabet[i]) for t in texts):
                return False
            if i in self.no_upper and any(t != t.lower() for t in texts):
                return False
            if i in self.no_lower and any(t != t.upper() for t in texts):
                return False
            if i in self.single_spaces and any("  " in t or t != t.strip(" ") for t in texts):
                return False
        sized = {i: len(v) for i, v in enumerate(args) if isinstance(v, (str, list, tuple))}
        if any(i in sized and j in sized and sized[i] != sized[j] for i, j in self.same_len):
            return False
        return all(
            not (isinstance(args[i], int) and j in sized) or args[i] <= sized[j]
            for i, j in self.within
            if i < len(args) and j < len(args)
        )


def _numbers(value: Any) -> Iterator[float]:
    if type(value) in (int, float):
        yield value
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item)


def _bound(text: str) -> float:
    base, _, power = text.partition("^")
    return float(int(base) ** int(power)) if power else float(base)


def domain_of(seeds: list[Args], docstring: str, params: list[str]) -> Domain:
    d = Domain()
    if not seeds:
        return d
    n = min(len(a) for a in seeds)
    at = {i: [a[i] for a in seeds] for i in range(n)}
    words = docstring.lower()
    position = {name: i for i, name in enumerate(params) if i < n}
    only = _only_alphabet(words)
    for i, values in at.items():
        numbers = [x for v in values for x in _numbers(v)]
        if numbers and re.search(r"(?<!non-)(?<!non)\bpositive\b", words) and min(numbers) > 0:
            d.above[i] = 0
        elif numbers and re.search(r"non-?negative|\bnatural\b", words) and min(numbers) >= 0:
            d.low[i] = 0
        sized = [len(v) for v in values if isinstance(v, (str, list, tuple))]
        if sized and len(sized) == len(values):
            if re.search(r"at least two|at least 2\b|length >= 2", words) and min(sized) >= 2:
                d.min_len[i] = 2
            elif re.search(r"non-?empty|not empty", words) and min(sized) >= 1:
                d.min_len[i] = 1
        texts = [t for v in values for t in _strings(v)]
        if texts:
            chars = set("".join(texts))
            if chars and not any(c.isalnum() for c in chars):
                d.alphabet[i] = "".join(sorted(chars))
            if only and not {c for c in chars if c.isalnum()} - set(only):
                # the text names the content ("only of 1s and 0s"); the seeds show the separators
                d.alphabet[i] = "".join(sorted(set(only) | {c for c in chars if not c.isalnum()}))
            if re.search(r"\buppercase\b", words) and all(t == t.upper() for t in texts):
                d.no_lower.add(i)
            if "lowercase" in words and all(t == t.lower() for t in texts):
                d.no_upper.add(i)
                if "lowercase letters" in words and all(c.islower() or c == " " for c in chars):
                    d.alphabet[i] = "".join(sorted(chars | set("abcdefghijklmnopqrstuvwxyz ")))
            if re.search(r"separated by (a )?(single )?spaces?\b|space[- ]separated", words) and not any(
                "  " in t or t != t.strip(" ") for t in texts
            ):
                d.single_spaces.add(i)
    for low, name, high in re.findall(rf"{_NUMBER}\s*<=?\s*(\w+(?:\(\w+\))?)\s*(?:<=?\s*{_NUMBER})?", docstring):
        target = position.get(name)
        if target is None or low.startswith("len"):
            continue
        if all(type(x) in (int, float) and x >= _bound(low) for x in (v[target] for v in seeds)):
            d.low[target] = max(d.low.get(target, -float("inf")), _bound(low))
        if high.startswith("len("):
            j = position.get(high[4:-1])
            if j is not None and (target, j) not in d.within:
                d.within.append((target, j))
        elif high and all(type(v[target]) in (int, float) and v[target] <= _bound(high) for v in seeds):
            d.high[target] = _bound(high)
    _counting_rules(d, at, words, position)
    _seed_boundaries(d, at, position)
    if len(seeds) >= 2:
        for i in range(n):
            for j in range(i + 1, n):
                if all(
                    isinstance(a[i], (list, tuple, str))
                    and isinstance(a[j], (list, tuple, str))
                    and len(a[i]) == len(a[j])
                    for a in seeds
                ):
                    d.same_len.append((i, j))
            for j in range(n):
                if (
                    all(type(a[i]) is int and isinstance(a[j], (list, tuple)) and a[i] <= len(a[j]) for a in seeds)
                    and (i, j) not in d.within
                ):
                    d.within.append((i, j))
    return d


def _at_least(d: Domain, i: int, values: list[Any], low: float) -> None:
    """`args[i] >= low` where every seed is a number that keeps it (the text says so: the callers)."""
    if values and all(type(v) in (int, float) for v in values) and min(values) >= low:
        d.low[i] = max(d.low.get(i, -float("inf")), low)


def _counting_rules(d: Domain, at: dict[int, list[Any]], words: str, position: dict[str, int]) -> None:
    """What the text says of numbers that count or measure, as EvalPlus's contracts do by hand:
    the n in "the n-th" or "from 1 to n" counts from 1; "n > 1" (or "n is greater than 1", "base
    numbers are less than 10") bounds it; prime factors are of a
    positive number; the lengths of a triangle's sides (or of a side) are positive. Each only
    where every seed keeps it."""
    for name in re.findall(r"\b([a-z_]\w*)-?th\b", words):
        if name in position:
            _at_least(d, position[name], at[position[name]], 1)
    for low, name in re.findall(r"from (\d+) to ([a-z_]\w*)\b", words):
        if name in position:
            _at_least(d, position[name], at[position[name]], int(low))
    # "base numbers are less than 10", "x is greater than 0": as "<" and ">" below
    said = r"\b([a-z_]\w*)(?: numbers?)? (?:is|are) (less|smaller|greater|larger) than (-?\d+)\b"
    for name, word, bound in re.findall(said, words):
        target = position.get(name)
        values = at[target] if target is not None else []
        if target is None or not values or not all(type(v) in (int, float) for v in values):
            continue
        if word in ("less", "smaller") and max(values) < int(bound):
            d.below[target] = min(d.below.get(target, float("inf")), int(bound))
        elif word in ("greater", "larger") and min(values) > int(bound):
            d.above[target] = max(d.above.get(target, -float("inf")), int(bound))
    for name, sign, bound in re.findall(r"\b([a-z_]\w*)\s*(>=?)\s*(-?\d+)\b", words):
        target = position.get(name)
        if target is not None and all(type(v) in (int, float) for v in at[target]):
            if sign == ">" and min(at[target]) > int(bound):
                d.above[target] = max(d.above.get(target, -float("inf")), int(bound))
            elif sign == ">=":
                _at_least(d, target, at[target], int(bound))
    for i, values in at.items():
        if re.search(r"prime factors? of", words):
            _at_least(d, i, values, 1)
        measured = re.search(r"\blengths? of (the )?(three )?sides?\b|\blength of a side\b", words)
        if measured and values and all(type(v) in (int, float) and v > 0 for v in values):
            d.above[i] = max(d.above.get(i, -float("inf")), 0)


_CLASSES = ((r"\bletters?\b", string.ascii_letters), (r"\bdigits?\b", string.digits), (r"\bspaces?\b", " "))


def _only_alphabet(words: str) -> str:
    """The characters a sentence with "only" says the strings are made of: letters, digits,
    spaces, or the digits themselves ("consisting only of 1s and 0s"); "" where none is named."""
    chars = ""
    for sentence in re.split(r"[.;:\n]", words):
        if not re.search(r"\bonly\b", sentence):
            continue
        chars += "".join(re.findall(r"\b(\d)s\b", sentence))
        chars += "".join(letters for pattern, letters in _CLASSES if re.search(pattern, sentence))
    return chars


def _seed_boundaries(d: Domain, at: dict[int, list[Any]], position: dict[str, int]) -> None:
    """Where the text is silent, the boundaries the seeds show: the examples try 0 and nothing below
    it (a number stays non-negative); a numeral `base` is at least 2; the examples leave one text
    empty and never another (that one stays non-empty)."""
    for i, values in at.items():
        if values and all(type(v) in (int, float) for v in values) and min(values) == 0:
            _at_least(d, i, values, 0)
    if "base" in position:
        _at_least(d, position["base"], at[position["base"]], 2)
    # Texts only: two lists are often the two sides of one symmetric question (common elements).
    texts = [i for i, values in at.items() if values and all(type(v) is str for v in values)]
    if any(v == "" for i in texts for v in at[i]):
        for j in texts:
            if all(v != "" for v in at[j]):
                d.min_len[j] = max(d.min_len.get(j, 0), 1)


def function_def(canonical: str, entry_point: str) -> ast.FunctionDef | None:
    """The entry point's `def` in the canonical solution, if it parses and has one."""
    try:
        tree = ast.parse(canonical)
    except SyntaxError:
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)


def params_of(canonical: str, entry_point: str) -> list[str]:
    node = function_def(canonical, entry_point)
    return [a.arg for a in node.args.args] if node is not None else []
