"""Tasks at the ground of the package: the task record, a dataset row's formats, the task's own helpers.

task.py is `Task` and `task_from_row`; formats.py the dataset file formats (`read_rows`);
support.py the task's trusted helpers the judge runs with its test. Loading a dataset (a file,
the Hub, the bundled copy) is evaluation/dataset.py's. Nothing here imports the agent, the models
or the benchmark, which all take tasks.

Names below resolve on first use (see humanevalfix/exports.py).
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "Task": "task",
    "task_from_row": "task",
    "FORMATS": "formats",
    "dataset_format": "formats",
    "read_rows": "formats",
    "support_code": "support",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
