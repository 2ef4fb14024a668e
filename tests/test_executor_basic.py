"""The plain subprocess executor: verdicts come from the result pipe after the tests ran, never
from the exit status or stdout; the child sees none of the parent's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from humanevalfix.sandbox.executor import Limits, SubprocessExecutor

from .conftest import REPO_ROOT

CODE = "def add(a, b):\n    return a + b\n"
TEST = "def check(add):\n    assert add(1, 2) == 3\n    assert add(-1, 1) == 0\n\ncheck(add)\n"


@pytest.fixture(scope="module")
def executor() -> SubprocessExecutor:
    return SubprocessExecutor(Limits(timeout_s=20.0))  # generous: a busy machine must not turn verdicts into timeouts


@pytest.mark.e2e
def test_correct_code_passes(executor: SubprocessExecutor) -> None:
    result = executor.run(CODE, TEST)
    assert result.status == "passed", result
    assert result.passed and result.exit_code == 0


@pytest.mark.e2e
def test_failed_assert_names_the_test_line(executor: SubprocessExecutor) -> None:
    result = executor.run("def add(a, b):\n    return a - b\n", TEST)
    assert result.status == "failed"
    assert "assert add(1, 2) == 3" in result.message and "line 2" in result.message


@pytest.mark.e2e
def test_exception_names_the_candidate_line(executor: SubprocessExecutor) -> None:
    result = executor.run("def add(a, b):\n    return a + b + undefined_name\n", TEST)
    assert result.status == "failed"
    assert "NameError" in result.message and "undefined_name" in result.message


@pytest.mark.e2e
def test_syntax_error_in_candidate_is_a_failure(executor: SubprocessExecutor) -> None:
    result = executor.run("def add(a, b)\n    return a + b\n", TEST)
    assert result.status == "failed" and "SyntaxError" in result.message


@pytest.mark.e2e
def test_infinite_loop_times_out() -> None:
    result = SubprocessExecutor(Limits(timeout_s=1.0)).run("def add(a, b):\n    while True:\n        pass\n", TEST)
    assert result.status == "timeout"
    assert result.duration_s < 4.0


@pytest.mark.e2e
@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import sys\nsys.exit(0)\n" + CODE, id="sys.exit at import"),
        pytest.param("import os\nos._exit(0)\n" + CODE, id="os._exit at import"),
        pytest.param("import sys\ndef add(a, b):\n    sys.exit(0)\n", id="sys.exit in the function"),
        pytest.param("import os\ndef add(a, b):\n    os._exit(0)\n", id="os._exit in the function"),
        pytest.param("def add(a, b):\n    raise SystemExit(0)\n", id="SystemExit in the function"),
    ],
)
def test_exiting_early_with_status_0_is_a_failure(executor: SubprocessExecutor, code: str) -> None:
    result = executor.run(code, TEST)
    assert result.status == "failed", result


@pytest.mark.e2e
def test_forged_success_on_stdout_is_a_failure(executor: SubprocessExecutor) -> None:
    code = (
        "import json, sys\n"
        "def add(a, b):\n"
        "    print('all tests passed')\n"
        "    print(json.dumps({'status': 'passed', 'message': 'all tests passed'}))\n"
        "    sys.stdout.flush()\n"
        "    return 0\n"
    )
    result = executor.run(code, TEST)
    assert result.status == "failed"
    assert "all tests passed" in result.output  # it was printed, and did not count


@pytest.mark.e2e
def test_parent_secret_is_not_in_the_child_environment(
    executor: SubprocessExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-planted-secret-5e1f0c77"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("HEFIX_PLANTED_SECRET", secret)
    code = (
        "import os\n"
        "def leaked():\n"
        "    return [k for k, v in os.environ.items() if 'sk-planted' in v or k in ('OPENAI_API_KEY', "
        "'HEFIX_PLANTED_SECRET')]\n"
    )
    assert executor.run(code, "assert leaked() == []\n").status == "passed"
    # The same probe does fail when it should: the child's own variables are visible to it.
    assert (
        executor.run(
            "import os\ndef leaked():\n    return os.environ.get('LANG')\n", "assert leaked() is None\n"
        ).status
        == "failed"
    )
    printed = executor.run("import os\nprint(dict(os.environ))\n", "")
    assert secret not in printed.output and "PATH" in printed.output


@pytest.mark.e2e
def test_output_is_captured_and_capped(executor: SubprocessExecutor) -> None:
    result = executor.run("print('x' * 100000)\n", "")
    assert result.status == "passed"
    assert "[output truncated]" in result.output
    assert len(result.output) < 5000


@pytest.mark.e2e
def test_secret_in_the_parents_initial_environment_is_not_readable_through_proc() -> None:
    """A key exported in the shell sits in the parent's initial environment block, which
    /proc/<pid>/environ shows; the child must not be able to read it there either."""
    secret = "sk-exported-secret-93b1d5e0"
    probe = (
        "import os\n"
        "def leaked():\n"
        "    try:\n"
        "        with open(f'/proc/{os.getppid()}/environ', 'rb') as fh:\n"
        "            return b'sk-exported-secret' in fh.read()\n"
        "    except OSError:\n"
        "        return False\n"
    )
    parent = (
        "import sys\n"
        "from humanevalfix.sandbox.executor import Limits, SubprocessExecutor\n"
        "r = SubprocessExecutor(Limits(timeout_s=20.0)).run(sys.argv[1], 'assert leaked() is False\\n')\n"
        "print(r.status, r.message)\n"
    )
    env = {k: v for k, v in os.environ.items() if "KEY" not in k and "TOKEN" not in k}
    env["OPENAI_API_KEY"] = secret
    proc = subprocess.run(
        [sys.executable, "-c", parent, probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("passed"), proc.stdout


def test_removing_a_run_dir_leaves_its_parents_mode_alone(tmp_path: Path) -> None:
    """A candidate that makes its work dir unreadable must not get the harness to chmod the
    directory above it (on the host that is /tmp: 1777 turned 0700 broke apt for other users)."""
    import stat

    from humanevalfix.sandbox.executor import remove_tree

    parent = tmp_path / "shared-tmp"
    parent.mkdir()
    parent.chmod(0o1777)
    run_dir = parent / "hefix-run"
    (run_dir / "work" / "deep").mkdir(parents=True)
    (run_dir / "work" / "deep" / "f.txt").write_text("x")
    (run_dir / "work" / "deep").chmod(0)
    run_dir.chmod(0)
    remove_tree(str(run_dir))
    assert not run_dir.exists()
    remove_tree(str(run_dir))  # already gone (a server that cleaned up first): the error handler runs
    assert stat.S_IMODE(parent.stat().st_mode) == 0o1777
