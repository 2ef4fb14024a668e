"""`serve`: the embedded local model as an OpenAI-compatible server in the foreground, for other tools to use."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from humanevalfix.errors import ConfigError
from humanevalfix.models.catalog import LOCAL
from humanevalfix.models.embedded import (
    DEFAULT_BATCH_THREADS,
    DEFAULT_CTX,
    DEFAULT_PROMPT_LOOKUP,
    DEFAULT_THREADS,
    EXACT_MAX_DRAFT,
)

HELP = "run the embedded local model as an OpenAI-compatible server in the foreground"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="local", help="a preset with provider: local (default: local)")
    p.add_argument("--models-file", type=Path, help="another models.yaml")
    p.add_argument(
        "--gguf", type=Path, help="weights (default: LOCAL_MODEL_PATH, then download or the offline packages)"
    )
    p.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument(
        "--threads",
        type=int,
        default=DEFAULT_THREADS,
        help=f"CPU threads generating tokens (default {DEFAULT_THREADS})",
    )
    p.add_argument(
        "--batch-threads",
        type=int,
        default=DEFAULT_BATCH_THREADS,
        help=f"CPU threads reading the prompt (default {DEFAULT_BATCH_THREADS})",
    )
    p.add_argument("--n-ctx", type=int, default=DEFAULT_CTX, help=f"context window in tokens (default {DEFAULT_CTX})")
    p.add_argument(
        "--exact-lookup",
        action="store_true",
        help=f"check drafts so that greedy replies are exactly those of plain decoding (at most {EXACT_MAX_DRAFT} "
        "drafts, slower; needs llama-cpp-python built without llamafile)",
    )
    p.add_argument(
        "--stop-after-code",
        action="store_true",
        help="each reply ends at the close of its first code block (docs/local-model.md)",
    )
    p.add_argument(
        "--prompt-lookup",
        type=int,
        metavar="N",
        help="prompt-lookup decoding: up to N tokens drafted from the prompt per step, 0 for plain decoding "
        f"(default {DEFAULT_PROMPT_LOOKUP}; faster, and greedy replies the same but for rare near ties: "
        "docs/local-model.md)",
    )


def run(args: argparse.Namespace) -> int:
    from humanevalfix.models.embedded import (
        ServerOptions,
        check_installed,
        log_tail,
        run_server,
        with_draft,
        with_lookup,
    )
    from humanevalfix.models.presets import load_presets

    presets = load_presets(args.models_file) if args.models_file else load_presets()
    preset = presets.get(args.model)
    if preset is None or preset.provider != LOCAL:
        local = ", ".join(n for n, p in presets.items() if p.provider == LOCAL)
        raise ConfigError(f"--model {args.model}: not a local preset (local presets: {local})")
    if args.port is not None and not 0 < args.port < 65536:
        raise ConfigError(f"--port: must be between 1 and 65535, got {args.port}")
    if args.threads < 1 or args.batch_threads < 1 or args.n_ctx < 256:
        raise ConfigError("--threads and --batch-threads must be at least 1, --n-ctx at least 256")
    if args.prompt_lookup is not None and not 0 <= args.prompt_lookup <= 64:
        raise ConfigError(f"--prompt-lookup: must be between 0 (off) and 64, got {args.prompt_lookup}")
    served = ServerOptions(
        threads=args.threads,
        batch_threads=args.batch_threads,
        n_ctx=args.n_ctx,
        port=args.port,
        stop_after_code=args.stop_after_code,
    )
    options = with_lookup(served, args.prompt_lookup, args.exact_lookup)
    from humanevalfix.models.weights import locate

    check_installed()
    options = with_draft(options, preset, args.gguf)
    weights = locate(preset.gguf or "", args.gguf)
    try:
        with run_server(weights, preset.model, options) as (base_url, proc, log_path):
            print(f"serving {preset.model} ({weights}) at {base_url}", file=sys.stderr)
            # Nothing else needed: the run finds the model and takes this preset's sampling (models.served).
            print(f"  e.g. python eval_humanevalfix.py --base-url {base_url}", file=sys.stderr)
            print(f"  server log: {log_path}; Ctrl-C to stop", file=sys.stderr)
            print(base_url, flush=True)
            code = proc.wait()
            print(f"the server exited (status {code}); its log ends with:\n{log_tail(log_path)}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
