"""Plain data across the judge/candidate boundary, and nothing else.

The judge (the dataset's test) and the candidate (the model's code) run in two processes and
talk over one socket. Every argument and every result crosses it through this codec: None, bool,
int, float, complex, str, bytes, list, tuple, dict, set, frozenset, range, and iterators (sent
as their items, received as a fresh iterator), nested, bounded in size and depth. Types are
checked exactly (`type(v) is int`), so a subclass with its own `__eq__` does not cross; numpy
scalars cross as the Python value they hold, and Counter, defaultdict, OrderedDict and
namedtuples as the dict or tuple they equal. Decoding builds only those types from JSON: nothing
the candidate sends is executed, unpickled, or trusted for its comparisons.

Given a Classes, instances of the dataset's own top-level classes cross too, by value: the class's
name and the state (slots, `__dict__`), each instance once however often it occurs (cycles, shared
nodes). The receiver makes its own class of that name with `object.__new__` and sets the state
through the slots' descriptors and the `__dict__`: no `__init__`, `__setattr__`, `__reduce__` runs.

A frame is a length (8 bytes, network order) and that many bytes of JSON, optionally with file
descriptors (the judge hands the candidate its stdout). A frame over MAX_FRAME, or JSON that is
not the shape below, is a protocol error: the judge fails the run; it never guesses.

Standard library only: runs inside the sandboxed child, loaded by file path (see runner.py).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from types import MemberDescriptorType
from typing import Any

HEADER = struct.Struct("!Q")
MAX_FRAME = 32 << 20  # one message either way: a result, or the candidate's code
MAX_DEPTH = 100  # nesting of containers
MAX_ITEMS = 2_000_000  # scalars and containers in one value
SMALL_INT = 1 << 53  # beyond this an int travels as hex text (no digit limit, no float confusion)
_ITERATORS = frozenset(
    "generator list_iterator tuple_iterator range_iterator longrange_iterator str_ascii_iterator str_iterator "
    "set_iterator dict_keyiterator dict_valueiterator dict_itemiterator list_reverseiterator reversed map filter "
    "zip enumerate bytes_iterator".split()
)


_DICT_LIKE = frozenset(("Counter", "defaultdict", "OrderedDict"))


class NotPlain(Exception):
    """A value that may not cross: its type, or why (too big, too deep)."""


class ProtocolError(Exception):
    """Bytes from the other side that are not a well-formed frame of plain data."""


# ---------------------------------------------------------------------------------------------
# Values <-> JSON trees


def to_tree(value: Any, classes: Classes | None = None) -> Any:
    """`value` as a JSON-able tree; raises NotPlain naming the first type that may not cross.
    `classes`: the dataset's classes whose instances may cross too (see Classes)."""
    budget = [MAX_ITEMS]
    if classes is None:
        return _to(value, 0, budget)
    graph = _Graph(classes)
    root = _to(value, 0, budget, graph)
    if not graph.objects:
        return root
    # Each instance's state is a tree of its own, from depth 0: a linked list of any length is
    # as deep as one node, and a cycle is a reference to an index already given out.
    entries: list[Any] = []
    while len(entries) < len(graph.objects):
        entries.append(_state(graph.objects[len(entries)], budget, graph))
    return ["G", entries, root]


def _to(v: Any, depth: int, budget: list[int], graph: _Graph | None = None) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain(f"more than {MAX_ITEMS:,} values")
    if depth > MAX_DEPTH:
        raise NotPlain(f"nested deeper than {MAX_DEPTH} levels")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if -SMALL_INT < v < SMALL_INT else ["i", format(v, "x")]
    if t is float:
        return ["f", v.hex()] if v != v or v in (float("inf"), float("-inf")) else v
    if t is list or t is tuple:
        tag = "l" if t is list else "t"
        if depth < MAX_DEPTH and _flat(v, budget):
            return [tag, *v]
        return [tag, *(_to(x, depth + 1, budget, graph) for x in v)]
    if t is dict:
        out: list[Any] = ["d"]
        for k, x in v.items():
            out.append(_to(k, depth + 1, budget, graph))
            out.append(_to(x, depth + 1, budget, graph))
        return out
    if t is set or t is frozenset:
        return ["S" if t is set else "F", *(_to(x, depth + 1, budget, graph) for x in v)]
    if t is bytes:
        return ["b", v.hex()]
    if t is complex:
        return ["c", _to(v.real, depth + 1, budget, graph), _to(v.imag, depth + 1, budget, graph)]
    if t is range:
        return (
            ["r", v.start, v.stop, v.step]
            if all(type(x) is int and -SMALL_INT < x < SMALL_INT for x in (v.start, v.stop, v.step))
            else _to(list(v), depth, budget, graph)
        )
    if t.__name__ in _ITERATORS and t.__module__ == "builtins":
        return ["it", *(_to(x, depth + 1, budget, graph) for x in _bounded(v))]
    if graph is not None and graph.classes.get(_type_name(t)) is t:  # before isinstance reads __class__
        return graph.ref(v)
    numpy_value = _numpy_scalar(v)
    if numpy_value is not _NO:
        return _to(numpy_value, depth, budget, graph)
    # The standard library's containers that equal their builtin base in the reference harness
    # (Counter(a=2) == {'a': 2}, a namedtuple == a tuple) cross as that base: only their
    # contents are read, through the base type's own methods, so no method of theirs runs.
    if isinstance(v, dict) and t.__name__ in _DICT_LIKE:
        return _to(dict(dict.items(v)), depth, budget, graph)
    if isinstance(v, tuple) and hasattr(t, "_fields"):
        return _to(tuple(tuple.__iter__(v)), depth, budget, graph)
    raise NotPlain(f"an object of type `{_type_name(t)}`")


