"""Where a run's model time went, and what it bought: read from a committed results file.

    python bench/turn_cost.py results/local-1.5b_tests_repair_rewrite-now.json

Per kind of turn (the strategy, its how-manieth turn of that strategy in the task, and whether the
turn's replies were drawn again), printed: turns, passes, model seconds (each attempt's
`latency_s`, its redraws' calls included) and their share of the run's. And the share of the
recorded replies' text that came after their first code block (what models/codestop.py would not
generate), with the replies whose code would change if they ended there (another block defining the
function is the one read).

Nothing is run: a lever's counterfactual read from the data (issue 54: "fewer turns that cannot
help"). Turns are not independent (a later turn exists only because the earlier ones failed), so a
cut's saving is the time of the turns it removes, and its loss the passes they made.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from humanevalfix.agent.toolcalls import FENCE_RE, extract_calls  # noqa: E402
from humanevalfix.models.codestop import closed_code_block  # noqa: E402


@dataclass
class Kind:
    turns: int = 0
    passes: int = 0
    seconds: float = 0.0


def kinds(tasks: list[dict[str, Any]]) -> dict[tuple[str, int, bool], Kind]:
    """(strategy, its index in the task, drawn again) -> what such turns cost and made."""
    out: dict[tuple[str, int, bool], Kind] = defaultdict(Kind)
    for task in tasks:
        seen: dict[str, int] = defaultdict(int)
        for attempt in task.get("attempts", []):
            strategy = attempt.get("strategy") or "?"
            kind = out[(strategy, seen[strategy], bool(attempt.get("redrawn")))]
            seen[strategy] += 1
            kind.turns += 1
            kind.passes += attempt.get("outcome") == "passed"
            kind.seconds += float(attempt.get("latency_s") or 0.0)
    return dict(out)


def first_block_end(reply: str) -> int | None:
    """Where the reply's first closed code block ends (what a stop there would keep), else None."""
    for end in range(1, len(reply) + 1):
        if reply[end - 1] == "`" and closed_code_block(reply[:end]):
            return end
    return None


def after_first_block(tasks: list[dict[str, Any]]) -> tuple[int, int, int, list[str]]:
    """(reply characters, characters after the first block, replies with any, tasks whose read code changes)."""
    total = after = replies = 0
    changed: list[str] = []
    for task in tasks:
        for attempt in task.get("attempts", []):
            reply = attempt.get("reply") or ""
            total += len(reply)
            end = first_block_end(reply)
            if end is None or not reply[end:].strip():
                continue
            after += len(reply) - end
            replies += 1
            entry = task.get("entry_point")
            full = extract_calls(reply, [], entry)
            cut = extract_calls(reply[:end], [], entry)
            if [c.code for c in full] != [c.code for c in cut] and len(FENCE_RE.findall(reply)) > 1:
                changed.append(f"{task.get('task_id')} turn {attempt.get('turn')}")
    return total, after, replies, changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path, help="an eval results file (.json)")
    args = p.parse_args(argv)
    try:
        document = json.loads(args.results.read_text(encoding="utf-8"))
        tasks = document["tasks"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{args.results}: not an eval results file ({exc})", file=sys.stderr)
        return 2
    table = kinds(tasks)
    whole = sum(k.seconds for k in table.values()) or 1.0
    print(f"{args.results}: {len(tasks)} tasks, {whole:.0f} s of model time")
    print(f"{'strategy':<10} {'its turn':>8} {'redrawn':>8} {'turns':>6} {'passes':>7} {'seconds':>8} {'share':>6}")
    for (strategy, index, redrawn), k in sorted(table.items()):
        print(
            f"{strategy:<10} {index + 1:>8} {'yes' if redrawn else 'no':>8} {k.turns:>6} {k.passes:>7} "
            f"{k.seconds:>8.0f} {k.seconds / whole:>6.1%}"
        )
    total, after, replies, changed = after_first_block(tasks)
    print(
        f"recorded replies: {total} characters, {after} ({after / max(total, 1):.1%}) after their first code block, "
        f"in {replies} replies; the code read would change in {len(changed)}"
        + (f": {', '.join(changed)}" if changed else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
