"""The workspace tools `fix` gives a model with native tool calls: read_file, list_dir and grep
confined to the project's root (no `..`, no absolute path, no symlink out; bounded output), an edit
of a scratch copy (the project never written), git_diff of that copy; and, end to end, a scripted
model that reads the helper module, edits it and runs the scratch copy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.fixer.workspace import GREP_MATCHES, READ_LINES, Workspace
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, completion, tool_call

from .conftest import KEYS_ENV
from .test_fix_project import GEOMETRY, make_shapes

KEY = "sk-test-fix-workspace-0000"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_shapes(tmp_path / "proj")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "path", ["../secret.txt", "shapes/../../secret.txt", "/etc/passwd", "~/.bashrc", "outside/secret.txt", "outside"]
)
def test_no_tool_reaches_outside_the_root(project: Path, path: str) -> None:
    (project / "outside").symlink_to(project.parent)  # a symlink out of the project
    ws = Workspace(project)
    for name, args in (
        ("read_file", {"path": path}),
        ("list_dir", {"path": path}),
        ("grep", {"text": "SECRET", "path": path}),
        ("edit", {"path": path, "start": 1, "end": 1, "text": "x = 1"}),
    ):
        answer = ws.call(name, json.dumps(args))
        assert answer.startswith("refused: "), (name, answer)
        assert "TOP SECRET" not in answer
    assert "TOP SECRET" not in ws.call(
        "grep", json.dumps({"text": "SECRET"})
    )  # the whole project: the symlink not followed
    assert ws.scratch == {}


def test_reads_are_bounded_and_numbered(project: Path) -> None:
    (project / "big.py").write_text("".join(f"x{n} = {n}  # {'y' * 500}\n" for n in range(1000)), encoding="utf-8")
    ws = Workspace(project)
    page = ws.call("read_file", json.dumps({"path": "big.py"}))
    assert (
        page.startswith(f"big.py (lines 1-{READ_LINES} of 1000):\n    1  x0 = 0") and f"start={READ_LINES + 1}" in page
    )
    assert max(len(line) for line in page.splitlines()) < 320
    assert ws.call("grep", json.dumps({"text": "x"})).count("\n") == GREP_MATCHES
    listing = ws.call("list_dir", json.dumps({}))
    assert listing.splitlines()[1:] == ["big.py", "shapes/", "test_area.py"]
    assert (
        ws.call("grep", json.dumps({"text": "return x * 2", "path": "shapes"}))
        == "shapes/geometry.py:7:     return x * 2"
    )


def test_an_edit_changes_only_the_scratch_copy_and_git_diff_shows_it(project: Path) -> None:
    ws = Workspace(project)
    answer = ws.call(
        "edit",
        json.dumps({"path": "shapes/geometry.py", "function": "square", "text": "def square(x):\n    return x * x\n"}),
    )
    assert answer.startswith("edited shapes/geometry.py")
    assert (project / "shapes" / "geometry.py").read_text(encoding="utf-8") == GEOMETRY
    diff = ws.call("git_diff", "{}")
    assert diff.startswith("--- a/shapes/geometry.py\n+++ b/shapes/geometry.py\n") and "+    return x * x\n" in diff
    broken = ws.call(
        "edit", json.dumps({"path": "shapes/area.py", "start": 4, "end": 4, "text": "def square_area(side)"})
    )
    assert broken.startswith("refused: not applied: shapes/area.py would not parse")
    assert ws.call("edit", "not json").startswith("refused: ")
    assert ws.call("rm_rf", "{}") == "refused: no tool `rm_rf`"


@pytest.mark.e2e
def test_a_native_model_reads_the_helper_edits_it_and_runs_the_scratch_copy(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(project)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    edit = json.dumps(
        {"path": "shapes/geometry.py", "function": "square", "text": "def square(x):\n    return x * x\n"}
    )
    script = [
        tool_call("", name="read_file", arguments=json.dumps({"path": "shapes/geometry.py"})),
        tool_call("", name="edit", arguments=edit),
        tool_call("", arguments=json.dumps({"code": ""})),  # run_code without code: the scratch copy
    ]
    seen: list[Recorded] = []

    def answer(rec: Recorded) -> Response:
        seen.append(rec)
        return (
            script[len(seen) - 1] if len(seen) <= len(script) else completion({"role": "assistant", "content": "Done."})
        )

    with ScriptedServer(answer) as server:
        code = main(
            [
                "fix",
                "--tests",
                "test_area.py",
                "--base-url",
                server.base_url,
                "--model",
                "scripted-model",
                "--api-key-env",
                KEYS_ENV,
                "--retries",
                "1",
                "--request-timeout",
                "20",
                "--timeout",
                "60",
                "--max-iters",
                "1",
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    tools = {t["function"]["name"] for t in seen[0].body["tools"]}
    assert {"run_code", "read_file", "list_dir", "grep", "edit", "git_diff"} <= tools
    assert "  read_file: shapes/geometry.py (lines 1-11 of 11):" in err
    read = [m for m in seen[1].body["messages"] if m["role"] == "tool"]
    assert "    7      return x * 2" in read[0]["content"]
    assert out.startswith("--- a/shapes/geometry.py\n+++ b/shapes/geometry.py\n") and "+    return x * x\n" in out
    assert (project / "shapes" / "geometry.py").read_text(encoding="utf-8") == GEOMETRY  # no --write
