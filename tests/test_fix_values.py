"""Runtime values for `fix`'s fault localisation (issue 53), in-process: the tracer's calls with
their values (sandbox/child/fix_trace.py) as the parent reads them (fixer/values.py), where a
failing test's asserted value was made, the LDB-style chain the model is shown, the ranking that
puts the helper that made the value before the caller the test asserts, and the note on a fix
that works around a helper."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.fixer import load_tests, load_user_file
from humanevalfix.fixer.localize import Stage
from humanevalfix.fixer.project import ProjectLocalizer
from humanevalfix.fixer.suspects import context_for, suspects_line, workaround_note
from humanevalfix.fixer.usertests import DRIVER_PARTS, FailedTest, Frame, Ran, RunReport
from humanevalfix.fixer.values import Values, chain_text, flows, made, only_failing, parse_values
from humanevalfix.sandbox.executor import ExecResult

HELPERS = "def clamp(value, low, high):\n    if value > high:\n        return low\n    return max(value, low)\n"
SHAPES = (
    "from geo.helpers import clamp\n\n\nclass Rect:\n    def __init__(self, w, h):\n        self.w, self.h = w, h\n\n"
    "    def __repr__(self):\n        return f'Rect({self.w}, {self.h})'\n\n\n"
    "def scaled_rect(rect, factor):\n"
    "    return Rect(clamp(rect.w * factor, 0.1, 10), clamp(rect.h * factor, 0.1, 10))\n\n\n"
    "def opacity_percent(x):\n    return round(clamp(x, 0, 1) * 100)\n"
)
TESTS = (
    "from geo.shapes import Rect, opacity_percent, scaled_rect\n\n\n"
    "def test_scaled_rect():\n    r = scaled_rect(Rect(1, 1), 50)\n    assert (r.w, r.h) == (10, 10)\n\n\n"
    "def test_opacity_percent():\n    assert opacity_percent(2.0) == 100\n\n\n"
    "def test_opacity_half():\n    assert opacity_percent(0.5) == 50\n"
)


@pytest.fixture
def tracer_class() -> Any:
    namespace: dict[str, Any] = {"__name__": "hefix_fix_program"}
    for part in DRIVER_PARTS:
        exec(compile(part.read_text(encoding="utf-8"), str(part), "exec", dont_inherit=True), namespace)
    return namespace["CallTracer"]


def geo(tmp_path: Path) -> dict[str, Any]:
    """The issue's project, written out and loaded here (the tracer only looks at the code's paths)."""
    (tmp_path / "geo").mkdir()
    namespaces: dict[str, Any] = {}
    for name, text in (("helpers", HELPERS), ("shapes", SHAPES)):
        path = tmp_path / "geo" / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        namespaces[name] = {"clamp": namespaces.get("helpers", {}).get("clamp")}
        exec(compile(text.replace("from geo.helpers import clamp\n", ""), str(path), "exec"), namespaces[name])
    (tmp_path / "test_geo.py").write_text(TESTS, encoding="utf-8")
    return namespaces["shapes"]


def traced(tmp_path: Path, tracer_class: Any, room: int = 3000) -> Values:
    shapes = geo(tmp_path)
    tracer = tracer_class(str(tmp_path), {str(tmp_path / "test_geo.py")})
    runs = [
        ("test_scaled_rect", lambda: shapes["scaled_rect"](shapes["Rect"](1, 1), 50).w == 10),
        ("test_opacity_percent", lambda: shapes["opacity_percent"](2.0) == 100),
        ("test_opacity_half", lambda: shapes["opacity_percent"](0.5) == 50),
    ]
    for name, run in runs:
        tracer.start()
        try:
            passed = run()
        finally:
            sys.setprofile(None)
        tracer.stop(not passed, None if passed else name)
    data = tracer.values(room)
    assert len(json.dumps(data)) <= room
    return parse_values(json.loads(json.dumps(data)))  # as the header carries it


def test_the_tracer_keeps_each_failing_call_with_its_values_under_its_caller(tmp_path: Path, tracer_class: Any) -> None:
    values = traced(tmp_path, tracer_class)
    assert [t.test for t in values.tests] == ["test_scaled_rect", "test_opacity_percent"]  # failing ones only
    calls = values.tests[0].calls
    assert [(c.function, c.parent, c.args, c.result) for c in calls] == [
        ("Rect.__init__", -1, "<Rect: repr raised AttributeError>, 1, 1", "None"),  # half-built: said so
        ("scaled_rect", -1, "Rect(1, 1), 50", "Rect(0.1, 0.1)"),
        ("clamp", 1, "50, 0.1, 10", "0.1"),
        ("clamp", 1, "50, 0.1, 10", "0.1"),
        ("Rect.__init__", 1, "<Rect: repr raised AttributeError>, 0.1, 0.1", "None"),
    ]
    assert calls[2].path == tmp_path / "geo" / "helpers.py"
    spectrum = {s.function: (s.failing, s.passing) for s in values.spectrum}
    assert spectrum == {"Rect.__init__": (1, 0), "scaled_rect": (1, 0), "clamp": (2, 1), "opacity_percent": (1, 1)}
    assert values.passing == 1
    assert [s.function for s in only_failing(values)] == ["Rect.__init__", "scaled_rect"]


def test_the_values_fit_the_room_they_are_given_cut_at_the_end(tmp_path: Path, tracer_class: Any) -> None:
    values = traced(tmp_path, tracer_class, room=330)
    kept = [len(t.calls) for t in values.tests]
    assert kept and kept[0] < 5 and all(c.parent < i for t in values.tests for i, c in enumerate(t.calls))
    (tmp_path / "small").mkdir()
    assert all(not t.calls for t in traced(tmp_path / "small", tracer_class, room=100).tests)


def test_a_call_that_raised_is_told_as_such(tmp_path: Path, tracer_class: Any) -> None:
    path = tmp_path / "boom.py"
    namespace: dict[str, Any] = {}
    exec(
        compile("def inner(x):\n    return 1 // x\n\ndef outer(x):\n    return inner(x)\n", str(path), "exec"),
        namespace,
    )
    tracer = tracer_class(str(tmp_path), set())
    tracer.start()
    try:
        namespace["outer"](0)
    except ZeroDivisionError:
        pass
    finally:
        sys.setprofile(None)
    tracer.stop(True, "test_boom")
    (test,) = parse_values(tracer.values(2000)).tests
    assert [c.text() for c in test.calls] == ["outer(0) raised", "inner(0) raised"]


def test_a_value_flows_as_a_whole_token_only() -> None:
    assert flows("0.1", "Rect(width=0.1, height=0.1)") and flows("0", "0") and flows("'a'", "['a', 'b']")
    assert not flows("1", "10") and not flows("0.1", "0.15") and not flows("None", "None") and not flows("2", None)


VALUES = {
    "fns": [
        ["/p/geo/shapes.py", "scaled_rect"],
        ["/p/geo/helpers.py", "clamp"],
        ["/p/geo/shapes.py", "opacity_percent"],
    ],
    "tests": [
        ["test_scaled_rect", [[0, -1, "Rect(1, 1), 50", "Rect(0.1, 0.1)", False], [1, 0, "50, 0.1, 10", "0.1", False]]],
        ["test_opacity_percent", [[2, -1, "2.0", "0", False], [1, 0, "2.0, 0, 1", "0", False]]],
    ],
    "spectrum": [[0, 1, 0], [1, 2, 1], [2, 1, 1]],
    "passing": 1,
}


def test_where_the_asserted_value_was_made_and_the_chain_the_model_is_shown() -> None:
    values = parse_values(VALUES)
    assert [(m.function, m.test, m.depth, m.top.function) for m in made(values)] == [
        ("clamp", "test_scaled_rect", 1, "scaled_rect"),
        ("clamp", "test_opacity_percent", 1, "opacity_percent"),
    ]
    assert chain_text(values) == (
        "test_scaled_rect:\n  scaled_rect(Rect(1, 1), 50) returned Rect(0.1, 0.1)\n"
        "    <- clamp(50, 0.1, 10) returned 0.1\n"
        "test_opacity_percent:\n  opacity_percent(2.0) returned 0\n    <- clamp(2.0, 0, 1) returned 0"
    )
    assert chain_text(values, focus={"opacity_percent"}) == "test_opacity_percent:\n  opacity_percent(2.0) returned 0"
    assert parse_values({"fns": [], "tests": [["t", [[5, -1, "", "", False]]]]}) == Values()  # malformed: nothing
    assert parse_values(None) == Values()


def test_a_value_the_caller_changed_points_at_the_caller_not_the_helper() -> None:
    data = json.loads(json.dumps(VALUES))
    data["tests"][1][1][0][3] = "1"  # opacity_percent returned something other than clamp's 0
    assert [m.test for m in made(parse_values(data))] == ["test_scaled_rect"]


def project(tmp_path: Path) -> tuple[Path, Any]:
    (tmp_path / "geo").mkdir()
    (tmp_path / "geo" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "geo" / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (tmp_path / "geo" / "shapes.py").write_text(SHAPES, encoding="utf-8")
    (tmp_path / "test_geo.py").write_text(TESTS, encoding="utf-8")
    return tmp_path, load_tests(str(tmp_path / "test_geo.py"))


def report_for(root: Path, values: dict[str, Any] | None) -> RunReport:
    shapes, helpers = root / "geo" / "shapes.py", root / "geo" / "helpers.py"
    failures = (
        FailedTest(
            "test_geo.py::test_scaled_rect", "test_scaled_rect", "AssertionError", "", (Frame("tests", 6, "t"),)
        ),
        FailedTest(
            "test_geo.py::test_opacity_percent",
            "test_opacity_percent",
            "AssertionError",
            "",
            (Frame("tests", 10, "t"),),
        ),
    )
    # As the tracer reports it: each function once, with its first caller.
    ran = (
        Ran(shapes, "scaled_rect", 12),
        Ran(helpers, "clamp", 1, shapes, "scaled_rect"),
        Ran(shapes, "opacity_percent", 16),
    )
    text = json.dumps(values).replace("/p/", f"{root}/") if values else "null"
    return RunReport(
        ExecResult("failed", "", "", 0.0, 1), failures=failures, ran=ran, values=parse_values(json.loads(text))
    )


def test_the_helper_that_made_the_value_ranks_first_and_says_why(tmp_path: Path) -> None:
    root, tests = project(tmp_path)
    localizer = ProjectLocalizer(tests, root, None)
    without = localizer.rank(report_for(root, None))
    names = [s.name for s in without]  # what issue 53 saw: the helper after the callers
    assert names[0] == "opacity_percent" and names.index("scaled_rect") < names.index("clamp")
    ranked = localizer.rank(report_for(root, VALUES))
    assert [(s.name, s.score) for s in ranked] == [
        ("clamp", 16),
        ("opacity_percent", 6),
        ("scaled_rect", 5),
        ("Rect.__init__", 1),
    ]
    assert ranked[0].reasons[0] == (
        "the wrong value is made here: `scaled_rect(Rect(1, 1), 50) → clamp(50, 0.1, 10) returned 0.1` in "
        "test_scaled_rect, and in 1 more failing test"
    )
    assert "it ran only in the failing tests (in none of the 1 passing)" in ranked[2].reasons
    assert suspects_line(ranked, root) == (
        "clamp in geo/helpers.py (score 16), opacity_percent in geo/shapes.py (score 6), scaled_rect in "
        "geo/shapes.py (score 5), and 1 more"
    )


def test_the_model_sees_the_suspects_their_code_and_the_values(tmp_path: Path) -> None:
    root, tests = project(tmp_path)
    report = report_for(root, VALUES)
    ranked = ProjectLocalizer(tests, root, None).rank(report)
    helpers = root / "geo" / "helpers.py"
    files = {p: load_user_file(str(p)) for p in (helpers, root / "geo" / "shapes.py")}
    text = context_for(Stage("clamp", 4, "", helpers), ranked, files, root, report.values)
    assert text.startswith("The suspects, most likely first: `clamp` in geo/helpers.py (the wrong value is made here")
    assert "Here only `clamp` may change." in text
    assert (
        "```python\n# geo/shapes.py\ndef opacity_percent(x):\n    return round(clamp(x, 0, 1) * 100)\n\n"
        "def scaled_rect(rect, factor):\n" in text
    )
    assert text.endswith("test_opacity_percent:\n  opacity_percent(2.0) returned 0\n    <- clamp(2.0, 0, 1) returned 0")
    alone = context_for(Stage("clamp", 4, "", helpers), ranked[:1], files, root, Values())
    assert alone == ""  # one suspect and no values: nothing beside the scope


def test_a_fix_in_the_caller_of_a_helper_that_made_the_value_is_a_workaround(tmp_path: Path) -> None:
    values = parse_values(VALUES)
    shapes = Path("/p/geo/shapes.py")
    assert workaround_note("opacity_percent", shapes, values, Path("/p")) == (
        "the fix changes `opacity_percent`, but the failing tests' values show the wrong value made in `clamp` "
        "(geo/helpers.py: `clamp(2.0, 0, 1) returned 0`): this works around it, and other callers of `clamp` still "
        "get that value"
    )
    assert workaround_note("clamp", Path("/p/geo/helpers.py"), values, Path("/p")) is None
    assert workaround_note(None, shapes, values, Path("/p")) is None


def test_a_helper_the_test_calls_itself_is_trusted_with_its_values() -> None:
    """HumanEvalFix's Python/38: `decode_cyclic` should encode twice, and passes one encoding on."""
    data = {
        "fns": [["/p/c.py", "encode_cyclic"], ["/p/c.py", "decode_cyclic"]],
        "tests": [
            [
                "check",
                [[0, -1, "'abc'", "'bca'", False], [1, -1, "'bca'", "'cab'", False], [0, 1, "'bca'", "'cab'", False]],
            ]
        ],
    }
    assert made(parse_values(data)) == []


