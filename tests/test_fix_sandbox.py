"""`fix` jails candidates by default: under `--sandbox auto` they run in bwrap, the user's project
visible read-only at its own path, so a candidate can import the user's package and run their
conftest.py but cannot write into their tree or home, not even through a subprocess.

End to end: the real CLI in a child process, real HTTP to the scripted server, real bwrap. These
tests need bubblewrap (CI installs it) and fail, never skip, where it does not work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from humanevalfix.errors import UserError
from humanevalfix.fixer.command import fix_executor
from humanevalfix.fixer.userfile import load_user_file
from humanevalfix.fixer.usertests import load_tests, project_root, read_only_paths
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.jail import JAIL_WORK, Jail, bind_problem, bwrap_argv, probe
from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

from .conftest import KEYS_ENV, clean_env, run_cli

KEY = "sk-test-fix-sandbox-0000"


@pytest.fixture(scope="module", autouse=True)
def bwrap_works() -> None:
    """Where bwrap cannot run, `fix` falls back (with a warning): what these tests check would not hold."""
    problem = probe("bwrap")
    if problem is not None:
        pytest.fail(f"fix's default sandbox needs bwrap, and {problem} (install the `bubblewrap` package; CI does)")


def model_args(server: ScriptedServer) -> list[str]:
    return [
        "--base-url",
        server.base_url,
        "--model",
        "scripted-model",
        "--api-key-env",
        KEYS_ENV,
        "--retries",
        "2",
        "--request-timeout",
        "20",
        "--timeout",
        "30",
    ]


def fix_cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["fix", *args], cwd=cwd, env=clean_env(**{KEYS_ENV: KEY}, **env), timeout=180)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (git's own files left out)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def git_init(root: Path) -> bool:
    """Make `root` a git work tree where git is installed (then it is the project root)."""
    if shutil.which("git") is None:
        return False
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return True


def sandbox_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("sandbox: ")]
    assert len(lines) == 1, stderr
    return lines[0]


# --- a candidate that attacks the user's files ------------------------------------------------

STATS = "def mean(values):\n    return sum(values) / (len(values) + 1)\n"
STATS_TESTS = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"


def attacking_candidate(files: list[Path], appended: Path, shell: list[Path]) -> str:
    """A correct `mean` that first tries to write `files` (making their folders), append to
    `appended`, and write `shell` through /bin/sh; every failure is swallowed, so only the
    sandbox can stop it."""
    return (
        "def mean(values):\n"
        "    import os, subprocess\n"
        f"    for target in {[str(f) for f in files]!r}:\n"
        "        try:\n"
        "            os.makedirs(os.path.dirname(target), exist_ok=True)\n"
        "            with open(target, 'w') as fh:\n"
        "                fh.write('pwned')\n"
        "        except OSError:\n"
        "            pass\n"
        "    try:\n"
        f"        with open({str(appended)!r}, 'a') as fh:\n"
        "            fh.write('pwned')\n"
        "    except OSError:\n"
        "        pass\n"
        f"    for target in {[str(f) for f in shell]!r}:\n"
        "        subprocess.run(['/bin/sh', '-c', 'echo pwned > ' + target], capture_output=True, timeout=10)\n"
        "    return sum(values) / len(values)\n"
    )


@pytest.fixture
def attacked(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "stats.py").write_text(STATS, encoding="utf-8")
    (project / "tests" / "test_stats.py").write_text(STATS_TESTS, encoding="utf-8")
    (project / "notes.txt").write_text("the user's notes\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# the user's shell\n", encoding="utf-8")
    git_init(project)
    return {"project": project, "home": home, "tmp": tmp_path}


def attack(paths: dict[str, Path]) -> tuple[str, list[Path]]:
    project, home, tmp = paths["project"], paths["home"], paths["tmp"]
    files = [
        project / "pwned.txt",
        project / "src" / "pwned.txt",
        project / "new" / "pwned.txt",
        home / "pwned.txt",
        home / ".config" / "pwned.txt",
        tmp / "pwned-beside.txt",
    ]
    shell = [project / "pwned-sh.txt", home / "pwned-sh.txt"]
    return attacking_candidate(files, home / ".bashrc", shell), files + shell


def run_attack(paths: dict[str, Path], *sandbox: str) -> subprocess.CompletedProcess[str]:
    code, _targets = attack(paths)
    with ScriptedServer([tool_call(code)]) as server:
        return fix_cli(
            ["src/stats.py", "--tests", "tests/test_stats.py", *sandbox, *model_args(server)],
            paths["project"],
            HOME=str(paths["home"]),
        )


@pytest.mark.parametrize("sandbox", [[], ["--sandbox", "docker"]], ids=["auto", "docker"])
def test_by_default_a_candidate_cannot_write_into_the_project_or_home(
    attacked: dict[str, Path], sandbox: list[str]
) -> None:
    project, home = attacked["project"], attacked["home"]
    before_project, before_home = tree(project), tree(home)
    _code, targets = attack(attacked)
    proc = run_attack(attacked, *sandbox)
    # Not a crash of the tool: the candidate is correct, its writes failed, the fix is found.
    assert proc.returncode == 0, proc.stderr
    assert "+    return sum(values) / len(values)" in proc.stdout
    line = sandbox_line(proc.stderr)
    jail = sandbox[-1] if sandbox else "bwrap"
    assert line.startswith(f"sandbox: {jail} ") and f"read-only at the same path: {project}" in line, line
    assert "warning" not in proc.stderr
    assert [t for t in targets if t.exists()] == []
    assert tree(project) == before_project  # nothing new, nothing changed (notes.txt, the module)
    assert tree(home) == before_home  # .bashrc not appended to


def test_without_the_jail_the_same_candidate_writes_there(attacked: dict[str, Path]) -> None:
    """The check above can fail: under `--sandbox process` (the host's file system, as documented)
    the same candidate writes every one of those files."""
    _code, targets = attack(attacked)
    proc = run_attack(attacked, "--sandbox", "process")
    assert proc.returncode == 0, proc.stderr
    assert sandbox_line(proc.stderr).startswith("sandbox: rlimits only")
    assert [t for t in targets if not t.exists()] == []
    assert (attacked["home"] / ".bashrc").read_text(encoding="utf-8").endswith("pwned")


# --- a package: sibling imports, conftest.py fixtures and their data files ---------------------

CORE = "from pkg.util import helper\n\n\ndef double_all(values):\n    return [helper(v) for v in values][1:]\n"
CORE_FIX = "def double_all(values):\n    return [helper(v) for v in values]\n"
CONFTEST = (
    "import json\nfrom pathlib import Path\n\nimport pytest\n\n\n"
    "@pytest.fixture\ndef expected():\n    return json.loads(Path(__file__).with_name('expected.json').read_text())\n"
)
TEST_CORE = (
    "from pkg.core import double_all\n\n\n"
    "def test_double_all(expected):\n    assert double_all(expected['input']) == expected['output']\n"
)


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "util.py").write_text("def helper(x):\n    return 2 * x\n", encoding="utf-8")
    (root / "pkg" / "core.py").write_text(CORE, encoding="utf-8")
    (root / "tests" / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "tests" / "expected.json").write_text('{"input": [1, 2, 3], "output": [2, 4, 6]}\n', encoding="utf-8")
    (root / "tests" / "test_core.py").write_text(TEST_CORE, encoding="utf-8")
    git_init(root)
    return root


@pytest.mark.parametrize(
    "sandbox", [[], ["--sandbox", "bwrap"], ["--sandbox", "docker"]], ids=["auto", "bwrap", "docker"]
)
def test_a_package_with_conftest_fixtures_is_fixed_inside_the_jail(package: Path, sandbox: list[str]) -> None:
    before = tree(package)
    wrong = "def double_all(values):\n    return [helper(v) for v in values][:-1]\n"
    with ScriptedServer([tool_call(wrong), tool_call(CORE_FIX)]) as server:
        proc = fix_cli(["pkg/core.py", "--tests", "tests/test_core.py", *sandbox, *model_args(server)], package)
        requests = server.chat_requests()
    assert proc.returncode == 0, proc.stderr
    line = sandbox_line(proc.stderr)
    jail = "docker container" if "docker" in sandbox else "bwrap"
    assert line.startswith(f"sandbox: {jail} (") and f"read-only at the same path: {package})" in line, line
    # The tests ran on the original and on the wrong candidate: the fixture's data was read and
    # the failure, with both values, went back to the model.
    assert "before the fix: failed (1 failed)" in proc.stderr
    feedback = requests[1].body["messages"][-1]["content"]
    assert "[2, 4, 6]" in feedback and "[2, 4]" in feedback, feedback  # expected (from expected.json) and got
    assert proc.stdout.endswith(
        "-    return [helper(v) for v in values][1:]\n+    return [helper(v) for v in values]\n"
    )
    assert tree(package) == before  # no __pycache__, no .pytest_cache, nothing written


def test_when_bwrap_is_missing_auto_refuses_and_unshare_is_an_explicit_choice(package: Path, tmp_path: Path) -> None:
    """PATH without bwrap (a machine without bubblewrap): `auto` refuses with eval's one line (one
    choice, sandbox.factory), nothing changed; `--sandbox unshare` runs, saying its exposure."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("unshare", "git"):
        found = shutil.which(tool)
        assert found is not None, f"{tool} is needed by this test"
        (bin_dir / tool).symlink_to(found)
    before = tree(package)
    with ScriptedServer([tool_call(CORE_FIX)]) as server:
        refused = fix_cli(
            ["pkg/core.py", "--tests", "tests/test_core.py", *model_args(server)], package, PATH=str(bin_dir)
        )
        assert not server.chat_requests()
    assert refused.returncode == 2, refused.stderr
    assert "--sandbox auto: no sandbox level with file-system isolation works here" in refused.stderr
    assert tree(package) == before
    with ScriptedServer([tool_call(CORE_FIX)]) as server:
        proc = fix_cli(
            ["pkg/core.py", "--tests", "tests/test_core.py", "--sandbox", "unshare", *model_args(server)],
            package,
            PATH=str(bin_dir),
        )
    assert proc.returncode == 0, proc.stderr
    assert sandbox_line(proc.stderr).startswith("sandbox: unshare (")
    assert "warning: --sandbox unshare: candidates see the host's file system" in proc.stderr


