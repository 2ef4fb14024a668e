"""Does this llama.cpp build give the same logits for a batch of tokens as for one token at a time?

Prompt-lookup decoding checks its drafted tokens in one batch; plain decoding evaluates one token
per step. Greedy replies are only guaranteed identical with drafting if the two give bit-identical
logits, and whether they do depends on how llama-cpp-python was built and loaded, not on our code:
llama.cpp switches to other matrix kernels for larger batches (llamafile's sgemm when compiled in,
the repacked-weight gemm of the CPU_REPACK buffers, and others), and those sum in another order.

For a few real task prompts this generates greedily one token at a time (the reference), then
evaluates the same tokens again in batches of each size and counts, per batch size, the positions
whose logits are bit-identical and those whose greedy choice changes. Both with and without the
repacked weight buffers (llama.cpp's `use_extra_bufts`). It prints the build's flags too.

    python bench/batch_exactness.py                      # 4 tasks, 24 tokens each
    python bench/batch_exactness.py --sizes 1,2,4,8,11 --out /tmp/exact.json

Needs nothing else than `eval` does (the embedded model's weights). Takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.models.catalog import LOCAL
from humanevalfix.models.presets import load_presets, resolve
from humanevalfix.models.weights import locate


@dataclass
class Row:
    repack: bool  # the repacked weight buffers (use_extra_bufts) on
    batch: int  # tokens per evaluation
    positions: int
    identical: int  # logits bit-identical to one-token decoding
    flipped: int  # greedy choice differs from one-token decoding
    max_abs_diff: float


def _prompt(task: ds.Task) -> str:
    # A repair continuation, as the agent's replies are: the buggy code, then the start of the fix.
    return f"Fix the bug in `{task.entry_point}`.\n```python\n{task.buggy_code}```\nFixed:\n```python\n"


@dataclass
class _Case:
    prompt: list[int]
    tokens: list[int]  # the greedy continuation, one token at a time
    rows: list[Any]  # the logits before each of them


def _llama(weights: Path, repack: bool) -> Any:
    import llama_cpp.llama as llama_module
    from llama_cpp import Llama

    # The Llama class has no argument for use_extra_bufts: set it on the defaults it starts from.
    defaults = llama_module.llama_cpp.llama_model_default_params

    def params() -> Any:
        p = defaults()
        p.use_extra_bufts = repack
        return p

    llama_module.llama_cpp.llama_model_default_params = params
    try:
        return Llama(
            model_path=str(weights), n_ctx=4096, n_threads=2, n_threads_batch=2, logits_all=True, verbose=False
        )
    finally:
        llama_module.llama_cpp.llama_model_default_params = defaults


def _reference(llm: Any, prompt: list[int], count: int) -> _Case:
    import numpy as np

    llm.reset()
    llm.eval(prompt)
    tokens, rows = [], []
    for _ in range(count):
        row = np.array(llm.scores[llm.n_tokens - 1])
        rows.append(row)
        tokens.append(int(row.argmax()))
        llm.eval([tokens[-1]])
    return _Case(prompt, tokens, rows)


def _batched(llm: Any, case: _Case, size: int) -> Iterator[Any]:
    """The logits before each token of the continuation, evaluated `size` tokens at a time."""
    import numpy as np

    llm.reset()
    llm.eval(case.prompt)
    yield np.array(llm.scores[llm.n_tokens - 1])
    for start in range(0, len(case.tokens) - 1, size):
        part = case.tokens[start : min(start + size, len(case.tokens) - 1)]
        before = llm.n_tokens
        llm.eval(part)
        for i in range(len(part)):
            yield np.array(llm.scores[before + i])


def measure(weights: Path, tasks: list[ds.Task], sizes: list[int], count: int) -> list[Row]:
    import numpy as np

    table = []
    for repack in (True, False):
        llm = _llama(weights, repack)
        cases = [_reference(llm, llm.tokenize(_prompt(t).encode("utf-8")), count) for t in tasks]
        for size in sizes:
            identical = flipped = positions = 0
            worst = 0.0
            for case in cases:
                for row, ref, token in zip(_batched(llm, case, size), case.rows, case.tokens, strict=False):
                    positions += 1
                    diff = float(np.abs(row - ref).max())
                    worst = max(worst, diff)
                    identical += diff == 0.0
                    flipped += int(row.argmax()) != token
            table.append(Row(repack, size, positions, identical, flipped, round(worst, 4)))
        del llm
    return table


def build_flags() -> str:
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="local", help="a local preset (default: local)")
    p.add_argument("--gguf", type=Path, help="weights (default: as eval finds them)")
    p.add_argument("--dataset-path")
    p.add_argument("--limit", type=int, default=4, help="the first N tasks (default 4)")
    p.add_argument("--tokens", type=int, default=24, help="greedy tokens per task (default 24)")
    p.add_argument("--sizes", default="1,2,4,7,8,11", help="batch sizes (default 1,2,4,7,8,11; pld10 checks up to 11)")
    p.add_argument("--out", type=Path, help="write the table as JSON")
    args = p.parse_args(argv)
    try:
        try:
            sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        except ValueError:
            raise UserError(f"--sizes: expected whole numbers separated by commas, got {args.sizes!r}") from None
        if not sizes or min(sizes) < 1 or args.tokens < 2 or args.limit < 1:
            raise UserError("--sizes, --tokens and --limit must be at least 1 (--tokens at least 2)")
        local = resolve(args.model, presets=load_presets())
        if local.provider != LOCAL:
            raise UserError(f"--model {args.model}: not a local preset")
        weights = locate(local.gguf or "", args.gguf)
        tasks = ds.select(ds.load(Path(args.dataset_path) if args.dataset_path else None).tasks, None, args.limit)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    flags = build_flags()
    table = measure(weights, tasks, sizes, args.tokens)
    print(f"llama.cpp build: {flags}")
    print(f"{'repack':>6} {'batch':>5} {'identical logits':>17} {'greedy flips':>12} {'max |diff|':>10}")
    for r in table:
        print(
            f"{'on' if r.repack else 'off':>6} {r.batch:>5} {f'{r.identical}/{r.positions}':>17} {r.flipped:>12} "
            f"{r.max_abs_diff:>10}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "settings": vars(args) | {"out": str(args.out), "gguf": str(args.gguf) if args.gguf else None},
            "build": flags,
            "rows": [asdict(r) for r in table],
        }
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
