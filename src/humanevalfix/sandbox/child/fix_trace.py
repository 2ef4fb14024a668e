"""Runs inside the sandbox for `fix`, appended to fix_driver.py's source (never imported): which
functions of the user's project ran while a test failed.

A bug in a helper leaves no trace in the traceback when only the caller's result is asserted
(`assert square_area(3) == 9`, with `square` wrong in another module). So, for the run that the
fault localisation reads (fixer/project.py), a `sys.setprofile` hook notes each call of a function
defined under the project's root, outside the tests and conftest files, with the first project
function that called it; the entries of the failing tests go into the report's header as data.
Standard library only; the hook is set only around the tests, and only for that one run.

The same hook keeps the values (`CallTracer.values`): each project call of a failing test with its
arguments, what it returned (or that it raised) and the call it was made in, so the parent can
see where a wrong value was made, not only where it was asserted (`scaled_rect` returning what
`clamp` returned); and, per function, how many failing and passing tests ran it (the spectrum).
"""

import dis
import json
import os
import reprlib
import sys

RAN_KEPT = 60  # functions reported: the header must stay inside the executor's output
# Bounded: a test that loops over a helper must not make the hook the run's cost, and the values
# share the header with the rest (the parent's traced run gives them what its report leaves).
CALLS_KEPT = 200  # calls recorded per failing test
VALUE_CAP = 80  # characters of an argument list or of a returned value
TESTS_VALUED = 3  # failing tests whose calls are kept
NOT_VALUED = 0x20 | 0x80 | 0x200  # generators, coroutines, async generators: a call per resume


def _repr() -> "reprlib.Repr":
    r = reprlib.Repr()
    r.maxstring = r.maxother = VALUE_CAP
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdict = r.maxdeque = r.maxarray = 8
    return r


SHORT = _repr()  # reprlib: a long list costs its first items, not a repr of all of it


def short(value: object) -> str:
    """A repr cut to VALUE_CAP; the hook runs untraced, so a user's __repr__ is not recorded itself."""
    try:
        builtin = hasattr(SHORT, "repr_" + type(value).__name__)  # reprlib would hide a raising __repr__
        text = SHORT.repr(value) if builtin else repr(value)
    except Exception as exc:  # a half-built object (`__init__`'s self): say what it is
        text = f"<{type(value).__name__}: repr raised {type(exc).__name__}>"
    return text if len(text) <= VALUE_CAP else text[: VALUE_CAP - 3] + "..."


def arguments(frame: object) -> str:
    code = getattr(frame, "f_code", None)
    names = getattr(code, "co_varnames", ())
    flags = getattr(code, "co_flags", 0)
    count = getattr(code, "co_argcount", 0) + getattr(code, "co_kwonlyargcount", 0)
    count += bool(flags & 0x04) + bool(flags & 0x08)  # *args, **kwargs
    here = getattr(frame, "f_locals", {})
    text = ", ".join(short(here[n]) for n in names[:count] if n in here)
    return text if len(text) <= VALUE_CAP else text[: VALUE_CAP - 3] + "..."


def returned(frame: object) -> bool:
    """At a profile `return` event: whether the frame returned (or yielded) rather than raised."""
    try:
        code = frame.f_code.co_code  # type: ignore[attr-defined]
        return dis.opname[code[frame.f_lasti]].startswith(("RETURN", "YIELD"))  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError):
        return True


def is_test_file(path: str) -> bool:
    name = os.path.basename(path)
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


