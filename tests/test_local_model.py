"""The embedded model for real: llama.cpp server start, readiness, shutdown on every path, and
two tasks end to end with no API key. Needs llama-cpp-python[server] and the weights packages.

Each test tags the processes it starts with a unique environment variable (the server inherits
it), so "no server left" is checked for this test's own processes only, whatever else runs here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from humanevalfix.errors import ConfigError
from humanevalfix.evaluation.dataset import file_sha256
from humanevalfix.models.embedded import ServerOptions, run_server

# A real model on CPU: minutes, not seconds. The slow tier (tests/conftest.py).

ROOT = Path(__file__).resolve().parents[1]
KEY_VARS = ("OPENAI_API_KEY", "TOGETHER_API_KEY", "HF_TOKEN", "LOCAL_API_KEY")
TAG_VAR = "HEFIX_TEST_TAG"


def tagged_pids(tag: str) -> list[int]:
    """Live processes whose environment carries this test's tag."""
    needle = f"{TAG_VAR}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_gone(tag: str, timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = tagged_pids(tag)
        if not left:
            return []
        time.sleep(0.2)
    return tagged_pids(tag)


def clean_env(tag: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env[TAG_VAR] = tag
    env["PYTHONPATH"] = str(ROOT)
    return env


HOLDER = """\
import sys, time
from humanevalfix.models.embedded import embedded_server
from humanevalfix.models.presets import load_presets
try:
    with embedded_server(load_presets()["local"], None) as served:
        print(served.pid, served.base_url, served.model, served.log_path, flush=True)
        if sys.argv[1] == "crash":
            raise RuntimeError("boom")
        time.sleep(600)
except (KeyboardInterrupt, RuntimeError) as exc:
    # Unwound but still alive: whatever stopped the server was the context manager, not our exit.
    print("unwound", type(exc).__name__, flush=True)
    time.sleep(600)
"""


def start_holder(tag: str, how: str = "wait") -> tuple[subprocess.Popen[str], int, str, Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, how],
        cwd=ROOT,
        env=clean_env(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        pytest.fail(f"the holder did not start the server: {proc.stderr.read() if proc.stderr else ''}")
    pid_text, base_url, model, log_path = line.split()
    assert model == "qwen2.5-coder-0.5b-instruct"
    if how == "wait":
        with urllib.request.urlopen(base_url + "/models", timeout=10) as response:
            ids = [m["id"] for m in json.loads(response.read())["data"]]
        assert ids == [model]
    return proc, int(pid_text), base_url, Path(log_path)


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "crash"])
def test_ctrl_c_sigterm_or_a_crash_stop_the_server_and_its_group(how: str) -> None:
    tag = uuid.uuid4().hex
    proc, server_pid, _, log_path = start_holder(tag, "crash" if how == "crash" else "wait")
    try:
        if how != "crash":
            assert server_pid in tagged_pids(tag)
            proc.send_signal(getattr(signal, how))
        assert proc.stdout is not None
        expected = "RuntimeError" if how == "crash" else "KeyboardInterrupt"
        assert proc.stdout.readline().split() == ["unwound", expected]
        assert proc.poll() is None  # the holder lives on, so its death did not do the stopping
        assert wait_gone_except(tag, proc.pid) == [], "the server outlived the context manager"
        assert not log_path.parent.exists(), "the context manager left the server's log folder"
    finally:
        proc.kill()
        proc.wait()
        for pid in tagged_pids(tag):
            os.kill(pid, signal.SIGKILL)


def test_the_server_dies_with_a_killed_parent() -> None:
    """SIGKILL runs no cleanup in the parent; the server's parent-death signal stops it, and it
    removes the temp folder of its log, which the parent would have removed."""
    tag = uuid.uuid4().hex
    proc, server_pid, _, log_path = start_holder(tag)
    try:
        assert server_pid in tagged_pids(tag)
        assert log_path.parent.name.startswith("hefix-llama-") and log_path.is_file()
        proc.kill()
        proc.wait(timeout=30)
        assert wait_gone(tag) == []
        assert not log_path.parent.exists(), "a killed run left its server's log folder in /tmp"
    finally:
        for pid in tagged_pids(tag):
            os.kill(pid, signal.SIGKILL)