_SELF_TREES = frozenset((str, bool, type(None)))  # scalars that are their own tree either way


def _flat(v: list[Any] | tuple[Any, ...], budget: list[int]) -> bool:
    """Whether every item of `v` is its own tree (small ints, str, bool, None), checked in C loops:
    a long list of answers would otherwise cost a Python call per item on each side. Charges the
    budget for the items when it is."""
    kinds = set(map(type, v))
    if not (kinds <= _SELF_TREES or (kinds == {int} and -SMALL_INT < min(v) and max(v) < SMALL_INT)):
        return False
    budget[0] -= len(v)
    if budget[0] < 0:
        raise NotPlain(f"more than {MAX_ITEMS:,} values")
    return True


def _bounded(iterator: Any) -> list[Any]:
    items = []
    for x in iterator:
        items.append(x)
        if len(items) > MAX_ITEMS:
            raise NotPlain(f"an iterator of more than {MAX_ITEMS:,} items")
    return items


_NO = object()


def _numpy_scalar(v: Any) -> Any:
    """A numpy scalar's Python value (np.int64(3) -> 3), else _NO. Arrays do not cross."""
    t = type(v)
    if t.__module__ != "numpy" or t.__name__ == "ndarray":
        return _NO
    try:
        item = v.item()
    except Exception:
        return _NO
    return item if type(item) in (bool, int, float, complex, str, bytes) else _NO


def _type_name(t: type) -> str:
    name = getattr(t, "__qualname__", None)
    return name if isinstance(name, str) else "?"


# ---------------------------------------------------------------------------------------------
# Instances of the dataset's classes


class Classes:
    """The classes whose instances may cross, by name: each of `names` (the dataset's top-level
    classes, as the judge read them from the dataset's code) that `namespace` binds to a class
    defined there (its `__module__` is the namespace's), with no `__new__`, metaclass or base of
    its own beyond object and the namespace's classes: decoding makes one with `object.__new__`
    and sets its state, and none of its code runs. Looked up when asked: the judge's helpers may
    define a class after the candidate has loaded."""

    def __init__(self, namespace: dict[str, Any], names: Any) -> None:
        self._namespace = namespace
        self._names = frozenset(n for n in names if type(n) is str) if type(names) in (list, tuple) else frozenset()

    def get(self, name: str) -> type | None:
        cls, module = self._namespace.get(name) if name in self._names else None, self._namespace.get("__name__")
        if type(cls) is not type or cls.__module__ != module or cls.__qualname__ != name:
            return None
        if cls.__new__ is not object.__new__:
            return None
        return cls if all(c is object or (type(c) is type and c.__module__ == module) for c in cls.__mro__) else None


class _Graph:
    """The instances met while encoding one value: each is sent once, and referred to by index."""

    def __init__(self, classes: Classes) -> None:
        self.classes, self.index = classes, dict[int, int]()
        self.objects: list[Any] = []  # also keeps them alive, so that no id is reused meanwhile

    def ref(self, v: Any) -> list[Any]:
        k = self.index.get(id(v))
        if k is None:
            k = self.index[id(v)] = len(self.objects)
            self.objects.append(v)
        return ["@", k]


def _slots(cls: type) -> dict[str, Any]:
    """The class's slots, by attribute name, as their member descriptors: read and set through
    them, no `__getattribute__` or `__setattr__` of the class runs (only `__slots__` makes them
    in the classes Classes allows)."""
    found: dict[str, Any] = {}
    for c in reversed(cls.__mro__):
        found.update((name, d) for name, d in c.__dict__.items() if type(d) is MemberDescriptorType)
    return found


