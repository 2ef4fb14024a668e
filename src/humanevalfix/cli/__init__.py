"""The command line: `humanevalfix` (also `python -m humanevalfix` and `python eval_humanevalfix.py`).

One module per command (`_eval`, `_fix`, `_report`, `_export`, `_score`, `_validate`, `_serve`,
`_graph`), a static table of them in `_main`, and the option types they share in `_options`. The
library never imports this package.

Names below resolve on first use (see humanevalfix/exports.py): an `__init__` that imported its
modules would be re-entered by every module of the package that imports a sibling through it.
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "config_from_args": "_eval",
    "COMMANDS": "_main",
    "build_parser": "_main",
    "main": "_main",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
