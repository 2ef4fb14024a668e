"""Shared fixtures and helpers: the dataset path, a tiny task file, run configs aimed at the scripted server.

Tests use the HumanEvalFix copy bundled with the package, or the file HUMANEVALFIX_DATASET names
when it is set. No test touches the network: HF_HUB_OFFLINE is set for the whole session (and the
child processes it starts), so the default dataset source never probes the Hub; the probe itself
is tested against loopback servers.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.config import RunConfig
from humanevalfix.evaluation.dataset import DATASET_ENV, OFFLINE_ENVS, Task, bundled_path, load_file
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.models.presets import Preset
from humanevalfix.sandbox.executor import ExecResult, Limits, SubprocessExecutor
from humanevalfix.testing.scripted_server import Recorded, ScriptedServer

os.environ.update({name: "1" for name in OFFLINE_ENVS})
import atexit
import shutil
import tempfile


def _session_dir(variable: str, prefix: str) -> None:
    """A folder of this session's for `variable`, removed when the session ends (left behind, one
    per session they filled /tmp, which a conformance test walks)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    os.environ[variable] = folder
    owner = os.getpid()  # not a forked child's exit
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))


# The per-user .env (~/.config/humanevalfix/.env) of whoever runs the tests must not reach them:
# the user config folder is an empty one of the session's (tests that need that file make it).
_session_dir("XDG_CONFIG_HOME", "humanevalfix-tests-config-")
# The pass@1+ canonical answers kept by runs (evaluation/pluscases.py) and the tests the harness
# compiles for the judges (sandbox/testcode.py): the session's own folders, not the user's cache.
_session_dir("HUMANEVALFIX_PLUS_CACHE", "humanevalfix-tests-plus-cases-")
_session_dir("HUMANEVALFIX_TEST_CACHE", "humanevalfix-tests-compiled-")

REPO_ROOT = Path(__file__).resolve().parent.parent
CLI = REPO_ROOT / "eval_humanevalfix.py"
# Child processes (`python -m humanevalfix`, bench scripts) run this checkout's package too, not
# whichever copy an editable install last pointed at.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
# Short tests: small enough to keep each scripted run well under a second.
TINY_TASK_IDS = ("Python/0", "Python/2", "Python/3")
KEYS_ENV = "HEFIX_TEST_KEYS"  # the key variable the scripted presets read (never a real provider's)


# --- optional extras: skipped on a machine that followed the README's set-up, never under CI ---

# What each extra needs and the one command that provides it (the skip reason names it).
EXTRAS = {
    "langgraph": "LangGraph is not installed: python -m pip install -r requirements-langgraph.txt",
    "docker": "no running Docker daemon: apt-get install docker.io and start dockerd (docs/sandbox.md#docker)",
    "browser": "no browser for the viewer's tests: apt-get install chromium; python -m pip install -r requirements.txt",
}
BROWSER = "/usr/bin/chromium"  # Debian's chromium, driven by Playwright (never `playwright install`)


def scripted_fix_args(server: ScriptedServer) -> list[str]:
    """`fix`'s model options for the scripted server (text protocol): one retry, 20 s a request,
    60 s a test run. The in-process fix tests share them."""
    return [
        "--text-tools",
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
    ]


def in_ci() -> bool:
    """CI (.ci/run) installs every extra and fails on any skip, so there nothing is skipped."""
    return os.environ.get("CI", "").lower() in ("true", "1")


def extra_missing(extra: str) -> bool:
    if extra == "langgraph":
        import importlib.util

        return importlib.util.find_spec("langgraph") is None
    if extra == "browser":
        import importlib.util

        return importlib.util.find_spec("playwright") is None or not os.access(BROWSER, os.X_OK)
    if extra == "docker":
        import shutil

        if shutil.which("docker") is None:
            return True
        probe = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=30
        )
        return probe.returncode != 0 or not probe.stdout.strip()
    raise ValueError(f"unknown extra {extra!r}")


