"""The embedded model: an OpenAI-compatible llama.cpp server as a child process, and `serve`.

`embedded_server` starts `python -m llama_cpp.server` on a free loopback port in its own process
group, waits until `/v1/models` answers, and always stops the whole group on the way out
(normal exit, an exception, Ctrl-C, SIGTERM). If this process is killed outright (SIGKILL), the
server still goes: it asks the kernel for SIGTERM when its parent dies (Linux PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from humanevalfix.errors import ConfigError
from humanevalfix.models import codestop, drafting
from humanevalfix.models.presets import Preset

# Token generation on 1 thread, prompt evaluation on 2. Measured on 2 busy shared cores
# (load ~7): 2 generation threads fell to 0.5-1.1 tokens/s (llama.cpp threads wait on each other
# whenever one is descheduled), 1 thread kept 4.6-6.9 tokens/s; batched prompt evaluation
# tolerates sharing better and still gains from the second core.
DEFAULT_THREADS = 1
DEFAULT_BATCH_THREADS = 2
# The longest prompt of the committed 164-task runs is 1,892 tokens, plus at most 384 generated;
# 8192 leaves room for longer conversations and models that tokenize less densely (~200 MB of KV
# cache for the 0.5B model).
DEFAULT_CTX = 8192
# Prompt-lookup decoding: draft tokens are copied from the prompt where the reply repeats it, and
# a repaired function mostly repeats the buggy one. The model checks every drafted token, but in
# batches, and llama.cpp's batched kernels round differently from one token at a time, so now and
# then a greedy near tie flips (bench/local_speed.py, bench/batch_exactness.py); 0 turns it off, and
# --exact-lookup (EXACT_MAX_DRAFT) keeps replies exact on a build that allows it.
DEFAULT_PROMPT_LOOKUP = 10
# --exact-lookup: batches of up to 7 tokens (6 drafts and the token before them) give logits
# bit-identical to one-token decoding on a build without llamafile with the repacked buffers off;
# from 8 tokens on another kernel takes over (bench/batch_exactness.py).
EXACT_MAX_DRAFT = 6
REBUILD_HINT = (
    'CMAKE_ARGS="-DGGML_LLAMAFILE=OFF" pip install --force-reinstall --no-cache-dir --no-deps '
    '"llama-cpp-python=={version}"'
)
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 5.0
LOG_TAIL_CHARS = 2000

# Runs in the child before the server: die with the parent (SIGKILL of the parent runs no
# cleanup), unless the parent is already gone. Then the server module as `python -m` would.
_LAUNCHER = """\
import ctypes, os, runpy, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except Exception:
    pass
if os.getppid() != int(os.environ.get("HEFIX_PARENT_PID", os.getppid())):
    sys.exit("parent exited before the server started")