def _own_dict(v: Any) -> dict[str, Any] | None:
    found = object.__getattribute__(v, "__dict__") if type(v).__dictoffset__ else None
    return found if type(found) is dict else None


def _dunder(name: str) -> bool:  # `__class__` and the like: never state
    return name.startswith("__") and name.endswith("__")


def _state(v: Any, budget: list[int], graph: _Graph) -> list[Any]:
    """[class name, attribute, tree, attribute, tree, ...]: the slots that are set, then `__dict__`."""
    t = type(v)
    entry: list[Any] = [t.__qualname__]
    items: list[tuple[Any, Any]] = []
    for name, descriptor in _slots(t).items():
        try:
            items.append((name, descriptor.__get__(v, t)))
        except AttributeError:
            continue  # a slot never set
    items.extend((_own_dict(v) or {}).items())
    for name, x in items:
        if type(name) is not str or _dunder(name):
            raise NotPlain(f"an object of type `{t.__qualname__}` with an attribute named {str(name)[:40]!r}")
        entry.append(name)
        entry.append(_to(x, 1, budget, graph))
    return entry


def _from_graph(tree: list[Any], budget: list[int], classes: Classes) -> Any:
    """["G", entries, root]: every instance made empty first (object.__new__), so that references
    to it, cycles included, resolve; then each one's state, then the root."""
    entries = tree[1] if len(tree) == 3 else None
    if type(entries) is not list or len(entries) > budget[0]:
        raise ProtocolError("a malformed graph of objects, or one too large")
    budget[0] -= len(entries)
    objects: list[Any] = []
    for entry in entries:
        if type(entry) is not list or len(entry) % 2 != 1 or type(entry[0]) is not str:
            raise ProtocolError("a malformed object")
        cls = classes.get(entry[0])
        if cls is None:
            raise ProtocolError(f"an object of a class that may not cross: {entry[0][:60]!r}")
        objects.append(object.__new__(cls))
    for obj, entry in zip(objects, entries, strict=True):
        cls = type(obj)
        slots, own = _slots(cls), _own_dict(obj)
        state: dict[str, Any] = {}
        for i in range(1, len(entry), 2):
            name = entry[i]
            if type(name) is not str or _dunder(name) or name in state or (name not in slots and own is None):
                raise ProtocolError(f"an object of `{cls.__qualname__}` with an attribute it cannot have")
            state[name] = _from(entry[i + 1], 1, budget, objects)
        for name in [n for n in state if n in slots]:
            slots[name].__set__(obj, state.pop(name))
        if own is not None:
            own.update(state)
    return _from(tree[2], 0, budget, objects)


def from_tree(tree: Any, classes: Classes | None = None) -> Any:
    """The value a tree from the other side stands for; ProtocolError for anything else."""
    budget = [MAX_ITEMS]
    try:
        if classes is not None and type(tree) is list and tree and tree[0] == "G":
            return _from_graph(tree, budget, classes)
        return _from(tree, 0, budget)
    except ProtocolError:
        raise
    except (TypeError, ValueError, OverflowError, RecursionError, IndexError, AttributeError) as exc:
        raise ProtocolError(f"not plain data: {type(exc).__name__}") from None


_SCALAR_TREES = frozenset((str, bool, int, float, type(None)))
_SEQUENCES = frozenset(("l", "t", "S", "F", "it"))


def _from(tree: Any, depth: int, budget: list[int], objects: list[Any] | None = None) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH + 2:
        raise ProtocolError("a value too large or too deep")
    t = type(tree)
    if tree is None or t is bool or t is str or t is int or t is float:
        return tree
    if t is not list or not tree or type(tree[0]) is not str:
        raise ProtocolError("a value that is not plain data")
    tag, rest = tree[0], tree[1:]
    if tag in _SEQUENCES and depth <= MAX_DEPTH + 1 and set(map(type, rest)) <= _SCALAR_TREES:
        budget[0] -= len(rest)  # scalars only: they stand for themselves (checked in C loops)
        if budget[0] < 0:
            raise ProtocolError("a value too large or too deep")
        items: Any = iter(rest)
    else:
        items = (_from(x, depth + 1, budget, objects) for x in rest)
    if tag == "l":
        return list(items)
    if tag == "t":
        return tuple(items)
    if tag == "S":
        return set(items)
    if tag == "F":
        return frozenset(items)
    if tag == "it":
        return iter(list(items))
    if tag == "d":
        values = list(items)
        if len(values) % 2:
            raise ProtocolError("a dict with an odd number of entries")
        return dict(zip(values[0::2], values[1::2], strict=True))
    if len(rest) == 1 and type(rest[0]) is str and len(rest[0]) <= MAX_FRAME:
        if tag == "i":
            return int(rest[0], 16)
        if tag == "f":
            return float.fromhex(rest[0])
        if tag == "b":
            return bytes.fromhex(rest[0])
    if tag == "c" and len(rest) == 2:
        real, imag = (_from(x, depth + 1, budget, objects) for x in rest)
        if type(real) is float and type(imag) is float:
            return complex(real, imag)
    if tag == "@" and objects is not None and len(rest) == 1 and type(rest[0]) is int and 0 <= rest[0] < len(objects):
        return objects[rest[0]]
    if tag == "r" and len(rest) == 3 and all(type(x) is int for x in rest):
        return range(*rest)
    raise ProtocolError(f"an unknown tag {tag[:20]!r}")


