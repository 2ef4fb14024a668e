"""Run configuration in one place: the options of an eval run (the .env files: envfiles.py)."""

from __future__ import annotations

import os
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path

from humanevalfix import __version__
from humanevalfix.agent import DEFAULT_MAX_ITERS, DEFAULT_RUNTIME_VALUES, DEFAULT_SAMPLES
from humanevalfix.agent.engines import DEFAULT_ENGINE
from humanevalfix.agent.policies import DEFAULT_POLICY, POLICIES
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS
from humanevalfix.errors import ConfigError
from humanevalfix.models.client import (
    DEFAULT_MAX_REPLY_CHARS,
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_RETRY_ATTEMPTS,
    DEFAULT_RETRY_INITIAL_S,
)
from humanevalfix.models.embedded import DEFAULT_PROMPT_LOOKUP
from humanevalfix.models.presets import Preset
from humanevalfix.runspec import (
    AgentSpec,
    DatasetSpec,
    DockerSpec,
    EmbeddedServerSpec,
    HostSpec,
    ModelSpec,
    ProtocolSpec,
    RunSpec,
    SandboxSpec,
)
from humanevalfix.sandbox.docker import DockerSettings
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, SANDBOXES
from humanevalfix.sandbox.pool import DEFAULT_WORKERS
from humanevalfix.tasks.task import DEFAULT_MAX_FIELD

RESULTS_DIR = Path("results")


# What `--sandbox auto` means, when set (e.g. docker: auto never starts a container by itself).
SANDBOX_ENV = "HUMANEVALFIX_SANDBOX"
# The Docker executor's limits, as users of other harnesses set them; the --docker-* options win.
DOCKER_ENV = {
    "image": "SANDBOX_DOCKER_IMAGE",
    "cpus": "SANDBOX_DOCKER_CPUS",
    "memory": "SANDBOX_DOCKER_MEMORY",
    "pids": "SANDBOX_DOCKER_PIDS",
}
MIN_DOCKER_MEMORY = 64 << 20  # the server alone, with numpy imported, takes about 40 MiB
MIN_DOCKER_PIDS = 8  # the server, the waiting child, the candidate and a few of its own
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def sandbox_choice(kind: str, environ: dict[str, str] | None = None) -> str:
    """--sandbox as given, except that `auto` is what HUMANEVALFIX_SANDBOX names, when set."""
    env = os.environ if environ is None else environ
    chosen = env.get(SANDBOX_ENV, "").strip()
    if kind != "auto" or chosen in ("", "auto"):
        return kind
    if chosen not in SANDBOXES:
        raise ConfigError(f"{SANDBOX_ENV}={chosen}: not a sandbox (choose from {', '.join(SANDBOXES)})")
    return chosen


def parse_size(text: str, where: str) -> int:
    """Bytes from `512m`, `2g`, `1.5GiB` or a plain number of bytes (as docker takes them)."""
    match = SIZE_RE.match(text)
    if not match:
        raise ConfigError(f"{where}: expected a size such as 512m or 2g, got {text!r}")
    scale = 1 << (10 * "bkmgt".index(match.group(2).lower() or "b"))
    return int(float(match.group(1)) * scale)


def size_text(size: int) -> str:
    """A size as parse_size reads it, in the largest unit that holds it whole: 1m, 256k, 1g, 100."""
    for unit in "tgmk":
        scale = 1 << (10 * "bkmgt".index(unit))
        if size and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def docker_settings(
    image: str | None = None,
    cpus: float | None = None,
    memory: str | None = None,
    pids: int | None = None,
    environ: dict[str, str] | None = None,
) -> DockerSettings:
    """The Docker executor's settings: each option, else its SANDBOX_DOCKER_* variable, else the default."""
    env = os.environ if environ is None else environ
    default = DockerSettings()

    def pick(option: object, key: str, flag: str) -> tuple[str | None, str]:
        if option is not None:
            return str(option), flag
        value = env.get(DOCKER_ENV[key], "").strip()
        return (value or None), f"{DOCKER_ENV[key]}={value}"

    image_text, _ = pick(image, "image", "--docker-image")
    cpus_text, cpus_where = pick(cpus, "cpus", "--docker-cpus")
    memory_text, memory_where = pick(memory, "memory", "--docker-memory")
    pids_text, pids_where = pick(pids, "pids", "--docker-pids")
    settings = DockerSettings(
        image=image_text,
        cpus=_number(cpus_text, cpus_where, float, 0.01) if cpus_text else default.cpus,
        memory=parse_size(memory_text, memory_where) if memory_text else default.memory,
        pids=int(_number(pids_text, pids_where, int, MIN_DOCKER_PIDS)) if pids_text else default.pids,
    )
    if settings.memory < MIN_DOCKER_MEMORY:
        raise ConfigError(
            f"{memory_where}: at least {MIN_DOCKER_MEMORY >> 20}m (the sandbox's server takes about 40 MiB)"
        )
    return settings


def _number(text: str, where: str, kind: type, minimum: float) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise ConfigError(f"{where}: expected a number, got {text!r}") from None
    if value < minimum:
        raise ConfigError(f"{where}: must be at least {minimum:g}, got {text}")
    return float(value)


_DEFAULT = POLICIES[DEFAULT_POLICY]  # the eval's repair policy when no option says otherwise (agent.policies)