_log_dir = os.environ.pop("HEFIX_TEMP_LOG_DIR", "")
if _log_dir:
    import shutil
    _parent = int(os.environ.get("HEFIX_PARENT_PID", "0"))
    def _on_sigterm(signum, frame):
        # A parent that was killed (SIGKILL, the OOM killer) removes nothing: its temp folder with
        # this log would stay in /tmp. Removed here only then (a live parent may read the log), and
        # only at the end: uvicorn restores this handler after its own shutdown and raises SIGTERM
        # again. Then the death by SIGTERM it would have been.
        if os.getppid() != _parent:
            shutil.rmtree(_log_dir, ignore_errors=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    signal.signal(signal.SIGTERM, _on_sigterm)
if os.environ.pop("HEFIX_NO_REPACK", "") == "1":
    # llama_cpp.server has no setting for it: change the defaults its Llama starts from.
    import llama_cpp.llama as llama_module
    defaults = llama_module.llama_cpp.llama_model_default_params
    def without_repack():
        params = defaults()
        params.use_extra_bufts = False
        return params
    llama_module.llama_cpp.llama_model_default_params = without_repack
if os.environ.get("HEFIX_DRAFT_GGUF"):
    from humanevalfix.models.drafting import install
    install()
if os.environ.pop("HEFIX_STOP_AFTER_CODE", "") == "1":
    from humanevalfix.models.codestop import install as stop_after_code
    stop_after_code()
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class ServerOptions:
    threads: int = DEFAULT_THREADS
    batch_threads: int = DEFAULT_BATCH_THREADS
    n_ctx: int = DEFAULT_CTX
    n_batch: int = 512
    prompt_lookup: int = DEFAULT_PROMPT_LOOKUP  # draft tokens per step; 0: plain decoding
    # llama.cpp's repacked weight buffers (use_extra_bufts). On, batches of 4 tokens or more go
    # through the repacked Q4_K gemm, which rounds differently from one token at a time; off, and
    # with a build without llamafile, batches of up to 7 tokens are bit-identical to one-token
    # decoding (bench/batch_exactness.py). Off with --exact-lookup and bench/local_speed.py's `-norepack`.
    repack: bool = True
    # Drafts checked with one-token arithmetic, so greedy replies are those of plain decoding:
    # refused on a llamafile build (check_exact), with the repacked buffers off and at most
    # EXACT_MAX_DRAFT drafts (with_lookup).
    exact: bool = False
    host: str = "127.0.0.1"
    port: int | None = None  # None: a free port
    start_timeout_s: float = START_TIMEOUT_S
    extra: tuple[str, ...] = ()  # more `--name value` options for llama_cpp.server
    # A smaller model of the same tokenizer drafting where prompt lookup finds nothing
    # (models/drafting.py): its weights and how many tokens it drafts a step.
    draft_gguf: Path | None = None
    draft_tokens: int = 4
    # Each reply ends at the close of its first code block (models/codestop.py): a speed lever
    # measured by bench/local_speed.py's `-stop`, off unless asked.
    stop_after_code: bool = False


@dataclass(frozen=True)
class Served:
    base_url: str  # e.g. http://127.0.0.1:PORT/v1
    model: str  # the id the server answers to
    preset: Preset  # with base_url filled in
    pid: int
    log_path: Path
    gguf: Path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def server_command(gguf: Path, model_id: str, port: int, options: ServerOptions) -> list[str]:
    # Prompt-prefix reuse: llama-cpp-python keeps the last prompt's KV cache and re-evaluates only
    # the new suffix, so each repair turn pays only for its new messages (one request at a time).
    return [
        sys.executable,
        "-c",
        _LAUNCHER,
        "--model",
        str(gguf),
        "--model_alias",
        model_id,
        "--host",
        options.host,
        "--port",
        str(port),
        "--n_ctx",
        str(options.n_ctx),
        "--n_threads",
        str(options.threads),
        "--n_threads_batch",
        str(options.batch_threads),
        "--n_batch",
        str(options.n_batch),
        # A later request must not cut off one in flight (the default interrupts it).
        "--interrupt_requests",
        "False",
        *_draft_options(options),
        *options.extra,
    ]


def _draft_options(options: ServerOptions) -> list[str]:
    # A draft model rides on the server's prompt-lookup setting (drafting.install), with 0 tokens
    # of lookup where lookup is off.
    if options.prompt_lookup <= 0 and options.draft_gguf is None:
        return []
    return ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", str(options.prompt_lookup)]


def log_tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL_CHARS:].strip() or "(empty log)"


def _models_answer(base_url: str, timeout_s: float = 2.0) -> list[str] | None:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=timeout_s) as response:
            data = json.loads(response.read())
        return [m.get("id", "") for m in data.get("data", [])]
    except (urllib.error.URLError, OSError, ValueError):
        return None


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to the server's process group, SIGKILL after the grace period; always reaped."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    # The group may hold more than the leader; kill whatever is left of it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM while the server runs unwinds like Ctrl-C, so the `finally` below stops it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    while True:
        if proc.poll() is not None:
            raise ConfigError(
                f"the local model server exited (status {proc.returncode}) before it was ready. "
                f"Its log ({log_path}) ends with:\n{log_tail(log_path)}"
            )
        if _models_answer(base_url) is not None:
            return
        if time.monotonic() > deadline:
            raise ConfigError(
                f"the local model server did not answer {base_url}/models within {timeout_s:g}s. "
                f"Its log ({log_path}) ends with:\n{log_tail(log_path)}"
            )
        time.sleep(delay)
        delay = min(1.0, delay * 1.5)


def with_lookup(options: ServerOptions, prompt_lookup: int | None, exact: bool) -> ServerOptions:
    """`options` with --prompt-lookup (None: the default) and --exact-lookup, which caps the drafts
    and turns the repacked buffers off."""
    if not exact:
        return replace(options, prompt_lookup=DEFAULT_PROMPT_LOOKUP if prompt_lookup is None else prompt_lookup)
    if prompt_lookup is not None and prompt_lookup > EXACT_MAX_DRAFT:
        raise ConfigError(
            f"--exact-lookup: at most {EXACT_MAX_DRAFT} draft tokens are checked exactly, got --prompt-lookup "
            f"{prompt_lookup} (leave --prompt-lookup out for the most)"
        )
    drafts = EXACT_MAX_DRAFT if prompt_lookup is None else prompt_lookup
    return replace(options, prompt_lookup=drafts, repack=False, exact=True)


