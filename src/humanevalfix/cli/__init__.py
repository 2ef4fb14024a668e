"""The command line: `humanevalfix` (also `python -m humanevalfix` and `python eval_humanevalfix.py`).

One module per command (`_eval`, `_fix`, `_report`, `_export`, `_score`, `_validate`, `_serve`,
`_graph`), a static table of them in `_main`, and the option types they share in `_options`. The
library never imports this package.
"""

from humanevalfix.cli._eval import config_from_args
from humanevalfix.cli._main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "config_from_args", "main"]
