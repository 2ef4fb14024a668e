"""Choosing an executor: `--sandbox NAME`, one of the kinds registered here with `@executor_kind`
(or by a plugin: humanevalfix/registry.py). The built-in ones:

- `bwrap`: bubblewrap jail (no network, own PID namespace, read-only system, private tmpfs).
- `unshare`: network and PID namespaces only (the file system is the host's).
- `process`: rlimits only.
- `restricted`: RestrictedPython inside the strongest jail that works here.
- `docker`: a locked-down container per executor (sandbox/docker.py; settings: DockerSettings).
- `auto`: bwrap where it works; where it does not, it fails closed (a ConfigError naming bubblewrap,
  docker and the explicit weaker levels): a weaker level is the user's explicit choice, whose
  exposure is said once when it is built. Never docker: starting a daemon is the user's choice
  (config.sandbox_choice lets HUMANEVALFIX_SANDBOX=docker pick it). `restricted` still takes the
  strongest level that works, saying why when it is below bwrap (`isolation_warning`).

All of them use a warm fork server per executor; `fresh=True` gives the fresh-interpreter
variant of the same isolation (the benchmark's baseline, and the conformance suite's).
`ro_binds`: host directories a bwrap jail shows read-only at their own paths (`fix` passes the
user's project); the other levels see the host's file system anyway.

A kind is a builder, `(name, ExecutorOptions) -> () -> Executor`: given the options once, it returns
what makes one executor (a pool makes several). SANDBOXES is the registry: `--sandbox`'s choices,
HUMANEVALFIX_SANDBOX's check and the docs table read it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from humanevalfix.errors import ConfigError
from humanevalfix.registry import Registry
from humanevalfix.sandbox.docker import DockerSettings, docker_factory
from humanevalfix.sandbox.executor import Executor, Limits, SubprocessExecutor
from humanevalfix.sandbox.forkserver import ForkServerExecutor
from humanevalfix.sandbox.jail import FS, GUARANTEES, Jail, best_level, probe

# What a candidate can reach at a level without file-system isolation: said once when a run picks
# one explicitly (auto refuses them: sandbox/factory.py).
EXPOSURE = {
    "unshare": "candidates see the host's file system and can write wherever this user can (under a root harness "
    "`eval` runs them as uid 65534: only where any user can, such as /tmp; `fix` as root, to read the project); this "
    "package is read-only, the run's caches and the bundled dataset are hidden; no network, no other processes",
    "none": "candidates see and can write the host's files wherever this user can (the run's outputs, the caches "
    "and this package's own files, which later runs use, included), reach the network and signal the harness; the "
    "caches' keys are thrown away when the run ends",
}


def closed_refusal(why_not: dict[str, str]) -> str:
    """Why `auto` refuses to run candidates here, and the three ways on."""
    why = "; ".join(f"{problem}" for problem in why_not.values()) or "no level was tried"
    return (
        f"no sandbox level with file-system isolation works here ({why}): install bubblewrap (apt-get install "
        "bubblewrap), or use --sandbox docker, or accept the exposure explicitly with --sandbox unshare (the host's "
        "file system) or --sandbox process (also the network and the harness's processes)"
    )


def weaker_warning(level: str, why_not: dict[str, str]) -> str | None:
    """What `auto` says when it could not get file-system isolation, or None when it did."""
    if FS in GUARANTEES[level]:
        return None
    name = "process" if level == "none" else level
    why = why_not.get("bwrap", "bwrap was not tried")
    return f"no file-system isolation ({why}): candidates run under {name} and can write wherever this user can"


LEVEL_NAMES = {"bwrap": "bwrap", "unshare": "unshare", "none": "process"}


def jail_for(
    kind: str, ro_binds: tuple[Path, ...] = (), python: str = sys.executable, hidden: tuple[Path, ...] = ()
) -> Jail:
    """The jail a sandbox kind runs in here; a ConfigError when an explicit one does not work.
    `hidden`: host paths the unshare jail covers too (Jail.hidden)."""
    if kind in ("auto", "restricted"):
        level, why_not = best_level(python, ro_binds)
        if kind == "auto" and FS not in GUARANTEES[level]:
            raise ConfigError(f"--sandbox auto: {closed_refusal(why_not)}")  # fails closed, never silently weaker
        return Jail(level, python=python, ro_binds=ro_binds, warning=weaker_warning(level, why_not), hidden=hidden)
    if kind == "process":
        return Jail("none", python=python, ro_binds=ro_binds)
    problem = probe(kind, python, ro_binds)
    if problem is not None:
        other = "docker, unshare or process" if kind == "bwrap" else "auto"
        raise ConfigError(f"--sandbox {kind}: {problem} ({_hint(kind, problem)}or use --sandbox {other})")
    return Jail(kind, python=python, ro_binds=ro_binds, hidden=hidden)


def _hint(kind: str, problem: str) -> str:
    """Advice only where the cause is known: the problem itself says what failed."""
    if problem.endswith("is not installed"):
        return "install the `bubblewrap` package, " if kind == "bwrap" else "install util-linux, "
    if kind == "unshare" and "Operation not permitted" in problem:
        return "user namespaces must be allowed, "
    return ""


@dataclass(frozen=True)
class ExecutorOptions:
    """What every executor of a run is built with; a kind uses what applies to it."""

    limits: Limits
    fresh: bool = False  # a fresh interpreter per run instead of a warm fork server
    ro_binds: tuple[Path, ...] = ()  # host folders shown read-only (fix: the user's project)
    python: str = sys.executable  # the interpreter the jail runs
    docker: DockerSettings | None = None  # --sandbox docker's settings
    warn: Callable[[str], None] | None = None  # told when `auto` ends below file-system isolation
    hidden: tuple[Path, ...] = ()  # host paths kept from candidates too (the run's --dataset-path)


Builder = Callable[[str, ExecutorOptions], Callable[[], Executor]]


@dataclass(frozen=True)
class ExecutorKind:
    name: str
    build: Builder
    summary: str  # one line for the docs table and --help


SANDBOXES: Registry[ExecutorKind] = Registry("sandbox", "--sandbox")
DEFAULT_SANDBOX = "auto"  # --sandbox's default, registered first below


def executor_kind(name: str, summary: str) -> Callable[[Builder], Builder]:
    """Register the decorated builder as `--sandbox name` (stack several for one builder)."""

    def register(build: Builder) -> Builder:
        SANDBOXES.register(name, ExecutorKind(name, build, summary))
        return build

    return register


# Decorators apply from the bottom up: auto is registered first (the order of --sandbox's choices).
@executor_kind("restricted", "RestrictedPython inside the strongest jail that works here")
@executor_kind("process", "rlimits only")
@executor_kind("unshare", "network and PID namespaces only (the host's file system)")
@executor_kind("bwrap", "bubblewrap: no network, own PID namespace, read-only system, private tmpfs")
@executor_kind("auto", "bwrap where it works, else a refusal naming the ways on (never silently weaker)")
def _jailed(kind: str, options: ExecutorOptions) -> Callable[[], Executor]:
    try:
        jail = jail_for(kind, options.ro_binds, options.python, options.hidden)
    except ValueError as exc:  # a bind the jail cannot make (the whole file system, /proc, ...)
        raise ConfigError(f"--sandbox {kind}: {exc}") from None
    if jail.warning:
        (options.warn or _stderr)(f"--sandbox {kind}: {jail.warning}")
    elif kind in ("unshare", "process"):  # chosen, not fallen back to: its exposure said once, at the start
        (options.warn or _stderr)(f"--sandbox {kind}: {EXPOSURE[jail.level]}")
    mode = "restricted" if kind == "restricted" else "python"
    name = "restricted" if kind == "restricted" else LEVEL_NAMES[jail.level]
    cls = SubprocessExecutor if options.fresh else ForkServerExecutor
    limits, python = options.limits, options.python
    return lambda: cls(limits, python, jail=jail, mode=mode, name=name)


@executor_kind("docker", "a locked-down container per executor, a fork server inside")
def _docker(kind: str, options: ExecutorOptions) -> Callable[[], Executor]:
    if options.fresh:
        raise ConfigError("--sandbox docker: runs a warm fork server per container only (no fresh interpreter per run)")
    try:
        return docker_factory(options.limits, options.docker or DockerSettings(), options.ro_binds)
    except ValueError as exc:  # a bind the container cannot take
        raise ConfigError(f"--sandbox docker: {exc}") from None


def executor_factory(
    kind: str,
    limits: Limits,
    *,
    fresh: bool = False,
    ro_binds: tuple[Path, ...] = (),
    python: str = sys.executable,
    docker: DockerSettings | None = None,
    warn: Callable[[str], None] | None = None,
    hidden: tuple[Path, ...] = (),
) -> Callable[[], Executor]:
    """Executors of one kind, the jail probed once (a probe starts a jailed interpreter: a pool
    of executors would otherwise pay it per executor at every run's start). `python`: the
    interpreter the jail runs (by default this one), wherever it is installed. `warn` is told when
    `auto` ends below file-system isolation (by default one line on stderr). `hidden`: host files
    kept from the candidates where the level shows the host's file system and can hide them."""
    spec = SANDBOXES.require(kind)
    options = ExecutorOptions(limits, fresh=fresh, ro_binds=ro_binds, python=python, docker=docker, warn=warn)
    return spec.build(kind, replace(options, hidden=hidden))


def _stderr(line: str) -> None:
    # One line when the run starts, as the dataset's source says its own.
    print(f"warning: {line}", file=sys.stderr, flush=True)


def build_executor(
    kind: str,
    limits: Limits,
    *,
    fresh: bool = False,
    ro_binds: tuple[Path, ...] = (),
    python: str = sys.executable,
    docker: DockerSettings | None = None,
    warn: Callable[[str], None] | None = None,
    hidden: tuple[Path, ...] = (),
) -> Executor:
    factory = executor_factory(
        kind, limits, fresh=fresh, ro_binds=ro_binds, python=python, docker=docker, warn=warn, hidden=hidden
    )
    return factory()
