"""The embedded model's speed settings side by side, on the same tasks, in one run.

Each setting starts its own llama.cpp server (the same weights; only the setting differs),
runs the same eval on the same tasks, and stops it. Printed per setting: wall time of
the task loop, completion tokens per second of model time, the server's own prompt/eval timings,
pass counts (first attempt, final, pass@1+), and how many replies are identical to the first
setting's. Greedy decoding with a speed-only change must give identical replies: a setting that
buys speed by changing what the model says, or by losing passes, shows up here.

    python bench/local_speed.py --limit 40                       # one greedy attempt per task
    python bench/local_speed.py --limit 40 --max-iters 5         # the repair loop too
    python bench/local_speed.py --settings plain,pld10,pld4 --out /tmp/speed.json

Settings: `plain` (no drafting), `pldN` (prompt-lookup decoding, N draft tokens), either followed
by `-dN` (the 0.5B model drafts N tokens where lookup finds none: for `--model local-1.5b`), then
`-norepack` (llama.cpp's repacked weight buffers off: see bench/batch_exactness.py), then
optionally by `-tN` and `-bN` (N threads generating tokens, and reading prompts and checking
drafts, instead of the server's defaults), then optionally by `-cache` (the server's prompt cache
in RAM: CACHE_OPTIONS), then optionally by `-stop` (each reply ends at the close of its first code
block: models/codestop.py). Run it with nothing else heavy on the machine: the
settings run one after another, so load that changes during the run shows up as a difference
between them (repeat with the order reversed to check).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console

from humanevalfix.config import RunConfig
from humanevalfix.errors import UserError
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.catalog import COMPATIBLE, LOCAL
from humanevalfix.models.embedded import ServerOptions, run_server
from humanevalfix.models.presets import load_presets, resolve
from humanevalfix.models.weights import PATH_ENV, locate

PERF_RE = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval) time =\s+([\d.]+) ms /\s+(\d+) (?:tokens|runs)")


@dataclass
class SettingResult:
    setting: str
    prompt_lookup: int
    repack: bool
    loop_s: float
    tasks: int
    passed_first: int
    passed: int
    passed_plus: int | None
    errors: int
    tokens_in: int
    tokens_out: int
    model_s: float  # summed request latency
    server_prompt_ms: float  # llama.cpp's "prompt eval" (with drafting, draft checks count here)
    server_prompt_tokens: int
    server_eval_ms: float  # llama.cpp's "eval": one-token steps
    server_eval_runs: int
    identical_replies: int | None = None  # to the first setting, reply by reply
    replies_compared: int | None = None
    # The code each reply's turn ran, against the first setting's: a reply cut short (-stop) may
    # differ in its text and still bring the same code.
    identical_code: int | None = None

    @property
    def gen_tokens_per_s(self) -> float:
        return self.tokens_out / self.model_s if self.model_s else 0.0


# `-cache`: llama-cpp-python's prompt cache in RAM (`--cache`), which keeps the state after each
# reply and restores the one with the longest common prefix, where by default only the last
# prompt's prefix is reused: a fresh `rewrite` draw repeats an opening the model has already read,
# with another conversation (the `fix` turns) in between.
CACHE_OPTIONS = ("--cache", "True", "--cache_type", "ram", "--cache_size", str(4 << 30))
# `-dN`: the preset whose weights draft (models/drafting.py); Qwen2.5-Coder's sizes share a tokenizer.
DRAFT_PRESET = "local"


def parse_setting(text: str) -> ServerOptions:
    """`plain` or `pldN`, optionally `-dN` (the draft model drafts N tokens where prompt lookup
    finds none: DRAFT_PRESET's weights, located when the setting runs), then `-norepack` (llama.cpp's repacked
    weight buffers off), then optionally `-tN` and `-bN` (N threads generating tokens, and reading
    prompts and drafts; default the server's), then optionally `-cache` (CACHE_OPTIONS), then
    optionally `-stop` (each reply ends at the close of its first code block: models/codestop.py)."""
    match = re.fullmatch(
        r"(?:plain|pld(?P<pld>\d+))(?:-d(?P<draft>\d+))?(?P<norepack>-norepack)?(?:-t(?P<t>\d+))?(?:-b(?P<b>\d+))?"
        r"(?P<cache>-cache)?(?P<stop>-stop)?",
        text,
    )
    numbers = [match.group(k) for k in ("pld", "draft", "t", "b")] if match else []
    if not match or any(n is not None and not 1 <= int(n) <= 64 for n in numbers):
        raise UserError(
            f"--settings: {text!r} is not `plain` or `pldN`, optionally followed by -dN, then -norepack, then -tN, "
            "then -bN (each N from 1 to 64), then -cache, then -stop"
        )
    options = ServerOptions(
        prompt_lookup=int(match.group("pld") or 0),
        repack=match.group("norepack") is None,
        extra=CACHE_OPTIONS if match.group("cache") else (),
        stop_after_code=match.group("stop") is not None,
    )
    if match.group("draft") is not None:
        options = replace(options, draft_gguf=Path(DRAFT_PRESET), draft_tokens=int(match.group("draft")))
    if match.group("t") is not None:
        options = replace(options, threads=int(match.group("t")))
    return options if match.group("b") is None else replace(options, batch_threads=int(match.group("b")))


def server_perf(log: Path) -> tuple[float, int, float, int]:
    prompt_ms = eval_ms = 0.0
    prompt_tokens = eval_runs = 0
    for kind, ms, count in PERF_RE.findall(log.read_text(encoding="utf-8", errors="replace")):
        if kind == "prompt eval":
            prompt_ms, prompt_tokens = prompt_ms + float(ms), prompt_tokens + int(count)
        else:
            eval_ms, eval_runs = eval_ms + float(ms), eval_runs + int(count)
    return prompt_ms, prompt_tokens, eval_ms, eval_runs


def replies(traces: Path) -> dict[str, list[str]]:
    """Each task's assistant replies, in order, from the run's traces."""
    out: dict[str, list[str]] = {}
    for path in sorted(traces.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        task_id = str(data.get("task_id") or path.stem)
        out[task_id] = [
            m.get("content") or json.dumps(m.get("tool_calls"))
            for m in data.get("messages", [])
            if m.get("role") == "assistant"
        ]
    return out


def codes(traces: Path) -> dict[str, list[str]]:
    """Each task's attempts' code, in order ("" where a turn brought none), from the run's traces."""
    out: dict[str, list[str]] = {}
    for path in sorted(traces.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[str(data.get("task_id") or path.stem)] = [a.get("code") or "" for a in data.get("attempts", [])]
    return out


def same(first: dict[str, list[str]], other: dict[str, list[str]]) -> tuple[int, int]:
    """(identical, compared), item by item of each task's list."""
    pairs = [(a, b) for tid in first for a, b in zip(first[tid], other.get(tid, []), strict=False)]
    return sum(a == b for a, b in pairs), len(pairs)


def run_setting(
    name: str, args: argparse.Namespace, weights: Path, work: Path
) -> tuple[SettingResult, dict[str, list[str]], dict[str, list[str]]]:
    options = parse_setting(name)
    if options.draft_gguf is not None:
        draft = load_presets()[DRAFT_PRESET].gguf or ""
        environ = {k: v for k, v in os.environ.items() if k != PATH_ENV}  # that names the main model
        options = replace(options, draft_gguf=locate(draft, None, environ))
    local = resolve(args.model, presets=load_presets())
    log = work / f"{name}.log"
    with run_server(weights, local.model, options, log_path=log) as (base_url, _proc, _log):
        preset = replace(local, provider=COMPATIBLE, base_url=base_url, gguf=None)
        config = RunConfig(
            preset=preset,
            dataset_path=Path(args.dataset_path) if args.dataset_path else None,
            task_ids=tuple(args.tasks.split(",")) if args.tasks else None,
            limit=args.limit,
            max_iters=args.max_iters,
            protocol=args.protocol,
            out=work / name / "results.json",
            traces=work / name / "traces",
            request_timeout_s=900.0,
            retry_attempts=2,
        )
        started = time.monotonic()
        outcome = run_eval(config, Console(file=io.StringIO()))
        print(f"{name}: {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    s = outcome.summary
    model_s = sum(a.get("latency_s") or 0.0 for r in outcome.records for a in r.attempts)
    prompt_ms, prompt_tokens, eval_ms, eval_runs = server_perf(log)
    result = SettingResult(
        setting=name,
        prompt_lookup=options.prompt_lookup,
        repack=options.repack,
        loop_s=round(outcome.loop_s, 1),
        tasks=s.tasks,
        passed_first=s.passed_first,
        passed=s.passed,
        passed_plus=(s.scores.get("plus") or {}).get("passed"),
        errors=s.errors,
        tokens_in=s.tokens_in,
        tokens_out=s.tokens_out,
        model_s=round(model_s, 1),
        server_prompt_ms=round(prompt_ms),
        server_prompt_tokens=prompt_tokens,
        server_eval_ms=round(eval_ms),
        server_eval_runs=eval_runs,
    )
    return result, replies(work / name / "traces"), codes(work / name / "traces")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--settings", default="plain,pld10", help="comma-separated: plain, pldN (default plain,pld10)")
    p.add_argument("--model", default="local", help="a local preset (default: local)")
    p.add_argument("--gguf", type=Path, help="weights (default: as eval finds them)")
    p.add_argument("--dataset-path")
    p.add_argument("--tasks", help="comma-separated task ids")
    p.add_argument("--limit", type=int, default=40, help="the first N tasks (default 40)")
    p.add_argument(
        "--max-iters",
        type=int,
        default=0,
        help="repair turns (default 0: one greedy attempt, replies comparable one to one)",
    )
    p.add_argument("--protocol", default="tests")
    p.add_argument("--out", type=Path, help="write the table as JSON")
    args = p.parse_args(argv)
    try:
        names = [n.strip() for n in args.settings.split(",") if n.strip()]
        for name in names:
            parse_setting(name)
        local = resolve(args.model, presets=load_presets())
        if local.provider != LOCAL:
            raise UserError(f"--model {args.model}: not a local preset")
        weights = locate(local.gguf or "", args.gguf)
        results: list[SettingResult] = []
        with tempfile.TemporaryDirectory(prefix="hefix-speed-", dir=Path.cwd()) as tmp:
            first: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
            for name in names:
                result, said, ran = run_setting(name, args, weights, Path(tmp))
                if first is None:
                    first = said, ran
                else:
                    result.identical_replies, result.replies_compared = same(first[0], said)
                    result.identical_code = same(first[1], ran)[0]
                results.append(result)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_table(results)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "settings": vars(args) | {"out": str(args.out), "gguf": str(args.gguf) if args.gguf else None},
            "results": [asdict(r) for r in results],
        }
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


def print_table(results: list[SettingResult]) -> None:
    base = results[0]
    print(
        f"{'setting':14} {'loop s':>8} {'speed-up':>8} {'gen tok/s':>9} {'first':>6} {'final':>6} {'plus':>5} "
        f"{'errors':>6} {'identical replies':>18} {'same code':>10}"
    )
    for r in results:
        speedup = base.loop_s / r.loop_s if r.loop_s else 0.0
        alike = "(reference)" if r.identical_replies is None else f"{r.identical_replies}/{r.replies_compared}"
        code = "" if r.identical_code is None else str(r.identical_code)
        plus = "-" if r.passed_plus is None else str(r.passed_plus)
        print(
            f"{r.setting:14} {r.loop_s:8.1f} {speedup:7.2f}x {r.gen_tokens_per_s:9.1f} {r.passed_first:6} "
            f"{r.passed:6} {plus:>5} {r.errors:6} {alike:>18} {code:>10}"
        )
    print("server timings (llama.cpp; with drafting, draft checks are counted as prompt eval):")
    for r in results:
        print(
            f"  {r.setting:14} prompt eval {r.server_prompt_ms / 1000:7.1f} s / {r.server_prompt_tokens} tokens, "
            f"eval {r.server_eval_ms / 1000:7.1f} s / {r.server_eval_runs} steps"
        )


if __name__ == "__main__":
    sys.exit(main())
