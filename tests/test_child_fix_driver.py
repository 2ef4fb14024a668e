"""The `fix` test program (sandbox/child/fix_driver.py + fix_script.py + fix_trace.py) in-process:
the report it gives the model and the parent for a passing run, a failing assert with its values,
a candidate that fails to import, a pytest file, and the project functions a failing test ran.

The in-process counterparts of tests/test_fix_sandbox.py (and of the driver's part of
tests/test_fix_project.py / tests/test_fix_localize.py), which run the program inside a sandbox
child. The parent (fixer/usertests.py) sends the three files' sources joined as one program, in
DRIVER_PARTS order, followed by `main(<spec>)`; here each part is executed, in that order, into
one fresh dict namespace, compiled under its own file name (so each line is the file's own), and
`main` or its helpers are called. What the program would change in a process of its own is kept
to the test: sys.path, sys.meta_path, sys.modules, linecache and sys.__stdout__ (where the report
goes) are restored, and the profile hook the tracer sets is checked to be gone after each run.
"""

from __future__ import annotations

import io
import linecache
import os
import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.fixer import usertests
from humanevalfix.sandbox.executor import ExecResult

NONCE = "0123456789abcdef"


def _driver() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "hefix_fix_program"}
    for part in usertests.DRIVER_PARTS:
        exec(compile(part.read_text(encoding="utf-8"), str(part), "exec", dont_inherit=True), namespace)
    return namespace


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The program's namespace, with the process state it touches restored afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(sys, "__stdout__", io.StringIO())
    monkeypatch.setattr(linecache, "cache", dict(linecache.cache))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    # The nested pytest run (pytest-style tests) captures at the sys level and sets no fault handler.
    monkeypatch.setenv("PYTEST_ADDOPTS", "--capture=sys -p no:faulthandler")
    modules = set(sys.modules)
    profile = sys.getprofile()
    yield _driver()
    assert sys.getprofile() is profile, "the call tracer left its profile hook set"
    for name in set(sys.modules) - modules:
        if name.startswith(("calc_", "test_calc_")):
            del sys.modules[name]


def project(tmp_path: Path, source: str, tests: str, kind: str = "script", trace: bool = False) -> dict[str, Any]:
    """A one-module project: the user's file (whose bug the candidate `source` fixes, or not)."""
    module = f"calc_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{module}.py"
    path.write_text("def add(a, b):\n    return a - b  # the bug on disk\n", encoding="utf-8")
    tests_path = tmp_path / f"test_{module}.py"
    tests = tests.replace("calc", module)
    tests_path.write_text(tests, encoding="utf-8")
    return {
        "nonce": NONCE,
        "module": module,
        "path": str(path),
        "is_package": False,
        "import_root": str(tmp_path),
        "source": source,
        "tests": {"kind": kind, "path": str(tests_path), "source": tests, "search_dir": str(tmp_path)},
        "project": str(tmp_path),
        "trace": str(tmp_path) if trace else None,
    }


def report_of(status: str) -> usertests.RunReport:
    """The report as the parent reads it from the program's output (fixer/usertests.parse_report)."""
    output = sys.__stdout__.getvalue()  # type: ignore[union-attr]
    assert output.startswith(f"<<fix-report {NONCE}>>\n"), output
    return usertests.parse_report(ExecResult(status, "raw message", output), NONCE)


FIXED = "def add(a, b):\n    return a + b\n"
SCRIPT = "from calc import add\n\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n"


def test_a_fixed_candidate_passes_the_script(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, FIXED + "print('from the candidate')\n", SCRIPT)
    driver["main"](spec)
    report = report_of("passed")
    assert report.passed and report.summary == "all asserts passed" and report.failures == ()
    assert "from the candidate" in report.result.output  # shown after the report, not inside it


