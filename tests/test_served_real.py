"""`--base-url` at a real `humanevalfix serve`, with no other option, gives the embedded run's
verdicts: the run finds the served model, takes the embedded preset's sampling and text protocol,
and its greedy first attempts are the embedded run's, code and verdict. Needs llama-cpp-python
and the weights (the README's set-up); 2 min 13 s here, on 2 cores under a load of 7 (66 s of CPU)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from .test_local_model import KEY_VARS, TAG_VAR, tagged_pids, wait_gone

ROOT = Path(__file__).resolve().parents[1]
TASKS = "Python/0"  # one greedy attempt per run: the comparison, within about two minutes


def child_env(tag: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env[TAG_VAR] = tag
    env["PYTHONPATH"] = str(ROOT / "src")  # this checkout's code, whatever pip installed last
    return env


def eval_run(out: Path, tag: str, *args: str) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "humanevalfix",
            "--tasks",
            TASKS,
            "--max-iters",
            "0",
            "--sandbox",
            "process",
            "--out",
            str(out),
            *args,
        ],
        cwd=out.parent,
        env=child_env(tag),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    results["stderr"] = done.stderr
    return results


def test_base_url_at_serve_alone_gives_the_embedded_runs_verdicts(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    server = subprocess.Popen(
        [sys.executable, "-m", "humanevalfix", "serve"],
        cwd=tmp_path,
        env=child_env(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), server.stderr.read() if server.stderr else ""
        served = eval_run(tmp_path / "served.json", tag, "--base-url", base_url)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        finally:
            for pid in tagged_pids(tag):
                os.kill(pid, signal.SIGKILL)
    embedded = eval_run(tmp_path / "embedded.json", tag)
    assert wait_gone(tag) == []
    s, e = served["config"], embedded["config"]
    assert (s["provider"], e["provider"]) == ("compatible", "local")
    assert s["sampling"] == e["sampling"] and s["native_tools"] == e["native_tools"] is False
    assert s["preset"]["name"] == "local" and "the model of preset 'local'" in s["preset_reason"]
    assert "server: " in served["stderr"] and "the text protocol" in served["stderr"]
    verdicts = [
        [(t["task_id"], t["passed_first"], t["passed"], t["first_code"]) for t in r["tasks"]]
        for r in (served, embedded)
    ]
    assert verdicts[0] == verdicts[1]
