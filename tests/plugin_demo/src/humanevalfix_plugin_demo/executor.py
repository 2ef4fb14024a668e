"""The `demo` sandbox: an executor of its own around the built-in fork server, rlimits only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from humanevalfix.sandbox.executor import ExecResult, Executor
from humanevalfix.sandbox.factory import ExecutorOptions, executor_kind
from humanevalfix.sandbox.forkserver import ForkServerExecutor
from humanevalfix.sandbox.jail import Jail


class DemoExecutor:
    """Runs each candidate in a warm fork server under rlimits only; claims what that jail gives."""

    name = "demo"

    def __init__(self, options: ExecutorOptions) -> None:
        jail = Jail("none", python=options.python, ro_binds=options.ro_binds)
        self._inner = ForkServerExecutor(options.limits, options.python, jail=jail, mode="python", name=self.name)
        self.isolation = "demo plugin: " + self._inner.isolation
        self.guarantees = self._inner.guarantees
        self.isolation_warning = self._inner.isolation_warning

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        return self._inner.run(code, test, support)

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        """The rest is the fork server's: `prestart` (a pool boots it early), and the jail and the
        cgroups that the conformance suite reads to know which checks apply."""
        if name == "_inner":  # not set yet: the fork server failed to start
            raise AttributeError(name)
        return getattr(self._inner, name)


@executor_kind("demo", "the demo plugin's executor: the fork server under rlimits only")
def build_demo(kind: str, options: ExecutorOptions) -> Callable[[], Executor]:
    if options.fresh:
        from humanevalfix.errors import ConfigError

        raise ConfigError("--sandbox demo: a warm fork server only")
    return lambda: DemoExecutor(options)