class CallTracer:
    """A profile hook: the project's functions called, in first-call order, with their first caller."""

    def __init__(self, root: str, skip: "set[str]") -> None:
        self.root = os.path.realpath(root).rstrip(os.sep) + os.sep
        self.skip = skip  # the tests' own files (real paths)
        self.places: dict[object, tuple[str, str, int] | None] = {}  # code object -> (path, qualname, line) or None
        self.current: dict[object, list[object]] = {}
        self.failed: dict[object, list[object]] = {}
        self.calls: list[list[object]] = []  # this test's: [place, parent's index, args, result, raised]
        self.open: dict[int, int] = {}  # id(frame) -> its call's index, while it runs
        self.stack: list[int] = []
        self.valued: list[tuple[object, list[list[object]]]] = []  # (test's name, calls) of failing tests
        self.spectrum: dict[object, list[int]] = {}  # place -> [failing tests, passing tests] that ran it
        self.passing = 0

    def place(self, code: object) -> "tuple[str, str, int] | None":
        if code not in self.places:
            name = getattr(code, "co_filename", "")
            path = os.path.realpath(name) if name and not name.startswith("<") else ""
            mine = path.startswith(self.root) and path not in self.skip and not is_test_file(path)
            mine = mine and "site-packages" not in path and os.sep + "." not in path[len(self.root) - 1 :]
            qualname = getattr(code, "co_qualname", getattr(code, "co_name", "?"))
            self.places[code] = (
                (path, qualname, getattr(code, "co_firstlineno", 0)) if mine and qualname != "<module>" else None
            )
        return self.places[code]

    def __call__(self, frame: object, event: str, arg: object) -> None:
        if event == "return":
            index = self.open.pop(id(frame), None)
            if index is not None:
                self.leave(frame, index, arg)
            return
        if event != "call":
            return
        place = self.place(getattr(frame, "f_code", None))
        if place is None:
            return
        self.enter(frame, place)
        if place in self.current:
            return
        caller = getattr(frame, "f_back", None)
        while caller is not None and self.place(getattr(caller, "f_code", None)) is None:
            caller = getattr(caller, "f_back", None)
        by = self.place(getattr(caller, "f_code", None)) if caller is not None else None
        self.current[place] = list(place) + (list(by)[:2] if by else [None, None])

    def enter(self, frame: object, place: "tuple[str, str, int]") -> None:
        code = getattr(frame, "f_code", None)
        if len(self.calls) >= CALLS_KEPT or getattr(code, "co_flags", 0) & NOT_VALUED or place[1].endswith(">"):
            return  # comprehensions, lambdas and generators: their values are their caller's
        self.open[id(frame)] = len(self.calls)
        self.calls.append([place, self.stack[-1] if self.stack else -1, arguments(frame), None, False])
        self.stack.append(len(self.calls) - 1)

    def leave(self, frame: object, index: int, value: object) -> None:
        if index in self.stack:
            del self.stack[self.stack.index(index) :]
        raised = value is None and not returned(frame)
        self.calls[index][3:] = [None if raised else short(value), raised]

    def start(self) -> None:
        self.current, self.calls, self.open, self.stack = {}, [], {}, []
        sys.setprofile(self)

    def stop(self, failed: bool, test: object = None) -> None:
        """`test`: the failing test's function name (None: a script)."""
        sys.setprofile(None)
        if failed:
            for place, entry in self.current.items():
                self.failed.setdefault(place, entry)
            if len(self.valued) < TESTS_VALUED:
                self.valued.append((test, self.calls))
        self.passing += not failed
        for place in self.current:
            self.spectrum.setdefault(place, [0, 0])[0 if failed else 1] += 1
        self.current, self.calls, self.open, self.stack = {}, [], {}, []

    def values(self, room: int) -> "dict[str, object]":
        """The failing tests' calls, in call order, as many as `room` characters of JSON hold:
        {"fns": [[path, qualname]], "tests": [[name, [[fn, parent, args, result, raised]]]],
        "spectrum": [[fn, failing, passing]], "passing": passing tests}. A test's calls are cut at
        the end, so each call's parent (made before it) is kept with it."""
        fns: list[list[object]] = []
        index: dict[object, int] = {}
        tests: list[list[object]] = []
        out: dict[str, object] = {"fns": fns, "tests": tests, "spectrum": [], "passing": self.passing}
        used = len(json.dumps(out))
        for test, calls in self.valued:
            used += len(json.dumps([test, []])) + 2
            if used > room:
                break
            kept: list[list[object]] = []
            tests.append([test, kept])
            for place, parent, args, result, raised in calls:
                item = [index.get(place, len(fns)), parent, args, result, raised]
                used += len(json.dumps(item)) + 2
                used += 0 if place in index else len(json.dumps(list(place[:2]))) + 2  # type: ignore[index]
                if used > room:
                    break
                if place not in index:
                    index[place] = len(fns)
                    fns.append(list(place[:2]))  # type: ignore[index]
                kept.append(item)
        spectrum = [[index[p], f, n] for p, (f, n) in self.spectrum.items() if p in index]
        out["spectrum"] = spectrum[: max(0, room - used) // 20]  # an entry: at most 20 characters, mostly
        return out

    def entries(self) -> "list[list[object]]":
        """[path, qualname, first line, caller's path, caller's qualname] for each function that ran."""
        return list(self.failed.values())[:RAN_KEPT]


class TracePlugin:
    """A pytest plugin: the tracer on from each test's setup, its calls kept when the test fails."""

    def __init__(self, tracer: CallTracer) -> None:
        self.tracer = tracer
        self.failing = False

    def pytest_runtest_setup(self, item: object) -> None:
        self.failing = False
        self.tracer.start()

    def pytest_runtest_makereport(self, item: object, call: object) -> None:
        if getattr(call, "excinfo", None) is not None:
            self.failing = True

    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        if self.failing:  # named as the failure's `function` is: no class, no parameters
            self.tracer.stop(True, nodeid.rpartition("::")[2].partition("[")[0])
        else:
            self.tracer.stop(False)


def tracer_for(spec: "dict[str, object]") -> "CallTracer | None":
    """The tracer the spec asks for (`trace`: the project's root), or None."""
    root = spec.get("trace")
    if not isinstance(root, str):
        return None
    tests = spec.get("tests")
    path = tests.get("path") if isinstance(tests, dict) else None
    return CallTracer(root, {os.path.realpath(path)} if isinstance(path, str) else set())