def wait_gone_except(tag: str, keep: int, timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = [pid for pid in tagged_pids(tag) if pid != keep]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def test_a_server_that_dies_at_start_is_reported_with_its_log_and_reaped(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a GGUF file" * 100)
    with pytest.raises(ConfigError) as err:
        with run_server(bogus, "bogus", ServerOptions(start_timeout_s=120)):
            pytest.fail("a bogus model must not become ready")
    text = str(err.value)
    assert "exited (status" in text and "before it was ready" in text
    assert "not-a-model.gguf" in text  # the log tail: the server names the file it failed to load


def test_a_server_that_is_too_slow_to_start_is_stopped(tmp_path: Path) -> None:
    from humanevalfix.models.weights import locate

    tag = uuid.uuid4().hex
    os.environ[TAG_VAR] = tag  # inherited by the server started from this process
    try:
        with pytest.raises(ConfigError, match=r"did not answer .*/models within 0.2s"):
            with run_server(locate("qwen2.5-coder-0.5b"), "m", ServerOptions(start_timeout_s=0.2)):
                pytest.fail("cannot be ready in 0.2 s")
        assert wait_gone(tag, 5) == []
    finally:
        del os.environ[TAG_VAR]
        for pid in tagged_pids(tag):
            os.kill(pid, signal.SIGKILL)


def test_serve_prints_the_base_url_answers_and_stops_on_ctrl_c() -> None:
    tag = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-m", "humanevalfix", "serve"],
        cwd=ROOT,
        env=clean_env(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), base_url
        with urllib.request.urlopen(base_url + "/models", timeout=10) as response:
            assert json.loads(response.read())["data"][0]["id"] == "qwen2.5-coder-0.5b-instruct"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert wait_gone(tag) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in tagged_pids(tag):
            os.kill(pid, signal.SIGKILL)


def test_a_task_end_to_end_on_the_embedded_model_with_no_key(tmp_path: Path, dataset_path: Path) -> None:
    tag = uuid.uuid4().hex
    out = tmp_path / "local.json"
    # One task and one repair turn: the pipeline is the same for a second task, which doubled the
    # slowest test of the suite (6 min beside two other test workers) and proved nothing more.
    # No --dataset-path: the default source (offline in tests: the bundled copy, or HUMANEVALFIX_DATASET).
    done = subprocess.run(
        [sys.executable, "eval_humanevalfix.py", "--limit", "1", "--max-iters", "1", "--out", str(out)],
        cwd=ROOT,
        env=clean_env(tag),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert wait_gone(tag) == [], "a llama server outlived the run"
    results = json.loads(out.read_text())
    config = results["config"]
    assert config["dataset_sha256"] == file_sha256(dataset_path)
    assert config["provider"] == "local" and config["model"] == "qwen2.5-coder-0.5b-instruct"
    assert config["base_url"].startswith("http://127.0.0.1:")
    assert config["tool_mode"] == "text"
    records = results["tasks"]
    assert [r["task_id"] for r in records] == ["Python/0"]
    for record in records:
        assert record["error"] is None, record["error"]
        assert record["attempts"], record
        assert record["tokens_in"] > 0 and record["tokens_out"] > 0
    attempts = [a for r in records for a in r["attempts"]]
    parsed = [a for a in attempts if a["via"]]
    assert parsed, f"no attempt had a parsed tool call: {attempts}"
    # Each candidate is stored once: an attempt whose code is the first or final candidate names it.
    assert all(a["code"] or a.get("code_is") for a in parsed if a["outcome"] in ("passed", "failed", "timeout"))


def test_the_embedded_server_repeats_a_sampled_reply_for_its_seed_whatever_ran_before() -> None:
    """Why each request carries a seed: without one the server's draw depends on the requests it
    answered before, so one changed turn would change every later sampled turn of a run."""
    from humanevalfix.models.client import ChatRequest, OpenAIChatModel
    from humanevalfix.models.embedded import embedded_server
    from humanevalfix.models.keys import KeyPool
    from humanevalfix.models.presets import load_presets

    messages = [{"role": "user", "content": "Name a few fruits, in one line."}]
    with embedded_server(load_presets()["local"], None) as served:
        model = OpenAIChatModel(
            provider="compatible", model=served.model, base_url=served.base_url, keys=KeyPool(["none"])
        )

        def ask(seed: int | None) -> str:
            return model.chat(ChatRequest(messages, temperature=1.0, max_tokens=24, seed=seed)).content

        first = ask(11)
        ask(None), ask(12)  # other draws in between move the server's own random state
        assert ask(11) == first
        assert len({first, ask(12), ask(13), ask(14)}) > 1  # and the seed does choose the draw


@pytest.mark.parametrize("repack", [True, False])
def test_the_server_loads_repacked_weight_buffers_only_when_asked(repack: bool, tmp_path: Path) -> None:
    """ServerOptions.repack reaches llama.cpp (the server has no setting of its own for it)."""
    from humanevalfix.models.presets import load_presets
    from humanevalfix.models.weights import locate

    log = tmp_path / "server.log"
    weights = locate(load_presets()["local"].gguf or "")
    with run_server(weights, "m", ServerOptions(prompt_lookup=0, repack=repack), log_path=log) as (
        base_url,
        _proc,
        _log,
    ):
        with urllib.request.urlopen(base_url + "/models", timeout=10) as response:
            assert json.loads(response.read())["data"][0]["id"] == "m"
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "load_tensors:" in text  # the log shows the buffers at all
    assert ("CPU_REPACK model buffer" in text) == repack


def test_a_draft_model_drafts_tokens_the_server_checks_in_batches(tmp_path: Path) -> None:
    """ServerOptions.draft_gguf (models/drafting.py) for real: the 0.5B drafting for itself with
    prompt lookup off, so nearly every draft is kept and most tokens come from batched checks,
    not one-token steps (llama.cpp's `eval` runs)."""
    from humanevalfix.models.presets import load_presets
    from humanevalfix.models.weights import locate

    weights = locate(load_presets()["local"].gguf or "")
    log = tmp_path / "server.log"
    options = ServerOptions(prompt_lookup=0, draft_gguf=weights, draft_tokens=4)
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Write a Python function that adds two numbers."}],
        "max_tokens": 48,
        "temperature": 0.0,
    }
    with run_server(weights, "m", options, log_path=log) as (base_url, _proc, _log):
        request = urllib.request.Request(
            base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=300) as response:
            answer = json.loads(response.read())
    made = answer["usage"]["completion_tokens"]
    assert answer["choices"][0]["message"]["content"].strip() and made >= 16
    text = log.read_text(encoding="utf-8", errors="replace")
    assert f"draft model: {weights}, 4 tokens a step" in text
    steps = [int(n) for n in re.findall(r"llama_perf_context_print:\s+eval time =.*?/\s+(\d+) runs", text)]
    assert steps and steps[-1] < made / 2, (steps, made)


def test_a_reply_ends_at_the_close_of_its_first_code_block_when_asked(tmp_path: Path) -> None:
    """ServerOptions.stop_after_code (models/codestop.py) for real: asked for code and then an
    explanation, the reply stops at its first closing fence; without it, the model goes on."""
    from humanevalfix.models.presets import load_presets
    from humanevalfix.models.weights import locate

    weights = locate(load_presets()["local"].gguf or "")
    body = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": "Write a Python function add(a, b) in one ```python block. Then write a second "
                "```python block that calls it and prints the result.",
            }
        ],
        "max_tokens": 120,
        "temperature": 0.0,
    }
    replies = {}
    for stop in (False, True):
        options = ServerOptions(stop_after_code=stop)
        with run_server(weights, "m", options, log_path=tmp_path / f"server-{stop}.log") as (base_url, _proc, _log):
            request = urllib.request.Request(
                base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=300) as response:
                replies[stop] = json.loads(response.read())["choices"][0]["message"]["content"]
    assert "```python" in replies[True] and replies[True].rstrip().endswith("```"), replies[True]
    assert replies[True].count("```") == 2
    assert len(replies[False]) > len(replies[True]) and replies[False].startswith(replies[True].rstrip()), replies
