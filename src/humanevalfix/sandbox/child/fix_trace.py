"""Runs inside the sandbox for `fix`, appended to fix_driver.py's source (never imported): which
functions of the user's project ran while a test failed.

A bug in a helper leaves no trace in the traceback when only the caller's result is asserted
(`assert square_area(3) == 9`, with `square` wrong in another module). So, for the run that the
fault localisation reads (fixer/project.py), a `sys.setprofile` hook notes each call of a function
defined under the project's root, outside the tests and conftest files, with the first project
function that called it; the entries of the failing tests go into the report's header as data.
Standard library only; the hook is set only around the tests, and only for that one run.
"""

import os
import sys

RAN_KEPT = 60  # functions reported: the header must stay inside the executor's output


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
        if event != "call":
            return
        place = self.place(getattr(frame, "f_code", None))
        if place is None or place in self.current:
            return
        caller = getattr(frame, "f_back", None)
        while caller is not None and self.place(getattr(caller, "f_code", None)) is None:
            caller = getattr(caller, "f_back", None)
        by = self.place(getattr(caller, "f_code", None)) if caller is not None else None
        self.current[place] = list(place) + (list(by)[:2] if by else [None, None])

    def start(self) -> None:
        self.current = {}
        sys.setprofile(self)

    def stop(self, failed: bool) -> None:
        sys.setprofile(None)
        if failed:
            for place, entry in self.current.items():
                self.failed.setdefault(place, entry)
        self.current = {}

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
        self.tracer.stop(self.failing)


def tracer_for(spec: "dict[str, object]") -> "CallTracer | None":
    """The tracer the spec asks for (`trace`: the project's root), or None."""
    root = spec.get("trace")
    if not isinstance(root, str):
        return None
    tests = spec.get("tests")
    path = tests.get("path") if isinstance(tests, dict) else None
    return CallTracer(root, {os.path.realpath(path)} if isinstance(path, str) else set())
