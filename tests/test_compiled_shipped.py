"""The bundled dataset's tests compiled for the judges, shipped in the package (issue 51): a new
machine's first scoring run compiles none of them, and they cannot drift from the judge's code.

- unit: the file was written by today's judge modules for this bytecode (else the unit tier fails
  until `python -m humanevalfix.evaluation.compiledshipped --write`), a compiler reads a shipped
  test without compiling, a damaged file or another code's file is not read, and `off` reads none.
- e2e: every test a scoring run compiles today is in the file, the same code.
"""

from __future__ import annotations

import base64
import json
import lzma
import marshal
from pathlib import Path

import pytest

from humanevalfix.evaluation import compiledshipped
from humanevalfix.evaluation.dataset import load_bundled
from humanevalfix.sandbox import testcode
from humanevalfix.sandbox.testcode import CompiledTests, load_shipped
from humanevalfix.tasks.task import Task

REGENERATE = "python -m humanevalfix.evaluation.compiledshipped --write"


@pytest.fixture(scope="module")
def bundled() -> list[Task]:
    return list(load_bundled().tasks)


def test_the_package_ships_the_tests_compiled_by_todays_code(bundled: list[Task]) -> None:
    document = json.loads(lzma.decompress(testcode.SHIPPED.read_bytes()))
    load_shipped.cache_clear()
    if document["magic"] != testcode.importlib.util.MAGIC_NUMBER.hex():
        assert dict(load_shipped()) == {}  # another Python's bytecode: every test compiled here
        return
    assert document["sources"] == testcode.sources(), f"written by other code: run {REGENERATE}"
    # Nearly every task's test (one the judge compiles itself, too large or not compiling, has none;
    # the e2e drift check below compares the whole set).
    assert len(load_shipped()) >= len(bundled) * 9 // 10


def test_a_shipped_test_is_read_not_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = frozenset({"math"})
    compiler = CompiledTests(names, None, shipped=None)
    key = compiler.key("assert f() == 1\n", "")
    path = tmp_path / "compiled.json.xz"
    compiledshipped.write({key: base64.b64encode(b"shipped").decode("ascii")}, path)
    load_shipped.cache_clear()
    reading = CompiledTests(names, None, shipped=path)
    monkeypatch.setattr(reading, "_compile", lambda test, support: pytest.fail("a shipped test was compiled"))
    assert reading.for_run("assert f() == 1\n", "") == base64.b64encode(b"shipped").decode("ascii")
    # Another test is compiled as before.
    monkeypatch.undo()
    assert reading.for_run("assert f() == 2\n", "") is not None


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not xz",
        lzma.compress(b"{not json"),
        lzma.compress(b'{"format": 99, "sources": "x", "tests": {}}'),
        lzma.compress(b'{"format": 1, "sources": "another judge", "tests": {"k": "v"}}'),
    ],
)
def test_a_damaged_or_foreign_file_is_not_read(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "compiled.json.xz"
    path.write_bytes(damage)
    load_shipped.cache_clear()
    assert dict(load_shipped(path)) == {} and dict(load_shipped(tmp_path / "missing.xz")) == {}


def test_off_compiles_every_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hello = {"magic": testcode.importlib.util.MAGIC_NUMBER.hex(), "names": ["math"]}
    test = "assert f() == 1\n"
    path = tmp_path / "compiled.json.xz"
    key = CompiledTests(frozenset({"math"}), None, shipped=None).key(test, "")
    compiledshipped.write({key: "c2hpcHBlZA=="}, path)
    load_shipped.cache_clear()
    monkeypatch.setattr(testcode, "SHIPPED", path)
    on = CompiledTests.from_hello(hello, None)
    assert on is not None and on.for_run(test, "") == "c2hpcHBlZA=="
    monkeypatch.setenv(testcode.SHIPPED_ENV, "off")
    off = CompiledTests.from_hello(hello, None)
    assert off is not None and off.for_run(test, "") not in (None, "c2hpcHBlZA==")


def test_the_writer_makes_the_same_bytes_for_the_same_tests(tmp_path: Path) -> None:
    found = {"b" * 64: "YQ==", "a" * 64: "Yg=="}
    one, two = tmp_path / "a.xz", tmp_path / "b.xz"
    compiledshipped.write(found, one)
    compiledshipped.write(dict(reversed(found.items())), two)
    assert one.read_bytes() == two.read_bytes()
    load_shipped.cache_clear()
    assert dict(load_shipped(one)) == found


def code_of(text: str) -> object:
    return marshal.loads(base64.b64decode(text))


@pytest.mark.e2e
def test_every_test_a_run_compiles_today_is_shipped(bundled: list[Task]) -> None:
    """The drift check: the canonical solutions scored again with an empty test cache and nothing
    read from the package; every test compiled is in the file, the same code. Compared as code
    objects, not bytes: marshal writes an object once or as a reference by its reference count at
    the time, so the same code may marshal to other bytes."""
    load_shipped.cache_clear()
    compiled = compiledshipped.compiled(bundled)
    shipped = load_shipped()
    differ = sorted(k for k in compiled if k not in shipped or code_of(shipped[k]) != code_of(compiled[k]))
    assert not differ and set(compiled) == set(shipped), f"{len(differ)} tests differ: run {REGENERATE}"