def extras_of(item: pytest.Item) -> set[str]:
    """The extras a test needs: its `needs` markers, and Docker for the docker cases of the
    tests parametrised over sandboxes (a `sandbox`, `kind`, `variant` or `ex` of "docker",
    "docker-fork" or ["--sandbox", "docker"])."""
    extras = {arg for mark in item.iter_markers("needs") for arg in mark.args}
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name, value in params.items():
        if name not in ("sandbox", "kind", "variant", "ex"):
            continue
        if value in ("docker", "docker-fork") or (isinstance(value, list) and "docker" in value):
            extras.add("docker")
    return extras


# --- test tiers: declared here, and only here ---------------------------------------------------

# `python -m pytest` runs the unit tier; `--all` every tier; `--tier NAME` (repeatable) the ones named.
TIERS = {
    "unit": "in-process: no CLI child, no jail, no model, no server (the default)",
    "e2e": "the CLI as a user runs it, the scripted loopback server, one jail level, fix on a small project",
    "slow": "164-task runs, the conformance suite on every level, the embedded model, Docker",
}
DEFAULT_TIERS = ("unit",)
# Whole files by tier. A test elsewhere joins a tier with @pytest.mark.e2e or @pytest.mark.slow; any
# other test is a unit test, and the unit tier is checked, not trusted (pytest_runtest_protocol below).
FILE_TIERS: dict[str, str] = {
    "test_agent.py": "e2e",
    "test_bench_executor.py": "e2e",
    "test_bench_fix_helpers.py": "e2e",
    "test_bounds.py": "e2e",
    "test_client_faults.py": "e2e",
    "test_fix_sandbox.py": "e2e",
    "test_fix_session.py": "e2e",
    "test_isolation_record.py": "e2e",
    "test_plugin.py": "e2e",
    "test_run_faults.py": "e2e",
    "test_run_lock.py": "e2e",
    "test_served_model.py": "e2e",
    "test_bench_batch_exactness.py": "slow",
    "test_judge_probes.py": "slow",
    "test_local_model.py": "slow",
    "test_oracle_full.py": "slow",
    "test_sandbox_conformance.py": "slow",
    "test_served_real.py": "slow",
}
_TIER = pytest.StashKey[str]()
_LEFT_OUT = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tiers", "test tiers (tests/conftest.py)")
    group.addoption("--all", action="store_true", help="run every tier: " + ", ".join(TIERS))
    group.addoption(
        "--tier",
        action="append",
        choices=list(TIERS),
        default=None,
        help="run this tier (repeatable; default: unit). " + "; ".join(f"{k}: {v}" for k, v in TIERS.items()),
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, what in TIERS.items():
        config.addinivalue_line("markers", f"{name}: the {name} tier, {what}")
    # matplotlib builds its font cache on its first import in a fresh environment, asking fontconfig
    # (`fc-list`, a process): done here, before any test, not inside the first unit test that draws.
    import matplotlib.font_manager  # noqa: F401


def selected_tiers(config: pytest.Config) -> tuple[str, ...]:
    if config.getoption("--all"):
        return tuple(TIERS)
    return tuple(config.getoption("--tier") or DEFAULT_TIERS)


def tier_of(item: pytest.Item) -> str:
    """slow (Docker included) over e2e over the file's tier over unit."""
    if item.get_closest_marker("slow") is not None or "docker" in extras_of(item):
        return "slow"
    if item.get_closest_marker("e2e") is not None:
        return "e2e"
    return FILE_TIERS.get(item.path.name, "unit")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = selected_tiers(config)
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        tier = item.stash[_TIER] = tier_of(item)
        item.add_marker(tier)
        (kept if tier in wanted else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
        config.stash[_LEFT_OUT] = sorted({item.stash[_TIER] for item in left})
    _skip_missing_extras(items)


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    """Says which tiers were left out, so that a file of e2e tests run alone does not look empty."""
    left = config.stash.get(_LEFT_OUT, [])
    if not left:
        return None
    return f"tiers run: {', '.join(selected_tiers(config))}; left out: {', '.join(left)} (--all runs every tier)"


def _skip_missing_extras(items: list[pytest.Item]) -> None:
    if in_ci():
        return
    missing: dict[str, bool] = {}
    for item in items:
        for extra in sorted(extras_of(item)):
            if extra not in missing:  # probe each extra once per session
                missing[extra] = extra_missing(extra)
            if missing[extra]:
                item.add_marker(pytest.mark.skip(reason=EXTRAS[extra]))
                break


class TierViolation(AssertionError):
    """A unit test reached for a process or a server: it belongs in the e2e or slow tier."""


def _refuse(what: str, tried: list[str]) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        tried.append(what)
        raise TierViolation(f"a unit test may not {what}: mark it e2e or slow (tests/conftest.py, TIERS)")

    return refuse


_TRIED = pytest.StashKey[list[str]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """What keeps the unit tier fast and honest: from a unit test's set-up (module fixtures
    included) to its teardown, starting a process (the CLI, a jail, a judge, the model) or listening
    on a socket (a server) fails at once, naming the rule."""
    if item.stash.get(_TIER, "unit") != "unit" and not os.environ.get("HEFIX_TIER_PROBE"):
        return (yield)
    tried = item.stash.setdefault(_TRIED, [])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", _refuse("start a process", tried))
        patch.setattr(os, "fork", _refuse("fork", tried))
        patch.setattr(os, "posix_spawn", _refuse("spawn a process", tried))
        patch.setattr(socket.socket, "listen", _refuse("listen on a socket", tried))
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A unit test whose code under test caught the refusal (a probe that falls back, an error
    turned into a verdict) passed without testing what it meant to: it fails all the same."""
    report = yield
    tried = item.stash.get(_TRIED, [])
    if tried and report.passed and report.when in ("setup", "call"):
        report.outcome = "failed"
        report.longrepr = f"TierViolation: the code under test tried to {tried[0]} (and caught the refusal)"
    return report


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """Two connected Unix stream sockets (no listening socket: the unit tier may use them), closed after."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield a, b
    a.close()
    b.close()


def task_record(task_id: str, **fields: Any) -> TaskRecord:
    """A TaskRecord with nothing in it but `fields`: for tests of what reads records."""
    base: dict[str, Any] = dict(
        entry_point="f",
        bug_type="",
        failure_symptoms="",
        iterations=0,
        executions=0,
        stop_reason="budget",
        tool_mode="text",
        first_code=None,
        final_code=None,
        score_message="",
        tokens_in=0,
        tokens_out=0,
        model_latency_s=0.0,
        wall_s=0.0,
    )
    return TaskRecord(task_id=task_id, **{**base, **fields})


@pytest.fixture(scope="session")
def dataset_path() -> Path:
    """HUMANEVALFIX_DATASET when set, else the bundled copy."""
    value = os.environ.get(DATASET_ENV)
    if not value:
        return bundled_path()
    path = Path(value).resolve()  # it may be relative to the repo root; CLI tests run elsewhere
    if not path.is_file():
        pytest.fail(f"{DATASET_ENV}={value} is not a file")
    return path


@pytest.fixture(scope="session")
def dataset_rows(dataset_path: Path) -> list[dict[str, Any]]:
    with dataset_path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="session")
def all_tasks(dataset_path: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_file(dataset_path).tasks}


@pytest.fixture
def tiny_dataset(tmp_path: Path, dataset_rows: list[dict[str, Any]]) -> Path:
    """A 3-task .jsonl made of rows of the dataset file (as they are, all fields)."""
    rows = {r["task_id"]: r for r in dataset_rows}
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(rows[tid]) + "\n" for tid in TINY_TASK_IDS), encoding="utf-8")
    return path


