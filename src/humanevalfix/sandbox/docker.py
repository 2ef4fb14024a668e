"""The Docker executor: each executor's fork server in a locked-down container of its own.

Why Docker as well as bwrap: it is what many users already trust for untrusted code, and it bounds
what bwrap as root cannot: the number of processes (a cgroup pids limit, so a fork bomb stops at a
count), the memory (swap included) and the CPU share. The fork server inside is the same
child/runner.py as under bwrap, so verdicts, rlimits and the clean-up after each run are the same
code; only the way in differs:

- one container per executor (so per worker), `docker run --rm` with no network, a read-only root,
  size-capped tmpfs work dir and /tmp, no capabilities, no-new-privileges, a non-root uid and the
  pids, memory and CPU limits of `DockerSettings`; the runner files are bound read-only at /hefix;
- a container cannot be handed a file descriptor, so the harness listens on a unix socket in a
  private folder bound at /hefix-sock and the server connects to it (`runner.py --serve-at`);
  each run's pipes then travel over that socket as with the other jails (one kernel, so
  SCM_RIGHTS crosses the container's namespaces);
- the container goes with its executor. Closing the socket ends the server and `--rm` removes the
  container; that also happens when the harness dies (even by SIGKILL: its end of the socket
  closes), once the run in flight ends. `close()`, a failed start and interpreter exit
  `docker rm -f` one that is still there; and every container carries a label naming its owner
  process, so a later run removes any whose owner is gone (`remove_leftovers`).

The daemon, the image and the options are checked once per factory (`docker_factory`), before any
run: a problem is one ConfigError line saying what to run.
"""

from __future__ import annotations

import csv
import io
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from humanevalfix.errors import ConfigError
from humanevalfix.sandbox.cgroup import MEMORY, PROCS
from humanevalfix.sandbox.child.procs import start_time
from humanevalfix.sandbox.executor import Executor, Limits, child_env, describe, kill_group
from humanevalfix.sandbox.forkserver import START_TIMEOUT_S, ForkServerExecutor, Server
from humanevalfix.sandbox.image import build_image, default_tag
from humanevalfix.sandbox.jail import CHILD_DIR, JAIL_SOCK, JAIL_SRC, JAIL_WORK, RUNNER_FILES, SANDBOX_UID, Jail

LABEL = "humanevalfix.sandbox"  # on every container this module starts
OWNER_LABEL = "humanevalfix.owner"  # host:pid:start time of the process that started it
SOCKET_NAME = "server.sock"
STOP_WAIT_S = 5.0  # for the container to end by itself once its socket is closed
DOCKER_TIMEOUT_S = 60.0  # one docker CLI call (a busy daemon)
PROBE = "import sys, numpy; assert sys.version_info >= (3, 10), sys.version; print('ok')"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes


@dataclass(frozen=True)
class DockerSettings:
    """What the containers may use; from --docker-* or SANDBOX_DOCKER_* (config.docker_settings)."""

    image: str | None = None  # None: humanevalfix-sandbox:<this Python>, built here when missing
    cpus: float = 1.0
    memory: int = 1 << 30  # bytes, swap included (--memory-swap is the same)
    pids: int = 64  # processes and threads of the whole container, the server included

    @property
    def tag(self) -> str:
        return self.image or default_tag()


def sandbox_ids() -> tuple[int, int]:
    """The container's uid and gid: nobody for a root harness; else the harness's own, so the
    socket folder it owns is the container's too (a user in the docker group is not root)."""
    return (SANDBOX_UID, SANDBOX_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())


