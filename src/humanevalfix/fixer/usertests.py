"""The user's tests for `fix`, and running a candidate against them.

--tests is a pytest file, a plain assert script, or inline code. A candidate runs as the user's
module through any executor (`run(code, test)`), with sandbox/child/fix_driver.py as the test
program: it serves the candidate at the file's own path and module name and reports back.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from humanevalfix import pyast
from humanevalfix.errors import UserError
from humanevalfix.fixer.userfile import UserFile, syntax_error
from humanevalfix.fixer.values import Values, parse_values
from humanevalfix.sandbox.executor import ExecResult, Executor

_CHILD = Path(__file__).resolve().parent.parent / "sandbox" / "child"
DRIVER = _CHILD / "fix_driver.py"
# The test program: the driver, then its plain-assert runner and its call tracer, as one source.
DRIVER_PARTS = (DRIVER, _CHILD / "fix_script.py", _CHILD / "fix_trace.py")


@dataclass(frozen=True)
class UserTests:
    kind: str  # "pytest" (run by pytest) | "script" (executed top to bottom, like `python FILE`)
    source: str
    path: Path | None  # None for inline tests
    label: str
    imports: tuple[str, ...] = ()  # modules the tests import outside any `try`

    def imports_module(self, name: str) -> bool:
        return any(m == name or m.startswith(name + ".") or name.startswith(m + ".") for m in self.imports)


def _imports(tree: ast.AST) -> tuple[str, ...]:
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            guarded |= {id(n) for child in node.body for n in ast.walk(child)}
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append(node.module)
    return tuple(dict.fromkeys(found))


def _is_pytest_style(tree: ast.Module) -> bool:
    """pytest collects `test*` functions and `Test*` classes; a script has top-level asserts."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            return True
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            return True
    return False


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and bool(re.fullmatch(r"[\w./\\~:-]+\.py", text.strip()))


def load_tests(value: str) -> UserTests:
    """--tests: a pytest file, a plain assert script, or inline test code."""
    if not value.strip():
        raise UserError('--tests: empty; give a test file or test code such as "assert f(1) == 2"')
    path = Path(value).expanduser()
    if _looks_like_path(value) or path.is_file():
        if not path.is_file():
            raise UserError(f"--tests: file not found: {value}")
        try:
            source = path.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
        except UnicodeDecodeError as exc:
            raise UserError(f"--tests {value}: not UTF-8 text (byte {exc.start})") from None
        try:
            tree = pyast.parse(source, value)
        except SyntaxError as exc:
            raise UserError(syntax_error(f"--tests {value}", exc)) from None
        kind = "pytest" if _is_pytest_style(tree) else "script"
        return UserTests(kind, source, path.resolve(), f"the tests in {value}", _imports(tree))
    try:
        tree = pyast.parse(value, "<tests>")
    except SyntaxError as exc:
        raise UserError(syntax_error("--tests (inline code)", exc)) from None
    return UserTests("script", value.rstrip() + "\n", None, "the inline tests", _imports(tree))


# --- running a candidate against them ----------------------------------------------------