@pytest.fixture
def tiny_tasks(all_tasks: dict[str, Task]) -> dict[str, Task]:
    """The tiny dataset's tasks by entry point (what the scripted server sees in prompts)."""
    return {all_tasks[tid].entry_point: all_tasks[tid] for tid in TINY_TASK_IDS}


class CountingExecutor:
    """The real subprocess executor, counting how often candidates are executed."""

    name = "process"
    isolation = "rlimits"

    def __init__(self) -> None:
        self.inner = SubprocessExecutor(Limits(timeout_s=20.0))
        self.runs: list[str] = []

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        self.runs.append(code)
        return self.inner.run(code, test, support)

    def close(self) -> None:
        self.inner.close()


def scripted_preset(base_url: str, temperatures: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7)) -> Preset:
    return Preset(
        name="scripted",
        provider="compatible",
        model="scripted-model",
        base_url=base_url,
        key_env=KEYS_ENV,
        temperatures=temperatures,
        max_tokens=256,
        native_tools=True,
    )


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., RunConfig]:
    """A RunConfig for the scripted server: fast retries, results under tmp_path."""

    def build(
        server: ScriptedServer, dataset: Path, temperatures: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7), **overrides: Any
    ) -> RunConfig:
        base: dict[str, Any] = dict(
            preset=scripted_preset(server.base_url, temperatures),
            dataset_path=dataset,
            max_iters=3,
            workers=1,
            sandbox="process",
            timeout_s=20.0,  # generous: on a busy machine a slow start must not read as a timeout
            out=tmp_path / "run" / "results.json",
            retry_attempts=3,
            retry_initial_s=0.01,
            request_timeout_s=10.0,
        )
        base.update(overrides)
        return RunConfig(**base)

    return build