@dataclass(frozen=True)
class RunConfig:
    preset: Preset
    dataset_path: Path | None = None
    task_ids: tuple[str, ...] | None = None
    limit: int | None = None
    max_iters: int = DEFAULT_MAX_ITERS
    redraws: int = _DEFAULT.redraws  # agent._settings.AgentSettings.redraws
    redraw_turns: int | None = _DEFAULT.redraw_turns  # agent._settings.AgentSettings.redraw_turns
    strategies: tuple[str, ...] | None = _DEFAULT.strategies  # agent._settings.AgentSettings.strategies (None: all)
    rewrite_turns: int = _DEFAULT.rewrite_turns  # agent._settings.AgentSettings.rewrite_turns
    rewrite_again: str = _DEFAULT.rewrite_again  # agent._settings.AgentSettings.rewrite_again
    rewrite_now: bool = _DEFAULT.rewrite_now  # agent._settings.AgentSettings.rewrite_now
    runtime_values: str = DEFAULT_RUNTIME_VALUES  # agent._settings.RUNTIME_VALUES
    protocol: str = DEFAULT_PROTOCOL  # what the model sees and run_code tests against (agent.protocols)
    engine: str = DEFAULT_ENGINE  # who walks the repair steps (agent.engines); the results do not depend on it
    workers: int = DEFAULT_WORKERS
    workers_reason: str | None = None  # why this many when --workers did not say (the provider's default)
    samples: int = DEFAULT_SAMPLES
    sandbox: str = DEFAULT_SANDBOX  # after sandbox_choice: what `auto` means here may be set by HUMANEVALFIX_SANDBOX
    docker: DockerSettings = DockerSettings()  # --sandbox docker only
    timeout_s: float = DEFAULT_TIMEOUT_S
    out: Path | None = None
    resume: Path | None = None
    traces: Path | None = None
    verbose: bool = False
    debug: bool = False
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    retry_initial_s: float = DEFAULT_RETRY_INITIAL_S
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    gguf: Path | None = None  # embedded model weights, when given by path
    prompt_lookup: int = DEFAULT_PROMPT_LOOKUP  # embedded model: prompt-lookup draft tokens, 0 off (models.embedded)
    exact_lookup: bool = False  # embedded model: drafts checked exactly (ServerOptions.exact)
    stop_after_code: bool = False  # embedded model: replies end at their first code block's close
    visualize: bool = False
    skip_bad_rows: bool = False  # rows whose test cannot score: listed and left out instead of refused
    max_field_chars: int = DEFAULT_MAX_FIELD  # a dataset row's largest code or test field (tasks.task)
    max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS  # a longer model reply is the outcome too_large (models.client)
    # --base-url: which preset's sampling the served model got and why; why the text protocol
    # (models.served). None: the preset as named.
    preset_reason: str | None = None
    tools_reason: str | None = None
    probe_tools: bool = False  # --base-url alone, another model: one request decides native or text

    @property
    def feedback(self) -> str:
        return PROTOCOLS[self.protocol].feedback

    @property
    def docstring(self) -> bool:
        return PROTOCOLS[self.protocol].docstring


def default_out(preset: Preset, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", preset.model or preset.name).strip("-") or "model"
    return RESULTS_DIR / f"{stamp}_{safe}.json"


def stream_path(out: Path) -> Path:
    return out.with_suffix(".jsonl")


def results_path_for_stream(stream: Path) -> Path:
    return stream.with_suffix(".json")


def run_spec(
    config: RunConfig,
    *,
    dataset_source: str,
    dataset_sha256: str,
    task_ids: list[str],
    executor_name: str,
    isolation: str,
    isolation_warning: str | None = None,
    skipped_rows: list[str] | None = None,
) -> RunSpec:
    """Enough to reproduce the run; holds no secret (key variable names only). What --resume
    compares is tagged on each field (runspec)."""
    p = config.preset
    docker = config.docker
    return RunSpec(
        dataset=DatasetSpec(
            dataset_source, dataset_sha256, tuple(task_ids), tuple(skipped_rows) if skipped_rows else None
        ),
        model=ModelSpec.of(
            p,
            config.preset_reason,
            EmbeddedServerSpec(config.prompt_lookup, config.exact_lookup, config.stop_after_code),
        ),
        protocol=ProtocolSpec.named(config.protocol),
        agent=AgentSpec(
            max_iters=config.max_iters,
            engine=config.engine,
            samples=config.samples,
            workers=config.workers,
            workers_reason=config.workers_reason,
            redraws=config.redraws,
            redraw_turns=config.redraw_turns,
            strategies=config.strategies,
            rewrite_turns=config.rewrite_turns,
            rewrite_again=config.rewrite_again,
            rewrite_now=config.rewrite_now,
            runtime_values=config.runtime_values,
        ),
        sandbox=SandboxSpec(
            executor=executor_name,
            docker=DockerSpec(docker.tag, docker.cpus, docker.memory, docker.pids)
            if executor_name == "docker"
            else None,
            isolation=isolation,
            isolation_warning=isolation_warning,
            timeout_s=config.timeout_s,
        ),
        host=HostSpec(
            __version__,
            platform.python_version(),
            f"{platform.machine()}, {os.cpu_count()} cores",
            time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        ),
    )
