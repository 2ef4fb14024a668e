"""`--sandbox auto` never drops below file-system isolation silently: a warning line when the run
starts, `isolation_warning` in the results' config (with the reason) and a row in the summary;
and the process limit in force is part of the recorded isolation.

End to end: the real CLI in a child process, on the oracle model (no server needed). "No bwrap"
is made real by a PATH that holds only `unshare`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .conftest import clean_env, results_of, run_cli


def oracle_run(tmp_path: Path, dataset_path: Path, **env: str) -> tuple[str, dict]:
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
        "auto",
    ]
    proc = run_cli(args, cwd=tmp_path, env=clean_env(**env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr, results_of(out)["config"]


def test_auto_without_bwrap_warns_at_start_records_why_and_the_summary_shows_it(
    tmp_path: Path, dataset_path: Path
) -> None:
    path = tmp_path / "bin"
    path.mkdir()
    unshare = shutil.which("unshare")
    if unshare:
        (path / "unshare").symlink_to(unshare)
    stderr, config = oracle_run(tmp_path, dataset_path, PATH=str(path))
    warning = config["isolation_warning"]
    assert warning.startswith("no file-system isolation (bwrap is not installed): candidates run under")
    assert config["executor"] in ("unshare", "process") and config["executor"] in warning
    lines = stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if "no file-system isolation" in line)
    summary = next(i for i, line in enumerate(lines) if "HumanEvalFix results" in line)
    assert first < summary, stderr  # said when the run starts, not only at the end
    assert lines[first] == f"warning: --sandbox auto: {warning}"
    assert any("isolation warning" in line and "no file-system isolation" in line for line in lines[summary:]), stderr


def test_with_bwrap_there_is_no_warning_and_the_process_limit_is_recorded(tmp_path: Path, dataset_path: Path) -> None:
    stderr, config = oracle_run(tmp_path, dataset_path)
    assert config["executor"] == "bwrap" and config["isolation_warning"] is None, config
    assert "no file-system isolation" not in stderr and "isolation warning" not in stderr
    # Where a cgroup is writable, its limits; where none is, why, and what bounds the processes instead.
    assert "process limit: cgroup v" in config["isolation"] or "(no writable cgroup: " in config["isolation"]