def inexact_build(system_info: str) -> str | None:
    """Why this llama.cpp build cannot check drafts exactly (from llama_print_system_info); None if it can."""
    if "LLAMAFILE = 1" in system_info:
        return (
            "this llama-cpp-python is built with llamafile's sgemm, whose batched arithmetic differs from "
            "one-token decoding"
        )
    return None


def check_exact(options: ServerOptions) -> None:
    """Refuse --exact-lookup where its promise cannot hold, before the server starts."""
    if not options.exact:
        return
    if options.repack or options.prompt_lookup > EXACT_MAX_DRAFT:
        raise ConfigError(
            f"exact prompt lookup needs the repacked buffers off and at most {EXACT_MAX_DRAFT} draft tokens"
        )
    import llama_cpp

    why = inexact_build(llama_cpp.llama_print_system_info().decode("utf-8", "replace"))
    if why:
        hint = REBUILD_HINT.format(version=getattr(llama_cpp, "__version__", "") or "0.3.36")
        raise ConfigError(f"--exact-lookup: {why}; rebuild it without: {hint} (docs/local-model.md)")


def check_installed() -> None:
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"the embedded model needs llama-cpp-python with its server ({exc.name or exc} is missing): "
            "pip install 'llama-cpp-python[server]' (compiles from source, a few minutes)"
        ) from None


@contextlib.contextmanager
def run_server(
    gguf: Path, model_id: str, options: ServerOptions = ServerOptions(), log_path: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """The server process for `gguf`, ready; stopped (with its whole group) on the way out."""
    check_installed()
    check_exact(options)
    port = options.port or free_port(options.host)
    base_url = f"http://{options.host}:{port}/v1"
    with contextlib.ExitStack() as stack:
        log_dir: Path | None = None  # ours to remove (a log_path given is the caller's)
        if log_path is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hefix-llama-")))
            log_path = log_dir / "server.log"
        log_file = stack.enter_context(log_path.open("wb"))
        env = dict(os.environ, HEFIX_PARENT_PID=str(os.getpid()))
        if log_dir is not None:
            env["HEFIX_TEMP_LOG_DIR"] = str(log_dir)
        if not options.repack:
            env["HEFIX_NO_REPACK"] = "1"
        if options.draft_gguf is not None:
            env |= drafting.environment(str(options.draft_gguf), options.draft_tokens, options.threads, options.n_ctx)
        env |= codestop.environment(options.stop_after_code)
        for name in ("OPENAI_API_KEY", "TOGETHER_API_KEY", "HF_TOKEN", "LOCAL_API_KEY"):
            env.pop(name, None)  # the server needs no key; keep them out of its process
        stack.enter_context(_sigterm_as_interrupt())
        proc = subprocess.Popen(
            server_command(gguf, model_id, port, options),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopped as a whole, and Ctrl-C in a
            # terminal reaches only us, so the server is stopped in order, not mid-write
        )
        try:
            _wait_ready(proc, base_url, log_path, options.start_timeout_s)
            yield base_url, proc, log_path
        finally:
            stop_group(proc)


def with_draft(options: ServerOptions, preset: Preset, gguf: Path | None) -> ServerOptions:
    """`options` with the preset's draft model (Preset.draft), located as its own weights are but
    never from LOCAL_MODEL_PATH (that names the main model); none with --gguf, whose weights may
    not share the draft's tokenizer."""
    from humanevalfix.models.weights import PATH_ENV, locate

    if preset.draft is None or gguf is not None or options.draft_gguf is not None:
        return options
    environ = {k: v for k, v in os.environ.items() if k != PATH_ENV}
    return replace(options, draft_gguf=locate(preset.draft, None, environ))


@contextlib.contextmanager
def embedded_server(preset: Preset, gguf: Path | None, options: ServerOptions | None = None) -> Iterator[Served]:
    """What providers.open_endpoint uses: weights located, server started, preset filled in."""
    from humanevalfix.models.weights import locate

    check_installed()
    options = with_draft(options or ServerOptions(), preset, gguf)
    check_exact(options)
    weights = locate(preset.gguf or "", gguf)
    with run_server(weights, preset.model, options) as (base_url, proc, log_path):
        yield Served(base_url, preset.model, replace(preset, base_url=base_url), proc.pid, log_path, weights)
