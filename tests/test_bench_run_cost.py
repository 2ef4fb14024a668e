"""bench/run_cost.py on a few runs: it runs, finds the fork server's long-lived processes, and its
per-process figures add up to the machine's (the figures themselves are measured by running it)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import run_cost  # noqa: E402


@pytest.mark.e2e
def test_it_prints_the_machine_per_run_and_each_process_share(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cost.main(["--runs", "5"]) == 0
    out = capsys.readouterr().out
    whole = re.search(r"per run: ([\d.]+) ms wall, ([\d.]+) ms of CPU time, (\d+) page faults", out)
    assert whole, out
    rows = re.findall(r"^  (.+?)\s+(-?[\d.]+) ms CPU\s+(-?\d+) faults$", out, re.MULTILINE)
    labels = [label for label, _, _ in rows]
    assert labels[0] == "harness (this process)" and labels[-1] == "each run's own processes and the rest"
    # A fork server: its server and its zygote outlive the runs and are told apart.
    assert any(label.startswith("server (pid ") for label in labels) and any(
        label.startswith("zygote (pid ") for label in labels
    )
    # The rest is what the machine did less the named processes: the rows add up to the whole.
    assert sum(float(cpu) for _, cpu, _ in rows) == pytest.approx(float(whole.group(2)), abs=0.05)
    assert sum(int(faults) for _, _, faults in rows) == pytest.approx(int(whole.group(3)), abs=len(rows))
    # Each run forks its judge and its candidate: they fault, whatever else the machine does.
    assert int(rows[-1][2]) > 0


@pytest.mark.e2e
def test_a_run_of_many_calls_makes_them_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cost.test_of(1) == "assert f() is None\n"
    namespace = {"calls": 0}
    exec("def f():\n    global calls\n    calls += 1\n", namespace)
    exec(run_cost.test_of(7), namespace)
    assert namespace["calls"] == 7
    assert run_cost.main(["--runs", "2", "--calls", "50"]) == 0
    assert "2 trivial runs of 50 calls each" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--runs", "0"], ["--calls", "0"]])
def test_runs_and_calls_must_be_positive(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_cost.main(argv)
    assert exit_info.value.code == 2
    assert "--runs and --calls must be at least 1" in capsys.readouterr().err


def test_the_server_and_the_zygote_are_told_apart_by_parent_not_by_pid_order() -> None:
    serve = "/usr/bin/python3 -I -B /hefix/runner.py --serve 4 /hefix-work"
    kept = {300: (32000, serve), 32000: (31999, serve), 31999: (1, "bwrap --unshare-all ... runner.py --serve")}
    usage = {pid: run_cost.Usage(0.0, 0) for pid in kept}
    labels = [label for label, _ in run_cost.shares(run_cost.Usage(0.0, 0), run_cost.Usage(0.0, 0), kept, usage, usage)]
    assert labels == [
        "harness (this process)",
        "zygote (pid 300)",
        "bwrap (pid 31999)",
        "server (pid 32000)",
        "each run's own processes and the rest",
    ]
