#!/usr/bin/env python3
"""Throughput of the eval pipeline, in one run:

1. the latency sweep: the tasks against the scripted OpenAI-compatible server (real HTTP on
   loopback) with a fixed latency per completion and oracle answers (the canonical fix as a
   native tool call, found from the task's entry point and buggy code in the prompt), at 1, 4,
   16 and 64 workers: tasks/s and parallel efficiency (speedup over 1 worker / workers);
2. the harness alone: `oracle:canonical` with no model latency, in tasks/s.

Every task runs the full pipeline: agent turn, a run_code execution against the tests, then the
scorer's separate run. A run where not every task passes is reported as broken, not timed.

    python bench/throughput.py                      # all 164 tasks, 500 ms, 1/4/16/64 workers
    python bench/throughput.py --sweep-limit 48     # a subset for the latency sweep
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from humanevalfix.config import RunConfig
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.catalog import COMPATIBLE
from humanevalfix.models.presets import Preset, resolve
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, SANDBOXES
from humanevalfix.testing.oracle import oracle_handler
from humanevalfix.testing.scripted_server import ScriptedServer


@dataclass(frozen=True)
class Timing:
    workers: int
    tasks: int
    passed: int
    wall_s: float
    loop_s: float  # the task loop alone: no start-up (SDK import, sandboxes), no results writing
    executor: str

    @property
    def rate(self) -> float:
        return self.tasks / self.wall_s

    @property
    def loop_rate(self) -> float:
        return self.tasks / self.loop_s


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min)"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def timed_run(preset: Preset, dataset: Path, limit: int | None, workers: int, sandbox: str, out_dir: Path) -> Timing:
    config = RunConfig(
        preset=preset,
        dataset_path=dataset,
        limit=limit,
        workers=workers,
        sandbox=sandbox,
        max_iters=5,
        out=out_dir / f"{preset.name.replace(':', '_')}_w{workers}.json",
        retry_attempts=2,
        retry_initial_s=0.05,
        request_timeout_s=60.0,
    )
    quiet = Console(file=io.StringIO(), force_terminal=False)
    start = time.perf_counter()
    outcome = run_eval(config, quiet)
    wall = time.perf_counter() - start
    passed = sum(r.passed for r in outcome.records)
    if passed != len(outcome.records) or outcome.status != "complete":
        broken = next((r for r in outcome.records if not r.passed), None)
        detail = f"{broken.task_id}: {broken.error or broken.score_message}" if broken else outcome.status
        raise SystemExit(
            f"broken run ({preset.name}, {workers} workers): {passed}/{len(outcome.records)} passed; {detail}"
        )
    return Timing(workers, len(outcome.records), passed, wall, outcome.loop_s, outcome.config.get("executor", "?"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # A file, not the Hub: every timed run reloads it, and the network has no place in a timing.
    p.add_argument(
        "--dataset-path",
        type=Path,
        default=ds.resolve_path(None) or ds.bundled_path(),
        help="default: HUMANEVALFIX_DATASET, else the bundled copy",
    )
    p.add_argument("--latency", type=float, default=0.5, help="seconds per completion (default 0.5)")
    p.add_argument("--workers", default="1,4,16,64", help="the sweep (default 1,4,16,64)")
    p.add_argument("--sweep-limit", type=int, help="run the latency sweep on the first N tasks only")
    p.add_argument(
        "--harness-workers",
        default=None,
        help="worker counts for the harness-alone run (default: 1, the core count and twice that)",
    )
    p.add_argument("--sandbox", choices=SANDBOXES, default=DEFAULT_SANDBOX)
    args = p.parse_args(argv)
    dataset = args.dataset_path
    data = ds.load_file(dataset)
    sweep_tasks = data.tasks[: args.sweep_limit] if args.sweep_limit else data.tasks
    cores = os.cpu_count() or 1
    # Executions are CPU-bound but each also waits on pipes and the sandbox: a few more workers
    # than cores keep every core busy (the runner lends at most 2 executors per core).
    harness_workers = _ints(args.harness_workers) if args.harness_workers else sorted({1, cores, 2 * cores})

    print(f"machine: {cores} cores, Python {sys.version.split()[0]}; --sandbox {args.sandbox}; {_load()}")
    with tempfile.TemporaryDirectory(prefix="hefix-bench-") as tmp:
        out_dir = Path(tmp)
        subset = (
            ""
            if len(sweep_tasks) == len(data.tasks)
            else f" (a subset: the first {len(sweep_tasks)} of {len(data.tasks)} tasks)"
        )
        print(
            f"\n1. scripted server, {1000 * args.latency:.0f} ms per completion, oracle answers, {len(sweep_tasks)} "
            f"tasks{subset}"
        )
        print("   whole run = wall clock of run_eval, start-up included; loop = first task submitted to last finished")
        print(
            f"{'workers':>8} {'wall s':>8} {'start-up s':>11} {'tasks/s':>9} {'efficiency':>11} {'loop tasks/s':>13} "
            f"{'loop efficiency':>16}"
        )
        base: Timing | None = None
        with ScriptedServer(oracle_handler(sweep_tasks), latency_s=args.latency) as server:
            preset = Preset(
                name="scripted-oracle",
                provider=COMPATIBLE,
                model="scripted-model",
                base_url=server.base_url,
                key_env=None,
                temperatures=(0.0,),
                max_tokens=256,
            )
            for workers in _ints(args.workers):
                t = timed_run(preset, dataset, len(sweep_tasks), workers, args.sandbox, out_dir)
                base = base or t
                scale = workers / base.workers
                efficiency = t.rate / base.rate / scale
                loop_efficiency = t.loop_rate / base.loop_rate / scale
                print(
                    f"{workers:>8} {t.wall_s:>8.1f} {t.wall_s - t.loop_s:>11.1f} {t.rate:>9.2f} "
                    f"{100 * efficiency:>10.0f}%"
                    f" {t.loop_rate:>13.2f} {100 * loop_efficiency:>15.0f}%",
                    flush=True,
                )
            calls = len(server.chat_requests())
        print(f"   ({calls} completions served; executor: {t.executor})")

        print(f"\n2. harness alone: oracle:canonical, no model latency, {len(data.tasks)} tasks")
        print(f"{'workers':>8} {'wall s':>8} {'start-up s':>11} {'tasks/s':>9} {'loop tasks/s':>13}")
        oracle = resolve("oracle:canonical", presets={})
        for workers in harness_workers:
            t = timed_run(oracle, dataset, None, workers, args.sandbox, out_dir)
            print(
                f"{workers:>8} {t.wall_s:>8.1f} {t.wall_s - t.loop_s:>11.1f} {t.rate:>9.2f} {t.loop_rate:>13.2f}",
                flush=True,
            )
        print(f"   (executor: {t.executor})")
    print(f"\nafter: {_load()} (other processes on the machine slow every figure above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
