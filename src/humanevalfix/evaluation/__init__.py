"""The benchmark: HumanEvalFix tasks through the agent and the scorer, and what is kept of a run.

    outcome = run_eval(RunConfig(preset=resolve(None), limit=10))   # RunOutcome: results file, summary

dataset.py loads the tasks (the bundled file, the Hub, or a file of your own); runner.py runs
them concurrently (through runloop.py, the run engine's task loop, which the bench scripts use
too), streamed to records.py's stream and resumable; scorer.py gives the verdict
on a task's first and final code; results.py writes the results file and its summary, with
pass@k from passk.py; generations.py exports and scores generations files in the reference
harness's format; validate.py checks a dataset of your own. A new score is a class registered
with `@scorer` (scorers.py: what it records per task, sums per run and shows); a new dataset
format is a reader registered with `@dataset_format` (tasks/formats.py).

Names below resolve on first use (see humanevalfix/exports.py).
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "RunOutcome": "runner",
    "run_eval": "runner",
    "run_task": "runner",
    "TaskRecord": "records",
    "Summary": "results",
    "load_results": "results",
    "summarize": "results",
    "score": "scorer",
    "score_code": "scorer",
    "mean_pass_at_k": "passk",
    "pass_at_k": "passk",
    "export_results": "generations",
    "read_generations": "generations",
    "score_generations": "generations",
    "validate_file": "validate",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