def owner_label(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{start_time(pid)}"


def owner_alive(owner: str) -> bool:
    """Whether the process named by an owner label still runs (a label from another host counts
    as alive: not ours to judge)."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    host, pid, started = parts
    if host != socket.gethostname():
        return True
    return str(start_time(int(pid))) == started


def mount(source: str, target: str, readonly: bool = True) -> str:
    """A --mount value; CSV, so a path with a comma or a quote is quoted rather than split."""
    fields = ["type=bind", f"source={source}", f"target={target}"] + (["readonly"] if readonly else [])
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def container_argv(settings: DockerSettings, jail: Jail, name: str, folder: str) -> list[str]:
    """`docker run` for one executor's container, without the command run in it."""
    uid, gid = sandbox_ids()
    size = jail.work_bytes
    argv = [
        "docker",
        "run",
        "--rm",
        "--name",
        name,
        "--label",
        f"{LABEL}=1",
        "--label",
        f"{OWNER_LABEL}={owner_label()}",
        "--network",
        "none",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--user",
        f"{uid}:{gid}",
        "--hostname",
        "sandbox",
        "--ipc",
        "private",
        "--pids-limit",
        str(settings.pids),
        "--cpus",
        f"{settings.cpus:g}",
        "--memory",
        str(settings.memory),
        "--memory-swap",
        str(settings.memory),
        "--tmpfs",
        f"{JAIL_WORK}:rw,nosuid,nodev,noexec,size={size},uid={uid},gid={gid},mode=0700",
        "--tmpfs",
        f"/tmp:rw,nosuid,nodev,noexec,size={size},mode=1777",
        "--shm-size",
        str(size),
        "--workdir",
        JAIL_WORK,
        "--mount",
        mount(folder, JAIL_SOCK, readonly=False),
    ]
    argv += [arg for f in RUNNER_FILES for arg in ("--mount", mount(str(CHILD_DIR / f), f"{JAIL_SRC}/{f}"))]
    argv += [arg for p in jail.ro_binds for arg in ("--mount", mount(str(p), str(p)))]
    argv += [arg for k, v in child_env().items() for arg in ("--env", f"{k}={v}")]
    return argv + [settings.tag]


def docker(args: list[str], timeout: float = DOCKER_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """One docker CLI call; a CLI that cannot run, or a call that hangs, is a ConfigError."""
    try:
        return subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise ConfigError(NO_CLI) from None
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"--sandbox docker: `docker {args[0]}` did not answer in {timeout:g} s (is dockerd stuck? see its log)"
        ) from None


NO_CLI = (
    "--sandbox docker: the docker CLI is not installed (apt-get install docker.io, then start the daemon: "
    "systemctl start docker, or dockerd &)"
)


def daemon_problem(stderr: str) -> str:
    """What to tell the user for a failed `docker version`."""
    text = stderr.strip()
    if "permission denied" in text.lower():
        return (
            "--sandbox docker: no permission on the Docker socket (/var/run/docker.sock): add your user to the "
            "docker group (sudo usermod -aG docker $USER, then log in again), or run as root"
        )
    if "cannot connect" in text.lower() or "daemon running" in text.lower() or "no such file" in text.lower():
        return (
            "--sandbox docker: the Docker daemon is not running (start it: sudo systemctl start docker, or sudo "
            "dockerd &)"
        )
    lines = text.splitlines()
    return f"--sandbox docker: docker does not answer: {lines[-1] if lines else 'no message'}"


def check_daemon() -> None:
    if shutil.which("docker") is None:
        raise ConfigError(NO_CLI)
    proc = docker(["version", "--format", "{{.Server.Version}}"])
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ConfigError(daemon_problem(proc.stderr))


def ensure_image(settings: DockerSettings, notify: Callable[[str], None]) -> None:
    """The image is here: the default one is built from this interpreter when missing."""
    if docker(["image", "inspect", "--format", "{{.Id}}", settings.tag]).returncode == 0:
        return
    if settings.image is not None:
        raise ConfigError(
            f"--docker-image {settings.image}: no such image here (docker pull {settings.image}; or leave "
            f"--docker-image out to use {default_tag()}, built by `humanevalfix sandbox build-image`)"
        )
    notify(
        f"docker: building the sandbox image {settings.tag} from this Python (once; `humanevalfix sandbox "
        "build-image` does it ahead)"
    )
    try:
        build_image(settings.tag)
    except (RuntimeError, OSError) as exc:
        raise ConfigError(f"--sandbox docker: could not build {settings.tag}: {exc}") from None


def probe_image(settings: DockerSettings, jail: Jail) -> None:
    """The image runs under the executor's own flags and has what the server needs."""
    folder = tempfile.mkdtemp(prefix="hefix-probe-")
    try:
        argv = container_argv(settings, jail, f"hefix-probe-{os.getpid()}-{time.monotonic_ns() % 10**9}", folder)
        proc = docker(argv[1:] + ["python3", "-I", "-c", PROBE])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode != 0 or proc.stdout.strip() != "ok":
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        why = lines[-1] if lines else f"exit status {proc.returncode}"
        raise ConfigError(
            f"--sandbox docker: the image {settings.tag} cannot run the sandbox ({why}); it needs python3 >= 3.10 "
            "with numpy on PATH"
        )


def remove_leftovers() -> list[str]:
    """Remove the containers of runs that were killed before they could (their owner is gone)."""
    proc = docker(["ps", "-a", "--filter", f"label={LABEL}", "--format", '{{.ID}}\t{{.Label "' + OWNER_LABEL + '"}}'])
    stale = [
        line.split("\t")[0]
        for line in proc.stdout.splitlines()
        if line.strip() and not owner_alive(line.partition("\t")[2])
    ]
    if stale:
        docker(["rm", "-f", *stale])
    return stale


@dataclass
class DockerServer(Server):
    """A server in a container: `sock` is the listening socket until the server connects."""

    folder: str = ""  # the private socket folder, bound at /hefix-sock
    name: str = ""  # the container's
    connected: bool = False

    def accept(self, deadline: float) -> str | None:
        """Wait for the server to connect; why not, if it did not."""
        listener = self.sock
        while True:
            if self.proc.poll() is not None:
                return f"docker run exited (status {self.proc.returncode}): {self.stderr_tail() or 'no message'}"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "the container did not connect in time"
            ready, _, _ = select.select([listener], [], [], min(0.2, remaining))
            if ready:
                self.sock, _ = listener.accept()
                break
        listener.close()
        self.connected = True
        # Nobody else may connect, and the folder goes: the container's /hefix-sock is then a
        # deleted directory, in which nothing can be created (by a candidate, say: it runs as the
        # folder's owner). Only the server ran in the container so far.
        Path(self.folder, SOCKET_NAME).unlink(missing_ok=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        return None

    def stop(self) -> None:
        self.dead = True
        try:
            self.sock.close()  # EOF: the server exits, the container ends and --rm removes it...
        except OSError:
            pass
        try:
            self.proc.wait(timeout=STOP_WAIT_S)  # (docker run returns once it is removed)
            ended = True
        except subprocess.TimeoutExpired:
            ended = False
        kill_group(self.proc.pid)
        self.proc.wait()
        if not ended:  # ...unless it hangs, or never started: then by force
            try:
                docker(["rm", "-f", self.name])
            except ConfigError:
                pass
        self.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def socket_folder() -> str:
    """A private folder for the socket, short enough for a unix socket's path."""
    folder = tempfile.mkdtemp(prefix="hefix-docker-")
    if len(os.path.join(folder, SOCKET_NAME)) > MAX_SOCKET_PATH:
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="hefix-docker-", dir="/tmp")
    return folder


class DockerExecutor(ForkServerExecutor):
    """The warm fork server, in a container per executor."""

    def __init__(self, limits: Limits, *, jail: Jail, settings: DockerSettings) -> None:
        # No cgroup of our own: the container is one, with the pids and memory limits below.
        super().__init__(limits, jail.python, jail=jail, mode="python", name="docker", cgroups=False)
        self.settings = settings
        self.guarantees = self.guarantees | {PROCS, MEMORY}
        mib = settings.memory / (1 << 20)
        limits_text = (
            f"; at most {settings.pids} processes, {mib:g} MiB memory without swap, {settings.cpus:g} "
            f"CPUs; image {settings.tag}"
        )
        marker = "; read-only at the same path" if jail.ro_binds else ") + rlimits"
        uid, _gid = sandbox_ids()
        isolation = describe(jail, self.mode, warm=self.warm)
        self.isolation = isolation.replace(marker, limits_text + marker, 1).replace(
            f"uid {SANDBOX_UID}", f"uid {uid}", 1
        )

    def _spawn(self) -> Server | str:
        folder = socket_folder()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = os.path.join(folder, SOCKET_NAME)
        name = f"hefix-{os.getpid()}-{os.urandom(4).hex()}"
        stderr = tempfile.TemporaryFile()
        try:
            listener.bind(path)
            listener.listen(1)
            uid, gid = sandbox_ids()
            if os.getuid() == 0:  # the folder and the socket are the container user's alone
                for p in (folder, path):
                    os.chown(p, uid, gid)
            os.chmod(folder, 0o700)
            argv = container_argv(self.settings, self.jail, name, folder)
            argv += [
                self.jail.python,
                "-I",
                "-B",
                self.jail.runner,
                "--serve-at",
                f"{JAIL_SOCK}/{SOCKET_NAME}",
                JAIL_WORK,
                "--mode",
                self.mode,
                "--private",
            ]
            # Its own session: Ctrl-C in the terminal reaches the harness, which then closes this.
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
            )
        except OSError as exc:
            listener.close()
            stderr.close()
            shutil.rmtree(folder, ignore_errors=True)
            return f"could not start the docker sandbox: {exc}"
        return self._adopt(DockerServer(proc, listener, stderr, None, folder=folder, name=name))

    def _await_ready(self, server: Server) -> str | None:
        if isinstance(server, DockerServer) and not server.connected:
            problem = server.accept(time.monotonic() + START_TIMEOUT_S)
            if problem is not None:
                self._stop_server()
                return f"the fork server did not start (docker): {problem}"
        return super()._await_ready(server)


def notify_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def docker_factory(
    limits: Limits,
    settings: DockerSettings,
    ro_binds: tuple[Path, ...] = (),
    notify: Callable[[str], None] = notify_stderr,
) -> Callable[[], Executor]:
    """Docker executors; the daemon, the image and the flags checked once, leftovers removed."""
    check_daemon()
    ensure_image(settings, notify)
    jail = Jail("docker", python="python3", ro_binds=ro_binds)
    remove_leftovers()
    probe_image(settings, jail)
    return lambda: DockerExecutor(limits, jail=jail, settings=settings)
