"""Run configuration in one place: the options of an eval run, and .env loading."""

from __future__ import annotations

import os
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from humanevalfix import __version__
from humanevalfix.agent.engines import DEFAULT_ENGINE
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS
from humanevalfix.models.presets import Preset

RESULTS_DIR = Path("results")


def load_dotenv_file(path: str | None = None) -> None:
    """Keys live in `.env` (never in options, so they stay out of shell history and results)."""
    from dotenv import load_dotenv

    load_dotenv(dotenv_path=path or ".env", override=False)


@dataclass(frozen=True)
class RunConfig:
    preset: Preset
    dataset_path: Path | None = None
    task_ids: tuple[str, ...] | None = None
    limit: int | None = None
    max_iters: int = 5
    protocol: str = DEFAULT_PROTOCOL  # what the model sees and run_code tests against (agent.protocols)
    engine: str = DEFAULT_ENGINE  # who walks the repair steps (agent.engines); the results do not depend on it
    workers: int = 1
    samples: int = 1
    sandbox: str = "auto"
    timeout_s: float = 6.0
    out: Path | None = None
    resume: Path | None = None
    traces: Path | None = None
    verbose: bool = False
    debug: bool = False
    retry_attempts: int = 6
    retry_initial_s: float = 1.0
    request_timeout_s: float = 120.0
    gguf: Path | None = None  # embedded model weights, when given by path
    prompt_lookup: int = 10  # embedded model: prompt-lookup draft tokens, 0 off (models.embedded)
    visualize: bool = False

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


# The fields that must match for --resume to continue a run rather than mix two.
# `engine` too, although both engines give the same results: the config labels every task of the
# run with one engine, which a resume with the other would make untrue.
RESUME_KEYS = ("model", "dataset_sha256", "max_iters", "protocol", "engine", "samples", "task_ids")
# How the error names a differing key: as the option the user typed.
RESUME_OPTIONS = {
    "model": "--model",
    "dataset_sha256": "--dataset-path (the file's contents)",
    "max_iters": "--max-iters",
    "protocol": "--protocol",
    "engine": "--engine",
    "samples": "--samples",
}
# What a key missing from an older run's config meant then (runs from before the key existed).
RESUME_DEFAULTS = {"samples": 1, "engine": DEFAULT_ENGINE}  # for streams written before these were recorded; protocol: agent.protocols.protocol_of


def public_config(
    config: RunConfig,
    *,
    dataset_source: str,
    dataset_sha256: str,
    task_ids: list[str],
    executor_name: str,
    isolation: str,
) -> dict[str, Any]:
    """Enough to reproduce the run; holds no secret (key variable names only)."""
    p = config.preset
    return {
        "project_version": __version__,
        "model": p.model,
        "preset": p.public(),
        "provider": p.provider,
        "base_url": p.base_url,
        "sampling": {"temperatures": list(p.temperatures), "max_tokens": p.max_tokens},
        # Speed only (greedy replies are the same), recorded so timings can be compared like with like.
        "embedded_server": {"prompt_lookup": config.prompt_lookup} if p.provider == "local" else None,
        "max_iters": config.max_iters,
        "protocol": config.protocol,  # agent.protocols: what the model saw; the two below follow from it
        "feedback": config.feedback,
        "engine": config.engine,  # agent.engines: who walked the steps (the same policy either way)
        "samples": config.samples,
        "docstring": config.docstring,  # False: the prompt left the task's docstring out (--no-docstring)
        "executor": executor_name,
        "isolation": isolation,
        "timeout_s": config.timeout_s,
        "dataset_source": dataset_source,
        "dataset_sha256": dataset_sha256,
        "task_ids": task_ids,
        "workers": config.workers,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
