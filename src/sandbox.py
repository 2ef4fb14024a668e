"""Choosing an executor: `--sandbox {auto,bwrap,process,restricted}`."""

from __future__ import annotations

from .errors import ConfigError
from .executor import Executor, Limits, SubprocessExecutor

SANDBOXES = ("auto", "process")


def build_executor(kind: str, limits: Limits) -> Executor:
    if kind in ("auto", "process"):
        return SubprocessExecutor(limits)
    raise ConfigError(f"--sandbox: unknown sandbox {kind!r} (choose from {', '.join(SANDBOXES)})")