# --- reading scripted requests -------------------------------------------------------------

PROMPT_ENTRY_RE = re.compile(r"Fix the bug in `(\w+)`")


def entry_point_of(rec: Recorded) -> str:
    """Which task a request is about, from the task prompt (the first user message)."""
    for message in rec.body.get("messages", []):
        if message.get("role") == "user":
            match = PROMPT_ENTRY_RE.search(message.get("content") or "")
            if match:
                return match.group(1)
    raise AssertionError(f"no task prompt in request: {rec.body}")


def turn_of(rec: Recorded) -> int:
    """0 for the first model call of a task, 1 for the second, ..."""
    return sum(1 for m in rec.body.get("messages", []) if m.get("role") == "assistant")


def last_message(rec: Recorded) -> dict[str, Any]:
    return rec.body["messages"][-1]


def requests_for(server: ScriptedServer, entry_point: str) -> list[Recorded]:
    return [r for r in server.chat_requests() if entry_point_of(r) == entry_point]


def run_cli(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """The real command line in a child process, run from `cwd` (so no stray .env is read)."""
    return subprocess.run(
        [sys.executable, str(CLI), *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def clean_env(**extra: str) -> dict[str, str]:
    """The parent's environment without any API key variable (nor OPENAI_BASE_URL), plus `extra`."""
    drop = {"OPENAI_API_KEY", "OPENAI_BASE_URL", "TOGETHER_API_KEY", "HF_TOKEN", "LOCAL_API_KEY", KEYS_ENV}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if env.get(DATASET_ENV):
        env[DATASET_ENV] = str(Path(env[DATASET_ENV]).resolve())
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def results_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def stream_records(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [entry["record"] for entry in lines if entry.get("type") == "task"]


@pytest.fixture(autouse=True)
def _no_sdk_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL in the developer's shell would be taken as --base-url (cli._options)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(autouse=True)
def _no_registered_keys_after_a_test() -> Any:
    """Keys are registered for redaction process-wide (as in a real run): one test's keys must not
    redact the next test's text."""
    from humanevalfix import redaction

    yield
    redaction.forget_all()


@pytest.fixture(autouse=True)
def _host_tmp_keeps_its_mode() -> Any:
    """No test, candidate or clean-up may change the host's /tmp mode (1777): a harness that
    did turned it 0700, and other users' programs (apt) could no longer write there."""
    import stat

    before = stat.S_IMODE(os.stat("/tmp").st_mode)
    yield
    after = stat.S_IMODE(os.stat("/tmp").st_mode)
    if after != before:
        os.chmod("/tmp", before)
        pytest.fail(f"/tmp mode changed from {before:o} to {after:o} during this test")


def interrupt_when(
    proc: subprocess.Popen[str],
    ready: Callable[[], bool],
    sig: int,
    wait_s: float,
    reply_s: float,
    settle_s: float = 0.0,
) -> tuple[str, str, float]:
    """Send `sig` to `proc` once `ready()` (or after `wait_s`), `settle_s` later; (stdout, stderr,
    seconds from the signal to its exit). The process is killed if it outlives this."""
    try:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not ready():
            time.sleep(0.1)
        time.sleep(settle_s)
        started = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=reply_s)
        return stdout, stderr, time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
