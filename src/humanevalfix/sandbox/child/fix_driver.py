"""Runs inside the sandbox for `fix`: the candidate as the user's module, then the user's tests.

The parent (fixer/usertests.py) sends this file's source, then fix_trace.py's, as the executor's
test program, followed by a call `main(<spec>)`. Standard library only, plus pytest for pytest-style
tests. The candidate (none: `path` None) is served at the user's file's own path and module name by
an import hook, so imports and `__file__`-relative data files behave as in the user's tree, and
nothing is written there (the sandbox runs `python -B`; pytest's cache plugin is off).

The verdict stays the executor's: a failing run raises at the end. The report for the model goes
to stdout between nonce-tagged markers, ahead of anything the candidate printed. Its header also
gives each failure as data, for the parent's fault localisation (fixer/localize.py, project.py):
the traceback's frames in the user's file, the tests and the rest of the project, a failed
comparison's two sides (from pytest's own assertion rewriting), and, when asked, the project's
functions that ran during the failing tests (fix_trace.py).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import linecache
import os
import re
import reprlib
import signal
import sys
import traceback
from typing import Any

REPORT_CAP = 3000  # characters of report: the executor keeps 4 KiB of output
OUTPUT_ROOM = 3900  # for the header and the report together, inside those 4 KiB
USER_OUTPUT_CAP = 600
FAILURES_SHOWN = 3
# A failure as data in the header: few, short, and frames only in the user's file or the tests.
FAILURES_KEPT = 3
FRAMES_KEPT = 10
MESSAGE_CAP = 300
VALUE_CAP = 160
MISSING_MODULE_RE = re.compile(r"No module named '([\w.]+)'")
MISSING_NAME_RE = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
UNDEFINED_RE = re.compile(r"name '(\w+)' is not defined")
FUNCTION_REPR_RE = re.compile(r"<function ([\w.<>]+) at 0x[0-9a-f]+>")


class TestsFailed(AssertionError):
    """Raised last, so the executor records a failure; the report itself is on stdout."""


class StoppedAtTimeLimit(Exception):
    """Raised where the tests are running when `stop_after_s` passes, a little before the executor's
    own limit would kill the process with no report: a loop that never ends then fails as an
    exception in the function that loops, with its frames, and the report still goes out. An
    Exception, not a BaseException, so pytest records it as the test's failure and goes on."""


def stop_at(seconds: float | None) -> None:
    """Arm the one-shot timer (SIGALRM: the driver is the process's main thread)."""
    if not seconds or not hasattr(signal, "setitimer"):
        return

    def stop(signum: int, frame: Any) -> None:
        raise StoppedAtTimeLimit(f"the tests ran past {seconds:g} s: stopped here (--timeout)")

    signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def disarm() -> None:
    """The tests are over: the report must not be cut by the timer."""
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)


class CandidateImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the candidate source for any import that would load the user's file."""

    def __init__(self, path: str, source: str, is_package: bool) -> None:
        self.path = os.path.realpath(path)
        self.source = source
        self.is_package = is_package
        self.stem = "__init__" if is_package else os.path.splitext(os.path.basename(path))[0]

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        last = fullname.rpartition(".")[2]
        if last != self.stem and not (self.is_package and last == os.path.basename(os.path.dirname(self.path))):
            return None
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        if found is None or not found.origin or os.path.realpath(found.origin) != self.path:
            return None
        locations = [os.path.dirname(self.path)] if self.is_package else None
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=self, submodule_search_locations=locations
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        exec(compile(self.source, self.path, "exec", dont_inherit=True), module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self.source


def prime_linecache(filename: str, source: str) -> None:
    """Tracebacks and pytest show the candidate's lines, not those of the file on disk."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 40] + f"\n...[{len(text) - limit + 40} characters cut]"


class Report:
    def __init__(self) -> None:
        self.status = "passed"  # passed | failed | error (the tests could not be run at all)
        self.summary = ""
        self.text = ""
        self.missing_modules: list[str] = []
        self.missing_names: list[list[str]] = []  # [name, module]
        self.undefined_names: list[str] = []
        self.failures: list[dict[str, Any]] = []  # failure_entry(...), in the order they happened
        self.ran: list[list[Any]] = []  # CallTracer.entries()
        self.values: Any = None  # CallTracer.values, called with the header's room when it is written

    def note_text(self, text: str) -> None:
        self.missing_modules += [m for m in MISSING_MODULE_RE.findall(text) if m not in self.missing_modules]
        for name, module in MISSING_NAME_RE.findall(text):
            if [name, module] not in self.missing_names:
                self.missing_names.append([name, module])

    def header(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "summary": self.summary,
            "missing_modules": self.missing_modules,
            "missing_names": self.missing_names,
            "undefined_names": self.undefined_names,
            "failures": self.failures[:FAILURES_KEPT],
            "ran": self.ran,
        }


def format_exception(exc: BaseException, keep: set[str]) -> str:
    """The traceback without this driver's and importlib's frames."""
    tb = traceback.TracebackException.from_exception(exc)
    # This driver runs as the executor's "<test>" program; importlib's frames are "<frozen ...>".
    frames = [f for f in tb.stack if f.filename in keep or not f.filename.startswith("<")]
    tb.stack = traceback.StackSummary.from_list(frames)
    return "".join(tb.format())


def short_repr(value: Any) -> str:
    r = reprlib.Repr()
    r.maxstring = r.maxother = r.maxlong = VALUE_CAP
    r.maxlist = r.maxtuple = r.maxset = r.maxdict = 12
    try:
        return cap(r.repr(value), VALUE_CAP)
    except Exception as exc:  # a repr that raises: say so rather than fail the report
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def frames_of(tb: Any, files: dict[str, str]) -> list[list[Any]]:
    """[where, line, function] of each frame in the user's file ("file"), the tests ("tests") or
    elsewhere in the project (its real path), outermost first."""
    out: list[list[Any]] = []
    root = files.get("<project>")
    for frame in traceback.extract_tb(tb):
        name = frame.filename if frame.filename.startswith("<") else os.path.realpath(frame.filename)
        where = files.get(name) or (name if root and name.startswith(root) and "site-packages" not in name else None)
        if where:
            out.append([where, frame.lineno, frame.name])
    return out if len(out) <= FRAMES_KEPT else out[:2] + out[2 - FRAMES_KEPT :]


def failure_entry(
    test: str | None,
    function: str | None,
    exc: BaseException,
    tb: Any,
    files: dict[str, str],
    compare: list[str] | None,
) -> dict[str, Any]:
    """One failure as data: which test (None: the script, or the import), the exception, where it
    went through the user's file and the tests, and for a failed comparison [op, left, right]."""
    message = cap(FUNCTION_REPR_RE.sub(r"\1", str(exc)), MESSAGE_CAP)
    return {
        "test": test,
        "function": function,
        "error": type(exc).__name__,
        "message": message,
        "frames": frames_of(tb, files),
        "compare": compare if isinstance(exc, AssertionError) else None,
    }


def files_of(spec: dict[str, Any]) -> dict[str, str]:
    path, project = spec["tests"]["path"], spec.get("project")
    files = {
        os.path.realpath(path) if path else "<tests>": "tests",
        "<project>": os.path.realpath(project) + os.sep if project else "",
    }
    return files | ({os.path.realpath(spec["path"]): "file"} if spec["path"] else {})


def import_candidate(spec: dict[str, Any], report: Report) -> Any:
    if spec["path"] is None:  # no candidate: the project as it is, the tests import what they need
        return type(sys)("__fix_project__")
    try:
        return importlib.import_module(spec["module"])
    except BaseException as exc:  # whatever the candidate raises at import is its failure
        report.status = "failed"
        report.summary = f"importing {spec['module']} failed"
        report.failures.append(failure_entry(None, None, exc, exc.__traceback__, files_of(spec), None))
        text = format_exception(exc, {spec["path"]})
        report.note_text(text)
        report.text = f"Importing the module `{spec['module']}` failed:\n" + text
        return None


class PytestCollector:
    """A pytest plugin that keeps the failures (short tracebacks, assertion diffs) for the model.

    Paths are shown relative to `base` (the user's import root), not to the sandbox's scratch cwd.
    Each failure is also kept as data (failure_entry): its exception comes from the report being
    made, and a failed comparison's sides from pytest_assertrepr_compare, called as the assert fails.
    """

    def __init__(self, test_path: str, base: str, files: dict[str, str]) -> None:
        self.test_path = os.path.realpath(test_path)
        self.base = base
        self.rootdir = base
        self.files = files
        self.counts: dict[str, int] = {}
        self.failures: list[str] = []
        self.entries: list[dict[str, Any]] = []
        self.crash_messages: list[str] = []
        self.undefined: list[str] = []
        self.compare: list[str] | None = None
        self.raised: dict[tuple[str, str], tuple[str, BaseException, Any, list[str] | None]] = {}

    def pytest_sessionstart(self, session: Any) -> None:
        self.rootdir = str(session.config.rootpath)

    def tidy(self, text: str) -> str:
        for prefix in (os.path.relpath(self.base) + os.sep, self.base.rstrip(os.sep) + os.sep):
            text = text.replace(prefix, "")
        return text

    def node(self, nodeid: str) -> str:
        path, sep, rest = nodeid.partition("::")
        shown = os.path.relpath(os.path.join(self.rootdir, path), self.base) if path else self.test_path
        return self.tidy(shown) + sep + rest

    def pytest_assertrepr_compare(self, config: Any, op: str, left: Any, right: Any) -> None:
        self.compare = [op, short_repr(left), short_repr(right)]
        return None  # pytest's own explanation stays as it is

    def pytest_runtest_makereport(self, item: Any, call: Any) -> None:
        if call.excinfo is not None:
            function = getattr(item, "originalname", None) or item.name
            self.raised[(item.nodeid, call.when)] = (function, call.excinfo.value, call.excinfo.tb, self.compare)
            if isinstance(call.excinfo.value, StoppedAtTimeLimit):  # spent: a later hang would lose the report
                item.session.shouldstop = str(call.excinfo.value)
        self.compare = None
        return None  # pytest makes the report

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self._count("error")
            self.failures.append(f"ERROR collecting {self.node(report.nodeid)}\n{self.tidy(report.longreprtext)}")

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self._count("failed" if report.when == "call" else "error")
            title = self.node(report.nodeid) + ("" if report.when == "call" else f" (error in {report.when})")
            raised = self.raised.pop((report.nodeid, report.when), None)
            if raised is not None:
                function, exc, tb, compare = raised
                self.entries.append(failure_entry(self.node(report.nodeid), function, exc, tb, self.files, compare))
            text = f"___ {title} ___\n{self.tidy(report.longreprtext)}"
            captured = (report.capstdout + report.capstderr).strip()
            if captured:
                text += "\n--- captured output ---\n" + cap(captured, USER_OUTPUT_CAP)
            self.failures.append(text)
            crash = getattr(report.longrepr, "reprcrash", None)
            if crash is not None:
                self.crash_messages.append(crash.message)
                name = UNDEFINED_RE.search(crash.message)
                if (
                    crash.message.startswith("NameError")
                    and name
                    and os.path.realpath(str(crash.path)) == self.test_path
                ):
                    self.undefined.append(name.group(1))
        elif report.when == "call":
            self._count("passed" if report.passed else "skipped")
        elif report.skipped:
            self._count("skipped")

    def summary(self) -> str:
        order = ("failed", "error", "passed", "skipped")
        return ", ".join(f"{self.counts[k]} {k}" for k in order if self.counts.get(k))


def run_pytest(spec: dict[str, Any], report: Report) -> None:
    # Installed plugins (hypothesis: seconds of import) would eat the per-run timeout; plugins the
    # tests need still load when named (`-p NAME` in addopts, `pytest_plugins` in a conftest.py).
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    try:
        import pytest
    except ImportError as exc:
        report.status, report.summary = "error", "pytest is not importable in the sandbox"
        report.text = f"pytest could not be imported: {exc}"
        return
    path = spec["tests"]["path"]
    collector = PytestCollector(path, spec["import_root"], files_of(spec))
    tracer = tracer_for(spec)  # type: ignore[name-defined]  # noqa: F821 (fix_trace.py, appended to this source)
    # -vv: full assertion diffs (the model cannot ask for more); the terminal output is discarded.
    args = [path, "-vv", "-p", "no:cacheprovider", "--tb=short", "--color=no"]
    log = io.StringIO()  # pytest's own terminal output: only shown when pytest itself fails
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            plugins: list[object] = [collector]
            if tracer:
                plugins.append(TracePlugin(tracer))  # type: ignore[name-defined]  # noqa: F821 - fix_trace.py's
            code = int(pytest.main(args, plugins=plugins))
    except BaseException as exc:
        code = 3
        log.write(format_exception(exc, set()))
    report.summary = collector.summary() or "no tests ran"
    failures = collector.failures
    for text in failures + collector.crash_messages:
        report.note_text(text)
    report.undefined_names += collector.undefined
    report.failures += collector.entries
    report.ran = tracer.entries() if tracer else []
    report.values = tracer.values if tracer else None
    if code == 0:
        report.status = "passed"
        return
    if code in (3, 4) and not failures:  # internal or usage error: the tests never ran
        report.status = "error"
        report.text = "pytest could not run the tests:\n" + cap(log.getvalue().strip(), REPORT_CAP - 100)
        return
    report.status = "failed"
    if code == 5:
        report.summary = "no tests collected"
        report.text = f"pytest collected no tests from {path}"
        return
    shown = failures[:FAILURES_SHOWN]
    more = len(failures) - len(shown)
    report.text = (
        f"pytest: {report.summary}\n\n" + "\n\n".join(shown) + (f"\n\n({more} more failures not shown)" if more else "")
    )


def emit(nonce: str, report: Report, user_output: str) -> None:
    out = sys.__stdout__
    assert out is not None, "the driver runs with a stdout"  # None only for a GUI process without a console
    fields = report.header()
    floor = 1000
    if report.values is not None:  # a traced run: the parent reads its header, its text is the untraced run's
        floor = 200
        try:
            fields["values"] = report.values(OUTPUT_ROOM - floor - 50 - len(json.dumps(fields)))
        except Exception:  # the values are a hint: the report goes out without them
            fields["values"] = None
    header = json.dumps(fields)
    room = max(floor, min(REPORT_CAP, OUTPUT_ROOM - len(header)))  # the executor keeps the head of the output
    out.write(f"<<fix-report {nonce}>>\n{header}\n{cap(report.text, room)}\n<</fix-report {nonce}>>\n")
    if user_output.strip():
        out.write(cap(user_output, USER_OUTPUT_CAP) + "\n")
    out.flush()


def main(spec: dict[str, Any]) -> None:
    report = Report()
    user_output = io.StringIO()  # what the candidate and a script print, shown after the report
    if spec["path"]:
        prime_linecache(spec["path"], spec["source"])
        sys.meta_path.insert(0, CandidateImporter(spec["path"], spec["source"], spec["is_package"]))
    tests = spec["tests"]
    search = [p for p in (tests.get("search_dir"), spec["import_root"]) if p]
    sys.path[:0] = [p for p in dict.fromkeys(search) if p not in sys.path]
    tracer = None
    stop_at(spec.get("stop_after_s"))
    if tests["kind"] == "script":
        tracer = tracer_for(spec)  # type: ignore[name-defined]  # noqa: F821 (fix_trace.py, appended to this source)
    try:
        with contextlib.redirect_stdout(user_output), contextlib.redirect_stderr(user_output):
            if tracer:
                tracer.start()
            module = import_candidate(spec, report)
            if module is not None and tests["kind"] == "script":
                run_script(spec, module, report)  # type: ignore[name-defined]  # noqa: F821 - fix_script.py's, appended
            if tracer:
                tracer.stop(report.status != "passed")
                report.ran = tracer.entries()
                report.values = tracer.values
        if module is not None and tests["kind"] == "pytest":
            run_pytest(spec, report)
    finally:
        disarm()
        emit(spec["nonce"], report, user_output.getvalue())
    if report.status == "error":
        raise RuntimeError(f"the tests could not be run: {report.summary}")
    if report.status != "passed":
        raise TestsFailed(report.summary)