def test_a_failing_assert_is_reported_with_its_values_and_frames(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, "def add(a, b):\n    return a * b\n", SCRIPT)
    with pytest.raises(driver["TestsFailed"], match="AssertionError in the tests"):
        driver["main"](spec)
    report = report_of("failed")
    assert report.summary == "AssertionError in the tests"
    (failure,) = report.failures
    assert failure.test is None and failure.error == "AssertionError"
    assert failure.compare == ("==", "2", "3")  # pytest's rewritten assert gave its sides
    assert [(f.where, f.line) for f in failure.frames] == [("tests", 3)]
    assert "assert 2 == 3" in report.result.message and "add(1, 2)" in report.result.message


def test_a_failure_inside_the_candidate_has_its_frame_in_the_file(driver: dict[str, Any], tmp_path: Path) -> None:
    source = "def add(a, b):\n    return a + b + undefined\n"
    spec = project(tmp_path, source, SCRIPT)
    with pytest.raises(driver["TestsFailed"]):
        driver["main"](spec)
    (failure,) = report_of("failed").failures
    assert failure.error == "NameError" and failure.message == "name 'undefined' is not defined"
    assert [(f.where, f.line, f.function) for f in failure.frames] == [("tests", 3, "<module>"), ("file", 2, "add")]


def test_a_name_the_tests_use_but_never_define_is_noted(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, FIXED, "from calc import add\n\nassert add(1, 2) == three\n")
    with pytest.raises(driver["TestsFailed"]):
        driver["main"](spec)
    assert report_of("failed").undefined_names == ("three",)


def test_a_script_that_exits_with_status_0_stops_there(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, FIXED, "import sys\nsys.exit(0)\nassert False\n")
    driver["main"](spec)
    assert report_of("passed").summary == "the tests exited with status 0"


def test_a_candidate_that_fails_to_import_is_reported_as_such(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, "import hefix_no_such_module\nfrom os import no_such_name\n", SCRIPT)
    with pytest.raises(driver["TestsFailed"], match=f"importing {spec['module']} failed"):
        driver["main"](spec)
    report = report_of("failed")
    assert report.missing_modules == ("hefix_no_such_module",)
    assert report.result.message.startswith(f"Importing the module `{spec['module']}` failed:")
    (failure,) = report.failures
    assert failure.error == "ModuleNotFoundError" and [(f.where, f.line) for f in failure.frames] == [("file", 1)]