def test_a_scope_moves_on_after_two_candidates_that_fail_as_the_original_did() -> None:
    import threading

    from humanevalfix.fixer.suspects import Progress

    def report(*values: str, summary: str = "1 failed") -> RunReport:
        failures = tuple(
            FailedTest(f"t.py::test_{i}", f"test_{i}", "AssertionError", f"assert {v} == 1", (), ("==", v, "1"))
            for i, v in enumerate(values)
        )
        return RunReport(ExecResult("failed", "", "", 0.0, 1), summary=summary, failures=failures)

    progress = Progress(report("0"), threading.Event())
    progress.see(report("0"))
    progress.see(report("2"))  # another value: the candidate changed something the test sees
    progress.see(report("0"))
    assert not progress.moved_on
    progress.see(report("0"))
    assert progress.moved_on
    stalled = Progress(report("0", "5", summary="2 failed"), threading.Event())
    stalled.see(report("0", "5", summary="2 failed"))
    stalled.see(report("0", summary="1 failed"))  # one test fewer failing: progress
    stalled.see(RunReport(ExecResult("passed", "", "", 0.0, 0)))
    assert not stalled.moved_on and stalled.stalled == 0


def test_the_one_line_versions_of_a_rewritten_body() -> None:
    from humanevalfix.fixer.tidy import one_line_versions

    original = "def clamp(value, low, high):\n    if value > high:\n        return low\n    return value\n"
    rewritten = (
        "def clamp(value, low, high):\n    if value > high:\n        return high\n    else:\n        return value\n"
    )
    versions = one_line_versions(original, rewritten)
    assert original.replace("return low", "return high") in versions
    assert all(v.count("\n") == original.count("\n") for v in versions)  # one line each, in place
    assert one_line_versions(original, original.replace("return low", "return high")) == []  # one line already
