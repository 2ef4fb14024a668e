"""The subpackages' public names, resolved on first use (a module `__getattr__`, PEP 562).

Why not plain re-exports in each `__init__`: the subpackages depend on each other module by
module (evaluation.runner needs models.providers, which needs evaluation.dataset), and Python runs
a package's `__init__` before any of its modules. An `__init__` that imported its modules would
turn those one-way module dependencies into package-level cycles (importing models.presets would
import models.providers, then evaluation.dataset, evaluation's `__init__`, evaluation.runner,
and models.providers again, half-initialised). Resolved lazily, the curated names cost nothing
to import and cannot form a cycle; tests/test_structure.py checks every one of them resolves.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A `__getattr__` for `package` that finds each name of `table` (name -> its module) when first asked."""

    def attribute(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return attribute
