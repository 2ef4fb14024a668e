"""CI: every module of src/ is exercised by the unit tier, not merely imported.

Reads the JSON report that `pytest --cov-report=json:FILE` wrote for the unit tier and fails, naming
them, on the modules whose line coverage is under the floor. Importing a module runs its `def` and
`class` lines only (about a fifth of a typical module here), so the floor sits above that.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FLOOR_PERCENT = 30.0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: unit_coverage.py COVERAGE.json", file=sys.stderr)
        return 2
    files = json.loads(Path(argv[0]).read_text(encoding="utf-8"))["files"]
    under = {
        name: data["summary"]["percent_covered"]
        for name, data in files.items()
        if data["summary"]["num_statements"] and data["summary"]["percent_covered"] < FLOOR_PERCENT
    }
    for name, percent in sorted(under.items(), key=lambda kv: kv[1]):
        print(f"CI: {name}: {percent:.0f}% of its lines run by the unit tier (floor {FLOOR_PERCENT:.0f}%)")
    if under:
        print(f"CI: {len(under)} module(s) of src/ under the unit tier's coverage floor")
        return 1
    print(f"CI: every module of src/ ({len(files)}) has {FLOOR_PERCENT:.0f}% or more of its lines run by the unit tier")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