# ---------------------------------------------------------------------------------------------
# Frames


def dumps(message: Any) -> str:
    """A frame's body as every side writes it: the harness's pass@1+ texts (pluscases) are made
    with this too, so that a right candidate's answer matches them byte for byte."""
    return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One message; NotPlain when it is larger than a frame may be."""
    send_json(sock, dumps(message).encode("ascii"), fds)


def send_json(sock: socket.socket, data: bytes, fds: list[int] | None = None) -> None:
    """One message already written as JSON (a frame's body); NotPlain when it is too large."""
    if len(data) > MAX_FRAME:
        raise NotPlain(f"more than {MAX_FRAME >> 20} MiB of data")
    head = HEADER.pack(len(data))
    if fds:
        socket.send_fds(sock, [head], fds)
        sock.sendall(data)
    else:
        sock.sendall(head + data)


def receive(sock: socket.socket, with_fds: int = 0, spin_s: float = 0.0) -> tuple[dict[str, Any], list[int]]:
    """One message (and up to `with_fds` descriptors). EOFError when the other side is gone;
    ProtocolError for a frame that is too large or not a JSON object."""
    data, fds = receive_json(sock, with_fds, spin_s)
    return decode(data), fds


def receive_json(sock: socket.socket, with_fds: int = 0, spin_s: float = 0.0) -> tuple[bytes, list[int]]:
    """One frame's body, not decoded (`decode` reads it), and up to `with_fds` descriptors.
    `spin_s`: how long to poll for the frame before sleeping on it (see SPIN_S)."""
    head: bytes | None
    if with_fds:
        head, fds, _flags, _addr = socket.recv_fds(sock, HEADER.size, with_fds)
    else:
        head, fds = (_polled(sock, spin_s) if spin_s > 0 else None), []
        if head is None:
            head = sock.recv(HEADER.size)
    if not head:
        raise EOFError
    head += _exact(sock, HEADER.size - len(head))
    (length,) = HEADER.unpack(head)
    if length > MAX_FRAME:
        raise ProtocolError(f"a message of {length:,} bytes (at most {MAX_FRAME:,})")
    return _exact(sock, length), list(fds)


# A call is a round trip between the judge and the candidate. Asleep in recv(), a process is woken
# by the other's send through the scheduler and, on a virtual machine, an interrupt to an idle CPU
# through the hypervisor: about 0.23 ms a call on the 2-core machine, against about 0.08 ms when
# each side polls for the next frame a little before it sleeps (bench/run_cost.py --calls 1000).
# Only while a run's two processes are the ones working (the harness and the server wait then), and
# not with one CPU, where polling would only delay the other side.
SPIN_S = 0.0002 if len(os.sched_getaffinity(0)) > 1 else 0.0


def _polled(sock: socket.socket, spin_s: float) -> bytes | None:
    """The frame's first bytes if they come within `spin_s` (b"" at EOF), else None."""
    timeout = sock.gettimeout()
    sock.settimeout(0.0)
    end = time.perf_counter() + spin_s
    try:
        while True:
            try:
                return sock.recv(HEADER.size)
            except BlockingIOError:
                if time.perf_counter() >= end:
                    return None
    finally:
        sock.settimeout(timeout)


def decode(data: bytes) -> dict[str, Any]:
    """A frame's body as its message; ProtocolError when it is not a JSON object."""
    try:
        message = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"a message that is not JSON: {type(exc).__name__}") from None
    if type(message) is not dict:
        raise ProtocolError("a message that is not a JSON object")
    return message


def _exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf.extend(chunk)
    return bytes(buf)
