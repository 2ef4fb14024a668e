"""Where candidate code runs: executors that run a candidate against a test program in a jail.

    executor = build_executor("auto", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    result = executor.run(code, test)   # ExecResult: status passed/failed/timeout/error, message

executor.py holds the interface (`Executor`: run, close, name, isolation, guarantees) and the
fresh-interpreter executor; forkserver.py the warm one; jail.py the OS isolation around either
(bwrap, unshare, rlimits only); cgroup.py a cgroup per executor (process count and memory, root
included); docker.py the warm one in a container per executor, with its image built by image.py;
factory.py maps `--sandbox` to one; pool.py lends executors to worker threads. child/ is the code
that runs inside the jail (standard library only, loaded by file path: see child/runner.py). A new
executor implements `Executor`, passes tests/test_sandbox_conformance.py for the guarantees it
claims, and gets a builder registered with `@executor_kind` in factory.py (or in a plugin:
humanevalfix/registry.py).

Names below resolve on first use (see humanevalfix/exports.py).
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "DEFAULT_TIMEOUT_S": "executor",
    "Executor": "executor",
    "ExecResult": "executor",
    "Limits": "executor",
    "SubprocessExecutor": "executor",
    "ForkServerExecutor": "forkserver",
    "DockerExecutor": "docker",
    "DockerSettings": "docker",
    "build_image": "image",
    "Jail": "jail",
    "best_level": "jail",
    "probe": "jail",
    "SANDBOXES": "factory",
    "DEFAULT_SANDBOX": "factory",
    "ExecutorOptions": "factory",
    "executor_kind": "factory",
    "build_executor": "factory",
    "executor_factory": "factory",
    "DEFAULT_WORKERS": "pool",
    "ExecutorPool": "pool",
    "executor_slots": "pool",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