def project_root(folder: Path) -> Path | None:
    """The git top-level of `folder`; None outside a work tree, without git, or at / (never shown whole)."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    top = proc.stdout.strip()
    if proc.returncode != 0 or not top:
        return None
    root = Path(top).resolve()
    return None if root == Path(root.anchor) else root


def read_only_paths(user_file: UserFile | None, tests: UserTests, root: Path | None = None) -> tuple[Path, ...]:
    """What the sandbox shows of the user's tree, read-only at the same paths: the project (the git
    top-level of the file's folder, else the folder its module is imported from, so sibling modules,
    conftest.py files, fixtures' data and config files are all there) and, when they lie outside
    it, the import root and the tests' project (or folder). Without FILE: `root`, the tests' project."""
    paths = [project_root(user_file.path.parent) or user_file.import_root, user_file.import_root] if user_file else []
    paths += [root] if root is not None else []
    if tests.path is not None:
        paths.append(project_root(tests.path.parent) or tests.path.parent)
    shown: list[Path] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):  # a folder before any inside it
        if not any(path == s or s in path.parents for s in shown):
            shown.append(path)
    return tuple(shown)


@dataclass(frozen=True)
class Frame:
    where: str  # "file" (the user's file) or "tests"; frames elsewhere are not reported
    line: int
    function: str  # as the traceback names it ("<module>" at top level)


@dataclass(frozen=True)
class FailedTest:
    """One failure as the driver saw it: what fixer.localize ranks by and fixer.failures tells."""

    test: str | None  # pytest's id as shown ("test_stats.py::test_mean"); None: a script, or the import
    function: str | None  # the test function's name in the tests' source
    error: str  # the exception's type
    message: str
    frames: tuple[Frame, ...]  # outermost first
    compare: tuple[str, str, str] | None = None  # a failed comparison: operator, left and right value (repr)


@dataclass(frozen=True)
class Ran:
    """A function of the project that ran during a failing test (the driver's tracer), and the
    first project function up the stack that called it (None: the tests called it)."""

    path: Path
    function: str  # its qualified name (`Acc.mean`, `f.<locals>.g`)
    line: int
    caller_path: Path | None = None
    caller: str | None = None


def _ran(entries: object) -> tuple[Ran, ...]:
    out: list[Ran] = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            path, function, line, caller_path, caller = entry
            out.append(
                Ran(
                    Path(str(path)),
                    str(function),
                    int(line),
                    Path(str(caller_path)) if caller_path else None,
                    str(caller) if caller else None,
                )
            )
        except (TypeError, ValueError):
            continue
    return tuple(out)


@dataclass(frozen=True)
class RunReport:
    result: ExecResult  # status and message as the agent sees them
    summary: str = ""
    missing_modules: tuple[str, ...] = ()
    missing_names: tuple[tuple[str, str], ...] = ()  # (name, module)
    undefined_names: tuple[str, ...] = ()
    failures: tuple[FailedTest, ...] = ()  # the first few, when the driver reported them
    ran: tuple[Ran, ...] = ()  # with a trace: the project's functions that ran in the failing tests
    values: Values = Values()  # with a trace: the failing tests' project calls and their values

    @property
    def passed(self) -> bool:
        return self.result.passed


def _failures(entries: object) -> tuple[FailedTest, ...]:
    """The header's failures; anything malformed (the candidate printed into the report?) is left out."""
    out: list[FailedTest] = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            compare = entry.get("compare")
            out.append(
                FailedTest(
                    test=entry.get("test"),
                    function=entry.get("function"),
                    error=str(entry["error"]),
                    message=str(entry.get("message", "")),
                    frames=tuple(Frame(str(w), int(n), str(f)) for w, n, f in entry.get("frames", [])),
                    compare=(str(compare[0]), str(compare[1]), str(compare[2])) if compare else None,
                )
            )
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            continue
    return tuple(out)


REPORT_RE_TEMPLATE = r"<<fix-report {nonce}>>\n(?P<header>[^\n]*)\n(?P<text>.*?)(?:\n<</fix-report {nonce}>>\n?|\Z)"


def parse_report(raw: ExecResult, nonce: str) -> RunReport:
    """Turn the executor's result into the report: the driver's text replaces the raw traceback."""
    match = re.search(REPORT_RE_TEMPLATE.format(nonce=nonce), raw.output, re.DOTALL)
    if match is None:  # killed, timed out, or the sandbox failed before the driver reported
        return RunReport(raw)
    try:
        header = json.loads(match.group("header"))
    except json.JSONDecodeError:
        return RunReport(raw)
    rest = (raw.output[: match.start()] + raw.output[match.end() :]).strip()
    text = match.group("text").strip() or header.get("summary", "")
    status = raw.status
    if status == "failed" and header.get("status") == "error":
        status = "error"  # pytest itself could not run: not the candidate's failure
    message = raw.message if status in ("passed", "timeout") else text
    return RunReport(
        ExecResult(status, message, rest, raw.duration_s, raw.exit_code),
        summary=str(header.get("summary", "")),
        missing_modules=tuple(header.get("missing_modules", [])),
        missing_names=tuple(tuple(p) for p in header.get("missing_names", [])),
        undefined_names=tuple(header.get("undefined_names", [])),
        failures=_failures(header.get("failures")),
        ran=_ran(header.get("ran")),
        values=parse_values(header.get("values")),
    )


# How much of the executor's limit the tests may take before the driver stops them: the rest is
# for the interpreter's start before it and the report after it.
STOP_SHARE = 0.85


def stop_after(timeout_s: float | None) -> float | None:
    """Seconds after the driver starts at which it stops the tests (None: never)."""
    return None if timeout_s is None else round(timeout_s * STOP_SHARE, 3)


@dataclass
class UserTestExecutor:
    """An Executor for the agent: `run(code, tests)` runs `code` as the user's module against their tests.

    What it needs from the sandbox: `read_only_paths(...)` visible at the same absolute paths,
    pytest importable, a writable scratch cwd and temp dir, and the driver run unrestricted.
    """

    inner: Executor
    user_file: UserFile | None  # None: no candidate, the project as it is (the project-wide baseline)
    tests: UserTests
    on_report: Callable[[RunReport], None] | None = None
    reports: list[RunReport] = field(default_factory=list)
    project: Path | None = None  # frames anywhere under it are reported, by path
    # The executor's limit per run (--timeout): the driver stops the tests a little before it
    # (stop_after), so tests that hang still report where they were; None: not stopped early.
    timeout_s: float | None = None

    def for_file(self, user_file: UserFile) -> UserTestExecutor:
        """The same sandbox, serving candidates as `user_file` (its reports its own)."""
        return UserTestExecutor(self.inner, user_file, self.tests, self.on_report, [], self.project, self.timeout_s)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def isolation(self) -> str:
        return self.inner.isolation

    def program(self, code: str, with_tests: bool, nonce: str, trace: bool = False) -> str:
        """`trace`: also report the project's functions that ran in the failing tests."""
        tests, user = self.tests, self.user_file
        kind = tests.kind if with_tests else "none"
        search_dir = str(tests.path.parent) if tests.kind == "script" and tests.path is not None else None
        root = (
            user.import_root
            if user is not None
            else (self.project or (tests.path.parent if tests.path else Path.cwd()))
        )
        spec = {
            "nonce": nonce,
            "module": user.module if user is not None else None,
            "path": str(user.path) if user is not None else None,
            "is_package": user is not None and user.is_package,
            "import_root": str(root),
            "source": code,
            "tests": {
                "kind": kind,
                "path": str(tests.path) if tests.path else None,
                "source": tests.source,
                "search_dir": search_dir,
            },
            "project": str(self.project) if self.project else None,
            "trace": str(self.project) if trace and self.project else None,
            "stop_after_s": stop_after(self.timeout_s),
        }
        source = "\n\n".join(part.read_text(encoding="utf-8") for part in DRIVER_PARTS)
        return source + f"\n\nmain(json.loads({json.dumps(json.dumps(spec))}))\n"

    def check(self, code: str, with_tests: bool = True, trace: bool = False) -> RunReport:
        """`trace`: a second run under the tracer gives what ran and its values; the report itself is
        the untraced run's (the values take the traced run's room for text, and the hook its time)."""
        nonce = secrets.token_hex(8)
        report = parse_report(self.inner.run("", self.program(code, with_tests, nonce)), nonce)
        if not trace or report.passed or self.project is None:
            return report
        nonce = secrets.token_hex(8)
        traced = parse_report(self.inner.run("", self.program(code, with_tests, nonce, trace)), nonce)
        return replace(report, ran=traced.ran, values=traced.values)

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        """The agent's call; an empty `test` (feedback modes without tests) only imports the module.
        `support` is the benchmark's (trusted helpers): the user's tests need none."""
        report = self.check(code, with_tests=bool(test.strip()))
        self.reports.append(report)
        if self.on_report is not None:
            self.on_report(report)
        return report.result

    def close(self) -> None:
        self.inner.close()


def baseline_problem(report: RunReport, user_file: UserFile | None, tests: UserTests) -> str | None:
    """Why the tests cannot drive a repair of the original file (None: the project), or None when they can."""
    if report.passed:
        on = user_file.display if user_file else "the project as it is"
        return f"{tests.label} already pass on {on}: there is nothing to fix (do they exercise the bug?)"
    if report.result.status == "error":
        return f"could not run {tests.label}: {report.result.message.strip()[:1500]}"
    for module in report.missing_modules:
        if tests.imports_module(module):
            return (
                f"{tests.label} import `{module}`, which is not installed or not importable (No module named "
                f"'{module}')"
            )
    stem = user_file.module.rpartition(".")[2] if user_file else None
    for name, module in report.missing_names:
        if user_file is not None and (module == user_file.module or module.rpartition(".")[2] == stem):
            return f"{tests.label} import `{name}` from `{module}`, but {user_file.display} does not define `{name}`"
        if tests.imports_module(module):
            return f"{tests.label} import `{name}` from `{module}`, which does not define it"
    for name in report.undefined_names:
        return f"{tests.label} use `{name}`, which is not defined there (NameError); import it or define it"
    return None
