"""Runs inside the sandbox for `fix`, appended to fix_driver.py's source (never imported): a plain
assert script as the tests, executed top to bottom in the module's namespace like `python FILE`,
with pytest's assertion rewriting (when pytest is there) giving a failed assert its values.
"""

import ast
import builtins
import contextlib
import traceback
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def recording_compares(sink: list[str]) -> Iterator[None]:
    """While a script runs: a failed comparison's operator and sides into `sink`. pytest's rewritten
    asserts call `_reprcompare` when one fails (pytest's own run sets it to its hook, which the
    driver's collector implements); without pytest there is nothing to record."""
    try:
        from _pytest.assertion import util
    except Exception:
        yield
        return

    def record(op: str, left: Any, right: Any) -> None:  # None: pytest's explanation stays as it is
        sink[:] = [op, short_repr(left), short_repr(right)]

    saved = util._reprcompare
    util._reprcompare = record
    try:
        yield
    finally:
        util._reprcompare = saved


def innermost_file(exc: BaseException) -> str | None:
    frames = traceback.extract_tb(exc.__traceback__)
    return frames[-1].filename if frames else None


def compile_script(source: str, filename: str) -> Any:
    """pytest's assertion rewriting gives plain `assert` lines their values in the message."""
    tree = ast.parse(source, filename)
    try:
        from _pytest.assertion.rewrite import rewrite_asserts

        rewrite_asserts(tree, source.encode(), filename)
    except Exception:
        tree = ast.parse(source, filename)  # plain asserts still work, with less detail
    return compile(tree, filename, "exec", dont_inherit=True)


def run_script(spec: dict[str, Any], module: Any, report: Report) -> None:
    tests = spec["tests"]
    filename = tests["path"] or "<tests>"
    prime_linecache(filename, tests["source"])
    namespace: dict[str, Any] = {k: v for k, v in vars(module).items() if not k.startswith("__")}
    namespace.update({"__name__": "__main__", "__file__": filename, "__builtins__": builtins})
    compare: list[str] = []
    try:
        with recording_compares(compare):
            exec(compile_script(tests["source"], filename), namespace)
    except BaseException as exc:
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            report.summary = "the tests exited with status 0"
            return
        report.status = "failed"
        report.summary = f"{type(exc).__name__} in the tests"
        report.failures.append(failure_entry(None, None, exc, exc.__traceback__, files_of(spec), compare or None))
        # Rewritten asserts show functions by repr; the address changes every run and means nothing.
        report.text = FUNCTION_REPR_RE.sub(r"\1", format_exception(exc, {filename, spec["path"]}))
        report.note_text(report.text)
        if isinstance(exc, NameError) and innermost_file(exc) == filename:
            report.undefined_names.append(getattr(exc, "name", None) or "?")
        return
    report.summary = "all asserts passed"