def test_a_tracer_reports_the_project_functions_a_failing_script_ran(driver: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text("def square(x):\n    return x * 2  # wrong\n", encoding="utf-8")
    source = "from shapes import square\n\ndef add(a, b):\n    return square(a) + b\n"
    spec = project(tmp_path, source, SCRIPT, trace=True)
    try:
        with pytest.raises(driver["TestsFailed"]):
            driver["main"](spec)
    finally:
        sys.modules.pop("shapes", None)
    ran = {(r.path.name, r.function, r.caller) for r in report_of("failed").ran}
    assert ran == {(f"{spec['module']}.py", "add", None), ("shapes.py", "square", "add")}


PYTEST_TESTS = (
    "from calc import add\n\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n\n"
    "def test_big():\n    print('looking at big numbers')\n    assert add(10, 20) == 30\n"
)


def test_pytest_tests_report_each_failure_with_its_comparison(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, "def add(a, b):\n    return a - b\n", PYTEST_TESTS, kind="pytest", trace=True)
    with pytest.raises(driver["TestsFailed"], match="2 failed"):
        driver["main"](spec)
    report = report_of("failed")
    assert report.summary == "2 failed"
    tests_file = f"test_{spec['module']}.py"
    assert [(f.test, f.function, f.compare) for f in report.failures] == [
        (f"{tests_file}::test_small", "test_small", ("==", "-1", "3")),
        (f"{tests_file}::test_big", "test_big", ("==", "-10", "30")),
    ]
    assert [(f.where, f.function) for f in report.failures[0].frames] == [("tests", "test_small")]
    assert report.result.message.startswith("pytest: 2 failed\n\n___ ")
    assert "looking at big numbers" in report.result.message  # the failing test's captured output
    assert {(r.path.name, r.function) for r in report.ran} == {(f"{spec['module']}.py", "add")}


def test_pytest_tests_that_pass(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, FIXED, PYTEST_TESTS, kind="pytest")
    driver["main"](spec)
    report = report_of("passed")
    assert report.passed and report.summary == "2 passed"


def test_a_pytest_file_without_tests_is_a_failure_that_says_so(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = project(tmp_path, FIXED, "from calc import add\n", kind="pytest")
    with pytest.raises(driver["TestsFailed"]):
        driver["main"](spec)
    report = report_of("failed")
    assert report.summary == "no tests collected"
    assert report.result.message == f"pytest collected no tests from {spec['tests']['path']}"


# --- the helpers, one at a time ---------------------------------------------------------------------


def test_the_parts_joined_as_the_parent_joins_them_compile_to_one_program() -> None:
    source = "\n\n".join(part.read_text(encoding="utf-8") for part in usertests.DRIVER_PARTS)
    namespace: dict[str, Any] = {"__name__": "joined"}
    exec(compile(source, "<test>", "exec"), namespace)
    assert {"main", "run_script", "recording_compares", "tracer_for", "CallTracer"} <= set(namespace)


def test_the_report_notes_missing_modules_and_names_once(driver: dict[str, Any]) -> None:
    report = driver["Report"]()
    text = "No module named 'numpy.linalg'\ncannot import name 'mean' from 'stats'\nNo module named 'scipy'"
    report.note_text(text)
    report.note_text(text)  # pytest's failure text and its crash message say it again
    assert report.missing_modules == ["numpy.linalg", "scipy"] and report.missing_names == [["mean", "stats"]]
    assert report.header()["status"] == "passed"


def test_values_and_messages_are_capped_and_addresses_dropped(driver: dict[str, Any]) -> None:
    class NoRepr:
        def __repr__(self) -> str:
            raise RuntimeError

    assert driver["short_repr"](NoRepr()).startswith("<NoRepr instance at 0x")  # reprlib's own fallback
    broken_list = type("list", (), {"__len__": lambda self: 1 // 0})()  # reprlib takes it for a list
    assert driver["short_repr"](broken_list) == "<unprintable list: ZeroDivisionError>"
    assert len(driver["short_repr"]("x" * 1000)) <= driver["VALUE_CAP"]
    assert driver["cap"]("short", 10) == "short"
    assert driver["cap"]("y" * 100, 50).endswith("[90 characters cut]")
    entry = driver["failure_entry"]("t", "f", ValueError("<function add at 0x7f00ab>"), None, {}, ["==", "1", "2"])
    assert entry == {
        "test": "t",
        "function": "f",
        "error": "ValueError",
        "message": "add",
        "frames": [],
        "compare": None,  # only a failed assert has sides
    }


def test_the_candidate_importer_serves_only_the_users_file(driver: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "mod_x.py"
    path.write_text("VALUE = 'on disk'\n", encoding="utf-8")
    importer = driver["CandidateImporter"](str(path), "VALUE = 'candidate'\n", False)
    assert importer.find_spec("other") is None
    assert importer.find_spec("mod_x", [str(tmp_path / "elsewhere")]) is None  # not the user's file
    spec = importer.find_spec("mod_x", [str(tmp_path)])
    assert spec is not None and spec.loader is importer and spec.origin == str(path)
    module = types.ModuleType("mod_x")
    importer.exec_module(module)
    assert module.VALUE == "candidate" and importer.get_source("mod_x") == "VALUE = 'candidate'\n"
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    served = driver["CandidateImporter"](str(package / "__init__.py"), "", True)
    found = served.find_spec("pkg", [str(tmp_path)])
    assert found is not None and found.submodule_search_locations == [str(package)]


def test_files_and_frames_name_the_users_file_the_tests_and_the_project(driver: dict[str, Any], tmp_path: Path) -> None:
    spec = {"path": str(tmp_path / "m.py"), "tests": {"path": None}, "project": str(tmp_path)}
    files = driver["files_of"](spec)
    assert files == {"<tests>": "tests", "<project>": str(tmp_path) + os.sep, str(tmp_path / "m.py"): "file"}
    helper = tmp_path / "helper.py"
    code = compile("def boom():\n    raise KeyError(1)\n", str(helper), "exec")
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    try:
        exec(compile("\nboom()\n", "<tests>", "exec"), namespace)
    except KeyError as exc:
        frames = driver["frames_of"](exc.__traceback__, files)
    assert frames == [["tests", 2, "<module>"], [str(helper), 2, "boom"]]  # this test's own frame is not the project's


def test_the_call_tracer_keeps_only_failing_runs_and_project_functions(driver: dict[str, Any], tmp_path: Path) -> None:
    tracer = driver["CallTracer"](str(tmp_path), set())
    helper = tmp_path / "geo.py"
    namespace: dict[str, Any] = {}
    source = "def inner(x):\n    return x + 1\n\ndef outer(x):\n    return inner(x) * 2\n"
    exec(compile(source, str(helper), "exec"), namespace)
    tracer.start()
    try:
        namespace["outer"](1)
    finally:
        tracer.stop(False)
    assert tracer.entries() == []  # a passing run is not kept
    tracer.start()
    try:
        namespace["outer"](1)
    finally:
        tracer.stop(True)
    assert tracer.entries() == [[str(helper), "outer", 4, None, None], [str(helper), "inner", 1, str(helper), "outer"]]
    assert driver["is_test_file"]("/p/test_x.py") and driver["is_test_file"]("/p/conftest.py")
    assert driver["is_test_file"]("/p/x_test.py") and not driver["is_test_file"]("/p/x.py")
    assert driver["tracer_for"]({"trace": None}) is None
    assert driver["tracer_for"]({"trace": str(tmp_path), "tests": {"path": str(helper)}}).skip == {str(helper)}


def test_the_trace_plugin_keeps_the_calls_of_failing_tests(driver: dict[str, Any], tmp_path: Path) -> None:
    stops: list[tuple[object, ...]] = []
    tracer = types.SimpleNamespace(start=lambda: None, stop=lambda *args: stops.append(args))
    plugin = driver["TracePlugin"](tracer)
    plugin.pytest_runtest_setup(None)
    plugin.pytest_runtest_makereport(None, types.SimpleNamespace(excinfo=None))
    plugin.pytest_runtest_logfinish("t::a", None)
    plugin.pytest_runtest_setup(None)
    plugin.pytest_runtest_makereport(None, types.SimpleNamespace(excinfo=object()))
    plugin.pytest_runtest_logfinish("t::b", None)
    plugin.pytest_runtest_setup(None)
    plugin.pytest_runtest_makereport(None, types.SimpleNamespace(excinfo=object()))
    plugin.pytest_runtest_logfinish("t.py::TestX::test_c[1-2]", None)
    assert stops == [(False,), (True, "b"), (True, "test_c")]  # a failing test by its function's name


def test_the_call_tracer_as_the_profiler_calls_it(driver: dict[str, Any], tmp_path: Path) -> None:
    """The hook itself, called here with real frames (as a profile hook it runs untraced)."""
    tests_file = tmp_path / "test_geo.py"
    tracer = driver["CallTracer"](str(tmp_path), {str(tests_file)})
    helper = tmp_path / "geo.py"
    namespace: dict[str, Any] = {"sys": sys}
    source = "def inner():\n    return sys._getframe()\n\ndef outer():\n    return inner()\n"
    exec(compile(source, str(helper), "exec"), namespace)
    exec(compile("def test_it(outer):\n    return outer()\n", str(tests_file), "exec"), namespace)
    frame = namespace["test_it"](namespace["outer"])
    tracer(frame, "return", None)  # only calls count
    assert tracer.current == {}
    tracer(frame, "call", None)
    tracer(frame, "call", None)  # once per function
    tracer(frame.f_back, "call", None)
    tracer(frame.f_back.f_back, "call", None)  # the test's own function: not the project's
    assert list(tracer.current.values()) == [
        [str(helper), "inner", 1, str(helper), "outer"],
        [str(helper), "outer", 4, None, None],
    ]
    assert tracer.place(compile("", "<string>", "exec")) is None
