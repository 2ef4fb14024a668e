"""`--sandbox auto` never drops below file-system isolation: without bubblewrap it refuses with one
line; a weaker level chosen explicitly says its exposure when the run starts; and the process limit
in force is part of the recorded isolation.

End to end: the real CLI in a child process, on the oracle model (no server needed). "No bwrap"
is made real by a PATH that holds only `unshare`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .conftest import clean_env, results_of, run_cli


def oracle_run(tmp_path: Path, dataset_path: Path, sandbox: str = "auto", **env: str) -> tuple[str, dict]:
    out = tmp_path / "run.json"
    args = [
        "--model",
        "oracle:canonical",
        "--dataset-path",
        str(dataset_path),
        "--tasks",
        "Python/0",
        "--out",
        str(out),
        "--sandbox",
        sandbox,
    ]
    proc = run_cli(args, cwd=tmp_path, env=clean_env(**env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr, results_of(out)["config"]


def test_auto_without_bwrap_fails_closed_with_one_line_before_any_model_call(
    tmp_path: Path, dataset_path: Path
) -> None:
    """The README's first command on a machine without bubblewrap: exit 2 and one line naming the
    ways on, before the embedded model (or any other) is asked anything; nothing is written."""
    path = tmp_path / "bin"
    path.mkdir()
    unshare = shutil.which("unshare")
    if unshare:
        (path / "unshare").symlink_to(unshare)
    out = tmp_path / "run.json"
    args = ["--limit", "1", "--dataset-path", str(dataset_path), "--out", str(out)]
    proc = run_cli(args, cwd=tmp_path, env=clean_env(PATH=str(path)))
    assert proc.returncode == 2, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert line.startswith("error: --sandbox auto: no sandbox level with file-system isolation works here (bwrap")
    assert "apt-get install bubblewrap" in line and "--sandbox docker" in line and "--sandbox unshare" in line
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


def test_an_explicit_weaker_level_says_its_exposure_when_the_run_starts(tmp_path: Path, dataset_path: Path) -> None:
    stderr, config = oracle_run(tmp_path, dataset_path, sandbox="unshare")
    lines = stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("warning: --sandbox unshare: candidates see"))
    summary = next(i for i, line in enumerate(lines) if "HumanEvalFix results" in line)
    assert first < summary and config["executor"] == "unshare" and config["isolation_warning"] is None, stderr


def test_with_bwrap_there_is_no_warning_and_the_process_limit_is_recorded(tmp_path: Path, dataset_path: Path) -> None:
    stderr, config = oracle_run(tmp_path, dataset_path)
    assert config["executor"] == "bwrap" and config["isolation_warning"] is None, config
    assert "no file-system isolation" not in stderr and "isolation warning" not in stderr
    # Where a cgroup is writable, its limits; where none is, why, and what bounds the processes instead.
    assert "process limit: cgroup v" in config["isolation"] or "(no writable cgroup: " in config["isolation"]