# --- what is shown, and how the jail mounts it ---------------------------------------------


def test_the_project_root_is_the_git_top_level_else_the_import_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "lib" / "pkg").mkdir(parents=True)
    (repo / "lib" / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "lib" / "pkg" / "mod.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "test_mod.py").write_text(
        "from pkg.mod import f\n\n\ndef test_f():\n    assert f() == 2\n", encoding="utf-8"
    )
    user_file = load_user_file(str(repo / "lib" / "pkg" / "mod.py"))
    tests = load_tests(str(elsewhere / "test_mod.py"))
    # Not a work tree (tmp_path is outside any): the folder the module is imported from.
    assert sorted(read_only_paths(user_file, tests)) == [elsewhere.resolve(), (repo / "lib").resolve()]
    if git_init(repo):
        assert project_root(repo / "lib" / "pkg") == repo.resolve()
        assert sorted(read_only_paths(user_file, tests)) == [
            elsewhere.resolve(),
            repo.resolve(),
        ]  # lib/ is inside repo/
    else:
        assert project_root(repo / "lib" / "pkg") is None


def test_mounts_come_after_the_mounts_above_them() -> None:
    """bwrap mounts in order: /tmp's tmpfs must not hide an interpreter or a project under /tmp,
    and a project must not hide a virtual environment inside it."""
    jail = Jail(
        "bwrap", python_roots=("/tmp/venvs/py", "/opt/proj/.venv"), ro_binds=(Path("/opt/proj"), Path("/tmp/a/proj"))
    )
    argv = bwrap_argv(jail, as_pid_1=True)
    where: dict[str, int] = {}  # mount point -> position in the command line
    for i, arg in enumerate(argv):
        if arg == "--ro-bind":
            where[argv[i + 2]] = i
        elif arg in ("--tmpfs", "--proc", "--dev"):
            where[argv[i + 1]] = i
    assert where["/tmp"] < where["/tmp/venvs/py"] and where["/tmp"] < where["/tmp/a/proj"]
    assert where["/opt/proj"] < where["/opt/proj/.venv"]
    assert where["/usr"] < where["/tmp/a/proj"] and where[JAIL_WORK] < where["/tmp/a/proj"]
    assert argv[-2:] == ["--chdir", JAIL_WORK]
    assert "/tmp/a/proj" in jail.description and "/opt/proj" in jail.description


@pytest.mark.parametrize("path", ["/", "/proc", "/dev/shm", "/hefix", JAIL_WORK, "relative/dir", "/a/../b"])
def test_binds_that_would_hide_or_break_the_jail_are_refused(path: str) -> None:
    assert bind_problem(Path(path)) is not None
    with pytest.raises(ValueError, match="cannot bind"):
        Jail("bwrap", ro_binds=(Path(path),))


def test_fix_executor_refuses_restricted_and_jails_auto(tmp_path: Path) -> None:
    notes: list[str] = []
    executor = fix_executor("auto", Limits(timeout_s=10), (tmp_path,), notes.append)
    try:
        assert executor.name == "bwrap" and notes == []
        assert str(tmp_path) in executor.isolation
    finally:
        executor.close()
    with pytest.raises(UserError, match="RestrictedPython does not allow"):
        fix_executor("restricted", Limits(), (tmp_path,))
    assert os.listdir(tmp_path) == []
